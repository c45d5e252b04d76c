package plugin_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/plugin"
	"github.com/nri-grpc/nri-grpc/plugin/plugintest"
)

// serverView returns what the server shows of the plugin 10-name.
func serverView(t *testing.T, env *plugintest.Env, name string) *nriv1beta1.PluginInfo {
	t.Helper()
	for _, pi := range env.Server().Plugins() {
		if pi.GetPlugin().GetName() == name {
			return pi
		}
	}
	t.Fatalf("plugin %s is not registered", name)
	return nil
}

// TestStatusAndRequestedResync: the SDK registers with WithStatus, reports
// changes with SetStatus, registers again after a server restart with the
// last status it reported, and RequestResync brings a Synchronize of the
// returned epoch with reason PLUGIN_REQUESTED to its Resync handler.
func TestStatusAndRequestedResync(t *testing.T) {
	env := plugintest.New(t)
	c := newCalls()
	p := env.Start(t, &resyncer{recorder{c: c}}, plugin.WithName("status"),
		plugin.WithStatus(nriv1beta1.PluginStatus_PLUGIN_STATUS_NOT_READY, "warming up"))
	if pi := serverView(t, env, "status"); pi.GetStatus() != nriv1beta1.PluginStatus_PLUGIN_STATUS_NOT_READY || pi.GetStatusReason() != "warming up" {
		t.Fatalf("registered with %v %q", pi.GetStatus(), pi.GetStatusReason())
	}
	ctx, cancel := context.WithTimeout(context.Background(), plugintest.Wait)
	defer cancel()
	if err := p.SetStatus(ctx, nriv1beta1.PluginStatus_PLUGIN_STATUS_DEGRADED, "half the cache"); err != nil {
		t.Fatal(err)
	}
	if pi := serverView(t, env, "status"); pi.GetStatus() != nriv1beta1.PluginStatus_PLUGIN_STATUS_DEGRADED || pi.GetStatusReason() != "half the cache" {
		t.Fatalf("after SetStatus: %v %q", pi.GetStatus(), pi.GetStatusReason())
	}
	if err := p.SetStatus(ctx, nriv1beta1.PluginStatus_PLUGIN_STATUS_READY, "\xff"); err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Fatalf("a bad reason: %v", err)
	}

	c.wait(t, "Synchronize", 1)
	epoch, err := p.RequestResync(ctx, "my view changed")
	if err != nil || epoch != 2 {
		t.Fatalf("RequestResync: %d, %v", epoch, err)
	}
	rs := c.wait(t, "Resync", 1).(*nriv1beta1.SynchronizeRequest)
	if rs.GetEpoch() != 2 || rs.GetReason() != nriv1beta1.SyncReason_SYNC_REASON_PLUGIN_REQUESTED {
		t.Fatalf("Resync: epoch %d, reason %v", rs.GetEpoch(), rs.GetReason())
	}

	first := p.Registered().GetInstanceId()
	env.Restart(t)
	p.WaitRegistered(t, first)
	if pi := serverView(t, env, "status"); pi.GetStatus() != nriv1beta1.PluginStatus_PLUGIN_STATUS_DEGRADED || pi.GetStatusReason() != "half the cache" {
		t.Fatalf("after a server restart: %v %q", pi.GetStatus(), pi.GetStatusReason())
	}
	if st, reason := p.Status(); st != nriv1beta1.PluginStatus_PLUGIN_STATUS_DEGRADED || reason != "half the cache" {
		t.Fatalf("Status() = %v %q", st, reason)
	}
}

func TestWithStatusIsChecked(t *testing.T) {
	_, err := plugin.New(&recorder{c: newCalls()}, plugin.WithName("x"), plugin.WithIndex("10"), plugin.WithStatus(9, ""))
	if err == nil || !strings.Contains(err.Error(), "WithStatus") {
		t.Fatalf("New with a bad status: %v", err)
	}
	p, err := plugin.New(&recorder{c: newCalls()}, plugin.WithName("x"), plugin.WithIndex("10"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.RequestResync(context.Background(), ""); err == nil || !strings.Contains(err.Error(), plugin.ErrNotRegistered.Error()) {
		t.Fatalf("RequestResync unregistered: %v", err)
	}
	// Not registered: ErrNotRegistered, and recorded for the next
	// registration.
	if err := p.SetStatus(context.Background(), nriv1beta1.PluginStatus_PLUGIN_STATUS_NOT_READY, "later"); !errors.Is(err, plugin.ErrNotRegistered) {
		t.Fatalf("SetStatus unregistered: %v, want ErrNotRegistered", err)
	}
	if st, _ := p.Status(); st != nriv1beta1.PluginStatus_PLUGIN_STATUS_NOT_READY {
		t.Fatalf("Status() = %v", st)
	}
}
