//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// The Kubernetes suite's names.
const (
	k8sPluginNS   = "nri-plugins"  // where the plugin's DaemonSet runs
	k8sSelectedNS = "e2e-selected" // the plugin's selector names it
	k8sOtherNS    = "e2e-other"    // not selected
	k8sPlugin     = "20-ulimit-adjuster"
	// k8sOffLabel on a pod of k8sSelectedNS keeps it out of the plugin's
	// selector (pod_labels "nri-e2e/ulimits != off").
	k8sOffLabel = "nri-e2e/ulimits"
)

// k8sUlimit is what the test pods ask examples/ulimit-adjuster for, and
// what their containers' OCI specs must have when it adjusted them.
const k8sUlimit = "- type: RLIMIT_NOFILE\n  soft: 1111\n  hard: 2222\n"

// TestKubernetes is the single-node cluster suite (issue 30): nrid and the
// example plugin installed with their Helm charts through a real API
// server, then pods, selectors, a rollout restart of nrid while pods are
// created, readiness and a real Prometheus scraping nrid. The steps share
// one cluster and run in order; each records its time.
func TestKubernetes(t *testing.T) {
	k := NewKube(t)
	defer k.report(t)
	helm := helmPath(t)

	nridRef, pluginRef := "localhost/nri-grpc:e2e-"+suite.RunID, "localhost/nri-grpc-ulimit-adjuster:e2e-"+suite.RunID
	k.step("images", func() {
		k.image("image", nridRef)
		k.image("plugin-image", pluginRef)
	})

	nridValues := k.nridValues(nridRef)
	pluginValues := k.pluginValues(pluginRef)
	k.step("dry-run", func() {
		// What the charts render, and the raw manifests, as the API server
		// validates them (every field known, every object admissible).
		k.Namespace(k8sPluginNS, nil)
		for _, c := range []struct{ chart, ns, values, release string }{
			{"nri-grpc", "kube-system", nridValues, "nrid"},
			{"nri-grpc-plugin", k8sPluginNS, pluginValues, "ulimit-adjuster"},
		} {
			out := k.helm(helm, "template", c.release, filepath.Join(suite.Repo, "deploy", "helm", c.chart), "-n", c.ns, "-f", c.values)
			if _, err := k.kubectlIn(out, "apply", "--dry-run=server", "-n", c.ns, "-f", "-"); err != nil {
				t.Fatalf("chart %s: %v", c.chart, err)
			}
		}
		if _, err := k.kubectlErr("apply", "--dry-run=server", "-f", filepath.Join(suite.Repo, "deploy", "kubernetes")); err != nil {
			t.Fatalf("deploy/kubernetes: %v", err)
		}
	})

	k.step("install-nrid", func() {
		k.helm(helm, "install", "nrid", filepath.Join(suite.Repo, "deploy", "helm", "nri-grpc"), "-n", "kube-system", "-f", nridValues, "--wait", "--timeout", "3m")
		k.WaitPodsReady("kube-system", "app.kubernetes.io/name=nrid", 2*time.Minute)
	})
	nrictl := func(args ...string) (string, error) {
		out, err := exec.Command(filepath.Join(suite.Bin, "nrictl"), append([]string{"--socket=" + filepath.Join(k.NRIDir, "nri-grpc.sock"), "--timeout=5s"}, args...)...).CombinedOutput()
		return string(out), err
	}
	k.sub(t, "Readiness", func(t *testing.T) {
		// Ready in Kubernetes means what nrid's health says: SERVING, i.e.
		// attached to containerd through the bridge (runtime.required).
		if out, err := nrictl("health"); err != nil || !strings.Contains(out, "SERVING") {
			t.Fatalf("nrictl health on the host: %v: %s", err, out)
		}
		// The kubelet's readiness probe asks nrid's /readyz on the pod's
		// address: the same answer, seen from the host over the pod network.
		for _, p := range k.Pods("kube-system", "app.kubernetes.io/name=nrid") {
			if !p.Ready() {
				t.Errorf("nrid's pod %s not Ready", p.Metadata.Name)
			}
			resp, err := http.Get("http://" + p.Status.PodIP + ":" + p.Metadata.Annotations["prometheus.io/port"] + "/readyz")
			if err != nil {
				t.Fatalf("GET /readyz of %s: %v", p.Metadata.Name, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "SERVING") {
				t.Errorf("GET /readyz of %s: %d %q, want 200 SERVING", p.Metadata.Name, resp.StatusCode, b)
			}
		}
	})

	k.step("install-plugin", func() {
		k.helm(helm, "install", "ulimit-adjuster", filepath.Join(suite.Repo, "deploy", "helm", "nri-grpc-plugin"), "-n", k8sPluginNS, "-f", pluginValues, "--wait", "--timeout", "3m")
		k.WaitPodsReady(k8sPluginNS, "", 2*time.Minute)
		if !waitFor(60*time.Second, func() bool {
			out, err := nrictl("plugins")
			return err == nil && strings.Contains(out, k8sPlugin)
		}) {
			out, _ := nrictl("plugins")
			t.Fatalf("%s not registered with nrid within 60s:\n%s", k8sPlugin, out)
		}
	})

	k.Namespace(k8sSelectedNS, map[string]string{"nri-e2e": "selected"})
	k.Namespace(k8sOtherNS, nil)

	k.sub(t, "Selectors", func(t *testing.T) {
		var got map[string]bool
		k.step("selectors", func() {
			k.Apply(k8sPod("selected", k8sSelectedNS, nil) + "---\n" +
				k8sPod("other-namespace", k8sOtherNS, nil) + "---\n" +
				k8sPod("label-off", k8sSelectedNS, map[string]string{k8sOffLabel: "off"}))
			got = map[string]bool{}
			for _, ns := range []string{k8sSelectedNS, k8sOtherNS} {
				for _, p := range k.WaitPodsReady(ns, "nri-e2e/role=probe", 2*time.Minute) {
					got[p.Metadata.Name] = k.adjusted(&p)
				}
			}
		})
		want := map[string]bool{"selected": true, "other-namespace": false, "label-off": false}
		for name, w := range want {
			if got[name] != w {
				t.Errorf("pod %s: adjusted by %s = %v, want %v (namespace and label selectors)", name, k8sPlugin, got[name], w)
			}
		}
	})

	k.sub(t, "RolloutRestart", func(t *testing.T) { k.rolloutRestart(t, nrictl) })

	k.sub(t, "Prometheus", func(t *testing.T) {
		k.step("prometheus", func() { k.prometheus(t) })
	})
}

// sub runs f as subtest name with the cluster's helpers failing that
// subtest, not the parent.
func (k *Kube) sub(t *testing.T, name string, f func(t *testing.T)) {
	t.Run(name, func(st *testing.T) {
		parent := k.tb
		k.tb = st
		defer func() { k.tb = parent }()
		f(st)
	})
}

// report writes the steps' times to the test log and, for make test's
// summary, into the report directory when there is one.
func (k *Kube) report(t *testing.T) {
	var b strings.Builder
	if kubeBin.took > 0 {
		fmt.Fprintf(&b, "kubernetes build (this run): %.1fs\n", kubeBin.took.Seconds())
	}
	for _, s := range k.timings {
		fmt.Fprintf(&b, "%-20s %7.1fs\n", s.Step, s.Took.Seconds())
	}
	t.Logf("Kubernetes suite steps:\n%s", b.String())
	if dir := os.Getenv("NRI_K8S_REPORT"); dir != "" {
		_ = os.WriteFile(dir, []byte(b.String()), 0o644)
	}
}

// helmPath is the helm the Makefile built (.tmp/bin/helm), or HELM.
func helmPath(tb testing.TB) string {
	if h := os.Getenv("HELM"); h != "" {
		return h
	}
	h := filepath.Join(suite.Repo, ".tmp", "bin", "helm")
	if _, err := os.Stat(h); err != nil {
		tb.Fatalf("no helm at %s (make k8s-e2e builds it; or set HELM)", h)
	}
	return h
}

// helm runs helm against the cluster and returns its output.
func (k *Kube) helm(helm string, args ...string) string {
	k.tb.Helper()
	cmd := exec.Command(helm, append(args, "--kubeconfig="+k.Admin)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(k.Dir, "helm", "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(k.Dir, "helm", "config"), "HELM_DATA_HOME="+filepath.Join(k.Dir, "helm", "data"))
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		k.tb.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return string(out)
}

// image builds an image with a Makefile target of this checkout (make
// image, make plugin-image: buildah, FROM scratch), exports it as an OCI
// archive and imports it into the node's containerd.
func (k *Kube) image(target, ref string) {
	k.tb.Helper()
	repo, tag, _ := strings.Cut(ref, ":")
	cmd := exec.Command("make", "--no-print-directory", target, "IMAGE_TAG="+tag)
	if target == "plugin-image" {
		cmd.Args = append(cmd.Args, "PLUGIN_IMAGE="+repo)
	} else {
		cmd.Args = append(cmd.Args, "IMAGE="+repo)
	}
	cmd.Dir = suite.Repo
	if out, err := cmd.CombinedOutput(); err != nil {
		k.tb.Fatalf("make %s: %v\n%s", target, err, lastLines(string(out), 30))
	}
	archive := filepath.Join(k.Dir, strings.ReplaceAll(strings.ReplaceAll(strings.TrimPrefix(ref, "localhost/"), ":", "_"), "/", "_")+".tar")
	out, err := exec.Command("bash", filepath.Join(suite.Repo, "deploy", "image.sh"), "export", ref, archive).CombinedOutput()
	if err != nil {
		k.tb.Fatalf("image.sh export %s: %v\n%s", ref, err, out)
	}
	k.ctrImport(archive)
}

// nridValues writes the nri-grpc chart's values for this node: the image,
// the host paths (the scenario's NRI directory and state directory instead
// of /var/run/nri and /var/lib), and the operator's plugin policy: the
// example plugin required for the selected namespace's pods, except those
// labelled off.
func (k *Kube) nridValues(ref string) string {
	repo, tag, _ := strings.Cut(ref, ":")
	d := k.NRIDir
	v := fmt.Sprintf(`image:
  repository: %s
  tag: %s
  pullPolicy: Never
tolerateMissingPluginsAnnotation: %s
config:
  hostRunDir: %s
  socket: %s/nri-grpc.sock
  pluginSocketDir: %s/plugins
  stateDir: %s
  bridge:
    runtimeSocket: %s/nri.sock
    pluginSocket: %s/nri-classic.sock
plugins:
  - name: %s
    required: true
    selectors:
      - namespaces: [%s]
        podLabels: "%s != off"
`, repo, tag, tolerateAnnotation, d, d, d, k.StateDir, d, d, k8sPlugin, k8sSelectedNS, k8sOffLabel)
	path := filepath.Join(k.Dir, "nrid-values.yaml")
	if err := os.WriteFile(path, []byte(v), 0o644); err != nil {
		k.tb.Fatal(err)
	}
	return path
}

// pluginValues writes the nri-grpc-plugin chart's values for the example.
func (k *Kube) pluginValues(ref string) string {
	repo, tag, _ := strings.Cut(ref, ":")
	d := k.NRIDir
	v := fmt.Sprintf(`plugin:
  name: ulimit-adjuster
  index: "20"
image:
  repository: %s
  tag: %s
  pullPolicy: Never
tolerateMissingPluginsAnnotation: %s
nrid:
  hostRunDir: %s
  socket: %s/nri-grpc.sock
  pluginSocketDir: %s/plugins
`, repo, tag, tolerateAnnotation, d, d, d)
	path := filepath.Join(k.Dir, "plugin-values.yaml")
	if err := os.WriteFile(path, []byte(v), 0o644); err != nil {
		k.tb.Fatal(err)
	}
	return path
}

// k8sPod is a test pod: the sleeper image, asking the ulimit-adjuster for
// k8sUlimit.
func k8sPod(name, ns string, labels map[string]string) string {
	return k8sPodRole(name, ns, "probe", labels)
}

// k8sPodRole is k8sPod with the nri-e2e/role label role.
func k8sPodRole(name, ns, role string, labels map[string]string) string {
	var l strings.Builder
	for key, v := range labels {
		fmt.Fprintf(&l, "\n    %s: %q", key, v)
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: %s
  labels:
    nri-e2e/role: %s%s
  annotations:
    ulimits.noderesource.dev/container.app: |
%s
spec:
  terminationGracePeriodSeconds: 1
  automountServiceAccountToken: false
  containers:
    - name: app
      image: %s
      imagePullPolicy: Never
      command: ["/sleeper", "workload"]
`, name, ns, role, l.String(), indent(k8sUlimit, "      "), SleeperImage)
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n")
}

// adjusted reports whether the pod's container got k8sUlimit: the OCI spec
// containerd created it with (CRI's verbose status) has the rlimit.
func (k *Kube) adjusted(p *kubePod) bool {
	k.tb.Helper()
	id := p.ContainerID("app")
	if id == "" {
		k.tb.Fatalf("pod %s/%s: no container id", p.Metadata.Namespace, p.Metadata.Name)
	}
	return hasRlimit(k.Inspect(id).Spec)
}

func hasRlimit(s *rspec.Spec) bool {
	if s == nil || s.Process == nil {
		return false
	}
	for _, r := range s.Process.Rlimits {
		if r.Type == "RLIMIT_NOFILE" && r.Soft == 1111 && r.Hard == 2222 {
			return true
		}
	}
	return false
}

// rolloutRestart creates pods of the selected namespace, one after the
// other, from just before `kubectl rollout restart ds/nrid` until the new
// nrid pod is Ready with the plugin registered and a few more; then every
// pod must run with the plugin's adjustment: the documented configuration
// (containerd requires the bridge, nrid keeps its state directory and
// requires the plugin) admits none without it while nrid is replaced.
func (k *Kube) rolloutRestart(t *testing.T, nrictl func(...string) (string, error)) {
	const after = 3
	var (
		mu      sync.Mutex
		created []string
		stop    = make(chan struct{})
		done    = make(chan error, 1)
	)
	create := func(i int) error {
		name := fmt.Sprintf("rollout-%03d", i)
		if _, err := k.kubectlIn(k8sPodRole(name, k8sSelectedNS, "rollout", nil), "create", "-f", "-"); err != nil {
			return err
		}
		mu.Lock()
		created = append(created, name)
		mu.Unlock()
		return nil
	}
	refusedBefore := countIn(k.Ctrd.Log, refusedMsg)
	k.step("rollout-restart", func() {
		go func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					for j := range after {
						if err := create(i + j); err != nil {
							done <- err
							return
						}
					}
					done <- nil
					return
				default:
				}
				if err := create(i); err != nil {
					done <- err
					return
				}
			}
		}()
		// A pod or two before nrid goes away.
		waitFor(30*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(created) >= 2 })
		k.Kubectl("rollout", "restart", "daemonset/nrid", "-n", "kube-system")
		k.Kubectl("rollout", "status", "daemonset/nrid", "-n", "kube-system", "--timeout=3m")
		k.WaitPodsReady("kube-system", "app.kubernetes.io/name=nrid", 2*time.Minute)
		if !waitFor(90*time.Second, func() bool {
			out, err := nrictl("plugins")
			return err == nil && strings.Contains(out, k8sPlugin)
		}) {
			t.Fatalf("%s not back with the new nrid within 90s", k8sPlugin)
		}
		close(stop)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		n := len(created)
		mu.Unlock()
		pods := k.WaitPodsReadyN(k8sSelectedNS, "nri-e2e/role=rollout", n, 5*time.Minute)
		var without []string
		for i := range pods {
			if !k.adjusted(&pods[i]) {
				without = append(without, pods[i].Metadata.Name)
			}
		}
		refused := countIn(k.Ctrd.Log, refusedMsg) - refusedBefore
		t.Logf("rollout restart of nrid: %d pods created meanwhile, %d admitted without %s's adjustment, %d creations refused by containerd while nrid was away (the kubelet retried them)", n, len(without), k8sPlugin, refused)
		k.timings = append(k.timings, stepTiming{fmt.Sprintf("(pods %d, unadjusted %d, refused %d)", n, len(without), refused), 0})
		if len(without) > 0 {
			t.Errorf("pods admitted without their required plugin's adjustment during the rollout: %v", without)
		}
	})
}

// refusedMsg is what containerd's default validator logs when it refuses a
// container because the bridge ("nri-grpc") is not there.
const refusedMsg = `rejecting adjustment: validation error: required plugin \"nri-grpc\" not present`

// countIn counts the lines of the file at path that contain s.
func countIn(path, s string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), s)
}

// WaitPodsReadyN waits until n pods of ns matching selector are Ready.
func (k *Kube) WaitPodsReadyN(ns, selector string, n int, timeout time.Duration) []kubePod {
	k.tb.Helper()
	var pods []kubePod
	if !waitFor(timeout, func() bool {
		pods = k.Pods(ns, selector)
		ready := 0
		for i := range pods {
			if pods[i].Ready() {
				ready++
			}
		}
		return ready >= n
	}) {
		out, _ := k.kubectlErr("get", "pods", "-n", ns, "-l", selector, "-o", "wide")
		k.tb.Fatalf("fewer than %d pods %s in %s Ready within %v:\n%s", n, selector, ns, timeout, out)
	}
	return pods
}

// prometheus runs a real Prometheus (Debian's, extracted from its package
// when missing) scraping nrid's pod, found through the API server by the
// prometheus.io annotations the chart sets, over the pod network; then asks
// its query API.
func (k *Kube) prometheus(t *testing.T) {
	bin := ensurePrometheus(t)
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	// Debian's Prometheus is built without kubernetes_sd_configs (the
	// package leaves out the service discoveries whose dependencies Debian
	// lacks), so the suite discovers nrid's pod as that would, through the
	// API server: its IP and the port its prometheus.io/port annotation (set
	// by the chart) names, and hands Prometheus the target.
	pods := k.WaitPodsReady("kube-system", "app.kubernetes.io/name=nrid", time.Minute)
	var targets []string
	for _, p := range pods {
		if p.Metadata.Annotations["prometheus.io/scrape"] != "true" || p.Metadata.Annotations["prometheus.io/port"] == "" {
			t.Fatalf("nrid's pod %s lacks the prometheus.io/scrape and prometheus.io/port annotations: %v", p.Metadata.Name, p.Metadata.Annotations)
		}
		targets = append(targets, fmt.Sprintf("%q", p.Status.PodIP+":"+p.Metadata.Annotations["prometheus.io/port"]))
	}
	cfg := fmt.Sprintf(`global:
  scrape_interval: 2s
  evaluation_interval: 2s
scrape_configs:
  - job_name: nrid
    static_configs:
      - targets: [%s]
`, strings.Join(targets, ", "))
	path := filepath.Join(k.Dir, "prometheus.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	k.start("prometheus", filepath.Join(k.Logs, "prometheus.log"), bin, nil,
		"--config.file="+path, "--storage.tsdb.path="+filepath.Join(k.Dir, "prometheus"),
		"--web.listen-address="+addr)
	query := func(q string) []promSample {
		resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(q))
		if err != nil {
			return nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var r struct {
			Data struct {
				Result []promSample `json:"result"`
			} `json:"data"`
		}
		if json.Unmarshal(b, &r) != nil {
			return nil
		}
		return r.Data.Result
	}
	// up == 1 for nrid's pod: discovered through the API server and scraped.
	if !waitFor(90*time.Second, func() bool {
		s := query(`up{job="nrid"} == 1`)
		return len(s) == 1
	}) {
		t.Fatalf("Prometheus did not scrape nrid within 90s; targets:\n%s", k.Tail(filepath.Join(k.Logs, "prometheus.log"), 20))
	}
	// And nrid's own series: the registered plugins, counted calls.
	for _, q := range []string{`nri_plugins_registered{job="nrid"} >= 1`, `sum(nri_plugin_calls_total{job="nrid"}) > 0`} {
		if !waitFor(30*time.Second, func() bool { return len(query(q)) > 0 }) {
			t.Errorf("Prometheus query %s: no result", q)
		}
	}
}

// promSample is one sample of a Prometheus instant query.
type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  []any             `json:"value"`
}

// ensurePrometheus returns Debian's prometheus: on PATH, or extracted from
// its package into .tmp/bin by deploy/prometheus/promtool.sh (apt-get
// download: no package installed, no service started), as make check's
// promtool is.
func ensurePrometheus(tb testing.TB) string {
	tb.Helper()
	cmd := exec.Command("bash", filepath.Join(suite.Repo, "deploy", "prometheus", "promtool.sh"), "prometheus")
	cmd.Env = append(os.Environ(), "BIN="+filepath.Join(suite.Repo, ".tmp", "bin"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("promtool.sh prometheus: %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}
