package transport_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/grpcreg"
	"github.com/nri-grpc/nri-grpc/internal/sockets"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/internal/testwait"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/transport"
)

// TestMain doubles as a listener run as another uid
// (TestEndpointOfAnotherUIDIsRefused).
func TestMain(m *testing.M) {
	if path := os.Getenv(listenAsEnv); path != "" {
		os.Exit(listenAndWait(path))
	}
	os.Exit(m.Run())
}

// harness is a real server with nrid's Dialer on a unix socket with
// UnixCredentials, and its plugin socket directory.
type harness struct {
	t         *testing.T
	srv       *server.Server
	sock      string
	pluginDir string
}

func newHarness(t *testing.T, opts ...server.Option) *harness {
	t.Helper()
	dir, err := os.MkdirTemp("", "nri-")
	if err != nil {
		t.Fatal(err)
	}
	pluginDir := filepath.Join(dir, "p")
	if err := os.Mkdir(pluginDir, 0o755); err != nil {
		t.Fatal(err)
	}
	all := append([]server.Option{
		server.WithPluginSocketDir(pluginDir),
		server.WithDialer(transport.NewDialer()),
		server.WithLogger(testplugin.Logger(t)),
	}, opts...)
	srv, err := server.New(all...)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "nri.sock")
	lis, err := sockets.Listen(sock, sockets.DefaultListenOptions)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(grpc.Creds(transport.UnixCredentials()), codec.ServerOption())
	nriv1beta1.RegisterRuntimeServiceServer(grpcreg.Registrar(g), srv.RuntimeService())
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testwait.Bound())
		defer cancel()
		_ = srv.Shutdown(ctx)
		g.Stop()
		_ = os.RemoveAll(dir)
	})
	return &harness{t: t, srv: srv, sock: sock, pluginDir: pluginDir}
}

// plugin starts and registers a test plugin.
func (h *harness) plugin(idx, name string) *testplugin.Plugin {
	h.t.Helper()
	p := &testplugin.Plugin{Name: name, Index: idx}
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Bound())
	defer cancel()
	_, err := p.Start(ctx, h.sock, h.pluginDir)
	h.t.Cleanup(p.Stop)
	if err != nil {
		h.t.Fatalf("registering %s-%s: %v", idx, name, err)
	}
	return p
}

// registerRaw opens a registration session by hand and returns its first
// message or error.
func registerRaw(h *harness, req *nriv1beta1.RegisterPluginRequest) (*nriv1beta1.RegisterPluginResponse, error) {
	cc, err := grpc.NewClient("unix://"+h.sock, grpc.WithTransportCredentials(insecure.NewCredentials()), codec.DialOption())
	if err != nil {
		h.t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Bound())
	defer cancel()
	stream, err := nriv1beta1.NewRuntimeServiceClient(cc).RegisterPlugin(ctx, req)
	if err != nil {
		return nil, err
	}
	return stream.Recv()
}

// logLines collects a server's log for assertions and passes it on to
// t.Log while the test runs.
type logLines struct {
	mu    sync.Mutex
	t     testing.TB
	done  bool
	lines []string
}

// captureLog returns the server option that logs into a new logLines.
func captureLog(t testing.TB) (server.Option, *logLines) {
	l := &logLines{t: t}
	t.Cleanup(func() {
		l.mu.Lock()
		l.done = true
		l.mu.Unlock()
	})
	return server.WithLogger(slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))), l
}

func (l *logLines) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	line := strings.TrimSuffix(string(b), "\n")
	l.lines = append(l.lines, line)
	if !l.done {
		l.t.Log(line)
	}
	return len(b), nil
}

// grep returns the lines that contain every one of subs.
func (l *logLines) grep(subs ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		ok := true
		for _, s := range subs {
			ok = ok && strings.Contains(line, s)
		}
		if ok {
			out = append(out, line)
		}
	}
	return out
}

// unreachable checks that err is the refusal of an endpoint nrid could not
// connect to, and returns the whole status, encoded, to compare refusals
// of different causes byte for byte.
func unreachable(t *testing.T, what string, err error) string {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.Unavailable || testplugin.Reason(err) != "REGISTRATION_REFUSAL_CONFIGURE_FAILED" ||
		st.Message() != "endpoint: nrid could not connect to the plugin's endpoint; the reason is in nrid's log" {
		t.Errorf("%s: got %v (reason %q), want the unreachable-endpoint refusal", what, err, testplugin.Reason(err))
	}
	b, merr := proto.MarshalOptions{Deterministic: true}.Marshal(st.Proto())
	if merr != nil {
		t.Fatal(merr)
	}
	return string(b)
}

// listenUnix listens on path for the rest of the test.
func listenUnix(t *testing.T, path string) *net.UnixListener {
	t.Helper()
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// TestEndpointSymlinkEscapeIsRefusedBeforeConnecting: a symbolic link in
// the plugin socket directory to a socket outside it, and a symbolic link
// to a directory outside it on the way to the socket, are refused before
// nrid connects to anything; the socket outside sees no connection.
func TestEndpointSymlinkEscapeIsRefusedBeforeConnecting(t *testing.T) {
	logOpt, logs := captureLog(t)
	h := newHarness(t, logOpt)
	outsideDir := filepath.Join(filepath.Dir(h.pluginDir), "outside")
	if err := os.Mkdir(outsideDir, 0o755); err != nil {
		t.Fatal(err)
	}
	outside := listenUnix(t, filepath.Join(outsideDir, "target.sock"))
	if err := os.Symlink(filepath.Join(outsideDir, "target.sock"), filepath.Join(h.pluginDir, "link.sock")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outsideDir, filepath.Join(h.pluginDir, "dir")); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"link.sock", "dir/target.sock"} {
		_, err := registerRaw(h, &nriv1beta1.RegisterPluginRequest{PluginName: "x", PluginIdx: "10",
			Endpoint: "unix://" + filepath.Join(h.pluginDir, rel)})
		unreachable(t, rel, err)
		if got := logs.grep("could not connect to a plugin's endpoint", "plugin=10-x", "identity=uid:", "is a symbolic link"); len(got) == 0 {
			t.Errorf("%s: the log does not say why", rel)
		}
		if testwait.Pending(t, outside) {
			t.Fatalf("%s: nrid connected to the socket outside the plugin socket directory", rel)
		}
	}
	if n := len(h.srv.Plugins()); n != 0 {
		t.Errorf("%d plugins registered", n)
	}
}

// TestEndpointRefusalsAreUniform: whatever is wrong at the endpoint — no
// file, a symbolic link, a file, a directory, a fifo, a socket nobody
// listens on, a socket of another uid, something that does not speak gRPC —
// the registrant gets the same status, byte for byte, and only nrid's log
// tells the causes apart.
func TestEndpointRefusalsAreUniform(t *testing.T) {
	logOpt, logs := captureLog(t)
	h := newHarness(t, logOpt)
	at := func(name string) string { return filepath.Join(h.pluginDir, name) }
	if err := os.WriteFile(at("file.sock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(at("dir.sock"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(at("fifo.sock"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(at("file.sock"), at("link.sock")); err != nil {
		t.Fatal(err)
	}
	stale := listenUnix(t, at("stale.sock"))
	stale.SetUnlinkOnClose(false)
	stale.Close()
	// Not gRPC: it accepts and answers in HTTP/1.
	http1 := listenUnix(t, at("http1.sock"))
	go func() {
		for {
			c, err := http1.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n"))
			c.Close()
		}
	}()
	causes := map[string]string{
		"missing.sock": "no such file or directory",
		"link.sock":    "is a symbolic link",
		"file.sock":    "is not a unix socket: it is a regular file",
		"dir.sock":     "is not a unix socket: it is a directory",
		"fifo.sock":    "is not a unix socket: it is a fifo",
		"stale.sock":   "connection refused",
	}
	if os.Getuid() == 0 {
		// A socket another uid owns (the listener is ours: only the file's
		// owner is wrong).
		l := listenUnix(t, at("foreign.sock"))
		defer l.Close()
		if err := os.Chown(at("foreign.sock"), 65534, 65534); err != nil {
			t.Fatal(err)
		}
		causes["foreign.sock"] = "is owned by another uid: uid 65534, want uid 0"
	}
	var first, firstName string
	check := func(name string, err error) {
		got := unreachable(t, name, err)
		if first == "" {
			first, firstName = got, name
		} else if got != first {
			t.Errorf("the refusal for %s differs from the one for %s:\n%v\n%v", name, firstName, err, status.Convert(err).Proto())
		}
	}
	for name, cause := range causes {
		_, err := registerRaw(h, &nriv1beta1.RegisterPluginRequest{PluginName: "x", PluginIdx: "10", Endpoint: "unix://" + at(name)})
		check(name, err)
		if got := logs.grep("could not connect to a plugin's endpoint", "plugin=10-x", name, cause); len(got) == 0 {
			t.Errorf("%s: no log line names the cause %q", name, cause)
		}
	}
	// The HTTP/1 server passes every check of the dialer; the connection
	// then fails in gRPC, and the registration's log line says how.
	_, err := registerRaw(h, &nriv1beta1.RegisterPluginRequest{PluginName: "x", PluginIdx: "10", Endpoint: "unix://" + at("http1.sock")})
	check("http1.sock", err)
	if got := logs.grep("registration refused: could not connect to the plugin's endpoint", "plugin=10-x", "http1.sock"); len(got) == 0 {
		t.Error("http1.sock: no log line for the registration")
	}
	if n := len(h.srv.Plugins()); n != 0 {
		t.Errorf("%d plugins registered", n)
	}
	// A plugin at a good endpoint still registers.
	h.plugin("10", "x")

	// A listener that never accepts: the connection waits in its backlog
	// until the registration times out. (A server of its own, for the short
	// registration timeout.)
	slowLog, slowLogs := captureLog(t)
	slow := newHarness(t, slowLog, server.WithRegistrationTimeout(200*time.Millisecond))
	listenUnix(t, filepath.Join(slow.pluginDir, "silent.sock"))
	_, err = registerRaw(slow, &nriv1beta1.RegisterPluginRequest{PluginName: "x", PluginIdx: "10",
		Endpoint: "unix://" + filepath.Join(slow.pluginDir, "silent.sock")})
	check("silent.sock", err)
	if got := slowLogs.grep("registration refused: could not connect to the plugin's endpoint", "plugin=10-x", "silent.sock", "DeadlineExceeded"); len(got) == 0 {
		t.Error("silent.sock: no log line for the timeout")
	}
}

// TestEndpointSyntaxRefusalsStayPrecise: what is wrong with the request
// itself is named.
func TestEndpointSyntaxRefusalsStayPrecise(t *testing.T) {
	h := newHarness(t)
	long := "unix://" + h.pluginDir + "/" + strings.Repeat("x", 120) + ".sock"
	for ep, want := range map[string]string{
		"unix://relative.sock":                      "is not an absolute path",
		"unix://" + h.pluginDir + "/../escape.sock": "outside the plugin socket directory",
		long: "longer than the 107 bytes",
		"unix://" + filepath.Dir(h.pluginDir) + "/x": "outside the plugin socket directory",
	} {
		_, err := registerRaw(h, &nriv1beta1.RegisterPluginRequest{PluginName: "x", PluginIdx: "10", Endpoint: ep})
		if status.Code(err) != codes.InvalidArgument || testplugin.Reason(err) != "REGISTRATION_REFUSAL_INVALID_ENDPOINT" ||
			!strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want INVALID_ENDPOINT %q", ep, err, want)
		}
	}
}

// listenAsEnv makes the test binary listen on a unix socket and wait (run
// as another uid by TestEndpointOfAnotherUIDIsRefused).
const listenAsEnv = "NRI_TEST_LISTEN_AS"

func listenAndWait(path string) int {
	l, err := net.Listen("unix", path)
	if err != nil {
		_, _ = os.Stderr.WriteString(err.Error() + "\n") // the parent test reads the exit code
		return 1
	}
	if _, err := os.Stdout.WriteString("listening\n"); err != nil {
		return 1
	}
	for {
		c, err := l.Accept()
		if err != nil {
			return 0
		}
		c.Close()
	}
}

// TestEndpointOfAnotherUIDIsRefused: a socket file of another uid than the
// registrant's is refused before nrid connects to it, and a socket file of
// the registrant's on which another uid listens after connecting (the
// peer's SO_PEERCRED); the registrant gets the same refusal for both (the
// uniform one of an endpoint nrid could not connect to), and the log tells
// which.
func TestEndpointOfAnotherUIDIsRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a listener as another uid")
	}
	logOpt, logs := captureLog(t)
	h := newHarness(t, logOpt)
	if err := os.Chmod(h.pluginDir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(h.pluginDir), 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(h.pluginDir, "foreign.sock")
	// The go build directory is private: copy the test binary where the
	// other uid can run it.
	exe := filepath.Join(filepath.Dir(h.pluginDir), "listener")
	self, _ := os.Executable()
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), listenAsEnv+"="+sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "listening\n" {
		t.Fatalf("child: %q %v", line, err)
	}
	// The socket file is uid 65534's.
	_, err = registerRaw(h, &nriv1beta1.RegisterPluginRequest{PluginName: "x", PluginIdx: "10", Endpoint: "unix://" + sock})
	owner := unreachable(t, "a socket file of uid 65534", err)
	if len(logs.grep("plugin=10-x", "foreign.sock: is owned by another uid: uid 65534, want uid 0")) == 0 {
		t.Error("the log does not name the socket file's owner")
	}
	// The file is the registrant's now, but uid 65534 still listens on it.
	if err := os.Chown(sock, 0, 0); err != nil {
		t.Fatal(err)
	}
	_, err = registerRaw(h, &nriv1beta1.RegisterPluginRequest{PluginName: "x", PluginIdx: "10", Endpoint: "unix://" + sock})
	if peer := unreachable(t, "a socket served by uid 65534", err); peer != owner {
		t.Errorf("the refusals differ: %v", err)
	}
	if len(logs.grep("plugin=10-x", "foreign.sock is served by uid 65534", "the registrant is uid 0")) == 0 {
		t.Error("the log does not name the listening process's uid")
	}
}

// TestDialRefusals: what is wrong with the request is refused by Dial
// itself, before anything is dialed, with a precise error; only a unix
// endpoint for a registrant without unix credentials is PERMISSION_DENIED.
func TestDialRefusals(t *testing.T) {
	dir := t.TempDir()
	uid := server.Identity{Name: "uid:0", UID: 0, Unix: true}
	cert := server.Identity{Name: "cert:ops"}
	for _, c := range []struct {
		endpoint string
		id       server.Identity
		code     codes.Code
		want     string
	}{
		{"unix://" + dir + "/x.sock", cert, codes.PermissionDenied, `identity "cert:ops" has no unix credentials`},
		{"", uid, codes.Unknown, "must not be empty"},
		{"unix:" + dir + "/x.sock", uid, codes.Unknown, "is not a unix:// target"},
		{"tcp://plugin.example:443", cert, codes.Unknown, "only with TLS configured"},
	} {
		_, err := transport.NewDialer().Dial(context.Background(), server.DialRequest{Endpoint: c.endpoint, Identity: c.id, SocketDir: dir})
		if status.Code(err) != c.code || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q as %s: got %v, want %v %q", c.endpoint, c.id.Name, err, c.code, c.want)
		}
	}
	_, err := transport.NewDialer(transport.WithTLS(&tls.Config{})).Dial(context.Background(),
		server.DialRequest{Endpoint: "tcp://0.0.0.0:443", Identity: cert, SocketDir: dir})
	if err == nil || !strings.Contains(err.Error(), "the unspecified address") {
		t.Errorf("the unspecified address with TLS: %v", err)
	}
}
