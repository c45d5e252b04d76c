package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nri-grpc/nri-grpc/server"
)

// TestNewValidatesOptions: options only record values; New refuses bad
// ones with an error naming the option, and nil means the default.
func TestNewValidatesOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		opt  server.Option
		want string
	}{
		{server.WithRequestTimeout(0), "server: WithRequestTimeout: 0s is not positive"},
		{server.WithRegistrationTimeout(-time.Second), "server: WithRegistrationTimeout: -1s is not positive"},
		{server.WithMaxMessageSize(1000), "server: WithMaxMessageSize: 1000 is below 64 KiB"},
	} {
		if _, err := server.New(tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New: err = %v, want one containing %q", err, tc.want)
		}
	}
	// A later option overrides an earlier one; nil options, a nil logger and
	// nil metrics leave the defaults.
	srv, err := server.New(server.WithRequestTimeout(0), server.WithRequestTimeout(time.Second), nil,
		server.WithLogger(nil), server.WithMetrics(nil), server.WithAuthorizer(nil))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	// SetRuntime logs: a nil logger would panic here.
	if err := srv.SetRuntime(t.Context(), server.RuntimeInfo{Name: "test"}, nil, nil, nil); err != nil {
		t.Fatalf("SetRuntime: %v", err)
	}
}
