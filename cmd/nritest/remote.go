package main

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/test/conformance"
)

// The conformance.Setup of `nritest runtime --adaptation`: the scenarios
// drive an NRI server someone else runs (a running nrid) as a remote
// runtime does, over its AdaptationService (the entry points, and the
// runtime's state and unsolicited updates over an Attach stream), and
// start their test plugins (internal/testplugin) on its RuntimeService
// socket with endpoints in its plugin socket directory. This mirrors the
// AdaptationService path of test/conformance (adaptation_test.go) with a
// server that is not the setup's own: scenarios that configure the server
// (options other than the defaults) or stop it are skipped.

// remoteConfig is where the server under test is.
type remoteConfig struct {
	adaptation   string // AdaptationService socket
	pluginSocket string // RuntimeService socket
	pluginDir    string // the server's plugin socket directory
}

// remoteSetup returns the setup for the server of c.
func remoteSetup(c remoteConfig) conformance.Setup {
	return func(t conformance.T, o conformance.Options) (conformance.Env, error) {
		if !reflect.DeepEqual(o, conformance.Options{}.WithDefaults()) {
			t.Skip("the scenario configures the server (timeouts, validator, policy, metrics or runtime failures); the server under test has its operator's configuration")
		}
		cc, err := grpc.NewClient("unix://"+c.adaptation, grpc.WithTransportCredentials(insecure.NewCredentials()), codec.DialOption())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cc.Close() })
		client := nriv1beta1.NewAdaptationServiceClient(cc)
		e := &remoteEnv{c: c, o: o, client: client, calls: conformance.NewCallLog(), applied: conformance.NewAppliedLog()}
		t.Cleanup(e.detach)
		e.SetState(t, nil, nil)
		return e, nil
	}
}

// remoteEnv is one scenario's env on the server under test.
type remoteEnv struct {
	c       remoteConfig
	o       conformance.Options
	client  nriv1beta1.AdaptationServiceClient
	calls   *conformance.CallLog
	applied *conformance.AppliedLog

	mu  sync.Mutex
	cur *attachment
}

func (e *remoteEnv) Runtime() conformance.Runtime     { return conformance.AdaptationRuntime(e.client) }
func (e *remoteEnv) Log() *conformance.CallLog        { return e.calls }
func (e *remoteEnv) Applied() *conformance.AppliedLog { return e.applied }

// Shutdown cannot stop a server nritest does not run (the scenario that
// needs it is skipped).
func (e *remoteEnv) Shutdown(context.Context) error {
	return errors.New("nritest runtime cannot stop the server under test")
}

// SetState attaches the runtime with the given state; an attached runtime
// first detaches (a runtime restart: the server resynchronizes plugins).
func (e *remoteEnv) SetState(t conformance.T, pods []*nriv1beta1.PodSandbox, ctrs []*nriv1beta1.Container) {
	t.Helper()
	e.detach()
	ctx, cancel := context.WithCancel(context.Background())
	a := &attachment{e: e, cancel: cancel, pods: pods, ctrs: ctrs, done: make(chan struct{})}
	deadline := time.Now().Add(conformance.Wait)
	for {
		stream, err := e.client.Attach(ctx)
		if err == nil {
			a.stream = stream
			err = a.hello()
		}
		if err == nil {
			break
		}
		// The server may still be dropping the previous attachment.
		if status.Code(err) != codes.AlreadyExists || time.Now().After(deadline) {
			cancel()
			t.Fatalf("attaching the runtime: %v", err)
		}
		timer := time.NewTimer(10 * time.Millisecond) // retry pacing, not a wait for a result
		<-timer.C
	}
	go a.serve()
	e.mu.Lock()
	e.cur = a
	e.mu.Unlock()
	// The server asks for the snapshot right after Attached and uses it
	// once it has it: wait for that.
	select {
	case <-a.snapshotSent:
	case <-time.After(conformance.Wait):
		t.Fatal("the server did not ask the attached runtime for its state")
	}
	if err := e.waitAttached(deadline); err != nil {
		t.Fatal(err)
	}
}

// waitAttached waits until the server uses the attached runtime's state.
// The runtime has no message for it; nrid's simulation guard tells: a
// simulated call is refused with FAILED_PRECONDITION while a runtime is
// attached. The probe is an invalid RemovePodSandbox (no pod), which
// reaches no plugin when it is let through. A server without the guard
// (INVALID_ARGUMENT after the deadline) is taken as attached.
func (e *remoteEnv) waitAttached(deadline time.Time) error {
	ctx := metadata.AppendToOutgoingContext(context.Background(), nri.MetadataSimulate, "1")
	for {
		cctx, cancel := context.WithTimeout(ctx, conformance.Wait)
		_, err := e.client.RemovePodSandbox(cctx, &nriv1beta1.AdaptationServiceRemovePodSandboxRequest{})
		cancel()
		switch code := status.Code(err); {
		case code == codes.FailedPrecondition:
			return nil
		case code != codes.InvalidArgument && code != codes.OK:
			return fmt.Errorf("probing the attachment: %w", err)
		case time.Now().After(deadline):
			return nil
		}
		timer := time.NewTimer(2 * time.Millisecond) // probe pacing
		<-timer.C
	}
}

// detach ends the current attachment, if any.
func (e *remoteEnv) detach() {
	e.mu.Lock()
	a := e.cur
	e.cur = nil
	e.mu.Unlock()
	if a == nil {
		return
	}
	a.sendMu.Lock()
	_ = a.stream.CloseSend()
	a.sendMu.Unlock()
	select {
	case <-a.done:
	case <-time.After(conformance.Wait):
	}
	a.cancel()
}

func (e *remoteEnv) StartPlugin(t conformance.T, spec *conformance.PluginSpec) conformance.Plugin {
	t.Helper()
	p, err := e.TryStartPlugin(t, spec)
	if err != nil {
		t.Fatalf("starting plugin %s: %v", spec.Full(), err)
	}
	return p
}

func (e *remoteEnv) TryStartPlugin(t conformance.T, spec *conformance.PluginSpec) (conformance.Plugin, error) {
	tp := &testplugin.Plugin{
		Name: spec.Name, Index: spec.Index, Events: spec.Mask(), FailurePolicy: spec.FailurePolicy,
		Capabilities: spec.Capabilities, Timeouts: spec.Timeouts, Log: testplugin.NewLog(),
		Status: spec.Status, StatusReason: spec.StatusReason, Selectors: spec.Selectors,
		OnCreateContainer: spec.OnCreateContainer, OnUpdateContainer: spec.OnUpdateContainer,
		OnStopContainer: spec.OnStopContainer, OnSynchronize: spec.OnSynchronize, OnValidate: spec.OnValidate,
	}
	full := spec.Full()
	tp.Handle = func(ctx context.Context, method string, req proto.Message) error {
		id := ""
		if md, ok := metadata.FromIncomingContext(ctx); ok {
			if v := md.Get(nri.MetadataInstanceID); len(v) > 0 {
				id = v[0]
			}
		}
		e.calls.Add(conformance.Call{Plugin: full, Method: method, InstanceID: id, Req: req})
		if spec.Handle != nil {
			return spec.Handle(ctx, method, req)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), conformance.Wait)
	defer cancel()
	_, err := tp.Start(ctx, e.c.pluginSocket, e.c.pluginDir)
	p := &remotePlugin{tp: tp, done: make(chan struct{})}
	t.Cleanup(func() {
		tp.Stop()
		if err == nil {
			// The next scenario may register the same name: wait until
			// this registration is over.
			select {
			case <-p.done:
			case <-time.After(conformance.Wait):
			}
		}
	})
	if err != nil {
		return nil, err
	}
	go func() {
		p.end = <-tp.SessionEnded()
		close(p.done)
	}()
	return p, nil
}

// remotePlugin adapts a testplugin.Plugin.
type remotePlugin struct {
	tp   *testplugin.Plugin
	done chan struct{}
	end  error // why the session ended; set before done is closed
}

func (p *remotePlugin) Full() string { return p.tp.Full() }

// SetStatus reports the plugin's status: remote plugins are gRPC plugins
// (conformance.StatusReporter).
func (p *remotePlugin) SetStatus(ctx context.Context, st nriv1beta1.PluginStatus, reason string) error {
	return p.tp.SetStatus(ctx, st, reason)
}

// RequestResync asks for the state again (conformance.StatusReporter).
func (p *remotePlugin) RequestResync(ctx context.Context, reason string) (uint64, error) {
	return p.tp.RequestResync(ctx, reason)
}
func (p *remotePlugin) InstanceID() string                       { return p.tp.InstanceID() }
func (p *remotePlugin) Stop()                                    { p.tp.Stop() }
func (p *remotePlugin) Done() <-chan struct{}                    { return p.done }
func (p *remotePlugin) Shutdowns() []*nriv1beta1.ShutdownRequest { return p.tp.Shutdowns() }
func (p *remotePlugin) UpdateContainers(ctx context.Context, updates []*nriv1beta1.ContainerUpdate,
	evictions []*nriv1beta1.ContainerEviction) ([]*nriv1beta1.ContainerUpdate, []*nriv1beta1.ContainerEviction, error) {
	rsp, err := p.tp.UpdateContainers(ctx, &nriv1beta1.UpdateContainersRequest{Update: updates, Evict: evictions})
	if err != nil {
		return nil, nil, err
	}
	return rsp.GetFailed(), rsp.GetFailedEvictions(), nil
}

// attachment is one Attach stream: it answers snapshot requests with the
// state and applies updates.
type attachment struct {
	e            *remoteEnv
	stream       grpc.BidiStreamingClient[nriv1beta1.AttachRequest, nriv1beta1.AttachResponse]
	cancel       context.CancelFunc
	sendMu       sync.Mutex
	pods         []*nriv1beta1.PodSandbox
	ctrs         []*nriv1beta1.Container
	done         chan struct{}
	snapshotOnce sync.Once
	snapshotSent chan struct{}
}

func (a *attachment) send(m *nriv1beta1.AttachRequest) error {
	a.sendMu.Lock()
	defer a.sendMu.Unlock()
	return a.stream.Send(m)
}

func (a *attachment) hello() error {
	a.snapshotSent = make(chan struct{})
	o := a.e.o
	if err := a.send(&nriv1beta1.AttachRequest{Message: &nriv1beta1.AttachRequest_Hello{Hello: &nriv1beta1.AttachHello{
		RuntimeName: o.RuntimeName, RuntimeVersion: o.RuntimeVersion, NodeName: "nritest-node",
	}}}); err != nil {
		return err
	}
	m, err := a.stream.Recv()
	if err != nil {
		return err
	}
	if m.GetAttached() == nil {
		return fmt.Errorf("the first Attach answer is not Attached: %v", m)
	}
	return nil
}

// serve answers the server until the stream ends.
func (a *attachment) serve() {
	defer close(a.done)
	for {
		m, err := a.stream.Recv()
		if err != nil {
			return
		}
		switch {
		case m.GetSnapshotRequest() != nil:
			_ = a.send(&nriv1beta1.AttachRequest{Message: &nriv1beta1.AttachRequest_Snapshot{Snapshot: &nriv1beta1.StateSnapshot{
				RequestId: m.GetSnapshotRequest().GetRequestId(), Pods: a.pods, Containers: a.ctrs,
			}}})
			a.snapshotOnce.Do(func() { close(a.snapshotSent) })
		case m.GetApplyUpdates() != nil:
			au := m.GetApplyUpdates()
			a.e.applied.Add(conformance.Applied{Plugin: au.GetPlugin(), Update: au.GetUpdate(), Evict: au.GetEvict()})
			fu, fe := conformance.FailedUpdates(a.e.o, au.GetUpdate(), au.GetEvict())
			_ = a.send(&nriv1beta1.AttachRequest{Message: &nriv1beta1.AttachRequest_UpdateResult{UpdateResult: &nriv1beta1.UpdateResult{
				RequestId: au.GetRequestId(), Failed: fu, FailedEvictions: fe,
			}}})
		}
	}
}
