package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/testwait"
	"github.com/nri-grpc/nri-grpc/server"
)

// testTimeout bounds every wait of these tests (nothing here sleeps): the
// time left before the test binary's deadline (internal/testwait).
func testTimeout() time.Duration { return testwait.Bound() }

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(childMain(mode))
	}
	if os.Getenv(server.EnvPluginEndpoint) != "" {
		os.Exit(launchedMain())
	}
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// logBuffer collects nrid's log and lets tests wait for a line.
type logBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newLogBuffer() *logBuffer { return &logBuffer{changed: make(chan struct{})} }

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.buf.Write(p)
	close(l.changed)
	l.changed = make(chan struct{})
	return n, err
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// wait returns the first match of re in the log, waiting for it until
// done is closed or the test timeout.
func (l *logBuffer) wait(t *testing.T, re *regexp.Regexp, done <-chan error) []string {
	t.Helper()
	timeout := time.NewTimer(testTimeout())
	defer timeout.Stop()
	for {
		l.mu.Lock()
		m := re.FindStringSubmatch(l.buf.String())
		ch := l.changed
		l.mu.Unlock()
		if m != nil {
			return m
		}
		select {
		case <-ch:
		case err := <-done:
			t.Fatalf("nrid returned %v before logging %s; log:\n%s", err, re, l.String())
		case <-timeout.C:
			t.Fatalf("timed out waiting for %s in the log:\n%s", re, l.String())
		}
	}
}

// reMsg matches a log line with message msg.
func reMsg(msg string) *regexp.Regexp { return regexp.MustCompile(`msg="?` + regexp.QuoteMeta(msg)) }

// reLog compiles a pattern for logBuffer.wait.
func reLog(pattern string) *regexp.Regexp { return regexp.MustCompile(pattern) }

// nrid is a running nrid.
type nrid struct {
	dir     string // short temp directory, mode 0755
	sock    string
	plugins string // plugin socket directory
	tcp     string // TCP address, when configured
	logs    *logBuffer
	cancel  context.CancelFunc
	done    chan error
	stopped bool
}

// tempDir makes a short directory (socket paths are limited) that other
// users may traverse.
func tempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "nri-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// startNrid runs nrid in-process with the configuration cfg (a TOML
// document; "" for none) plus --socket and --plugin-socket-dir in a fresh
// directory, and returns once it serves.
func startNrid(t *testing.T, cfg string, args ...string) *nrid {
	t.Helper()
	return startNridAt(t, tempDir(t), cfg, args...)
}

// startNridAt is startNrid in dir: two nrids started in the same
// directory share their sockets and configuration (a takeover).
func startNridAt(t *testing.T, dir, cfg string, args ...string) *nrid {
	t.Helper()
	n := &nrid{dir: dir, logs: newLogBuffer(), done: make(chan error, 1)}
	n.sock = filepath.Join(n.dir, "nrid.sock")
	n.plugins = filepath.Join(n.dir, "plugins")
	all := []string{"--socket", n.sock, "--plugin-socket-dir", n.plugins, "--log-level", "debug"}
	if cfg != "" {
		path := filepath.Join(n.dir, "nrid.toml")
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		all = append(all, "--config", path)
	}
	all = append(all, args...)
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	go func() { n.done <- run(ctx, all, io.Discard, n.logs) }()
	t.Cleanup(func() { n.stop(t) })
	m := n.logs.wait(t, regexp.MustCompile(`msg=serving [^\n]*`), n.done)
	if tm := regexp.MustCompile(`tcp=(\S+)`).FindStringSubmatch(m[0]); tm != nil {
		n.tcp = tm[1]
	}
	return n
}

// stop stops nrid gracefully and checks that it returned cleanly and left
// no socket behind.
func (n *nrid) stop(t *testing.T) {
	t.Helper()
	if n.stopped {
		return
	}
	n.stopped = true
	n.cancel()
	select {
	case err := <-n.done:
		if err != nil {
			t.Errorf("nrid returned %v", err)
		}
	case <-time.After(testTimeout()):
		t.Errorf("nrid did not stop; log:\n%s", n.logs.String())
	}
	if _, err := os.Lstat(n.sock); err == nil {
		t.Errorf("nrid left its socket %s behind", n.sock)
	}
	if t.Failed() || os.Getenv("NRID_TEST_LOGS") != "" {
		t.Logf("nrid log:\n%s", n.logs.String())
	}
}

// waitTakenOver waits until nrid returned after a takeover by another
// nrid, and checks that it returned cleanly.
func (n *nrid) waitTakenOver(t *testing.T) {
	t.Helper()
	select {
	case err := <-n.done:
		n.stopped = true
		if err != nil {
			t.Fatalf("the old nrid returned %v", err)
		}
	case <-time.After(testTimeout()):
		t.Fatalf("the old nrid did not stop; log:\n%s", n.logs.String())
	}
}

// conn dials nrid's unix socket (the caller's identity: uid 0).
func (n *nrid) conn(t *testing.T) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient("unix://"+n.sock, grpc.WithTransportCredentials(insecure.NewCredentials()), codec.DialOption())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// healthOf returns the status of service on cc.
func healthOf(t *testing.T, cc *grpc.ClientConn, service string) (healthpb.HealthCheckResponse_ServingStatus, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout())
	defer cancel()
	rsp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	return rsp.GetStatus(), err
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout())
	t.Cleanup(cancel)
	return ctx
}

// --- certificates ---

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

var serial int64

func newCA(t *testing.T, cn string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a certificate and key (PEM) for cn: a server certificate for
// 127.0.0.1, or a client certificate.
func (ca *testCA) issue(t *testing.T, cn string, server bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		// Servers also dial out with their certificate: nrid to TCP plugins.
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// tlsFiles writes a CA, a server certificate and key into dir and returns
// the CA and the [tcp] keys for them.
func tlsFiles(t *testing.T, dir string) (*testCA, string) {
	t.Helper()
	ca := newCA(t, "nrid test CA")
	cert, key := ca.issue(t, "nrid", true)
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	return ca, fmt.Sprintf("cert_file = %q\nkey_file = %q\nclient_ca_file = %q\n",
		write("server.pem", cert), write("server-key.pem", key), write("ca.pem", ca.pem))
}

// tcpConn dials nrid's TCP listener with a client certificate issued by ca
// for cn (no certificate when ca is nil).
func tcpConn(t *testing.T, addr string, serverCA *testCA, ca *testCA, cn string, extra ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(serverCA.cert)
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13}
	if ca != nil {
		certPEM, keyPEM := ca.issue(t, cn, false)
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	opts := append([]grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(cfg)), codec.DialOption()}, extra...)
	cc, err := grpc.NewClient(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// bearer is per-RPC credentials carrying a bearer token.
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

func (bearer) RequireTransportSecurity() bool { return true }

// --- child processes as another uid ---

const childEnv = "NRID_TEST_CHILD"

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

// childBinary returns a copy of the test binary that every user may run.
func childBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		self, err := os.Executable()
		if err != nil {
			binErr = err
			return
		}
		if binDir, binErr = os.MkdirTemp("", "nrid-bin-"); binErr != nil {
			return
		}
		if binErr = os.Chmod(binDir, 0o755); binErr != nil {
			return
		}
		data, err := os.ReadFile(self)
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(binDir, "nrid.test")
		binErr = os.WriteFile(binPath, data, 0o755)
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// childResult is one line a child prints.
type childResult struct {
	Call   string `json:"call"`
	Code   string `json:"code"`
	Msg    string `json:"msg"`
	Reason string `json:"reason,omitempty"`
	// Registered: the identity and failure policy nrid granted.
	Identity string `json:"identity,omitempty"`
	Fail     bool   `json:"fail,omitempty"`
}

// child is a test binary running as another uid.
type child struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	results chan childResult
	stderr  bytes.Buffer
	exited  chan struct{}
}

// startChild runs the test binary in mode as uid (and gid) with env.
func startChild(t *testing.T, uid uint32, mode string, env map[string]string) *child {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("running a child as another uid needs root")
	}
	c := &child{results: make(chan childResult, 16), exited: make(chan struct{})}
	c.cmd = exec.Command(childBinary(t))
	c.cmd.Env = []string{childEnv + "=" + mode, "PATH=/usr/bin:/bin", "GORACE=halt_on_error=1"}
	for k, v := range env {
		c.cmd.Env = append(c.cmd.Env, k+"="+v)
	}
	c.cmd.Dir = "/"
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}, Pdeathsig: syscall.SIGKILL}
	c.cmd.Stderr = &c.stderr
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var r childResult
			if json.Unmarshal(sc.Bytes(), &r) == nil {
				c.results <- r
			}
		}
		close(c.results)
	}()
	// Wait closes the stdout pipe: only once every line is read, or a
	// child that writes its results and exits at once loses them (seen
	// under load: "the child ended without a result").
	go func() { <-scanned; _ = c.cmd.Wait(); close(c.exited) }()
	t.Cleanup(func() { c.stop(t) })
	return c
}

// next returns the child's next result.
func (c *child) next(t *testing.T) childResult {
	t.Helper()
	select {
	case r, ok := <-c.results:
		if !ok {
			t.Fatalf("the child ended without a result; stderr:\n%s", c.stderr.String())
		}
		return r
	case <-time.After(testTimeout()):
		t.Fatalf("no result from the child; stderr:\n%s", c.stderr.String())
	}
	return childResult{}
}

// stop closes the child's stdin (it stops its plugin and exits) and waits.
func (c *child) stop(t *testing.T) {
	_ = c.stdin.Close()
	select {
	case <-c.exited:
	case <-time.After(testTimeout()):
		_ = c.cmd.Process.Kill()
		<-c.exited
		t.Errorf("the child did not exit; stderr:\n%s", c.stderr.String())
	}
}

// childConfig is the part of a configuration that lets other users reach
// nrid: a world-connectable socket and a plugin directory where anybody may
// create a socket.
const childConfig = `
[server]
socket_mode = "0666"
plugin_socket_dir_mode = "1777"
`

func childEnvFor(n *nrid, extra map[string]string) map[string]string {
	env := map[string]string{"NRID_SOCK": n.sock, "NRID_PLUGIN_DIR": n.plugins}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

func must(t *testing.T, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Fatalf(format, args...)
	}
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
