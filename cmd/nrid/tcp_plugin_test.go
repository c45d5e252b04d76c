package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/plugin"
)

// remoteAnnotator is a plugin off the node: it annotates every container.
type remoteAnnotator struct{}

func (remoteAnnotator) CreateContainer(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
	return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
		Annotations: map[string]string{"remote.example.com/seen": "yes"}}}, nil
}

// freePort returns a TCP port on 127.0.0.1 nothing listens on.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

// tcpPlugin runs the Go SDK's plugin registering over nrid's TCP listener
// with a client certificate for cn, and serving a TCP endpoint with a
// certificate for serveCN. It returns the plugin and the end of its Run.
func tcpPlugin(t *testing.T, n *nrid, ca *testCA, cn, serveCN string) (*plugin.Plugin, <-chan error) {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	pair := func(cn string) tls.Certificate {
		certPEM, keyPEM := ca.issue(t, cn, true)
		c, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	dial := &tls.Config{Certificates: []tls.Certificate{pair(cn)}, RootCAs: pool, MinVersion: tls.VersionTLS13}
	serve := &tls.Config{Certificates: []tls.Certificate{pair(serveCN)}, ClientCAs: pool, MinVersion: tls.VersionTLS13}
	p, err := plugin.New(remoteAnnotator{},
		plugin.WithName("remote"), plugin.WithIndex("10"),
		plugin.WithServerAddress("dns:///"+n.tcp),
		plugin.WithEndpoint("dns:///127.0.0.1:"+freePort(t)),
		plugin.WithTLS(dial, serve),
		plugin.WithBackoff(10*time.Millisecond, 50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done, finished := make(chan error, 1), make(chan struct{})
	go func() { done <- p.Run(ctx); close(finished) }()
	t.Cleanup(func() { cancel(); <-finished })
	return p, done
}

// TestTCPPluginEndpoint: a plugin off the node registers over nrid's TLS
// listener with a client certificate and serves its endpoint over TCP at a
// host its rule's tcp_hosts lists; nrid dials it with its own certificate,
// checks that the plugin's certificate names the registrant, and
// dispatches to it.
func TestTCPPluginEndpoint(t *testing.T) {
	dir := tempDir(t)
	ca, tcp := tlsFiles(t, dir)
	n := startNrid(t, fmt.Sprintf(`
[tcp]
address = "127.0.0.1:0"
%s
[[policy]]
identity = "cert:remote"
plugins = ["remote"]
events = ["all"]
adjust = true
endpoints = ["tcp"]
tcp_hosts = ["127.0.0.1"]
`, tcp))
	if n.tcp == "" {
		t.Fatal("nrid did not log its TCP address")
	}

	t.Run("registered and dispatched to", func(t *testing.T) {
		p, _ := tcpPlugin(t, n, ca, "remote", "remote")
		timeout := time.After(testTimeout())
		// The channel is taken before looking: a registration that
		// completed before the first look is not waited for again.
		for ch := p.RegistrationChanged(); p.Registered() == nil; ch = p.RegistrationChanged() {
			select {
			case <-ch:
			case <-timeout:
				t.Fatal("the TCP plugin did not register")
			}
		}
		reg := p.Registered()
		must(t, reg != nil && reg.GetIdentity() == "cert:remote", "registered %v", reg)
		rsp, err := createContainer(t, n.conn(t), 1)
		if err != nil {
			t.Fatal(err)
		}
		must(t, rsp.GetAdjust().GetAnnotations()["remote.example.com/seen"] == "yes", "adjustment %v", rsp.GetAdjust())
		plugins, err := listPlugins(t, n.conn(t))
		must(t, err == nil && len(plugins) == 1 && strings.HasPrefix(plugins[0].GetEndpoint(), "dns:///127.0.0.1:"),
			"plugins %v %v", plugins, err)
	})
	// An endpoint with a certificate of another identity, and the other
	// failures to connect: TestTCPEndpointRefusalsAreUniform.
}
