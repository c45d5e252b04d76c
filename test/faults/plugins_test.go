package faults_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/internal/testwait"
)

// healthyPlugin returns a plugin that subscribes to every lifecycle event,
// records its calls in log and answers at once. It asks for a long timeout
// and concurrent calls, so that neither a loaded machine nor the load's
// concurrency ever makes it fail, and for resynchronization, so that a test
// sees in its log when a runtime's attach took effect.
func healthyPlugin(idx, name string, log *testplugin.Log) *testplugin.Plugin {
	return &testplugin.Plugin{
		Name: name, Index: idx, Log: log, Events: lifecycleMask,
		Capabilities: &nriv1beta1.Capabilities{MaxConcurrentCalls: 16, Resync: true},
		Timeouts:     &nriv1beta1.Timeouts{Request: durationpb.New(time.Minute)},
	}
}

// register starts p against n and fails the test if it is not registered.
// p is stopped when the test ends.
func register(t testing.TB, n *nrid, p *testplugin.Plugin) *nriv1beta1.Registered {
	t.Helper()
	reg, err := tryRegister(t, n, p)
	if err != nil {
		t.Fatalf("registering %s: %v", p.Full(), err)
	}
	return reg
}

// tryRegister starts p against n and returns the server's answer. p is
// stopped when the test ends.
func tryRegister(t testing.TB, n *nrid, p *testplugin.Plugin) (*nriv1beta1.Registered, error) {
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Bound())
	defer cancel()
	reg, err := p.Start(ctx, n.sock, n.plugins)
	t.Cleanup(p.Stop)
	return reg, err
}

// garbageCodec is a plugin server codec that answers CreateContainer with
// bytes that do not decode: the adjustment field's length is a varint that
// never ends.
type garbageCodec struct{ codec.Codec }

// Marshal encodes v, or garbage for a CreateContainerResponse.
func (g garbageCodec) Marshal(v any) (mem.BufferSlice, error) {
	if _, ok := v.(*nriv1beta1.CreateContainerResponse); ok {
		return mem.BufferSlice{mem.SliceBuffer([]byte{0x0a, 0x80, 0x80, 0x80})}, nil
	}
	return g.Codec.Marshal(v)
}

// connTracker is plugin server credentials (no security, as the plugins'
// own) that remember the server's connections, so a test can cut them in
// the middle of a call.
type connTracker struct {
	credentials.TransportCredentials
	mu    sync.Mutex
	conns []net.Conn
}

func newConnTracker() *connTracker {
	return &connTracker{TransportCredentials: insecure.NewCredentials()}
}

// ServerHandshake accepts the connection and remembers it.
func (c *connTracker) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ServerHandshake(raw)
	if err == nil {
		c.mu.Lock()
		c.conns = append(c.conns, conn)
		c.mu.Unlock()
	}
	return conn, info, err
}

// Clone is needed by the interface; the tracker is shared on purpose.
func (c *connTracker) Clone() credentials.TransportCredentials { return c }

// cut closes every connection the server accepted.
func (c *connTracker) cut() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.conns {
		_ = conn.Close()
	}
	n := len(c.conns)
	c.conns = nil
	return n
}

// hang blocks until ctx ends and returns its error as a status: a plugin
// that never answers, and never answers success at its deadline.
func hang(ctx context.Context) error {
	<-ctx.Done()
	return ctxStatus(ctx)
}

// hangUntil blocks until ctx ends or release is closed.
func hangUntil(ctx context.Context, release <-chan struct{}) error {
	select {
	case <-ctx.Done():
		return ctxStatus(ctx)
	case <-release:
		return errReleased
	}
}

// hangCreate is a plugin Handle that answers every method at once but
// CreateContainer, which it holds in wait; each held call is signalled on
// inCall (without blocking: one pending signal is kept).
func hangCreate(inCall chan<- struct{}, wait func(context.Context) error) func(context.Context, string, proto.Message) error {
	return func(ctx context.Context, method string, _ proto.Message) error {
		if method != "CreateContainer" {
			return nil
		}
		select {
		case inCall <- struct{}{}:
		default:
		}
		return wait(ctx)
	}
}

// errReleased is what a hanging plugin answers when the test releases it.
var errReleased = status.Error(codes.Unavailable, "released by the test")

// ctxStatus is the status of an ended context: DEADLINE_EXCEEDED or
// CANCELLED.
func ctxStatus(ctx context.Context) error { return status.FromContextError(ctx.Err()).Err() }
