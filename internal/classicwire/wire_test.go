package classicwire_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1alpha1 "github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/net/multiplex"
	"github.com/containerd/ttrpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/classicwire"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/testwait"
)

// wait bounds what a test waits for by the test binary's deadline
// (internal/testwait).
func wait() time.Duration { return testwait.Bound() }

// fakeRuntime is the Runtime service of the upstream end.
type fakeRuntime struct {
	// entered and gate, when set before the calls, make UpdateContainers
	// report its arrival and wait before it answers.
	entered chan struct{}
	gate    chan struct{}

	mu       sync.Mutex
	register []*v1alpha1.RegisterPluginRequest
	failWith error
}

func (f *fakeRuntime) RegisterPlugin(_ context.Context, req *v1alpha1.RegisterPluginRequest) (*v1alpha1.Empty, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.register = append(f.register, req)
	return &v1alpha1.Empty{}, nil
}

func (f *fakeRuntime) UpdateContainers(_ context.Context, req *v1alpha1.UpdateContainersRequest) (*v1alpha1.UpdateContainersResponse, error) {
	if f.gate != nil {
		f.entered <- struct{}{}
		<-f.gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failWith != nil {
		return nil, f.failWith
	}
	return &v1alpha1.UpdateContainersResponse{Failed: req.GetUpdate()[:1]}, nil
}

// pair is a classicwire.Conn connected to the upstream runtime's transport:
// the multiplexer of github.com/containerd/nri with a ttrpc client on the
// plugin connection and a ttrpc server (fakeRuntime) on the runtime
// connection, as pkg/adaptation sets them up.
type pair struct {
	conn    *classicwire.Conn
	plugin  v1alpha1.PluginService
	runtime *fakeRuntime
	raw     net.Conn // the runtime's end of the socket
	closed  chan struct{}
}

func newPair(t *testing.T, h classicwire.Handler) *pair {
	t.Helper()
	dir, err := os.MkdirTemp("", "nri-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	lis, err := net.Listen("unix", filepath.Join(dir, "nri.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := lis.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	sock, err := net.Dial("unix", lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	p := &pair{runtime: &fakeRuntime{}, closed: make(chan struct{})}
	var once sync.Once
	p.conn = classicwire.New(sock, h, classicwire.WithOnClose(func() { once.Do(func() { close(p.closed) }) }))
	t.Cleanup(func() { _ = p.conn.Close() })

	p.raw = <-accepted
	if p.raw == nil {
		t.Fatal("accept failed")
	}
	// Blocked until both conns are set up, as pkg/adaptation does: the
	// multiplexer drops frames for a conn nobody listens on yet.
	mux := multiplex.Multiplex(p.raw, multiplex.WithBlockedRead())
	t.Cleanup(func() { _ = mux.Close() })
	pc, err := mux.Open(multiplex.PluginServiceConn)
	if err != nil {
		t.Fatal(err)
	}
	client := ttrpc.NewClient(pc)
	t.Cleanup(func() { _ = client.Close() })
	p.plugin = v1alpha1.NewPluginClient(client)
	rl, err := mux.Listen(multiplex.RuntimeServiceConn)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ttrpc.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	v1alpha1.RegisterRuntimeService(srv, p.runtime)
	go func() { _ = srv.Serve(context.Background(), rl) }()
	t.Cleanup(func() { _ = srv.Close() })
	mux.Unblock()
	return p
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), wait())
	t.Cleanup(cancel)
	return c
}

// TestRuntimeCallsPlugin: the upstream ttrpc client's call reaches the
// handler with its method, payload (a 5.5 kB request, which ttrpc's 4 kB
// write buffer splits over several frames), metadata and deadline, and the
// handler's answer comes back.
func TestRuntimeCallsPlugin(t *testing.T) {
	type seen struct {
		method   string
		payload  []byte
		md       string
		deadline bool
	}
	got := make(chan seen, 1)
	p := newPair(t, func(ctx context.Context, method string, payload []byte) ([]byte, error) {
		md, _ := ttrpc.GetMetadataValue(ctx, "traceparent")
		_, dl := ctx.Deadline()
		got <- seen{method, payload, md, dl}
		return (&v1alpha1.CreateContainerResponse{Adjust: &v1alpha1.ContainerAdjustment{
			Annotations: map[string]string{"a": "b"}}}).MarshalVT()
	})
	beta := fixture.CreateContainerRequest(1, 0)
	b, _ := beta.MarshalVT()
	req := &v1alpha1.CreateContainerRequest{}
	if err := req.UnmarshalVT(b); err != nil {
		t.Fatal(err)
	}
	c := ttrpc.WithMetadata(ctx(t), ttrpc.MD{"traceparent": {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}})
	rsp, err := p.plugin.CreateContainer(c, req)
	if err != nil {
		t.Fatal(err)
	}
	if rsp.GetAdjust().GetAnnotations()["a"] != "b" {
		t.Fatalf("response %v", rsp)
	}
	s := <-got
	if s.method != "CreateContainer" || !s.deadline || !strings.HasPrefix(s.md, "00-0af7") {
		t.Fatalf("handler saw method %q, deadline %v, traceparent %q", s.method, s.deadline, s.md)
	}
	dec := &nriv1beta1.CreateContainerRequest{}
	if err := dec.UnmarshalVT(s.payload); err != nil || !dec.EqualVT(beta) {
		t.Fatalf("payload differs from the request (%v)", err)
	}
}

// TestHandlerErrorsKeepTheirCode: a gRPC status error of the handler
// reaches the runtime with its code and message.
func TestHandlerErrorsKeepTheirCode(t *testing.T) {
	p := newPair(t, func(context.Context, string, []byte) ([]byte, error) {
		return nil, status.Error(codes.PermissionDenied, "no GPUs for you")
	})
	_, err := p.plugin.StartContainer(ctx(t), &v1alpha1.StartContainerRequest{})
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "no GPUs for you") {
		t.Fatalf("error %v, want PERMISSION_DENIED with the message", err)
	}
}

// TestConcurrentCallsAnsweredByStream: calls the runtime makes at once are
// all answered, each with its own answer.
func TestConcurrentCallsAnsweredByStream(t *testing.T) {
	p := newPair(t, func(_ context.Context, _ string, payload []byte) ([]byte, error) {
		req := &v1alpha1.CreateContainerRequest{}
		if err := req.UnmarshalVT(payload); err != nil {
			return nil, err
		}
		return (&v1alpha1.CreateContainerResponse{Adjust: &v1alpha1.ContainerAdjustment{
			Annotations: map[string]string{"id": req.GetContainer().GetId()}}}).MarshalVT()
	})
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprint("ctr-", i)
			rsp, err := p.plugin.CreateContainer(ctx(t), &v1alpha1.CreateContainerRequest{Container: &v1alpha1.Container{Id: id}})
			if err == nil && rsp.GetAdjust().GetAnnotations()["id"] != id {
				err = fmt.Errorf("call for %s got the answer for %s", id, rsp.GetAdjust().GetAnnotations()["id"])
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestPluginCallsRuntime: Call reaches the upstream ttrpc server and
// decodes its answer; its error statuses come back as gRPC status errors.
func TestPluginCallsRuntime(t *testing.T) {
	p := newPair(t, func(context.Context, string, []byte) ([]byte, error) { return nil, nil })
	if err := p.conn.Call(ctx(t), "RegisterPlugin", &v1alpha1.RegisterPluginRequest{PluginName: "nri-grpc", PluginIdx: "00"}, &v1alpha1.Empty{}); err != nil {
		t.Fatal(err)
	}
	p.runtime.mu.Lock()
	reg := p.runtime.register
	p.runtime.mu.Unlock()
	if len(reg) != 1 || reg[0].GetPluginName() != "nri-grpc" || reg[0].GetPluginIdx() != "00" {
		t.Fatalf("runtime saw registrations %v", reg)
	}
	up := &v1alpha1.UpdateContainersRequest{Update: []*v1alpha1.ContainerUpdate{{ContainerId: "c1"}, {ContainerId: "c2"}}}
	rsp := &v1alpha1.UpdateContainersResponse{}
	if err := p.conn.Call(ctx(t), "UpdateContainers", up, rsp); err != nil {
		t.Fatal(err)
	}
	if len(rsp.GetFailed()) != 1 || rsp.GetFailed()[0].GetContainerId() != "c1" {
		t.Fatalf("response %v", rsp)
	}
	p.runtime.mu.Lock()
	p.runtime.failWith = status.Error(codes.FailedPrecondition, "busy")
	p.runtime.mu.Unlock()
	err := p.conn.Call(ctx(t), "UpdateContainers", up, rsp)
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "busy") {
		t.Fatalf("error %v, want FAILED_PRECONDITION busy", err)
	}
}

// TestRuntimeGoneEndsTheConnection: when the runtime's end closes, the
// connection ends, the close callback runs and calls fail as unavailable.
func TestRuntimeGoneEndsTheConnection(t *testing.T) {
	p := newPair(t, func(context.Context, string, []byte) ([]byte, error) { return nil, nil })
	_ = p.raw.Close()
	select {
	case <-p.closed:
	case <-time.After(wait()):
		t.Fatal("close callback not called")
	}
	<-p.conn.Done()
	err := p.conn.Call(ctx(t), "RegisterPlugin", &v1alpha1.RegisterPluginRequest{}, &v1alpha1.Empty{})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("call on a closed connection: %v, want UNAVAILABLE", err)
	}
}

// TestOversizedFrameIsRefused: a frame header claiming more than the
// multiplexer's maximum ends the connection without allocating it.
func TestOversizedFrameIsRefused(t *testing.T) {
	p := newPair(t, func(context.Context, string, []byte) ([]byte, error) { return nil, nil })
	var hdr [8]byte
	binary.BigEndian.PutUint32(hdr[0:4], classicwire.PluginConn)
	binary.BigEndian.PutUint32(hdr[4:8], 1<<31)
	if _, err := p.raw.Write(hdr[:]); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.conn.Done():
	case <-time.After(wait()):
		t.Fatal("connection still open")
	}
	if err := p.conn.Err(); err == nil || errors.Is(err, net.ErrClosed) || !strings.Contains(err.Error(), "maximum") {
		t.Fatalf("connection ended with %v, want the frame size refused", err)
	}
}
