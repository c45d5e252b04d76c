package transport

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/testwait"
	"github.com/nri-grpc/nri-grpc/server"
)

// lockedBuffer is a log destination tests read.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// configureOnly is a plugin that answers Configure.
type configureOnly struct {
	nriv1beta1.UnimplementedPluginServiceServer
}

func (configureOnly) Configure(context.Context, *nriv1beta1.ConfigureRequest) (*nriv1beta1.ConfigureResponse, error) {
	return &nriv1beta1.ConfigureResponse{}, nil
}

// dial dials a unix endpoint in dir for the test's own uid, with the
// server's dial options that matter here.
func dial(t *testing.T, dir, sock string, log *slog.Logger) *pluginConn {
	t.Helper()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c, err := NewDialer().Dial(context.Background(), server.DialRequest{
		Endpoint:  "unix://" + sock,
		Identity:  server.Identity{Name: "uid:test", UID: uint32(os.Getuid()), Unix: true},
		SocketDir: dir,
		Options:   []grpc.DialOption{grpc.WithDisableRetry(), grpc.WithIdleTimeout(0), codec.DialOption()},
		Log:       log,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c.(*pluginConn)
}

// connListener hands out the connections it accepts.
type connListener struct {
	net.Listener
	conns chan net.Conn
}

func (l *connListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.conns <- c
	}
	return c, err
}

// TestReconnectionGoesThroughTheChecks: the checks are in the connection's
// dialer, not only in the registration. A plugin's connection is lost,
// its socket is replaced by a symbolic link to a socket outside the plugin
// socket directory, and the next call does not reach that socket; once the
// real socket is back, the connection is made again.
func TestReconnectionGoesThroughTheChecks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Bound())
	defer cancel()
	base := t.TempDir()
	dir := filepath.Join(base, "p")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	outside, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(base, "outside.sock"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer outside.Close()

	sock := filepath.Join(dir, "x.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	lis := &connListener{Listener: l, conns: make(chan net.Conn, 4)}
	g := grpc.NewServer(codec.ServerOption())
	nriv1beta1.RegisterPluginServiceServer(g, configureOnly{})
	go func() { _ = g.Serve(lis) }()
	defer g.Stop()

	var logs lockedBuffer
	dc := dial(t, dir, sock, slog.New(slog.NewTextHandler(&logs, nil)).With("plugin", "10-re"))
	call := func(opts ...grpc.CallOption) error {
		return dc.Invoke(ctx, nriv1beta1.PluginService_Configure_FullMethodName, &nriv1beta1.ConfigureRequest{},
			&nriv1beta1.ConfigureResponse{}, append([]grpc.CallOption{codec.CallOption()}, opts...)...)
	}
	if err := call(); err != nil {
		t.Fatalf("first call: %v", err)
	}

	// The plugin drops the connection; wait until nrid's channel saw it.
	(<-lis.conns).Close()
	for st := dc.GetState(); st == connectivity.Ready; st = dc.GetState() {
		if !dc.WaitForStateChange(ctx, st) {
			t.Fatal("the channel stayed ready after its connection closed")
		}
	}
	// The socket's name now leads outside.
	if err := os.Rename(sock, filepath.Join(dir, "moved.sock")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "outside.sock"), sock); err != nil {
		t.Fatal(err)
	}
	err = call()
	if status.Code(err) != codes.Unavailable || !dc.Unreachable(err) || !strings.Contains(err.Error(), unreachableText) {
		t.Fatalf("call through the symbolic link: %v", err)
	}
	if testwait.Pending(t, outside) {
		t.Fatal("the reconnection reached the socket outside the plugin socket directory")
	}
	if log := logs.String(); !strings.Contains(log, "plugin=10-re") || !strings.Contains(log, "x.sock: is a symbolic link") {
		t.Fatalf("the log does not say why:\n%s", log)
	}

	// The real socket is back: the channel connects again, through the
	// same checks.
	if err := os.Remove(sock); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "moved.sock"), sock); err != nil {
		t.Fatal(err)
	}
	dc.ResetConnectBackoff()
	if err := call(grpc.WaitForReady(true)); err != nil {
		t.Fatalf("call once the socket is back: %v", err)
	}
	if len(lis.conns) != 1 {
		t.Fatalf("the plugin accepted %d connections, want 1", len(lis.conns))
	}
}

// TestUnreachableIsNotAPluginsAnswer: a plugin that answers Configure with
// UNAVAILABLE on a ready connection is not "unreachable": its own status is
// passed on.
func TestUnreachableIsNotAPluginsAnswer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Bound())
	defer cancel()
	dir := t.TempDir()
	sock := filepath.Join(dir, "x.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(codec.ServerOption())
	nriv1beta1.RegisterPluginServiceServer(g, nriv1beta1.UnimplementedPluginServiceServer{})
	go func() { _ = g.Serve(l) }()
	defer g.Stop()
	c := dial(t, dir, sock, nil)
	err = c.Invoke(ctx, nriv1beta1.PluginService_Configure_FullMethodName, &nriv1beta1.ConfigureRequest{},
		&nriv1beta1.ConfigureResponse{}, codec.CallOption())
	if status.Code(err) != codes.Unimplemented || c.Unreachable(err) {
		t.Fatalf("got %v", err)
	}
}

func TestSplitTCPEndpoint(t *testing.T) {
	for ep, want := range map[string]string{
		"dns:///plugin.example.com:443": "plugin.example.com 443",
		"tcp://10.1.2.3:8443":           "10.1.2.3 8443",
		"10.1.2.3:8443":                 "10.1.2.3 8443",
		"tcp://[fd00::1]:443":           "fd00::1 443",
		"dns:///Plugin-1.example:1":     "Plugin-1.example 1",
		"tcp://0.0.0.0:443":             "",
		"tcp://[::]:443":                "",
		"tcp://[::ffff:0.0.0.0]:443":    "",
		"tcp://host:0":                  "",
		"tcp://host:65536":              "",
		"tcp://host:http":               "",
		"tcp://host":                    "",
		"tcp://:443":                    "",
		"dns://8.8.8.8/host:443":        "",
		"dns:///host:443/path":          "",
		"tcp://ho st:443":               "",
		"tcp://host..example:443":       "",
		"unix-abstract:x":               "",
	} {
		host, port, err := SplitTCPEndpoint(ep)
		got := ""
		if err == nil {
			got = host + " " + port
		}
		if got != want {
			t.Errorf("%s: got %q %v, want %q", ep, got, err, want)
		}
	}
}
