package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/wrapperspb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/internal/testwait"
)

const (
	nobody   = 65534 // a uid with a policy entry in these tests
	stranger = 65533 // a uid without one
)

func listPlugins(t *testing.T, cc *grpc.ClientConn) ([]*nriv1beta1.PluginInfo, error) {
	t.Helper()
	rsp, err := nriv1beta1.NewAdminServiceClient(cc).ListPlugins(testCtx(t), &nriv1beta1.ListPluginsRequest{})
	return rsp.GetPlugins(), err
}

func wantCode(t *testing.T, what string, err error, code codes.Code, msg ...string) {
	t.Helper()
	if status.Code(err) != code || !contains(status.Convert(err).Message(), msg...) {
		t.Errorf("%s: got %v, want %v with %q", what, err, code, msg)
	}
}

// TestTCPAuthentication: TCP is TLS with client certificates; a token
// upgrades a client the policy does not know; nothing else gets in.
func TestTCPAuthentication(t *testing.T) {
	dir := tempDir(t)
	serverCA, tcp := tlsFiles(t, dir)
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("# operators\nci ci-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`
[tcp]
address = "127.0.0.1:0"
tokens_file = %q
%s
[[policy]]
identity = "cert:ops"
admin = true

[[policy]]
identity = "token:ci"
admin = true
`, tokens, tcp)
	n := startNrid(t, cfg)
	if n.tcp == "" {
		t.Fatal("nrid did not log its TCP address")
	}
	rogue := newCA(t, "rogue CA")

	t.Run("no client certificate", func(t *testing.T) {
		_, err := listPlugins(t, tcpConn(t, n.tcp, serverCA, nil, ""))
		wantCode(t, "ListPlugins", err, codes.Unavailable)
		// Not even health: the TLS handshake itself fails.
		_, err = healthOf(t, tcpConn(t, n.tcp, serverCA, nil, ""), "")
		wantCode(t, "health", err, codes.Unavailable)
	})
	t.Run("certificate of another CA", func(t *testing.T) {
		_, err := listPlugins(t, tcpConn(t, n.tcp, serverCA, rogue, "ops"))
		wantCode(t, "ListPlugins", err, codes.Unavailable)
	})
	t.Run("granted certificate", func(t *testing.T) {
		cc := tcpConn(t, n.tcp, serverCA, serverCA, "ops")
		if _, err := listPlugins(t, cc); err != nil {
			t.Fatal(err)
		}
		// The admin grant is not the runtime grant, nor a plugin grant.
		_, err := nriv1beta1.NewAdaptationServiceClient(cc).RunPodSandbox(testCtx(t),
			&nriv1beta1.AdaptationServiceRunPodSandboxRequest{Pod: &nriv1beta1.PodSandbox{Id: "p"}})
		wantCode(t, "RunPodSandbox", err, codes.PermissionDenied, `"cert:ops" lacks the runtime grant`)
		stream, err := nriv1beta1.NewRuntimeServiceClient(cc).RegisterPlugin(testCtx(t), &nriv1beta1.RegisterPluginRequest{
			PluginName: "remote", PluginIdx: "10", Endpoint: "dns:///plugin.example:443"})
		if err == nil {
			_, err = stream.Recv()
		}
		wantCode(t, "RegisterPlugin", err, codes.PermissionDenied, `"cert:ops" may not register plugins`)
	})
	t.Run("unknown certificate", func(t *testing.T) {
		cc := tcpConn(t, n.tcp, serverCA, serverCA, "stranger")
		_, err := listPlugins(t, cc)
		wantCode(t, "ListPlugins", err, codes.PermissionDenied, `"cert:stranger" lacks the admin grant`)
		st, err := healthOf(t, cc, "")
		must(t, err == nil && st.String() == "SERVING", "health is open: %v %v", st, err)
	})
	t.Run("unknown certificate with a token", func(t *testing.T) {
		_, err := listPlugins(t, tcpConn(t, n.tcp, serverCA, serverCA, "stranger", grpc.WithPerRPCCredentials(bearer("ci-token-0123456789"))))
		if err != nil {
			t.Fatal(err)
		}
		_, err = listPlugins(t, tcpConn(t, n.tcp, serverCA, serverCA, "stranger", grpc.WithPerRPCCredentials(bearer("ci-token-0123456780"))))
		wantCode(t, "wrong token", err, codes.Unauthenticated, "invalid bearer token")
	})
	n.logs.wait(t, reMsg("authentication refused"), nil)
	n.logs.wait(t, reLog(`level=WARN msg="TLS handshake refused" peer=127.0.0.1:\d+ reason=".*certificate`), nil)
	n.logs.wait(t, reLog(`level=WARN msg="finished call".*identity=cert:stranger.*grpc.code=PermissionDenied`), nil)
}

// TestTCPTokenWithoutCertificate: with client_auth = "optional", a client
// without a certificate must present a token.
func TestTCPTokenWithoutCertificate(t *testing.T) {
	dir := tempDir(t)
	serverCA, tcp := tlsFiles(t, dir)
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("ci ci-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := startNrid(t, fmt.Sprintf("[tcp]\naddress = \"127.0.0.1:0\"\nclient_auth = \"optional\"\ntokens_file = %q\n%s\n[[policy]]\nidentity = \"token:ci\"\nadmin = true\n", tokens, tcp))
	_, err := listPlugins(t, tcpConn(t, n.tcp, serverCA, nil, ""))
	wantCode(t, "no certificate, no token", err, codes.Unauthenticated, "certificate or a bearer token")
	_, err = listPlugins(t, tcpConn(t, n.tcp, serverCA, nil, "", grpc.WithPerRPCCredentials(bearer("ci-token-0123456789"))))
	if err != nil {
		t.Fatalf("token without certificate: %v", err)
	}
}

// TestUnknownUIDRefused: a uid the policy does not name, on a socket it may
// connect to, may neither register nor use AdminService or
// AdaptationService; health stays open.
func TestUnknownUIDRefused(t *testing.T) {
	n := startNrid(t, childConfig+`
[[policy]]
identity = "uid:65534"
plugins = ["someone-else"]
`)
	c := startChild(t, stranger, "dial", childEnvFor(n, map[string]string{"NRID_PLUGIN": "intruder", "NRID_IDX": "10"}))
	results := map[string]childResult{}
	for i := 0; i < 4; i++ {
		r := c.next(t)
		results[r.Call] = r
	}
	if r := results["health"]; r.Code != "OK" || r.Msg != "SERVING" {
		t.Errorf("health: %+v", r)
	}
	if r := results["register"]; r.Code != "PermissionDenied" || r.Reason != "REGISTRATION_REFUSAL_NOT_PERMITTED" ||
		!strings.Contains(r.Msg, `"uid:65533" may not register plugins`) {
		t.Errorf("register: %+v", r)
	}
	if r := results["admin"]; r.Code != "PermissionDenied" || !strings.Contains(r.Msg, "admin grant") {
		t.Errorf("admin: %+v", r)
	}
	if r := results["runtime"]; r.Code != "PermissionDenied" || !strings.Contains(r.Msg, "runtime grant") {
		t.Errorf("runtime: %+v", r)
	}
	n.logs.wait(t, reLog(`level=WARN msg="finished call" identity=uid:65533 .*grpc.method=RegisterPlugin .*grpc.code=PermissionDenied`), nil)
	plugins, err := listPlugins(t, n.conn(t))
	must(t, err == nil && len(plugins) == 0, "plugins %v %v", plugins, err)
}

// hookPolicy lets uid 65534 register "hooker" at any index with the
// ordinary adjustments and the failure policy fail, but not OCI hooks.
const hookPolicy = childConfig + `
[[policy]]
identity = "uid:65534"
plugins = ["hooker", "shared"]
events = ["all"]
adjust = true
may_fail = true
`

func createContainer(t *testing.T, cc *grpc.ClientConn, n int) (*nriv1beta1.AdaptationServiceCreateContainerResponse, error) {
	t.Helper()
	return nriv1beta1.NewAdaptationServiceClient(cc).CreateContainer(testCtx(t), &nriv1beta1.AdaptationServiceCreateContainerRequest{
		Pod: fixture.Pod(n), Container: fixture.Container(n, 0),
	})
}

// TestUngrantedFieldRefused: a plugin whose identity lacks the oci_hooks
// grant returns a hook. The whole response is refused, audited and
// counted; under "ignore" the event proceeds without it, under "fail" it
// fails naming the plugin and the field.
func TestUngrantedFieldRefused(t *testing.T) {
	n := startNrid(t, hookPolicy)
	root := n.conn(t)

	t.Run("ignore", func(t *testing.T) {
		c := startChild(t, nobody, "plugin", childEnvFor(n, map[string]string{"NRID_PLUGIN": "hooker", "NRID_IDX": "10"}))
		r := c.next(t)
		must(t, r.Code == "OK" && r.Identity == "uid:65534" && !r.Fail, "registration %+v", r)
		rsp, err := createContainer(t, root, 1)
		if err != nil {
			t.Fatalf("CreateContainer under ignore: %v", err)
		}
		for _, kv := range rsp.GetAdjust().GetEnv() {
			if kv.GetKey() == "FROM_CHILD" {
				t.Error("a refused response was merged in part (env)")
			}
		}
		if rsp.GetAdjust().GetHooks() != nil {
			t.Error("the refused hook was merged")
		}
		plugins, err := listPlugins(t, root)
		must(t, err == nil && len(plugins) == 1, "plugins %v %v", plugins, err)
		cnt := plugins[0].GetCounters()
		must(t, cnt.GetRefused() == 1 && cnt.GetCalls() >= 1, "counters %v", cnt)
		must(t, strings.Contains(plugins[0].GetLastError(), `adjust.hooks: identity "uid:65534" lacks the oci_hooks grant`),
			"last error %q", plugins[0].GetLastError())
		n.logs.wait(t, reLog(`level=WARN msg="audit: plugin response refused" plugin=10-hooker identity=uid:65534 event=CreateContainer code=PermissionDenied reason="response refused by policy: adjust.hooks: identity \\"uid:65534\\" lacks the oci_hooks grant"`), nil)
		c.stop(t)
	})

	t.Run("fail", func(t *testing.T) {
		c := startChild(t, nobody, "plugin", childEnvFor(n, map[string]string{"NRID_PLUGIN": "hooker", "NRID_IDX": "11", "NRID_FAIL": "1"}))
		r := c.next(t)
		must(t, r.Code == "OK" && r.Fail, "registration %+v (may_fail is granted)", r)
		_, err := createContainer(t, root, 2)
		wantCode(t, "CreateContainer under fail", err, codes.Unavailable, "required plugin 11-hooker",
			`adjust.hooks: identity "uid:65534" lacks the oci_hooks grant`)
		if testplugin.Reason(err) != "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE" {
			t.Errorf("reason %q", testplugin.Reason(err))
		}
		c.stop(t)
	})
}

// probePolicy lets uid 65534 register "prober" with the ordinary
// adjustments only, and "trusted" with the ordinary adjustments and the
// host_sysctls, cgroups_path and args grants.
const probePolicy = childConfig + `
[[policy]]
identity = "uid:65534"
plugins = ["prober"]
events = ["all"]
adjust = true

[[policy]]
identity = "uid:65534"
plugins = ["trusted"]
events = ["all"]
adjust = true
host_sysctls = true
cgroups_path = true
args = true
`

// TestProbedValuesRefused replays the probe of issue 15: a non-root plugin
// whose policy grants only adjust sends values that break the rules of the
// runtime spec and the kernel, or that need a grant of their own. Each
// response is refused whole (its harmless env variable is not merged
// either), audited with the code and the field, and, the plugin's failure
// policy being ignore, the container is created without it. A plugin that
// holds the grants gets the grant-only values through, but still not the
// invalid ones.
func TestProbedValuesRefused(t *testing.T) {
	n := startNrid(t, probePolicy)
	root := n.conn(t)
	type probe struct {
		adj   func(*nriv1beta1.ContainerAdjustment)
		code  codes.Code
		field string
	}
	bad := func(code codes.Code, field string, adj func(*nriv1beta1.ContainerAdjustment)) probe {
		return probe{adj: adj, code: code, field: field}
	}
	linux := func(l *nriv1beta1.LinuxContainerAdjustment) func(*nriv1beta1.ContainerAdjustment) {
		return func(a *nriv1beta1.ContainerAdjustment) { a.Linux = l }
	}
	invalid, denied := codes.InvalidArgument, codes.PermissionDenied
	run := func(t *testing.T, plugin, idx string, first int, probes []probe) {
		var raw []string
		for _, p := range probes {
			a := &nriv1beta1.ContainerAdjustment{Env: []*nriv1beta1.KeyValue{{Key: "FROM_PROBE", Value: "1"}}}
			p.adj(a)
			b, err := protojson.Marshal(&nriv1beta1.CreateContainerResponse{Adjust: a})
			if err != nil {
				t.Fatal(err)
			}
			raw = append(raw, string(b))
		}
		js, err := json.Marshal(raw)
		if err != nil {
			t.Fatal(err)
		}
		c := startChild(t, nobody, "plugin", childEnvFor(n, map[string]string{"NRID_PLUGIN": plugin, "NRID_IDX": idx, "NRID_RESPONSES": string(js)}))
		defer c.stop(t)
		r := c.next(t)
		must(t, r.Code == "OK", "registration %+v", r)
		for i, p := range probes {
			rsp, err := createContainer(t, root, first+i)
			if err != nil {
				t.Fatalf("probe %d (%s): CreateContainer: %v", i, p.field, err)
			}
			merged := slices.ContainsFunc(rsp.GetAdjust().GetEnv(), func(kv *nriv1beta1.KeyValue) bool { return kv.GetKey() == "FROM_PROBE" })
			if p.field == "" {
				must(t, merged, "probe %d: an allowed response was not merged: %v", i, rsp.GetAdjust())
				continue
			}
			if merged {
				t.Errorf("probe %d (%s): a refused response was merged in part", i, p.field)
			}
			line := n.logs.wait(t, reLog(`level=WARN msg="audit: plugin response refused" plugin=`+idx+"-"+plugin+
				` identity=uid:65534 event=CreateContainer code=`+p.code.String()+` reason="response refused[^"]*: `+regexp.QuoteMeta(strconv.Quote(p.field)[1:len(strconv.Quote(p.field))-1])+`: `), nil)
			if len(line) == 0 {
				t.Errorf("probe %d (%s): no audit line", i, p.field)
			}
			plugins, err := listPlugins(t, root)
			must(t, err == nil, "ListPlugins: %v", err)
			for _, pi := range plugins {
				if pi.GetPlugin().GetName() == plugin && !strings.Contains(pi.GetLastError(), "code = "+p.code.String()) {
					t.Errorf("probe %d (%s): last error %q, want code %s", i, p.field, pi.GetLastError(), p.code)
				}
			}
		}
	}
	t.Run("adjust only", func(t *testing.T) {
		run(t, "prober", "10", 100, []probe{
			bad(invalid, "adjust.linux.resources.memory.limit", linux(&nriv1beta1.LinuxContainerAdjustment{
				Resources: &nriv1beta1.LinuxResources{Memory: &nriv1beta1.LinuxMemory{Limit: wrapperspb.Int64(-12345)}}})),
			bad(invalid, "adjust.rlimits[0].type", func(a *nriv1beta1.ContainerAdjustment) {
				a.Rlimits = []*nriv1beta1.POSIXRlimit{{Type: "RLIMIT_BOGUS", Hard: 1, Soft: 1}}
			}),
			bad(invalid, "adjust.linux.oom_score_adj", linux(&nriv1beta1.LinuxContainerAdjustment{OomScoreAdj: wrapperspb.Int64(-100000)})),
			bad(invalid, "adjust.linux.io_priority.class", linux(&nriv1beta1.LinuxContainerAdjustment{
				IoPriority: &nriv1beta1.LinuxIOPriority{Class: 9999}})),
			bad(denied, "adjust.linux.cgroups_path", linux(&nriv1beta1.LinuxContainerAdjustment{CgroupsPath: "../../../evil"})),
			bad(denied, `adjust.linux.sysctl["kernel.core_pattern"]`, linux(&nriv1beta1.LinuxContainerAdjustment{
				Sysctl: map[string]string{"kernel.core_pattern": "|/usr/local/bin/x"}})),
			bad(denied, "adjust.args", func(a *nriv1beta1.ContainerAdjustment) { a.Args = []string{"", "/bin/sh", "-c", "id"} }),
			// The boundary values are accepted.
			bad(0, "", linux(&nriv1beta1.LinuxContainerAdjustment{OomScoreAdj: wrapperspb.Int64(-1000),
				Sysctl:    map[string]string{"net.core.somaxconn": "1024"},
				Resources: &nriv1beta1.LinuxResources{Memory: &nriv1beta1.LinuxMemory{Limit: wrapperspb.Int64(64 << 20)}}})),
		})
	})
	t.Run("granted", func(t *testing.T) {
		run(t, "trusted", "11", 200, []probe{
			bad(invalid, "adjust.linux.cgroups_path", linux(&nriv1beta1.LinuxContainerAdjustment{CgroupsPath: "../../../evil"})),
			bad(0, "", linux(&nriv1beta1.LinuxContainerAdjustment{Sysctl: map[string]string{"kernel.core_pattern": "core"}})),
			bad(0, "", linux(&nriv1beta1.LinuxContainerAdjustment{CgroupsPath: "/kubepods/besteffort/probe"})),
			bad(0, "", func(a *nriv1beta1.ContainerAdjustment) { a.Args = []string{"", "/bin/sh", "-c", "id"} }),
		})
	})
}

// TestEndpointOutsidePolicyNeverDialed: an endpoint form the identity may
// not use, or a unix socket outside the plugin directory, is refused before
// nrid dials anything.
func TestEndpointOutsidePolicyNeverDialed(t *testing.T) {
	n := startNrid(t, hookPolicy)
	tcpL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcpL.Close()
	outside := filepath.Join(n.dir, "outside.sock")
	unixL, err := net.Listen("unix", outside)
	if err != nil {
		t.Fatal(err)
	}
	defer unixL.Close()

	c := startChild(t, nobody, "dial", childEnvFor(n, map[string]string{
		"NRID_PLUGIN": "hooker", "NRID_IDX": "10", "NRID_ENDPOINT": "tcp://" + tcpL.Addr().String()}))
	for r := c.next(t); ; r = c.next(t) {
		if r.Call == "register" {
			must(t, r.Code == "PermissionDenied" && r.Reason == "REGISTRATION_REFUSAL_INVALID_ENDPOINT" &&
				strings.Contains(r.Msg, "lacks the endpoints tcp grant"), "tcp endpoint: %+v", r)
			break
		}
	}

	// Even the owner may not point nrid outside the plugin directory.
	stream, err := nriv1beta1.NewRuntimeServiceClient(n.conn(t)).RegisterPlugin(testCtx(t), &nriv1beta1.RegisterPluginRequest{
		PluginName: "elsewhere", PluginIdx: "10", Endpoint: "unix://" + outside})
	if err == nil {
		_, err = stream.Recv()
	}
	wantCode(t, "outside endpoint", err, codes.PermissionDenied, "outside the plugin socket directory")

	// The refusals came before any dial: nothing is waiting to be accepted.
	for name, l := range map[string]net.Listener{"tcp": tcpL, "unix": unixL} {
		if testwait.Pending(t, l) {
			t.Errorf("nrid dialed the refused %s endpoint", name)
		}
	}
}

// TestHandoverByAnotherIdentityRefused: a plugin registered by root cannot
// be taken over by another identity, even one allowed to register its name.
func TestHandoverByAnotherIdentityRefused(t *testing.T) {
	n := startNrid(t, hookPolicy)
	owner := &testplugin.Plugin{Name: "shared", Index: "20"}
	if _, err := owner.Start(testCtx(t), n.sock, n.plugins); err != nil {
		t.Fatal(err)
	}
	defer owner.Stop()
	c := startChild(t, nobody, "plugin", childEnvFor(n, map[string]string{"NRID_PLUGIN": "shared", "NRID_IDX": "20"}))
	r := c.next(t)
	must(t, r.Code == "PermissionDenied" && r.Reason == "REGISTRATION_REFUSAL_IDENTITY_MISMATCH" &&
		strings.Contains(r.Msg, `registered by identity "uid:0"`), "takeover: %+v", r)
	plugins, err := listPlugins(t, n.conn(t))
	must(t, err == nil && len(plugins) == 1 && plugins[0].GetIdentity() == "uid:0" && plugins[0].GetInstanceId() == owner.InstanceID(),
		"plugins after the attempt: %v %v", plugins, err)
	must(t, len(owner.Shutdowns()) == 0, "the owner was shut down: %v", owner.Shutdowns())
}

// TestRegisterRateLimit: RegisterPlugin calls are limited per identity.
func TestRegisterRateLimit(t *testing.T) {
	n := startNrid(t, "[server]\nregister_rate = 0.001\nregister_burst = 1\n")
	register := func() error {
		stream, err := nriv1beta1.NewRuntimeServiceClient(n.conn(t)).RegisterPlugin(testCtx(t), &nriv1beta1.RegisterPluginRequest{
			PluginName: "bad name", PluginIdx: "10"})
		if err == nil {
			_, err = stream.Recv()
		}
		return err
	}
	wantCode(t, "first call", register(), codes.InvalidArgument, "plugin_name")
	wantCode(t, "second call", register(), codes.ResourceExhausted, `identity "uid:0" registers too often`)
	// Other services are not limited.
	if _, err := listPlugins(t, n.conn(t)); err != nil {
		t.Fatal(err)
	}
}
