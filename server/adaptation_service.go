package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/version"
)

// AdaptationService returns the gRPC AdaptationService of the server: the
// runtime-facing entry points for a runtime that is not embedded, and Attach.
func (s *Server) AdaptationService() nriv1beta1.AdaptationServiceServer {
	return &adaptationService{s: s}
}

type adaptationService struct {
	nriv1beta1.UnimplementedAdaptationServiceServer
	s *Server

	mu       sync.Mutex
	attached *remoteRuntime
}

// The unary event handlers hand the server the encoding of the request
// they pass on (encoded): the server checks it as a runtime's input (the
// codec's vtprotobuf decoding checks no UTF-8: checkReceived) and sends it
// to plugins as it is, so it encodes nothing again.

// encoded returns the option handing the server req's encoding, or nil
// (no option) when req does not encode; the server then encodes it itself.
func encoded(req interface{ MarshalVT() ([]byte, error) }) EventOption {
	return withEncoding(req, Encoded)
}

// received is encoded for a request the server reshapes before plugins see
// it: the encoding is checked, not sent.
func received(req interface{ MarshalVT() ([]byte, error) }) EventOption {
	return withEncoding(req, Received)
}

// withEncoding is opt of req's encoding, nil when req does not encode.
func withEncoding(req interface{ MarshalVT() ([]byte, error) }, opt func([]byte) EventOption) EventOption {
	raw, err := req.MarshalVT()
	if err != nil {
		return nil
	}
	return opt(raw)
}

func (a *adaptationService) RunPodSandbox(ctx context.Context, req *nriv1beta1.AdaptationServiceRunPodSandboxRequest) (*nriv1beta1.AdaptationServiceRunPodSandboxResponse, error) {
	r := &nriv1beta1.RunPodSandboxRequest{Pod: req.GetPod()}
	if err := a.s.RunPodSandbox(ctx, r, encoded(r)); err != nil {
		return nil, err
	}
	return &nriv1beta1.AdaptationServiceRunPodSandboxResponse{}, nil
}

func (a *adaptationService) UpdatePodSandbox(ctx context.Context, req *nriv1beta1.AdaptationServiceUpdatePodSandboxRequest) (*nriv1beta1.AdaptationServiceUpdatePodSandboxResponse, error) {
	r := &nriv1beta1.UpdatePodSandboxRequest{
		Pod: req.GetPod(), OverheadLinuxResources: req.GetOverheadLinuxResources(), LinuxResources: req.GetLinuxResources(),
	}
	if err := a.s.UpdatePodSandbox(ctx, r, encoded(r)); err != nil {
		return nil, err
	}
	return &nriv1beta1.AdaptationServiceUpdatePodSandboxResponse{}, nil
}

func (a *adaptationService) PostUpdatePodSandbox(ctx context.Context, req *nriv1beta1.AdaptationServicePostUpdatePodSandboxRequest) (*nriv1beta1.AdaptationServicePostUpdatePodSandboxResponse, error) {
	r := &nriv1beta1.PostUpdatePodSandboxRequest{Pod: req.GetPod()}
	errs, err := a.s.PostUpdatePodSandbox(ctx, r, encoded(r))
	if err != nil {
		return nil, err
	}
	return &nriv1beta1.AdaptationServicePostUpdatePodSandboxResponse{PluginErrors: errs}, nil
}

func (a *adaptationService) StopPodSandbox(ctx context.Context, req *nriv1beta1.AdaptationServiceStopPodSandboxRequest) (*nriv1beta1.AdaptationServiceStopPodSandboxResponse, error) {
	r := &nriv1beta1.StopPodSandboxRequest{Pod: req.GetPod()}
	errs, err := a.s.StopPodSandbox(ctx, r, encoded(r))
	if err != nil {
		return nil, err
	}
	return &nriv1beta1.AdaptationServiceStopPodSandboxResponse{PluginErrors: errs}, nil
}

func (a *adaptationService) RemovePodSandbox(ctx context.Context, req *nriv1beta1.AdaptationServiceRemovePodSandboxRequest) (*nriv1beta1.AdaptationServiceRemovePodSandboxResponse, error) {
	r := &nriv1beta1.RemovePodSandboxRequest{Pod: req.GetPod()}
	errs, err := a.s.RemovePodSandbox(ctx, r, encoded(r))
	if err != nil {
		return nil, err
	}
	return &nriv1beta1.AdaptationServiceRemovePodSandboxResponse{PluginErrors: errs}, nil
}

func (a *adaptationService) CreateContainer(ctx context.Context, req *nriv1beta1.AdaptationServiceCreateContainerRequest) (*nriv1beta1.AdaptationServiceCreateContainerResponse, error) {
	r := &nriv1beta1.CreateContainerRequest{Pod: req.GetPod(), Container: req.GetContainer()}
	return a.s.CreateContainer(ctx, r, encoded(r))
}

func (a *adaptationService) PostCreateContainer(ctx context.Context, req *nriv1beta1.AdaptationServicePostCreateContainerRequest) (*nriv1beta1.AdaptationServicePostCreateContainerResponse, error) {
	r := &nriv1beta1.PostCreateContainerRequest{Pod: req.GetPod(), Container: req.GetContainer()}
	errs, err := a.s.PostCreateContainer(ctx, r, encoded(r))
	if err != nil {
		return nil, err
	}
	return &nriv1beta1.AdaptationServicePostCreateContainerResponse{PluginErrors: errs}, nil
}

func (a *adaptationService) StartContainer(ctx context.Context, req *nriv1beta1.AdaptationServiceStartContainerRequest) (*nriv1beta1.AdaptationServiceStartContainerResponse, error) {
	r := &nriv1beta1.StartContainerRequest{Pod: req.GetPod(), Container: req.GetContainer()}
	if err := a.s.StartContainer(ctx, r, encoded(r)); err != nil {
		return nil, err
	}
	return &nriv1beta1.AdaptationServiceStartContainerResponse{}, nil
}

func (a *adaptationService) PostStartContainer(ctx context.Context, req *nriv1beta1.AdaptationServicePostStartContainerRequest) (*nriv1beta1.AdaptationServicePostStartContainerResponse, error) {
	r := &nriv1beta1.PostStartContainerRequest{Pod: req.GetPod(), Container: req.GetContainer()}
	errs, err := a.s.PostStartContainer(ctx, r, encoded(r))
	if err != nil {
		return nil, err
	}
	return &nriv1beta1.AdaptationServicePostStartContainerResponse{PluginErrors: errs}, nil
}

func (a *adaptationService) UpdateContainer(ctx context.Context, req *nriv1beta1.AdaptationServiceUpdateContainerRequest) (*nriv1beta1.AdaptationServiceUpdateContainerResponse, error) {
	r := &nriv1beta1.UpdateContainerRequest{
		Pod: req.GetPod(), Container: req.GetContainer(), LinuxResources: req.GetLinuxResources(),
	}
	// Checked only: the server reshapes the request before plugins see it.
	return a.s.UpdateContainer(ctx, r, received(r))
}

func (a *adaptationService) PostUpdateContainer(ctx context.Context, req *nriv1beta1.AdaptationServicePostUpdateContainerRequest) (*nriv1beta1.AdaptationServicePostUpdateContainerResponse, error) {
	r := &nriv1beta1.PostUpdateContainerRequest{Pod: req.GetPod(), Container: req.GetContainer()}
	errs, err := a.s.PostUpdateContainer(ctx, r, encoded(r))
	if err != nil {
		return nil, err
	}
	return &nriv1beta1.AdaptationServicePostUpdateContainerResponse{PluginErrors: errs}, nil
}

func (a *adaptationService) StopContainer(ctx context.Context, req *nriv1beta1.AdaptationServiceStopContainerRequest) (*nriv1beta1.AdaptationServiceStopContainerResponse, error) {
	r := &nriv1beta1.StopContainerRequest{Pod: req.GetPod(), Container: req.GetContainer()}
	return a.s.StopContainer(ctx, r, encoded(r))
}

func (a *adaptationService) RemoveContainer(ctx context.Context, req *nriv1beta1.AdaptationServiceRemoveContainerRequest) (*nriv1beta1.AdaptationServiceRemoveContainerResponse, error) {
	r := &nriv1beta1.RemoveContainerRequest{Pod: req.GetPod(), Container: req.GetContainer()}
	errs, err := a.s.RemoveContainer(ctx, r, encoded(r))
	if err != nil {
		return nil, err
	}
	return &nriv1beta1.AdaptationServiceRemoveContainerResponse{PluginErrors: errs}, nil
}

// Attach connects one remote runtime: hello, snapshot, then updates relayed
// both ways until the stream ends.
func (a *adaptationService) Attach(stream grpc.BidiStreamingServer[nriv1beta1.AttachRequest, nriv1beta1.AttachResponse]) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	hello := first.GetHello()
	if hello == nil {
		return invalid("hello", "the first Attach message must be hello")
	}
	if hello.GetRuntimeName() == "" {
		return invalid("hello.runtime_name", "must not be empty")
	}
	rt := &remoteRuntime{stream: stream, waiters: map[uint64]chan *nriv1beta1.UpdateResult{}, pages: make(chan *nriv1beta1.StateSnapshot, 16)}
	a.mu.Lock()
	if a.attached != nil {
		a.mu.Unlock()
		return status.Error(codes.AlreadyExists, "a runtime is already attached; one runtime at a time")
	}
	a.attached = rt
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.attached = nil
		a.mu.Unlock()
		a.s.DetachRuntime(rt)
	}()
	node := hello.GetNodeName()
	if node == "" {
		node = a.s.opts.nodeName
	}
	if err := rt.send(&nriv1beta1.AttachResponse{Message: &nriv1beta1.AttachResponse_Attached{
		Attached: &nriv1beta1.Attached{ServerVersion: version.Server(), NodeName: node},
	}}); err != nil {
		return err
	}
	recvErr := make(chan error, 1)
	go func() { recvErr <- rt.receive() }()

	// The runtime keeps sending events while its snapshot is on its way:
	// what they change from now on is applied on top of the snapshot
	// (attach.go), never erased by it.
	ctx := stream.Context()
	j := a.s.beginAttach()
	pods, ctrs, err := rt.snapshot(ctx)
	if err != nil {
		a.s.abortAttach(j)
		return err
	}
	pe, ce := encodeAll(pods, ctrs)
	if err := a.s.attach(ctx, RuntimeInfo{Name: hello.GetRuntimeName(), Version: hello.GetRuntimeVersion()}, rt, pe, ce, j); err != nil {
		return err
	}
	select {
	case err = <-recvErr:
	case <-a.s.stopping:
		// A graceful stop waits for every call: end the stream, as
		// WatchEvents does, so the stop is not held to its bound and the
		// runtime attaches again to the next server.
		return status.Error(codes.Unavailable, "the server is stopping")
	}
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// remoteRuntime is an attached runtime seen through its Attach stream.
type remoteRuntime struct {
	stream  grpc.BidiStreamingServer[nriv1beta1.AttachRequest, nriv1beta1.AttachResponse]
	sendMu  sync.Mutex
	ids     atomic.Uint64
	mu      sync.Mutex
	waiters map[uint64]chan *nriv1beta1.UpdateResult
	pages   chan *nriv1beta1.StateSnapshot
}

func (r *remoteRuntime) send(m *nriv1beta1.AttachResponse) error {
	r.sendMu.Lock()
	defer r.sendMu.Unlock()
	return r.stream.Send(m)
}

// receive reads the runtime's messages until the stream ends.
func (r *remoteRuntime) receive() error {
	defer close(r.pages)
	defer func() {
		r.mu.Lock()
		for id, ch := range r.waiters {
			close(ch)
			delete(r.waiters, id)
		}
		r.mu.Unlock()
	}()
	for {
		m, err := r.stream.Recv()
		if err != nil {
			return err
		}
		switch msg := m.GetMessage().(type) {
		case *nriv1beta1.AttachRequest_Snapshot:
			select {
			case r.pages <- msg.Snapshot:
			case <-r.stream.Context().Done():
				return r.stream.Context().Err()
			}
		case *nriv1beta1.AttachRequest_UpdateResult:
			r.mu.Lock()
			ch := r.waiters[msg.UpdateResult.GetRequestId()]
			delete(r.waiters, msg.UpdateResult.GetRequestId())
			r.mu.Unlock()
			if ch != nil {
				ch <- msg.UpdateResult
			}
		default:
			return invalid("message", "unexpected Attach message %T after hello", msg)
		}
	}
}

// snapshot asks for the runtime's state and collects the pages.
func (r *remoteRuntime) snapshot(ctx context.Context) ([]*nriv1beta1.PodSandbox, []*nriv1beta1.Container, error) {
	id := r.ids.Add(1)
	if err := r.send(&nriv1beta1.AttachResponse{Message: &nriv1beta1.AttachResponse_SnapshotRequest{
		SnapshotRequest: &nriv1beta1.SnapshotRequest{RequestId: id},
	}}); err != nil {
		return nil, nil, err
	}
	var (
		pods []*nriv1beta1.PodSandbox
		ctrs []*nriv1beta1.Container
	)
	for {
		select {
		case pg, ok := <-r.pages:
			if !ok {
				return nil, nil, status.Error(codes.Aborted, "the runtime left before its snapshot was complete")
			}
			if pg.GetRequestId() != id {
				return nil, nil, invalid("snapshot.request_id", "%d does not answer snapshot request %d", pg.GetRequestId(), id)
			}
			pods = append(pods, pg.GetPods()...)
			ctrs = append(ctrs, pg.GetContainers()...)
			if !pg.GetMore() {
				return pods, ctrs, nil
			}
		case <-ctx.Done():
			return nil, nil, status.FromContextError(ctx.Err()).Err()
		}
	}
}

// UpdateContainers implements Runtime: an ApplyUpdates round trip.
func (r *remoteRuntime) UpdateContainers(ctx context.Context, plugin string, updates []*nriv1beta1.ContainerUpdate,
	evictions []*nriv1beta1.ContainerEviction) ([]*nriv1beta1.ContainerUpdate, []*nriv1beta1.ContainerEviction, error) {
	id := r.ids.Add(1)
	ch := make(chan *nriv1beta1.UpdateResult, 1)
	r.mu.Lock()
	r.waiters[id] = ch
	r.mu.Unlock()
	if err := r.send(&nriv1beta1.AttachResponse{Message: &nriv1beta1.AttachResponse_ApplyUpdates{
		ApplyUpdates: &nriv1beta1.ApplyUpdates{RequestId: id, Update: updates, Evict: evictions, Plugin: plugin},
	}}); err != nil {
		return nil, nil, err
	}
	select {
	case res, ok := <-ch:
		if !ok {
			return nil, nil, status.Error(codes.Unavailable, "the runtime detached")
		}
		if res.GetError() != "" {
			return res.GetFailed(), res.GetFailedEvictions(), fmt.Errorf("runtime: %s", res.GetError())
		}
		return res.GetFailed(), res.GetFailedEvictions(), nil
	case <-ctx.Done():
		r.mu.Lock()
		delete(r.waiters, id)
		r.mu.Unlock()
		return nil, nil, status.FromContextError(ctx.Err()).Err()
	}
}
