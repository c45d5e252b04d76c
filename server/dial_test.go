package server_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/transport"
)

// TestEndpointWithoutDialerIsRefused: a server without a Dialer dials
// nothing; a registration with an endpoint is refused as an invalid
// endpoint.
func TestEndpointWithoutDialerIsRefused(t *testing.T) {
	h := newHarness(t, server.WithDialer(nil))
	_, err := h.tryPlugin("10", "x", nil)
	if status.Code(err) != codes.InvalidArgument || testplugin.Reason(err) != "REGISTRATION_REFUSAL_INVALID_ENDPOINT" ||
		!strings.Contains(err.Error(), "endpoint: this server dials no plugin endpoints") {
		t.Fatalf("got %v (reason %q)", err, testplugin.Reason(err))
	}
	if n := len(h.srv.Plugins()); n != 0 {
		t.Fatalf("%d plugins registered", n)
	}
}

// recordingDialer records what the server asks of its Dialer and refuses
// with refuse when set, else dials with nrid's.
type recordingDialer struct {
	mu     sync.Mutex
	reqs   []server.DialRequest
	refuse error
}

func (d *recordingDialer) Dial(ctx context.Context, req server.DialRequest) (server.PluginConn, error) {
	d.mu.Lock()
	d.reqs = append(d.reqs, req)
	refuse := d.refuse
	d.mu.Unlock()
	if refuse != nil {
		return nil, refuse
	}
	return transport.NewDialer().Dial(ctx, req)
}

// TestDialerContract: the server asks its Dialer with the registrant's
// identity, the plugin socket directory, its dial options and a logger;
// a Dialer's error refuses the registration as an invalid endpoint, with
// the code of a status error and INVALID_ARGUMENT otherwise.
func TestDialerContract(t *testing.T) {
	d := &recordingDialer{}
	h := newHarness(t, server.WithDialer(d))
	h.plugin("10", "x", nil)
	d.mu.Lock()
	req := d.reqs[0]
	d.mu.Unlock()
	uid := uint32(os.Getuid())
	if !strings.HasPrefix(req.Endpoint, "unix://"+h.pluginDir+string(filepath.Separator)) {
		t.Errorf("endpoint %q", req.Endpoint)
	}
	if want := (server.Identity{Name: fmt.Sprintf("uid:%d", uid), UID: uid, Unix: true}); req.Identity != want {
		t.Errorf("identity %+v, want %+v", req.Identity, want)
	}
	if req.SocketDir != h.pluginDir || req.Log == nil || len(req.Options) == 0 {
		t.Errorf("socket dir %q (want %q), log %v, %d options", req.SocketDir, h.pluginDir, req.Log, len(req.Options))
	}

	for _, c := range []struct {
		refuse error
		code   codes.Code
		msg    string
	}{
		{status.Error(codes.PermissionDenied, "not yours"), codes.PermissionDenied, "endpoint: not yours"},
		{errors.New("malformed"), codes.InvalidArgument, "endpoint: malformed"},
	} {
		d.mu.Lock()
		d.refuse = c.refuse
		d.mu.Unlock()
		_, err := registerRaw(h, &nriv1beta1.RegisterPluginRequest{PluginName: "y", PluginIdx: "20", Endpoint: "unix://" + h.pluginDir + "/y.sock"})
		if st := status.Convert(err); st.Code() != c.code || st.Message() != c.msg || testplugin.Reason(err) != "REGISTRATION_REFUSAL_INVALID_ENDPOINT" {
			t.Errorf("%v: got %v (reason %q), want %v %q", c.refuse, err, testplugin.Reason(err), c.code, c.msg)
		}
	}
}
