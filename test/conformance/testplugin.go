package conformance

import (
	"context"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/nri"
)

// NewTestPlugin returns the plugin of spec as an internal/testplugin
// plugin, not started, that records every call it receives in calls (with
// the instance id it was addressed to) before spec.Handle sees it.
func NewTestPlugin(spec *PluginSpec, calls *CallLog) *testplugin.Plugin {
	tp := &testplugin.Plugin{
		Name:              spec.Name,
		Index:             spec.Index,
		Events:            spec.Mask(),
		FailurePolicy:     spec.FailurePolicy,
		Capabilities:      spec.Capabilities,
		Timeouts:          spec.Timeouts,
		Status:            spec.Status,
		StatusReason:      spec.StatusReason,
		Selectors:         spec.Selectors,
		Log:               testplugin.NewLog(),
		OnCreateContainer: spec.OnCreateContainer,
		OnUpdateContainer: spec.OnUpdateContainer,
		OnStopContainer:   spec.OnStopContainer,
		OnSynchronize:     spec.OnSynchronize,
		OnValidate:        spec.OnValidate,
	}
	full := spec.Full()
	tp.Handle = func(ctx context.Context, method string, req proto.Message) error {
		id := ""
		if md, ok := metadata.FromIncomingContext(ctx); ok {
			if v := md.Get(nri.MetadataInstanceID); len(v) > 0 {
				id = v[0]
			}
		}
		calls.Add(Call{Plugin: full, Method: method, InstanceID: id, Req: req})
		if spec.Handle != nil {
			return spec.Handle(ctx, method, req)
		}
		return nil
	}
	return tp
}

// TestPlugin is a started NewTestPlugin: a scenario's gRPC Plugin, which
// reports its status (StatusReporter).
type TestPlugin struct {
	tp   *testplugin.Plugin
	done chan struct{}
	end  error // why the session ended; set before done is closed
}

var _ StatusReporter = (*TestPlugin)(nil)

// StartTestPlugin starts the plugin of spec (NewTestPlugin, recording into
// calls) against the RuntimeService socket sock with its endpoint in dir,
// within Wait, and stops it when the test ends.
func StartTestPlugin(t T, spec *PluginSpec, calls *CallLog, sock, dir string) (*TestPlugin, error) {
	tp := NewTestPlugin(spec, calls)
	ctx, cancel := context.WithTimeout(context.Background(), Wait)
	defer cancel()
	_, err := tp.Start(ctx, sock, dir)
	t.Cleanup(tp.Stop)
	if err != nil {
		return nil, err
	}
	p := &TestPlugin{tp: tp, done: make(chan struct{})}
	go func() {
		p.end = <-tp.SessionEnded()
		close(p.done)
	}()
	return p, nil
}

// Full is the plugin's "NN-name".
func (p *TestPlugin) Full() string { return p.tp.Full() }

// InstanceID is the instance id of its registration.
func (p *TestPlugin) InstanceID() string { return p.tp.InstanceID() }

// Stop ends the plugin.
func (p *TestPlugin) Stop() { p.tp.Stop() }

// Done is closed when its registration's session ended.
func (p *TestPlugin) Done() <-chan struct{} { return p.done }

// Shutdowns are the Shutdown requests it received.
func (p *TestPlugin) Shutdowns() []*nriv1beta1.ShutdownRequest { return p.tp.Shutdowns() }

// UpdateContainers asks the server for unsolicited updates and evictions
// and returns those that failed.
func (p *TestPlugin) UpdateContainers(ctx context.Context, updates []*nriv1beta1.ContainerUpdate,
	evictions []*nriv1beta1.ContainerEviction) ([]*nriv1beta1.ContainerUpdate, []*nriv1beta1.ContainerEviction, error) {
	rsp, err := p.tp.UpdateContainers(ctx, &nriv1beta1.UpdateContainersRequest{Update: updates, Evict: evictions})
	if err != nil {
		return nil, nil, err
	}
	return rsp.GetFailed(), rsp.GetFailedEvictions(), nil
}

// SetStatus reports the plugin's status (SetPluginStatus).
func (p *TestPlugin) SetStatus(ctx context.Context, st nriv1beta1.PluginStatus, reason string) error {
	return p.tp.SetStatus(ctx, st, reason)
}

// RequestResync asks for the state again and returns the epoch.
func (p *TestPlugin) RequestResync(ctx context.Context, reason string) (uint64, error) {
	return p.tp.RequestResync(ctx, reason)
}
