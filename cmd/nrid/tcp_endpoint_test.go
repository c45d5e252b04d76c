package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/internal/testwait"
)

// tcpEndpointPolicy lets cert:remote register "remote" at 127.0.0.1 and
// "elsewhere" at 10.0.0.0/8 only.
const tcpEndpointPolicy = `
[[policy]]
identity = "cert:remote"
plugins = ["remote"]
events = ["all"]
endpoints = ["tcp"]
tcp_hosts = ["127.0.0.1"]

[[policy]]
identity = "cert:remote"
plugins = ["elsewhere"]
events = ["all"]
endpoints = ["tcp"]
tcp_hosts = ["10.0.0.0/8", "plugins.example.com"]
`

// startTCPNrid runs nrid with a TCP listener and tcpEndpointPolicy.
func startTCPNrid(t *testing.T) (*nrid, *testCA) {
	t.Helper()
	dir := tempDir(t)
	ca, tcp := tlsFiles(t, dir)
	n := startNrid(t, fmt.Sprintf("[tcp]\naddress = \"127.0.0.1:0\"\n%s\n%s", tcp, tcpEndpointPolicy))
	if n.tcp == "" {
		t.Fatal("nrid did not log its TCP address")
	}
	return n, ca
}

// registerOver opens a registration session on cc and returns its first
// message's error.
func registerOver(t *testing.T, cc *grpc.ClientConn, name, endpoint string) error {
	t.Helper()
	stream, err := nriv1beta1.NewRuntimeServiceClient(cc).RegisterPlugin(testCtx(t), &nriv1beta1.RegisterPluginRequest{
		PluginName: name, PluginIdx: "10", Endpoint: endpoint})
	if err != nil {
		return err
	}
	_, err = stream.Recv()
	return err
}

// serveTCP accepts connections on 127.0.0.1 and hands each to handle, until
// the test ends. It returns the port.
func serveTCP(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

// serveTLS is serveTCP with a TLS server certificate for cn issued by ca,
// offering ALPN protos; after the handshake it runs then.
func serveTLS(t *testing.T, ca *testCA, cn string, protos []string, then func(*tls.Conn)) string {
	t.Helper()
	certPEM, keyPEM := ca.issue(t, cn, true)
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}, NextProtos: protos, MinVersion: tls.VersionTLS12}
	return serveTCP(t, func(c net.Conn) {
		tc := tls.Server(c, cfg)
		if err := tc.HandshakeContext(context.Background()); err != nil {
			return
		}
		then(tc)
	})
}

// TestTCPEndpointRefusalsAreUniform: whatever goes wrong in connecting to
// an allowed TCP endpoint — nothing listens, the port does not speak TLS,
// the certificate is another identity's or from another CA, TLS without
// HTTP/2, HTTP/2 over TLS that is not gRPC — and whatever goes wrong at a
// unix endpoint, the registrant gets the same status, byte for byte; only
// nrid's log tells the causes apart.
func TestTCPEndpointRefusalsAreUniform(t *testing.T) {
	n, ca := startTCPNrid(t)
	remote := tcpConn(t, n.tcp, ca, ca, "remote")
	otherCA := newCA(t, "another CA")
	// garbage answers with HTTP/1 and then keeps the connection open until
	// nrid closes it: closing first would race nrid's write of its own
	// preface (a broken pipe instead of the preface error in the log).
	garbage := func(tc *tls.Conn) {
		_, _ = tc.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
		_, _ = io.Copy(io.Discard, tc)
	}

	causes := []struct {
		what, port, log string
	}{
		{"nothing listens", freePort(t), "connection refused"},
		{"not TLS", serveTCP(t, func(c net.Conn) { _, _ = c.Write([]byte("SSH-2.0-OpenSSH_9.6\r\n")) }), "TLS handshake with 127.0.0.1:"},
		{"another identity's certificate", serveTLS(t, ca, "impostor", []string{"h2"}, garbage), `the certificate is for \"impostor\", the registrant is \"cert:remote\"`},
		{"another CA", serveTLS(t, otherCA, "remote", []string{"h2"}, garbage), "certificate signed by unknown authority"},
		{"TLS with HTTP/1 only", serveTLS(t, ca, "remote", []string{"http/1.1"}, garbage), "no application protocol"},
		{"TLS without ALPN", serveTLS(t, ca, "remote", nil, garbage), `negotiated application protocol \"\" in TLS, not HTTP/2`},
		{"not gRPC", serveTLS(t, ca, "remote", []string{"h2"}, garbage), "error reading server preface"},
	}
	var first *status.Status
	same := func(what string, err error) {
		t.Helper()
		st := status.Convert(err)
		must(t, st.Code() == codes.Unavailable && testplugin.Reason(err) == "REGISTRATION_REFUSAL_CONFIGURE_FAILED" &&
			st.Message() == "endpoint: nrid could not connect to the plugin's endpoint; the reason is in nrid's log",
			"%s: got %v", what, err)
		if first == nil {
			first = st
			return
		}
		a, _ := proto.MarshalOptions{Deterministic: true}.Marshal(first.Proto())
		b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(st.Proto())
		must(t, string(a) == string(b), "%s: the refusal differs:\n%v\n%v", what, first.Proto(), st.Proto())
	}
	for _, c := range causes {
		endpoint := "tcp://127.0.0.1:" + c.port
		same(c.what, registerOver(t, remote, "remote", endpoint))
		// The cause is in the log, on a line that names the plugin, the
		// identity and the endpoint.
		n.logs.wait(t, reLog(`(?m)^.*plugin=10-remote identity=cert:remote endpoint=`+regexp.QuoteMeta(endpoint)+`.*`+regexp.QuoteMeta(c.log)+`.*$`), n.done)
	}
	// A unix endpoint of the socket owner that is missing: the same.
	same("missing unix socket", registerOver(t, n.conn(t), "local", "unix://"+filepath.Join(n.plugins, "missing.sock")))
	n.logs.wait(t, reLog(`plugin=10-local identity=uid:0 .*missing.sock: no such file or directory`), n.done)
	plugins, err := listPlugins(t, n.conn(t))
	must(t, err == nil && len(plugins) == 0, "plugins %v %v", plugins, err)
}

// TestTCPHostNotAllowed: a TCP endpoint whose host the rules granting
// "tcp" for that plugin do not list is refused precisely
// (PERMISSION_DENIED naming the rule), before anything is dialed.
func TestTCPHostNotAllowed(t *testing.T) {
	n, ca := startTCPNrid(t)
	remote := tcpConn(t, n.tcp, ca, ca, "remote")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	for _, c := range []struct{ endpoint, msg string }{
		// 127.0.0.1 is "remote"'s host, not "elsewhere"'s.
		{"tcp://127.0.0.1:" + port, `host "127.0.0.1" is not allowed: it is not in policy[1].tcp_hosts`},
		{"dns:///localhost:" + port, `host "localhost" is not allowed: it is not in policy[1].tcp_hosts`},
		{"dns:///other.example.com:" + port, `host "other.example.com" is not allowed`},
	} {
		err := registerOver(t, remote, "elsewhere", c.endpoint)
		st := status.Convert(err)
		must(t, st.Code() == codes.PermissionDenied && testplugin.Reason(err) == "REGISTRATION_REFUSAL_INVALID_ENDPOINT" &&
			strings.HasPrefix(st.Message(), "endpoint: ") && strings.Contains(st.Message(), c.msg), "%s: got %v", c.endpoint, err)
	}
	must(t, !testwait.Pending(t, l), "nrid dialed an endpoint whose host is not allowed")
}
