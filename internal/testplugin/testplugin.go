// Package testplugin is a real gRPC NRI plugin for tests: it serves
// PluginService on its own unix socket, registers through a server's
// RuntimeService, checks the instance id of every call, and records every
// call in a Log that several plugins can share, so tests can assert the
// exact order of events across plugins.
package testplugin

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/flowctl"
	"github.com/nri-grpc/nri-grpc/nri"
)

// Call is one call a plugin received.
type Call struct {
	// Plugin is the full name of the plugin ("NN-name").
	Plugin string
	// Method is the short method name ("CreateContainer").
	Method string
	// InstanceID is the nri-instance-id metadata of the call.
	InstanceID string
	// Req is the request.
	Req proto.Message
}

// String renders the call as "NN-name:Method".
func (c Call) String() string { return c.Plugin + ":" + c.Method }

// Log records calls, in the order they arrive, for several plugins.
type Log struct {
	mu      sync.Mutex
	calls   []Call
	changed chan struct{}
}

// NewLog returns an empty log.
func NewLog() *Log { return &Log{changed: make(chan struct{})} }

// Add records a call (for plugins other than Plugin, e.g. classic ones).
func (l *Log) Add(c Call) {
	l.mu.Lock()
	l.calls = append(l.calls, c)
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

// Calls returns a copy of the recorded calls, optionally only those whose
// method is in methods.
func (l *Log) Calls(methods ...string) []Call {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Call
	for _, c := range l.calls {
		if len(methods) == 0 || slices.Contains(methods, c.Method) {
			out = append(out, c)
		}
	}
	return out
}

// Strings returns the calls as "NN-name:Method", optionally only those
// whose method is in methods.
func (l *Log) Strings(methods ...string) []string {
	var out []string
	for _, c := range l.Calls(methods...) {
		out = append(out, c.String())
	}
	return out
}

// Of returns the calls of one plugin (full name), optionally only those of
// the given methods.
func (l *Log) Of(plugin string, methods ...string) []Call {
	var out []Call
	for _, c := range l.Calls(methods...) {
		if c.Plugin == plugin {
			out = append(out, c)
		}
	}
	return out
}

// Reset forgets the recorded calls.
func (l *Log) Reset() {
	l.mu.Lock()
	l.calls = nil
	l.mu.Unlock()
}

// Wait blocks until pred holds for the recorded calls or ctx ends.
func (l *Log) Wait(ctx context.Context, pred func([]Call) bool) error {
	for {
		l.mu.Lock()
		ok := pred(l.calls)
		ch := l.changed
		l.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for calls: %w (have %v)", ctx.Err(), l.Strings())
		}
	}
}

// WaitFor blocks until the log holds the call "NN-name:Method" n times.
func (l *Log) WaitFor(ctx context.Context, call string, n int) error {
	return l.Wait(ctx, func(calls []Call) bool {
		k := 0
		for _, c := range calls {
			if c.String() == call {
				k++
			}
		}
		return k >= n
	})
}

// Plugin is a test plugin. Set the fields, then call Start.
type Plugin struct {
	// Name and Index identify the plugin.
	Name, Index string
	// Events is the subscription mask returned by Configure (0: all).
	Events int32
	// FailurePolicy is returned by Configure.
	FailurePolicy *nriv1beta1.FailurePolicy
	// Capabilities and Timeouts are declared at registration.
	Capabilities *nriv1beta1.Capabilities
	Timeouts     *nriv1beta1.Timeouts
	// Status and StatusReason are the status registered with.
	Status       nriv1beta1.PluginStatus
	StatusReason string
	// Selectors are declared at registration (RegisterPluginRequest.selectors).
	Selectors []*nriv1beta1.EventSelector
	// Log records the calls; a new one is made when nil.
	Log *Log
	// Endpoint is the socket path to serve on; empty picks one in the
	// plugin directory given to Start.
	Endpoint string
	// ServerOptions are added to the plugin's gRPC server (they may replace
	// its codec, to misbehave on purpose).
	ServerOptions []grpc.ServerOption
	// DialOptions are added to the options of the connection to the
	// server (they may replace the defaults).
	DialOptions []grpc.DialOption

	// Handlers, all optional. Handle is called for every call before the
	// specific handler; a non-nil error is returned to the server.
	Handle            func(ctx context.Context, method string, req proto.Message) error
	OnCreateContainer func(ctx context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error)
	OnUpdateContainer func(ctx context.Context, req *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.UpdateContainerResponse, error)
	OnStopContainer   func(ctx context.Context, req *nriv1beta1.StopContainerRequest) (*nriv1beta1.StopContainerResponse, error)
	OnSynchronize     func(ctx context.Context, req *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error)
	OnValidate        func(ctx context.Context, req *nriv1beta1.ValidateContainerAdjustmentRequest) (*nriv1beta1.ValidateContainerAdjustmentResponse, error)
	OnShutdown        func(req *nriv1beta1.ShutdownRequest)

	mu         sync.Mutex
	instanceID string
	registered *nriv1beta1.Registered
	srv        *grpc.Server
	cc         *grpc.ClientConn
	cancel     context.CancelFunc
	sessionEnd chan error
	shutdowns  []*nriv1beta1.ShutdownRequest
}

// Full returns "NN-name".
func (p *Plugin) Full() string { return p.Index + "-" + p.Name }

// Start serves PluginService on a socket in pluginDir and registers with
// the server listening on serverSocket. It returns when the server answered
// the registration: with Registered, or with the refusal as an error.
func (p *Plugin) Start(ctx context.Context, serverSocket, pluginDir string) (*nriv1beta1.Registered, error) {
	if p.Log == nil {
		p.Log = NewLog()
	}
	sock := p.Endpoint
	if sock == "" {
		sock = filepath.Join(pluginDir, fmt.Sprintf("%s-%d.sock", p.Full(), time.Now().UnixNano()%1e6))
	}
	_ = os.Remove(sock)
	lis, err := net.Listen("unix", sock)
	if err != nil {
		return nil, err
	}
	p.srv = grpc.NewServer(append(append([]grpc.ServerOption{codec.ServerOption()}, flowctl.ServerOptions()...), p.ServerOptions...)...)
	nriv1beta1.RegisterPluginServiceServer(p.srv, &service{p: p})
	go func() { _ = p.srv.Serve(lis) }()

	cc, err := grpc.NewClient("unix://"+serverSocket, append(append(flowctl.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()), codec.DialOption()), p.DialOptions...)...)
	if err != nil {
		p.srv.Stop()
		return nil, err
	}
	p.cc = cc
	sctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	stream, err := nriv1beta1.NewRuntimeServiceClient(cc).RegisterPlugin(sctx, &nriv1beta1.RegisterPluginRequest{
		PluginName:   p.Name,
		PluginIdx:    p.Index,
		NriVersion:   "testplugin",
		Endpoint:     "unix://" + sock,
		Capabilities: p.Capabilities,
		Timeouts:     p.Timeouts,
		Status:       p.Status,
		StatusReason: p.StatusReason,
		Selectors:    p.Selectors,
	})
	if err != nil {
		p.Stop()
		return nil, err
	}
	first := make(chan error, 1)
	p.sessionEnd = make(chan error, 1)
	go func() {
		rsp, err := stream.Recv()
		if err != nil {
			first <- err
			p.sessionEnd <- err
			return
		}
		p.mu.Lock()
		p.registered = rsp.GetRegistered()
		p.mu.Unlock()
		first <- nil
		for {
			if _, err := stream.Recv(); err != nil {
				p.sessionEnd <- err
				return
			}
		}
	}()
	select {
	case err := <-first:
		if err != nil {
			p.Stop()
			return nil, err
		}
	case <-ctx.Done():
		p.Stop()
		return nil, ctx.Err()
	}
	return p.Registered(), nil
}

// Service returns the plugin's PluginService implementation without
// serving or registering it: the same instance check, log and handlers as
// Start's, for callers that serve it themselves (the conformance harness's
// driver, which SDK executors forward their calls to).
func (p *Plugin) Service() nriv1beta1.PluginServiceServer {
	if p.Log == nil {
		p.Log = NewLog()
	}
	return &service{p: p}
}

// Registered returns the server's answer to the registration.
func (p *Plugin) Registered() *nriv1beta1.Registered {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.registered
}

// InstanceID returns the instance id of the last Configure.
func (p *Plugin) InstanceID() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.instanceID
}

// SessionEnded returns the channel that receives how the registration
// session ended (io.EOF for a clean end).
func (p *Plugin) SessionEnded() <-chan error { return p.sessionEnd }

// Shutdowns returns the Shutdown calls received.
func (p *Plugin) Shutdowns() []*nriv1beta1.ShutdownRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*nriv1beta1.ShutdownRequest(nil), p.shutdowns...)
}

// EndSession ends the registration session (cancels the RegisterPlugin
// call) and keeps the connection and the plugin's server.
func (p *Plugin) EndSession() {
	if p.cancel != nil {
		p.cancel()
	}
}

// CloseConn closes the connection to the server (gRPC's orderly close)
// without ending the registration session first.
func (p *Plugin) CloseConn() {
	if p.cc != nil {
		_ = p.cc.Close()
	}
}

// Stop ends the registration session and stops serving.
func (p *Plugin) Stop() {
	if p.cancel != nil {
		p.cancel()
	}
	if p.srv != nil {
		p.srv.Stop()
	}
	if p.cc != nil {
		_ = p.cc.Close()
	}
}

// UpdateContainers asks the server for unsolicited updates.
func (p *Plugin) UpdateContainers(ctx context.Context, req *nriv1beta1.UpdateContainersRequest) (*nriv1beta1.UpdateContainersResponse, error) {
	ctx = metadata.AppendToOutgoingContext(ctx, nri.MetadataInstanceID, p.InstanceID())
	return nriv1beta1.NewRuntimeServiceClient(p.cc).UpdateContainers(ctx, req)
}

// SetStatus reports the plugin's status (RuntimeService.SetPluginStatus).
func (p *Plugin) SetStatus(ctx context.Context, st nriv1beta1.PluginStatus, reason string) error {
	ctx = metadata.AppendToOutgoingContext(ctx, nri.MetadataInstanceID, p.InstanceID())
	_, err := nriv1beta1.NewRuntimeServiceClient(p.cc).SetPluginStatus(ctx, &nriv1beta1.SetPluginStatusRequest{Status: st, Reason: reason})
	return err
}

// RequestResync asks for the state again (RuntimeService.RequestResync)
// and returns the epoch that will carry it.
func (p *Plugin) RequestResync(ctx context.Context, reason string) (uint64, error) {
	ctx = metadata.AppendToOutgoingContext(ctx, nri.MetadataInstanceID, p.InstanceID())
	rsp, err := nriv1beta1.NewRuntimeServiceClient(p.cc).RequestResync(ctx, &nriv1beta1.RequestResyncRequest{Reason: reason})
	return rsp.GetEpoch(), err
}

type service struct {
	nriv1beta1.UnimplementedPluginServiceServer
	p *Plugin
}

// enter checks the instance id, records the call and runs Handle.
func (s *service) enter(ctx context.Context, method string, req proto.Message) error {
	md, _ := metadata.FromIncomingContext(ctx)
	id := ""
	if v := md.Get(nri.MetadataInstanceID); len(v) == 1 {
		id = v[0]
	}
	if method == "Configure" {
		s.p.mu.Lock()
		s.p.instanceID = req.(*nriv1beta1.ConfigureRequest).GetInstanceId()
		s.p.mu.Unlock()
	}
	if cur := s.p.InstanceID(); id != cur {
		return status.Errorf(codes.Unavailable, "call for instance %q, this is %q", id, cur)
	}
	s.p.Log.Add(Call{Plugin: s.p.Full(), Method: method, InstanceID: id, Req: req})
	if s.p.Handle != nil {
		return s.p.Handle(ctx, method, req)
	}
	return nil
}

func (s *service) Configure(ctx context.Context, req *nriv1beta1.ConfigureRequest) (*nriv1beta1.ConfigureResponse, error) {
	if err := s.enter(ctx, "Configure", req); err != nil {
		return nil, err
	}
	return &nriv1beta1.ConfigureResponse{Events: s.p.Events, FailurePolicy: s.p.FailurePolicy}, nil
}

func (s *service) Synchronize(ctx context.Context, req *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
	if err := s.enter(ctx, "Synchronize", req); err != nil {
		return nil, err
	}
	if s.p.OnSynchronize != nil {
		return s.p.OnSynchronize(ctx, req)
	}
	return &nriv1beta1.SynchronizeResponse{More: req.GetMore()}, nil
}

func (s *service) Shutdown(ctx context.Context, req *nriv1beta1.ShutdownRequest) (*nriv1beta1.ShutdownResponse, error) {
	if err := s.enter(ctx, "Shutdown", req); err != nil {
		return nil, err
	}
	s.p.mu.Lock()
	s.p.shutdowns = append(s.p.shutdowns, req)
	s.p.mu.Unlock()
	if s.p.OnShutdown != nil {
		s.p.OnShutdown(req)
	}
	return &nriv1beta1.ShutdownResponse{}, nil
}

func (s *service) RunPodSandbox(ctx context.Context, req *nriv1beta1.RunPodSandboxRequest) (*nriv1beta1.RunPodSandboxResponse, error) {
	return &nriv1beta1.RunPodSandboxResponse{}, s.enter(ctx, "RunPodSandbox", req)
}

func (s *service) UpdatePodSandbox(ctx context.Context, req *nriv1beta1.UpdatePodSandboxRequest) (*nriv1beta1.UpdatePodSandboxResponse, error) {
	return &nriv1beta1.UpdatePodSandboxResponse{}, s.enter(ctx, "UpdatePodSandbox", req)
}

func (s *service) PostUpdatePodSandbox(ctx context.Context, req *nriv1beta1.PostUpdatePodSandboxRequest) (*nriv1beta1.PostUpdatePodSandboxResponse, error) {
	return &nriv1beta1.PostUpdatePodSandboxResponse{}, s.enter(ctx, "PostUpdatePodSandbox", req)
}

func (s *service) StopPodSandbox(ctx context.Context, req *nriv1beta1.StopPodSandboxRequest) (*nriv1beta1.StopPodSandboxResponse, error) {
	return &nriv1beta1.StopPodSandboxResponse{}, s.enter(ctx, "StopPodSandbox", req)
}

func (s *service) RemovePodSandbox(ctx context.Context, req *nriv1beta1.RemovePodSandboxRequest) (*nriv1beta1.RemovePodSandboxResponse, error) {
	return &nriv1beta1.RemovePodSandboxResponse{}, s.enter(ctx, "RemovePodSandbox", req)
}

func (s *service) CreateContainer(ctx context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
	if err := s.enter(ctx, "CreateContainer", req); err != nil {
		return nil, err
	}
	if s.p.OnCreateContainer != nil {
		return s.p.OnCreateContainer(ctx, req)
	}
	return &nriv1beta1.CreateContainerResponse{}, nil
}

func (s *service) PostCreateContainer(ctx context.Context, req *nriv1beta1.PostCreateContainerRequest) (*nriv1beta1.PostCreateContainerResponse, error) {
	return &nriv1beta1.PostCreateContainerResponse{}, s.enter(ctx, "PostCreateContainer", req)
}

func (s *service) StartContainer(ctx context.Context, req *nriv1beta1.StartContainerRequest) (*nriv1beta1.StartContainerResponse, error) {
	return &nriv1beta1.StartContainerResponse{}, s.enter(ctx, "StartContainer", req)
}

func (s *service) PostStartContainer(ctx context.Context, req *nriv1beta1.PostStartContainerRequest) (*nriv1beta1.PostStartContainerResponse, error) {
	return &nriv1beta1.PostStartContainerResponse{}, s.enter(ctx, "PostStartContainer", req)
}

func (s *service) UpdateContainer(ctx context.Context, req *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.UpdateContainerResponse, error) {
	if err := s.enter(ctx, "UpdateContainer", req); err != nil {
		return nil, err
	}
	if s.p.OnUpdateContainer != nil {
		return s.p.OnUpdateContainer(ctx, req)
	}
	return &nriv1beta1.UpdateContainerResponse{}, nil
}

func (s *service) PostUpdateContainer(ctx context.Context, req *nriv1beta1.PostUpdateContainerRequest) (*nriv1beta1.PostUpdateContainerResponse, error) {
	return &nriv1beta1.PostUpdateContainerResponse{}, s.enter(ctx, "PostUpdateContainer", req)
}

func (s *service) StopContainer(ctx context.Context, req *nriv1beta1.StopContainerRequest) (*nriv1beta1.StopContainerResponse, error) {
	if err := s.enter(ctx, "StopContainer", req); err != nil {
		return nil, err
	}
	if s.p.OnStopContainer != nil {
		return s.p.OnStopContainer(ctx, req)
	}
	return &nriv1beta1.StopContainerResponse{}, nil
}

func (s *service) RemoveContainer(ctx context.Context, req *nriv1beta1.RemoveContainerRequest) (*nriv1beta1.RemoveContainerResponse, error) {
	return &nriv1beta1.RemoveContainerResponse{}, s.enter(ctx, "RemoveContainer", req)
}

func (s *service) ValidateContainerAdjustment(ctx context.Context, req *nriv1beta1.ValidateContainerAdjustmentRequest) (*nriv1beta1.ValidateContainerAdjustmentResponse, error) {
	if err := s.enter(ctx, "ValidateContainerAdjustment", req); err != nil {
		return nil, err
	}
	if s.p.OnValidate != nil {
		return s.p.OnValidate(ctx, req)
	}
	return &nriv1beta1.ValidateContainerAdjustmentResponse{}, nil
}

// Reason returns the google.rpc.ErrorInfo reason of an error status, or "".
func Reason(err error) string {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetReason()
		}
	}
	return ""
}
