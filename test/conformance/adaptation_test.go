package conformance_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/test/conformance"
)

// adaptationEnv drives the server as a remote runtime does: the entry
// points go over a gRPC AdaptationService client to the server's socket,
// and the runtime's state and unsolicited updates over an Attach stream.
type adaptationEnv struct {
	*base
	client nriv1beta1.AdaptationServiceClient
	rt     *adaptationRuntime

	mu  sync.Mutex
	cur *attachment
}

// adaptation is the setup of the AdaptationService path.
func adaptation(t conformance.T, o conformance.Options) (conformance.Env, error) {
	b, err := newBase(t, o)
	if err != nil {
		return nil, err
	}
	cc, err := grpc.NewClient("unix://"+b.sock, grpc.WithTransportCredentials(insecure.NewCredentials()), codec.DialOption())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	client := nriv1beta1.NewAdaptationServiceClient(cc)
	e := &adaptationEnv{base: b, client: client, rt: &adaptationRuntime{c: client}}
	t.Cleanup(e.detach)
	e.SetState(t, nil, nil)
	return e, nil
}

func (e *adaptationEnv) Runtime() conformance.Runtime { return e.rt }

// SetState attaches the runtime with the given state. An attached runtime
// first detaches (a runtime restart), so the server resynchronizes its
// plugins.
func (e *adaptationEnv) SetState(t conformance.T, pods []*nriv1beta1.PodSandbox, ctrs []*nriv1beta1.Container) {
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
		time.Sleep(10 * time.Millisecond)
	}
	go a.serve()
	e.mu.Lock()
	e.cur = a
	e.mu.Unlock()
	e.waitAttached(t)
}

// detach ends the current attachment, if any, and waits until the server
// has dropped it.
func (e *adaptationEnv) detach() {
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

// attachment is one Attach stream: it answers snapshot requests with the
// state and applies updates.
type attachment struct {
	e      *adaptationEnv
	stream grpc.BidiStreamingClient[nriv1beta1.AttachRequest, nriv1beta1.AttachResponse]
	cancel context.CancelFunc
	sendMu sync.Mutex
	pods   []*nriv1beta1.PodSandbox
	ctrs   []*nriv1beta1.Container
	done   chan struct{}
}

func (a *attachment) send(m *nriv1beta1.AttachRequest) error {
	a.sendMu.Lock()
	defer a.sendMu.Unlock()
	return a.stream.Send(m)
}

func (a *attachment) hello() error {
	o := a.e.o
	if err := a.send(&nriv1beta1.AttachRequest{Message: &nriv1beta1.AttachRequest_Hello{Hello: &nriv1beta1.AttachHello{
		RuntimeName: o.RuntimeName, RuntimeVersion: o.RuntimeVersion, NodeName: "conformance-node",
	}}}); err != nil {
		return err
	}
	m, err := a.stream.Recv()
	if err != nil {
		return err
	}
	if m.GetAttached() == nil {
		return errors.New("the first Attach answer is not Attached")
	}
	return nil
}

// serve answers the server until the stream ends.
func (a *attachment) serve() {
	defer close(a.done)
	for {
		m, err := a.stream.Recv()
		if err != nil {
			return // io.EOF once the server dropped the attachment
		}
		switch {
		case m.GetSnapshotRequest() != nil:
			_ = a.send(&nriv1beta1.AttachRequest{Message: &nriv1beta1.AttachRequest_Snapshot{Snapshot: &nriv1beta1.StateSnapshot{
				RequestId: m.GetSnapshotRequest().GetRequestId(), Pods: a.pods, Containers: a.ctrs,
			}}})
		case m.GetApplyUpdates() != nil:
			au := m.GetApplyUpdates()
			fu, fe := a.e.apply(au.GetPlugin(), au.GetUpdate(), au.GetEvict())
			_ = a.send(&nriv1beta1.AttachRequest{Message: &nriv1beta1.AttachRequest_UpdateResult{UpdateResult: &nriv1beta1.UpdateResult{
				RequestId: au.GetRequestId(), Failed: fu, FailedEvictions: fe,
			}}})
		}
	}
}

// adaptationRuntime maps the entry points onto AdaptationService calls.
type adaptationRuntime struct {
	c nriv1beta1.AdaptationServiceClient
}

func (r *adaptationRuntime) RunPodSandbox(ctx context.Context, req *nriv1beta1.RunPodSandboxRequest) error {
	_, err := r.c.RunPodSandbox(ctx, &nriv1beta1.AdaptationServiceRunPodSandboxRequest{Pod: req.GetPod()})
	return err
}

func (r *adaptationRuntime) UpdatePodSandbox(ctx context.Context, req *nriv1beta1.UpdatePodSandboxRequest) error {
	_, err := r.c.UpdatePodSandbox(ctx, &nriv1beta1.AdaptationServiceUpdatePodSandboxRequest{
		Pod: req.GetPod(), OverheadLinuxResources: req.GetOverheadLinuxResources(), LinuxResources: req.GetLinuxResources(),
	})
	return err
}

func (r *adaptationRuntime) PostUpdatePodSandbox(ctx context.Context, req *nriv1beta1.PostUpdatePodSandboxRequest) ([]*nriv1beta1.PluginError, error) {
	rsp, err := r.c.PostUpdatePodSandbox(ctx, &nriv1beta1.AdaptationServicePostUpdatePodSandboxRequest{Pod: req.GetPod()})
	return rsp.GetPluginErrors(), err
}

func (r *adaptationRuntime) StopPodSandbox(ctx context.Context, req *nriv1beta1.StopPodSandboxRequest) ([]*nriv1beta1.PluginError, error) {
	rsp, err := r.c.StopPodSandbox(ctx, &nriv1beta1.AdaptationServiceStopPodSandboxRequest{Pod: req.GetPod()})
	return rsp.GetPluginErrors(), err
}

func (r *adaptationRuntime) RemovePodSandbox(ctx context.Context, req *nriv1beta1.RemovePodSandboxRequest) ([]*nriv1beta1.PluginError, error) {
	rsp, err := r.c.RemovePodSandbox(ctx, &nriv1beta1.AdaptationServiceRemovePodSandboxRequest{Pod: req.GetPod()})
	return rsp.GetPluginErrors(), err
}

func (r *adaptationRuntime) CreateContainer(ctx context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.AdaptationServiceCreateContainerResponse, error) {
	return r.c.CreateContainer(ctx, &nriv1beta1.AdaptationServiceCreateContainerRequest{Pod: req.GetPod(), Container: req.GetContainer()})
}

func (r *adaptationRuntime) PostCreateContainer(ctx context.Context, req *nriv1beta1.PostCreateContainerRequest) ([]*nriv1beta1.PluginError, error) {
	rsp, err := r.c.PostCreateContainer(ctx, &nriv1beta1.AdaptationServicePostCreateContainerRequest{Pod: req.GetPod(), Container: req.GetContainer()})
	return rsp.GetPluginErrors(), err
}

func (r *adaptationRuntime) StartContainer(ctx context.Context, req *nriv1beta1.StartContainerRequest) error {
	_, err := r.c.StartContainer(ctx, &nriv1beta1.AdaptationServiceStartContainerRequest{Pod: req.GetPod(), Container: req.GetContainer()})
	return err
}

func (r *adaptationRuntime) PostStartContainer(ctx context.Context, req *nriv1beta1.PostStartContainerRequest) ([]*nriv1beta1.PluginError, error) {
	rsp, err := r.c.PostStartContainer(ctx, &nriv1beta1.AdaptationServicePostStartContainerRequest{Pod: req.GetPod(), Container: req.GetContainer()})
	return rsp.GetPluginErrors(), err
}

func (r *adaptationRuntime) UpdateContainer(ctx context.Context, req *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.AdaptationServiceUpdateContainerResponse, error) {
	return r.c.UpdateContainer(ctx, &nriv1beta1.AdaptationServiceUpdateContainerRequest{
		Pod: req.GetPod(), Container: req.GetContainer(), LinuxResources: req.GetLinuxResources(),
	})
}

func (r *adaptationRuntime) PostUpdateContainer(ctx context.Context, req *nriv1beta1.PostUpdateContainerRequest) ([]*nriv1beta1.PluginError, error) {
	rsp, err := r.c.PostUpdateContainer(ctx, &nriv1beta1.AdaptationServicePostUpdateContainerRequest{Pod: req.GetPod(), Container: req.GetContainer()})
	return rsp.GetPluginErrors(), err
}

func (r *adaptationRuntime) StopContainer(ctx context.Context, req *nriv1beta1.StopContainerRequest) (*nriv1beta1.AdaptationServiceStopContainerResponse, error) {
	return r.c.StopContainer(ctx, &nriv1beta1.AdaptationServiceStopContainerRequest{Pod: req.GetPod(), Container: req.GetContainer()})
}

func (r *adaptationRuntime) RemoveContainer(ctx context.Context, req *nriv1beta1.RemoveContainerRequest) ([]*nriv1beta1.PluginError, error) {
	rsp, err := r.c.RemoveContainer(ctx, &nriv1beta1.AdaptationServiceRemoveContainerRequest{Pod: req.GetPod(), Container: req.GetContainer()})
	return rsp.GetPluginErrors(), err
}

func TestAdaptation(t *testing.T) { conformance.Run(t, adaptation) }
