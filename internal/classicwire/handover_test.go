package classicwire_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	v1alpha1 "github.com/containerd/nri/pkg/api"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nri-grpc/nri-grpc/internal/classicwire"
)

// socketPair returns both ends of a unix stream socket pair: the
// runtime's as a net.Conn, the plugin's as the file Adopt takes.
func socketPair(t *testing.T) (net.Conn, *os.File) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	rf := os.NewFile(uintptr(fds[0]), "runtime")
	defer rf.Close()
	rt, err := net.FileConn(rf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	return rt, os.NewFile(uintptr(fds[1]), "plugin")
}

// recorder is a handler that records the request payloads it served, in
// order, across every Conn it serves for.
type recorder struct {
	mu  sync.Mutex
	got []string
	ch  chan struct{}
}

func (r *recorder) serve(_ context.Context, _ string, payload []byte) ([]byte, error) {
	r.mu.Lock()
	r.got = append(r.got, string(payload))
	r.mu.Unlock()
	r.ch <- struct{}{}
	return []byte{0x08, 0x01}, nil
}

// stream is the runtime's side of n requests (payload "req-i", stream id
// 2i+1) on PluginConn, cut into frames of 1 to 23 bytes with frames of an
// unknown conn between them, as one byte stream.
func stream(rng *rand.Rand, n int) []byte {
	var msgs []byte
	for i := range n {
		msgs = append(msgs, message(uint32(2*i+1), 1, 0, requestFor("CreateContainer", fmt.Appendf(nil, "req-%d", i)))...)
	}
	var out []byte
	for _, f := range split(classicwire.PluginConn, msgs, func() int { return 1 + rng.IntN(23) }) {
		out = append(out, f...)
		if rng.IntN(4) == 0 {
			out = append(out, muxFrame(7, []byte("noise"))...)
		}
	}
	return out
}

// TestDetachAnywhereLosesNothing: a connection handed over at every byte
// of the stream — in a frame header, in a message header, in a payload, in
// a frame of an unknown conn, with bytes still buffered — and adopted by a
// new Conn serves every request exactly once, in order, and the runtime
// gets every answer on its one socket.
func TestDetachAnywhereLosesNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 1))
	const n = 3
	data := stream(rng, n)
	for cut := range len(data) + 1 {
		t.Run(fmt.Sprint("cut", cut), func(t *testing.T) {
			rt, f := socketPair(t)
			answers := make(chan [3]uint32, n)
			go drain(rt, answers)
			rec := &recorder{ch: make(chan struct{}, n)}
			// The first owner read data[:cut]: it adopts that as pending
			// and is handed over at once, wherever its reader is.
			c1, err := classicwire.Adopt(&classicwire.Detached{File: f, Pending: data[:cut], NextID: 1}, rec.serve)
			if err != nil {
				t.Fatal(err)
			}
			d, err := c1.Detach(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			if !errors.Is(c1.Err(), classicwire.ErrDetached) {
				t.Fatalf("detached conn ended with %v, want ErrDetached", c1.Err())
			}
			c2, err := classicwire.Adopt(d, rec.serve)
			if err != nil {
				t.Fatal(err)
			}
			defer c2.Close()
			if _, err := rt.Write(data[cut:]); err != nil {
				t.Fatal(err)
			}
			for range n {
				select {
				case <-rec.ch:
				case <-time.After(wait()):
					t.Fatalf("served %q, want %d requests", rec.got, n)
				}
			}
			for i := range n {
				if want := fmt.Sprintf("req-%d", i); rec.got[i] != want {
					t.Fatalf("request %d served as %q (all: %q)", i, rec.got[i], rec.got)
				}
				a := <-answers
				if a != [3]uint32{classicwire.PluginConn, uint32(2*i + 1), 2} {
					t.Fatalf("answer %d: conn, stream, type = %v", i, a)
				}
			}
			select {
			case <-rec.ch:
				t.Fatalf("a request was served twice: %q", rec.got)
			default:
			}
		})
	}
}

// TestDetachWaitsForTheRequestBeingServed: Detach returns only after the
// runtime's request in progress was answered, by the old owner.
func TestDetachWaitsForTheRequestBeingServed(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	p := newPair(t, func(context.Context, string, []byte) ([]byte, error) {
		close(entered)
		<-release
		return (&v1alpha1.StartContainerResponse{}).MarshalVT()
	})
	callErr := make(chan error, 1)
	go func() {
		_, err := p.plugin.StartContainer(ctx(t), &v1alpha1.StartContainerRequest{})
		callErr <- err
	}()
	<-entered
	detached := make(chan *classicwire.Detached, 1)
	go func() {
		d, err := p.conn.Detach(ctx(t))
		if err != nil {
			t.Error(err)
		}
		detached <- d
	}()
	select {
	case <-detached:
		t.Fatal("Detach returned while the request was being served")
	case <-p.conn.Done():
		t.Fatal("connection ended while the request was being served")
	default:
	}
	close(release)
	if err := <-callErr; err != nil {
		t.Fatalf("the request being served when Detach began failed: %v", err)
	}
	d := <-detached
	if d == nil {
		t.FailNow()
	}
	_ = d.File.Close()
}

// TestDetachWaitsForCallsInFlight: a call to the runtime in flight delays
// Detach until its answer; a call started meanwhile is refused as
// UNAVAILABLE; after Adopt, calls continue on the same socket with the
// next stream id, and the runtime's calls reach the new owner.
func TestDetachWaitsForCallsInFlight(t *testing.T) {
	served := make(chan string, 4)
	p := newPair(t, func(_ context.Context, method string, _ []byte) ([]byte, error) {
		served <- "old " + method
		return (&v1alpha1.StartContainerResponse{}).MarshalVT()
	})
	// The runtime holds its answer to UpdateContainers until the gate
	// opens; the call is in flight once the runtime has it.
	p.runtime.entered, p.runtime.gate = make(chan struct{}, 1), make(chan struct{})
	callDone := make(chan error, 1)
	go func() {
		callDone <- p.conn.Call(ctx(t), "UpdateContainers",
			&v1alpha1.UpdateContainersRequest{Update: []*v1alpha1.ContainerUpdate{{ContainerId: "c1"}}}, &v1alpha1.UpdateContainersResponse{})
	}()
	<-p.runtime.entered
	detached := make(chan *classicwire.Detached, 1)
	go func() {
		d, err := p.conn.Detach(ctx(t))
		if err != nil {
			t.Error(err)
		}
		detached <- d
	}()
	// Once Detach began, new calls are refused (RegisterPlugin is not
	// held: a probe before Detach began is answered at once).
	var refused error
	deadline := time.Now().Add(wait())
	for time.Now().Before(deadline) {
		refused = p.conn.Call(ctx(t), "RegisterPlugin", &v1alpha1.RegisterPluginRequest{}, &v1alpha1.Empty{})
		if status.Code(refused) == codes.Unavailable {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if status.Code(refused) != codes.Unavailable {
		t.Fatalf("call during Detach: %v, want UNAVAILABLE", refused)
	}
	select {
	case <-detached:
		t.Fatal("Detach returned while a call to the runtime was in flight")
	default:
	}
	close(p.runtime.gate) // the runtime answers
	if err := <-callDone; err != nil {
		t.Fatalf("the call in flight when Detach began: %v", err)
	}
	d := <-detached
	if d == nil {
		t.FailNow()
	}
	if d.NextID < 3 || d.NextID%2 != 1 {
		t.Fatalf("next stream id %d", d.NextID)
	}
	c2, err := classicwire.Adopt(d, func(_ context.Context, method string, _ []byte) ([]byte, error) {
		served <- "new " + method
		return (&v1alpha1.StartContainerResponse{}).MarshalVT()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := p.plugin.StartContainer(ctx(t), &v1alpha1.StartContainerRequest{}); err != nil {
		t.Fatalf("the runtime's call after the handover: %v", err)
	}
	if got := <-served; got != "new StartContainer" {
		t.Fatalf("the runtime's call after the handover was served by %q", got)
	}
	if err := c2.Call(ctx(t), "RegisterPlugin", &v1alpha1.RegisterPluginRequest{PluginName: "after"}, &v1alpha1.Empty{}); err != nil {
		t.Fatalf("call to the runtime after the handover: %v", err)
	}
	select {
	case <-p.closed: // the old owner's end: its close callback ran
	default:
		t.Fatal("the old owner's close callback did not run at the handover")
	}
}
