package flowctl_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/nri-grpc/nri-grpc/internal/flowctl"
)

// frameCounter parses the HTTP/2 frames read from a connection and counts
// PING frames (type 0x6).
type frameCounter struct {
	mu      sync.Mutex
	preface int // bytes of the client preface still to skip
	hdr     []byte
	skip    int // payload bytes of the current frame still to skip
	pings   int
}

func (f *frameCounter) feed(b []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(b) > 0 {
		switch {
		case f.preface > 0:
			n := min(f.preface, len(b))
			f.preface -= n
			b = b[n:]
		case f.skip > 0:
			n := min(f.skip, len(b))
			f.skip -= n
			b = b[n:]
		default:
			n := min(9-len(f.hdr), len(b))
			f.hdr = append(f.hdr, b[:n]...)
			b = b[n:]
			if len(f.hdr) == 9 {
				if f.hdr[3] == 0x6 {
					f.pings++
				}
				f.skip = int(f.hdr[0])<<16 | int(f.hdr[1])<<8 | int(f.hdr[2])
				f.hdr = f.hdr[:0]
			}
		}
	}
}

func (f *frameCounter) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pings
}

type countingConn struct {
	net.Conn
	c *frameCounter
}

func (c countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.c.feed(b[:n])
	return n, err
}

type countingListener struct {
	net.Listener
	c *frameCounter
}

func (l countingListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{conn, l.c}, nil
}

// pings makes 20 unary calls and returns the PING frames the server read
// and the client read.
func pings(t *testing.T, srvOpts []grpc.ServerOption, dialOpts []grpc.DialOption) (toServer, toClient int) {
	t.Helper()
	dir, err := os.MkdirTemp("", "nri-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	atServer := &frameCounter{preface: 24}
	atClient := &frameCounter{}
	g := grpc.NewServer(srvOpts...)
	healthpb.RegisterHealthServer(g, health.NewServer())
	go func() { _ = g.Serve(countingListener{lis, atServer}) }()
	defer g.Stop()

	dial := func(ctx context.Context, _ string) (net.Conn, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, "unix", sock)
		if err != nil {
			return nil, err
		}
		return countingConn{conn, atClient}, nil
	}
	cc, err := grpc.NewClient("passthrough:///s", append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithContextDialer(dial),
	}, dialOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	hc := healthpb.NewHealthClient(cc)
	for range 20 {
		if _, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	return atServer.count(), atClient.count()
}

func TestStaticWindowsSendNoPings(t *testing.T) {
	toServer, toClient := pings(t, flowctl.ServerOptions(), flowctl.DialOptions())
	if toServer != 0 || toClient != 0 {
		t.Fatalf("with static windows: %d PING frames reached the server and %d the client, want none", toServer, toClient)
	}
}

// TestDefaultWindowsPing shows what the options remove: with gRPC-go's
// defaults, every call's DATA frames make the receivers probe with PINGs.
func TestDefaultWindowsPing(t *testing.T) {
	toServer, toClient := pings(t, nil, nil)
	if toServer == 0 || toClient == 0 {
		t.Fatalf("with default windows: %d PING frames reached the server and %d the client; expected BDP probes both ways", toServer, toClient)
	}
	t.Logf("default windows, 20 calls: %d PINGs to the server, %d to the client", toServer, toClient)
}
