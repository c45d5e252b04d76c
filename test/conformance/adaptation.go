package conformance

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// AdaptationRuntime returns the Runtime of a remote runtime: each entry
// point is the AdaptationService call of the server c is connected to.
// The runtime's state and unsolicited updates go over an Attach stream,
// which the caller keeps.
func AdaptationRuntime(c nriv1beta1.AdaptationServiceClient) Runtime { return &adaptationRuntime{c: c} }

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

// Attachment is a runtime attached to a server over an AdaptationService
// Attach stream: it answers the server's snapshot requests with its state
// and its unsolicited updates as a runtime configured with o does,
// recording them in applied.
type Attachment struct {
	stream       grpc.BidiStreamingClient[nriv1beta1.AttachRequest, nriv1beta1.AttachResponse]
	cancel       context.CancelFunc
	sendMu       sync.Mutex
	o            Options
	applied      *AppliedLog
	pods         []*nriv1beta1.PodSandbox
	ctrs         []*nriv1beta1.Container
	done         chan struct{}
	snapshotOnce sync.Once
	snapshotSent chan struct{}
}

// AttachRuntime attaches a runtime with the state pods and ctrs to the
// server of client, introducing it with hello; it tries again while the
// server is still dropping a previous attachment (ALREADY_EXISTS), within
// Wait. The attachment serves the server until Detach.
func AttachRuntime(client nriv1beta1.AdaptationServiceClient, hello *nriv1beta1.AttachHello, o Options,
	pods []*nriv1beta1.PodSandbox, ctrs []*nriv1beta1.Container, applied *AppliedLog) (*Attachment, error) {
	ctx, cancel := context.WithCancel(context.Background())
	a := &Attachment{cancel: cancel, o: o, applied: applied, pods: pods, ctrs: ctrs,
		done: make(chan struct{}), snapshotSent: make(chan struct{})}
	deadline := time.Now().Add(Wait)
	for {
		stream, err := client.Attach(ctx)
		if err == nil {
			a.stream = stream
			err = a.hello(hello)
		}
		if err == nil {
			break
		}
		if status.Code(err) != codes.AlreadyExists || time.Now().After(deadline) {
			cancel()
			return nil, err
		}
		timer := time.NewTimer(10 * time.Millisecond) // retry pacing, not a wait for a result
		<-timer.C
	}
	go a.serve()
	return a, nil
}

// SnapshotSent is closed once the attachment has answered the server's
// first snapshot request.
func (a *Attachment) SnapshotSent() <-chan struct{} { return a.snapshotSent }

// Detach ends the attachment and waits (within Wait) until the server has
// dropped it.
func (a *Attachment) Detach() {
	a.sendMu.Lock()
	_ = a.stream.CloseSend()
	a.sendMu.Unlock()
	select {
	case <-a.done:
	case <-time.After(Wait):
	}
	a.cancel()
}

func (a *Attachment) send(m *nriv1beta1.AttachRequest) error {
	a.sendMu.Lock()
	defer a.sendMu.Unlock()
	return a.stream.Send(m)
}

func (a *Attachment) hello(h *nriv1beta1.AttachHello) error {
	if err := a.send(&nriv1beta1.AttachRequest{Message: &nriv1beta1.AttachRequest_Hello{Hello: h}}); err != nil {
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

// serve answers the server until the stream ends (io.EOF once the server
// dropped the attachment).
func (a *Attachment) serve() {
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
			a.applied.Add(Applied{Plugin: au.GetPlugin(), Update: au.GetUpdate(), Evict: au.GetEvict()})
			fu, fe := FailedUpdates(a.o, au.GetUpdate(), au.GetEvict())
			_ = a.send(&nriv1beta1.AttachRequest{Message: &nriv1beta1.AttachRequest_UpdateResult{UpdateResult: &nriv1beta1.UpdateResult{
				RequestId: au.GetRequestId(), Failed: fu, FailedEvictions: fe,
			}}})
		}
	}
}
