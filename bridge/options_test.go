package bridge_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nri-grpc/nri-grpc/bridge"
)

// TestOptionsValidated: options only record values; the constructors
// refuse bad ones with an error naming the option, and nil options and nil
// loggers leave the defaults.
func TestOptionsValidated(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		opt  bridge.RuntimeOption
		want string
	}{
		{bridge.WithRuntimeSocket(""), "bridge: WithRuntimeSocket: empty path"},
		{bridge.WithPluginIdentity("", "00"), "bridge: WithPluginIdentity: empty name or index"},
		{bridge.WithMargin(-time.Millisecond), "bridge: WithMargin: -1ms is negative"},
		{bridge.WithReconnectBackoff(0, time.Second), "bridge: WithReconnectBackoff: invalid bounds 0s, 1s"},
		{bridge.WithReconnectBackoff(time.Second, time.Millisecond), "bridge: WithReconnectBackoff: invalid bounds 1s, 1ms"},
	} {
		if _, err := bridge.NewRuntimeSide(nil, tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewRuntimeSide: err = %v, want one containing %q", err, tc.want)
		}
	}
	if _, err := bridge.NewRuntimeSide(nil, nil, bridge.WithRuntimeLogger(nil),
		bridge.WithMargin(-1), bridge.WithMargin(0)); err != nil {
		t.Errorf("NewRuntimeSide: %v", err)
	}

	if _, err := bridge.NewPluginSide(nil, bridge.WithRegistrationTimeout(0)); err == nil ||
		!strings.Contains(err.Error(), "bridge: WithRegistrationTimeout: 0s is not positive") {
		t.Errorf("NewPluginSide: err = %v, want WithRegistrationTimeout refused", err)
	}
	if _, err := bridge.NewPluginSide(nil, nil, bridge.WithPluginLogger(nil)); err != nil {
		t.Errorf("NewPluginSide: %v", err)
	}
}
