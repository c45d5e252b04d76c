//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The Kubernetes suite's versions: the control plane and kubelet, etcd and
// the CNI plugins, all built from the Go module proxy by
// kubernetes-build.sh into the cache, once per versions and Go version.
const (
	KubeVersion       = "v1.34.4"
	EtcdVersion       = "v3.6.8"
	CNIPluginsVersion = "v1.9.1"
)

// kubeNodeName is the single node's name.
const kubeNodeName = "nri-e2e-node"

// tolerateAnnotation is the pod annotation containerd's default validator
// reads (tolerate_missing_plugins_annotation in its configuration) so that
// nrid's own pod and the plugins' pods start while the bridge plugin that
// containerd requires is not there: they are what brings it.
const tolerateAnnotation = "tolerate-missing-plugins.noderesource.dev"

// kubeBuild is the cached build of the Kubernetes binaries, once per run.
type kubeBuild struct {
	once sync.Once
	dir  string
	err  error
	took time.Duration
}

var kubeBin kubeBuild

// KubeDir builds (or finds in the cache) the Kubernetes binaries and returns
// their directory: bin/ (kube-*, kubectl, etcd) and cni/.
func (s *Suite) KubeDir(tb testing.TB) string {
	tb.Helper()
	kubeBin.once.Do(func() {
		start := time.Now()
		gover := strings.TrimPrefix(runtime.Version(), "go")
		dir := filepath.Join(s.Base, "cache", "kubernetes-"+KubeVersion+"-go"+gover)
		lock, err := os.OpenFile(filepath.Join(s.Base, "cache", ".lock-kubernetes"), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			kubeBin.err = err
			return
		}
		defer lock.Close()
		if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
			kubeBin.err = err
			return
		}
		cmd := exec.Command("bash", filepath.Join(s.Repo, "test", "e2e", "kubernetes-build.sh"), dir)
		cmd.Env = append(os.Environ(), "KUBE_VERSION="+KubeVersion, "ETCD_VERSION="+EtcdVersion, "CNI_PLUGINS_VERSION="+CNIPluginsVersion)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			kubeBin.err = fmt.Errorf("kubernetes-build.sh: %v\n%s", err, lastLines(out.String(), 40))
			return
		}
		kubeBin.dir, kubeBin.took = dir, time.Since(start)
	})
	if kubeBin.err != nil {
		tb.Fatal(kubeBin.err)
	}
	return kubeBin.dir
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Kube is a single-node Kubernetes cluster started by the suite: etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler, containerd (CRI,
// NRI, CNI with a bridge) and kubelet, every path under the scenario
// directory. It embeds the scenario's Env (containerd, its CRI client,
// cleanup); nrid and plugins run in pods, deployed through the API server.
type Kube struct {
	*Env
	Bin        string // kube-*, kubectl, etcd
	CNIBin     string
	PKI        *kubePKI
	Admin      string // the admin kubeconfig (system:masters)
	Server     string // https://127.0.0.1:port
	NodeIP     string
	NRIDir     string // the host directory nrid's and the plugins' pods mount as /var/run/nri
	StateDir   string // nrid's server.state_dir on the host (the restart gate)
	PodSubnet  string
	Kubelet    *Proc
	APIServer  *Proc
	timings    []stepTiming
	restoreSys map[string]string
}

// stepTiming is how long one step of the suite took.
type stepTiming struct {
	Step string
	Took time.Duration
}

// step runs f and records its time under name.
func (k *Kube) step(name string, f func()) {
	k.tb.Helper()
	start := time.Now()
	f()
	d := time.Since(start)
	k.timings = append(k.timings, stepTiming{name, d})
	k.tb.Logf("step %s: %.1fs", name, d.Seconds())
}

// freePorts returns n distinct free TCP ports on 127.0.0.1, held until all
// are known so that no two are the same.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// hostIP is the node's address: the first global IPv4 address, which the
// API server advertises (the kubernetes Service's endpoint may not be a
// loopback address) and the kubelet registers.
func hostIP() (string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return "", err
	}
	for _, i := range ifs {
		if i.Flags&net.FlagUp == 0 || i.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
				return n.IP.String(), nil
			}
		}
	}
	return "", errors.New("no global IPv4 address for the node")
}

// kubeSysctls are the kernel settings kubelet writes at start (its
// protectKernelDefaults=false behaviour); the suite puts them back.
var kubeSysctls = []string{"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops", "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"}

// NewKube starts the cluster and waits until its node is Ready with the
// default service accounts created. Everything stops at the end of the test.
func NewKube(tb testing.TB) *Kube {
	tb.Helper()
	if suite == nil {
		tb.Fatal("suite not set up")
	}
	n := envSeq.Add(1)
	name := fmt.Sprintf("s%02d", n)
	e := &Env{tb: tb, Name: name, Dir: filepath.Join(suite.RunDir, name)}
	e.Logs = filepath.Join(e.Dir, "logs")
	e.Cgroup = suite.CgroupRoot() + "/" + name
	k := &Kube{Env: e, PodSubnet: "10.244.0.0/24", restoreSys: map[string]string{}}
	k.NRIDir = filepath.Join(e.Dir, "nri") // where Env.containerdConfig puts NRI
	k.StateDir = filepath.Join(e.Dir, "nrid-state")
	for _, d := range []string{e.Logs, filepath.Join(k.NRIDir, "plugins"), filepath.Join(k.NRIDir, "conf.d"), filepath.Join(e.Dir, "cni", "net.d"), filepath.Join(e.Dir, "kubelet")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(e.Dir, "test-name"), []byte(tb.Name()+"\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("scenario directory %s", e.Dir)
	tb.Cleanup(e.cleanup)

	k.step("build-kubernetes", func() {
		dir := suite.KubeDir(tb)
		k.Bin, k.CNIBin = filepath.Join(dir, "bin"), filepath.Join(dir, "cni")
	})
	ip, err := hostIP()
	if err != nil {
		tb.Fatal(err)
	}
	k.NodeIP = ip
	ports, err := freePorts(8)
	if err != nil {
		tb.Fatal(err)
	}
	etcdClient, etcdPeer, apiPort, cmPort, schedPort, kubeletPort, kubeletHealthz := ports[0], ports[1], ports[2], ports[3], ports[4], ports[5], ports[6]
	k.Server = fmt.Sprintf("https://127.0.0.1:%d", apiPort)

	k.step("pki", func() { k.makePKI() })
	pki := k.PKI.Dir

	k.step("control-plane", func() {
		etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdClient)
		peerURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPeer)
		e.start("etcd", filepath.Join(e.Logs, "etcd.log"), filepath.Join(k.Bin, "etcd"), nil,
			"--name=e2e", "--data-dir="+filepath.Join(e.Dir, "etcd"),
			"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
			"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
			"--initial-cluster=e2e="+peerURL, "--listen-metrics-urls=", "--unsafe-no-fsync", "--log-level=warn")
		k.APIServer = e.start("kube-apiserver", filepath.Join(e.Logs, "kube-apiserver.log"), filepath.Join(k.Bin, "kube-apiserver"), nil,
			"--etcd-servers="+etcdURL,
			"--bind-address=127.0.0.1", "--advertise-address="+k.NodeIP, "--secure-port="+strconv.Itoa(apiPort),
			"--tls-cert-file="+filepath.Join(pki, "apiserver.crt"), "--tls-private-key-file="+filepath.Join(pki, "apiserver.key"),
			"--client-ca-file="+k.PKI.CA,
			"--kubelet-client-certificate="+filepath.Join(pki, "apiserver-kubelet.crt"), "--kubelet-client-key="+filepath.Join(pki, "apiserver-kubelet.key"),
			"--service-account-key-file="+filepath.Join(pki, "sa.pub"), "--service-account-signing-key-file="+filepath.Join(pki, "sa.key"),
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-cluster-ip-range=10.96.0.0/24", "--authorization-mode=Node,RBAC", "--allow-privileged=true",
			"--profiling=false", "--cert-dir="+filepath.Join(e.Dir, "apiserver-certs"))
		if !waitFor(120*time.Second, func() bool {
			out, err := k.kubectlErr("get", "--raw", "/readyz")
			return err == nil && strings.TrimSpace(out) == "ok"
		}) {
			tb.Fatalf("kube-apiserver not ready within 120s:\n%s", e.Tail(k.APIServer.Log, 30))
		}
		k.controller("kube-controller-manager", "system:kube-controller-manager", cmPort,
			"--service-account-private-key-file="+filepath.Join(pki, "sa.key"), "--root-ca-file="+k.PKI.CA,
			"--use-service-account-credentials=true")
		k.controller("kube-scheduler", "system:kube-scheduler", schedPort)
	})

	k.step("containerd", func() {
		k.writeCNIConfig()
		e.CtrdSock = filepath.Join(e.Dir, "containerd.sock")
		e.NRISock = filepath.Join(k.NRIDir, "nri.sock")
		e.CtrdConfig = filepath.Join(e.Dir, "containerd.toml")
		if err := os.WriteFile(e.CtrdConfig, []byte(k.containerdConfig()), 0o644); err != nil {
			tb.Fatal(err)
		}
		e.Ctrd = e.start("containerd", filepath.Join(e.Logs, "containerd.log"), filepath.Join(suite.CtrdBin, "containerd"),
			[]string{"PATH=" + suite.CtrdBin + ":" + os.Getenv("PATH")}, "--config", e.CtrdConfig)
		e.WaitContainerd()
		for _, img := range suite.Images {
			k.ctrImport(img)
		}
	})

	k.step("kubelet", func() {
		k.saveSysctls()
		for _, m := range cgroupMounts() {
			if err := os.MkdirAll(filepath.Join(m, e.Cgroup), 0o755); err != nil {
				tb.Fatal(err)
			}
		}
		kc, err := k.PKI.kubeconfig("kubelet", "system:node:"+kubeNodeName, []string{"system:nodes"}, k.Server)
		if err != nil {
			tb.Fatal(err)
		}
		cfg := filepath.Join(e.Dir, "kubelet.yaml")
		if err := os.WriteFile(cfg, []byte(k.kubeletConfig(kubeletPort, kubeletHealthz)), 0o644); err != nil {
			tb.Fatal(err)
		}
		k.Kubelet = e.start("kubelet", filepath.Join(e.Logs, "kubelet.log"), filepath.Join(k.Bin, "kubelet"), nil,
			"--config="+cfg, "--kubeconfig="+kc, "--root-dir="+filepath.Join(e.Dir, "kubelet"),
			"--hostname-override="+kubeNodeName, "--node-ip="+k.NodeIP, "--cert-dir="+filepath.Join(e.Dir, "kubelet", "pki"), "--v=1")
		// The kubelet and control plane go first at cleanup (registered
		// after Env.cleanup, so they run before it): a running kubelet
		// would restart the pods Env.cleanup removes.
		tb.Cleanup(k.stop)
		if !waitFor(180*time.Second, func() bool {
			if k.Kubelet.Exited() {
				return true
			}
			out, err := k.kubectlErr("get", "node", kubeNodeName, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
			return err == nil && out == "True"
		}) || k.Kubelet.Exited() {
			tb.Fatalf("node %s not Ready within 180s:\n%s", kubeNodeName, e.Tail(k.Kubelet.Log, 40))
		}
		// The token controller's default service accounts: pods of a
		// namespace are refused until its account exists.
		for _, ns := range []string{"default", "kube-system"} {
			k.waitServiceAccount(ns)
		}
	})
	return k
}

// controller starts kube-controller-manager or kube-scheduler: a client
// certificate for user, the API server through it (also for delegated
// authentication and authorization), its secure port on loopback, no
// leader election.
func (k *Kube) controller(name, user string, port int, extra ...string) {
	k.tb.Helper()
	kc, err := k.PKI.kubeconfig(name, user, nil, k.Server)
	if err != nil {
		k.tb.Fatal(err)
	}
	args := append([]string{"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port), "--leader-elect=false",
		"--cert-dir=" + filepath.Join(k.Dir, name+"-certs")}, extra...)
	k.start(name, filepath.Join(k.Logs, name+".log"), filepath.Join(k.Bin, name), nil, args...)
}

// makePKI issues every certificate the components use.
func (k *Kube) makePKI() {
	tb := k.tb
	p, err := newKubePKI(filepath.Join(k.Dir, "pki"))
	if err != nil {
		tb.Fatal(err)
	}
	k.PKI = p
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(k.NodeIP), net.ParseIP("10.96.0.1")}
	if _, _, err := p.issue("apiserver", "kube-apiserver", nil, ips, []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost"}); err != nil {
		tb.Fatal(err)
	}
	if _, _, err := p.issue("apiserver-kubelet", "kube-apiserver-kubelet-client", []string{"system:masters"}, nil, nil); err != nil {
		tb.Fatal(err)
	}
	if _, _, err := p.issue("kubelet-serving", kubeNodeName, nil, []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(k.NodeIP)}, []string{kubeNodeName}); err != nil {
		tb.Fatal(err)
	}
	if k.Admin, err = p.kubeconfig("admin", "nri-e2e-admin", []string{"system:masters"}, k.Server); err != nil {
		tb.Fatal(err)
	}
}

// writeCNIConfig writes the pods' network: a Linux bridge with the node as
// gateway (so the host, Prometheus among it, reaches pod addresses) and
// addresses from PodSubnet, plus loopback.
func (k *Kube) writeCNIConfig() {
	bridge := "nrie2e" + strconv.Itoa(os.Getpid()%10000)
	conf := fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "nri-e2e",
  "plugins": [
    {
      "type": "bridge",
      "bridge": %q,
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %q}]],
        "dataDir": %q
      }
    },
    {"type": "loopback"}
  ]
}
`, bridge, k.PodSubnet, filepath.Join(k.Dir, "cni", "ipam"))
	if err := os.WriteFile(filepath.Join(k.Dir, "cni", "net.d", "10-nri-e2e.conflist"), []byte(conf), 0o644); err != nil {
		k.tb.Fatal(err)
	}
	k.tb.Cleanup(func() {
		// The bridge the plugin made outlives the pods.
		_ = exec.Command("ip", "link", "delete", bridge).Run()
	})
}

// containerdConfig is containerd's configuration for the node: the
// scenarios' (Env.containerdConfig: CRI, NRI in Dir/nri, which nrid's pod
// mounts) with the CNI plugins, and the documented restart configuration's
// containerd side: the default validator requires the bridge plugin
// "nri-grpc", waived for pods with tolerateAnnotation.
func (k *Kube) containerdConfig() string {
	return k.Env.containerdConfig(EnvOptions{
		ContainerdRequired: []string{"nri-grpc"},
		ContainerdTolerate: tolerateAnnotation,
		CNIBinDir:          k.CNIBin,
	})
}

// kubeletConfig is the kubelet's configuration: cgroupfs under the
// scenario's cgroup, containerd's CRI, no swap or cgroup v1 refusal (CI
// machines have cgroup v1), loopback-only ports, x509 client auth from the
// cluster's CA.
func (k *Kube) kubeletConfig(port, healthz int) string {
	pki := k.PKI.Dir
	resolv := filepath.Join(k.Dir, "resolv.conf")
	if err := os.WriteFile(resolv, nil, 0o644); err != nil {
		k.tb.Fatal(err)
	}
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
tlsCertFile: %s
tlsPrivateKeyFile: %s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %s}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
cgroupRoot: %s
cgroupsPerQOS: true
failSwapOn: false
failCgroupV1: false
containerRuntimeEndpoint: unix://%s
imageServiceEndpoint: unix://%s
resolvConf: %s
clusterDomain: cluster.local
podLogsDir: %s
makeIPTablesUtilChains: false
serializeImagePulls: false
rotateCertificates: false
serverTLSBootstrap: false
registerNode: true
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%%
  nodefs.inodesFree: 1%%
  imagefs.available: 1%%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
syncFrequency: 10s
fileCheckFrequency: 10s
`, port, healthz, filepath.Join(pki, "kubelet-serving.crt"), filepath.Join(pki, "kubelet-serving.key"), k.PKI.CA,
		k.Cgroup, k.CtrdSock, k.CtrdSock, resolv, filepath.Join(k.Dir, "pod-logs"))
}

// saveSysctls records the kernel settings kubelet changes; stop puts them back.
func (k *Kube) saveSysctls() {
	for _, s := range kubeSysctls {
		if b, err := os.ReadFile("/proc/sys/" + s); err == nil {
			k.restoreSys[s] = strings.TrimSpace(string(b))
		}
	}
}

// stop stops the kubelet first (a running kubelet would recreate the pods
// that Env.cleanup removes) and puts back the kernel settings it changed.
func (k *Kube) stop() {
	if k.tb.Failed() {
		out, _ := k.kubectlErr("get", "pods", "-A", "-o", "wide")
		k.tb.Logf("pods at the end:\n%s", out)
		out, _ = k.kubectlErr("get", "events", "-A", "--sort-by=.lastTimestamp")
		k.tb.Logf("events at the end:\n%s", lastLines(out, 40))
	}
	if k.Kubelet != nil {
		k.Kubelet.Stop(k.tb)
	}
	for s, v := range k.restoreSys {
		_ = os.WriteFile("/proc/sys/"+s, []byte(v), 0o644)
	}
}

// ctrImport imports an OCI archive into containerd's k8s.io namespace,
// where kubelet finds it (pods use imagePullPolicy IfNotPresent or Never).
func (k *Kube) ctrImport(archive string) {
	k.tb.Helper()
	out, err := exec.Command(filepath.Join(suite.CtrdBin, "ctr"), "--address", k.CtrdSock, "-n", "k8s.io",
		"images", "import", archive).CombinedOutput()
	if err != nil {
		k.tb.Fatalf("ctr images import %s: %v\n%s", archive, err, out)
	}
}

// kubectlErr runs kubectl with the admin kubeconfig and returns its
// standard output; the error carries its standard error.
func (k *Kube) kubectlErr(args ...string) (string, error) {
	return k.kubectlIn("", args...)
}

// kubectlIn is kubectlErr with stdin.
func (k *Kube) kubectlIn(stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(k.Bin, "kubectl"), append([]string{"--kubeconfig=" + k.Admin}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// Kubectl runs kubectl and fails the test on error.
func (k *Kube) Kubectl(args ...string) string {
	k.tb.Helper()
	out, err := k.kubectlErr(args...)
	if err != nil {
		k.tb.Fatal(err)
	}
	return out
}

// Apply applies manifests given on stdin (kubectl apply -f -).
func (k *Kube) Apply(manifest string, extra ...string) string {
	k.tb.Helper()
	out, err := k.kubectlIn(manifest, append([]string{"apply", "-f", "-"}, extra...)...)
	if err != nil {
		k.tb.Fatal(err)
	}
	return out
}

// GetJSON runs kubectl get ... -o json into v.
func (k *Kube) GetJSON(v any, args ...string) {
	k.tb.Helper()
	out := k.Kubectl(append(append([]string{"get"}, args...), "-o", "json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		k.tb.Fatalf("kubectl get %s: %v", strings.Join(args, " "), err)
	}
}

// waitServiceAccount waits for the default service account of ns.
func (k *Kube) waitServiceAccount(ns string) {
	k.tb.Helper()
	if !waitFor(60*time.Second, func() bool {
		_, err := k.kubectlErr("get", "serviceaccount", "default", "-n", ns)
		return err == nil
	}) {
		k.tb.Fatalf("no default service account in %s within 60s", ns)
	}
}

// Namespace creates a namespace with labels and waits for its service account.
func (k *Kube) Namespace(name string, labels map[string]string) {
	k.tb.Helper()
	var l strings.Builder
	for key, v := range labels {
		fmt.Fprintf(&l, "\n    %s: %q", key, v)
	}
	k.Apply(fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n  labels:%s\n", name, l.String()))
	k.waitServiceAccount(name)
}

// kubePod is the part of a Pod object the suite reads.
type kubePod struct {
	Metadata struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Status struct {
		Phase      string `json:"phase"`
		PodIP      string `json:"podIP"`
		Conditions []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"conditions"`
		ContainerStatuses []struct {
			Name        string `json:"name"`
			ContainerID string `json:"containerID"`
			Ready       bool   `json:"ready"`
			State       struct {
				Running *struct{} `json:"running"`
				Waiting *struct {
					Reason  string `json:"reason"`
					Message string `json:"message"`
				} `json:"waiting"`
			} `json:"state"`
		} `json:"containerStatuses"`
	} `json:"status"`
}

// Ready reports the pod's Ready condition.
func (p *kubePod) Ready() bool {
	for _, c := range p.Status.Conditions {
		if c.Type == "Ready" {
			return c.Status == "True"
		}
	}
	return false
}

// ContainerID is the CRI id of the pod's container name ("" before it exists).
func (p *kubePod) ContainerID(name string) string {
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == name {
			return strings.TrimPrefix(c.ContainerID, "containerd://")
		}
	}
	return ""
}

// Pods lists the pods of ns matching the label selector.
func (k *Kube) Pods(ns, selector string) []kubePod {
	k.tb.Helper()
	var l struct {
		Items []kubePod `json:"items"`
	}
	args := []string{"pods", "-n", ns}
	if selector != "" {
		args = append(args, "-l", selector)
	}
	k.GetJSON(&l, args...)
	return l.Items
}

// WaitPodsReady waits until every pod of ns matching selector is Ready
// (at least one), and returns them.
func (k *Kube) WaitPodsReady(ns, selector string, timeout time.Duration) []kubePod {
	k.tb.Helper()
	var pods []kubePod
	if !waitFor(timeout, func() bool {
		pods = k.Pods(ns, selector)
		if len(pods) == 0 {
			return false
		}
		for i := range pods {
			if !pods[i].Ready() {
				return false
			}
		}
		return true
	}) {
		out, _ := k.kubectlErr("describe", "pods", "-n", ns, "-l", selector)
		k.tb.Fatalf("pods %s in %s not Ready within %v:\n%s", selector, ns, timeout, lastLines(out, 60))
	}
	return pods
}
