package helm_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/nri-grpc/nri-grpc/config"
	"github.com/nri-grpc/nri-grpc/plugin"
	"github.com/nri-grpc/nri-grpc/server/validate"
)

// object is the part of a rendered Kubernetes object the tests look at.
type object struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name      string            `yaml:"name"`
		Namespace string            `yaml:"namespace"`
		Labels    map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Data map[string]string `yaml:"data"`
	Spec struct {
		// DaemonSet
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template struct {
			Metadata struct {
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"metadata"`
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
		// Service
		ClusterIP string `yaml:"clusterIP"`
		Ports     []struct {
			Name string `yaml:"name"`
			Port int    `yaml:"port"`
		} `yaml:"ports"`
		// ServiceMonitor
		Endpoints []struct {
			Port string `yaml:"port"`
			Path string `yaml:"path"`
		} `yaml:"endpoints"`
	} `yaml:"spec"`
}

type podSpec struct {
	PriorityClassName            string      `yaml:"priorityClassName"`
	AutomountServiceAccountToken *bool       `yaml:"automountServiceAccountToken"`
	Containers                   []container `yaml:"containers"`
	Volumes                      []struct {
		Name     string `yaml:"name"`
		HostPath *struct {
			Path string `yaml:"path"`
		} `yaml:"hostPath"`
		ConfigMap *struct {
			Name string `yaml:"name"`
		} `yaml:"configMap"`
	} `yaml:"volumes"`
}

type container struct {
	Name  string   `yaml:"name"`
	Image string   `yaml:"image"`
	Args  []string `yaml:"args"`
	Env   []struct {
		Name  string `yaml:"name"`
		Value string `yaml:"value"`
	} `yaml:"env"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	ReadinessProbe  *probe `yaml:"readinessProbe"`
	LivenessProbe   *probe `yaml:"livenessProbe"`
	SecurityContext struct {
		RunAsUser                *int  `yaml:"runAsUser"`
		ReadOnlyRootFilesystem   bool  `yaml:"readOnlyRootFilesystem"`
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		Capabilities             struct {
			Drop []string `yaml:"drop"`
			Add  []string `yaml:"add"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
	Exec *struct {
		Command []string `yaml:"command"`
	} `yaml:"exec"`
}

func (c *container) env(name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

// mountOf is the hostPath or ConfigMap volume mounted at path, "" if none.
func (p *podSpec) mountOf(c *container, path string) string {
	for _, m := range c.VolumeMounts {
		if m.MountPath != path {
			continue
		}
		for _, v := range p.Volumes {
			if v.Name != m.Name {
				continue
			}
			switch {
			case v.HostPath != nil:
				return "hostPath:" + v.HostPath.Path
			case v.ConfigMap != nil:
				return "configMap:" + v.ConfigMap.Name
			}
		}
	}
	return ""
}

// rendered is one `helm template`.
type rendered struct {
	objects []object
}

func (r *rendered) get(t *testing.T, kind, name string) *object {
	t.Helper()
	for i := range r.objects {
		if o := &r.objects[i]; o.Kind == kind && o.Metadata.Name == name {
			return o
		}
	}
	t.Fatalf("no %s %q among the rendered objects %v", kind, name, r.kinds())
	return nil
}

func (r *rendered) kinds() []string {
	var out []string
	for _, o := range r.objects {
		out = append(out, o.Kind+"/"+o.Metadata.Name)
	}
	slices.Sort(out)
	return out
}

func helmBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("HELM")
	if bin == "" {
		t.Skip("HELM is not set; `make chart-check` sets it")
	}
	return bin
}

// helmTemplate renders chart (a directory here) as release into namespace
// kube-system with the values files (relative to the chart) and --set
// pairs; it returns helm's error output when helm fails.
func helmTemplate(t *testing.T, chart, release string, values []string, set ...string) (*rendered, string, error) {
	t.Helper()
	args := []string{"template", release, chart, "--namespace", "kube-system"}
	for _, v := range values {
		args = append(args, "--values", filepath.Join(chart, v))
	}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	cmd := exec.Command(helmBin(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, stderr.String(), err
	}
	r := &rendered{}
	dec := yaml.NewDecoder(bytes.NewReader(out))
	for {
		var o object
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("helm %v: the output does not parse as YAML: %v\n%s", args, err, out)
		}
		if o.Kind == "" {
			continue
		}
		if o.Metadata.Namespace != "kube-system" {
			t.Errorf("%s/%s: namespace %q, want the release's (kube-system)", o.Kind, o.Metadata.Name, o.Metadata.Namespace)
		}
		r.objects = append(r.objects, o)
	}
	return r, "", nil
}

func mustTemplate(t *testing.T, chart, release string, values []string, set ...string) *rendered {
	t.Helper()
	r, stderr, err := helmTemplate(t, chart, release, values, set...)
	if err != nil {
		t.Fatalf("helm template %s %v %v: %v\n%s", chart, values, set, err, stderr)
	}
	return r
}

// nridConfig parses the rendered nrid.toml as nrid does (config.Parse, then
// the policy compiled from [[plugin]] and [[policy]]).
func nridConfig(t *testing.T, r *rendered) *config.Config {
	t.Helper()
	toml, ok := r.get(t, "ConfigMap", "nrid-config").Data["nrid.toml"]
	if !ok {
		t.Fatal("ConfigMap nrid-config has no nrid.toml")
	}
	cfg, err := config.Parse([]byte(toml), "nrid.toml", config.Overrides{})
	if err != nil {
		t.Fatalf("the rendered nrid.toml does not parse: %v\n%s", err, toml)
	}
	if _, err := cfg.CompilePolicy(); err != nil {
		t.Fatalf("the rendered nrid.toml's [[plugin]]/[[policy]] do not compile: %v\n%s", err, toml)
	}
	return cfg
}

func TestNridChartDefaults(t *testing.T) {
	r := mustTemplate(t, "nri-grpc", "nrid", nil)
	if got, want := r.kinds(), []string{"ConfigMap/nrid-config", "DaemonSet/nrid"}; !slices.Equal(got, want) {
		t.Fatalf("objects %v, want %v (no RBAC, no Service, no ServiceMonitor by default)", got, want)
	}
	cfg := nridConfig(t, r)
	// The documented configuration (docs/operations.md): bridged to
	// containerd's socket, ready only once it is attached, the restart gate.
	if cfg.Server.StateDir != "/var/lib/nri-grpc" || !cfg.Runtime.Required ||
		cfg.Bridge.RuntimeSocket != "/var/run/nri/nri.sock" || cfg.Bridge.PluginSocket != "/var/run/nri/nri-classic.sock" {
		t.Errorf("state_dir %q, runtime.required %v, bridge %+v: not the documented configuration",
			cfg.Server.StateDir, cfg.Runtime.Required, cfg.Bridge)
	}
	if cfg.Server.Socket != config.DefaultSocket || cfg.Observability.MetricsAddress != "0.0.0.0:9464" {
		t.Errorf("socket %q, metrics_address %q", cfg.Server.Socket, cfg.Observability.MetricsAddress)
	}
	if got := cfg.Validator.TolerateMissingPluginsAnnotation; got != validate.DefaultTolerateMissingPluginsAnnotation {
		t.Errorf("validator.tolerate_missing_plugins_annotation %q, want %q", got, validate.DefaultTolerateMissingPluginsAnnotation)
	}

	ds := r.get(t, "DaemonSet", "nrid")
	pod := &ds.Spec.Template
	for k, v := range ds.Spec.Selector.MatchLabels {
		if pod.Metadata.Labels[k] != v {
			t.Errorf("the pod template lacks the selector's label %s=%s", k, v)
		}
	}
	if got := pod.Metadata.Annotations[validate.DefaultTolerateMissingPluginsAnnotation]; got != "true" {
		t.Errorf("nrid's pod annotation %s = %q, want \"true\" (nrid must start while containerd requires the bridge)",
			validate.DefaultTolerateMissingPluginsAnnotation, got)
	}
	if pod.Metadata.Annotations["checksum/config"] == "" {
		t.Error("no checksum/config annotation: a new nrid.toml would not roll the pods")
	}
	if pod.Spec.PriorityClassName != "system-node-critical" {
		t.Errorf("priorityClassName %q", pod.Spec.PriorityClassName)
	}
	if a := pod.Spec.AutomountServiceAccountToken; a == nil || *a {
		t.Error("nrid does not call the API server: automountServiceAccountToken must be false")
	}
	c := &pod.Spec.Containers[0]
	if !slices.Contains(c.Args, "--config=/etc/nri/nrid.toml") || !slices.Contains(c.Args, "--node-name=$(NODE_NAME)") {
		t.Errorf("args %v", c.Args)
	}
	if got := pod.Spec.mountOf(c, "/etc/nri"); got != "configMap:nrid-config" {
		t.Errorf("/etc/nri is %q, want the ConfigMap", got)
	}
	for _, dir := range []string{"/var/run/nri", cfg.Server.StateDir} {
		if got := pod.Spec.mountOf(c, dir); got != "hostPath:"+dir {
			t.Errorf("%s is %q, want the host's directory at the same path", dir, got)
		}
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "metrics" || c.Ports[0].ContainerPort != 9464 {
		t.Errorf("ports %+v, want metrics 9464 (metrics_address)", c.Ports)
	}
	if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" || p.HTTPGet.Port != "metrics" {
		t.Errorf("readiness probe %+v, want httpGet /readyz on metrics", p)
	}
	if p := c.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/livez" {
		t.Errorf("liveness probe %+v, want httpGet /livez", p)
	}
	sc := c.SecurityContext
	if sc.RunAsUser == nil || *sc.RunAsUser != 0 || !sc.ReadOnlyRootFilesystem || !slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) {
		t.Errorf("securityContext %+v", sc)
	}
}

func TestNridChartFullValues(t *testing.T) {
	r := mustTemplate(t, "nri-grpc", "nrid", []string{"ci/full-values.yaml"})
	want := []string{"ConfigMap/nrid-config", "DaemonSet/nrid", "Service/nrid-metrics", "ServiceMonitor/nrid"}
	if got := r.kinds(); !slices.Equal(got, want) {
		t.Fatalf("objects %v, want %v", got, want)
	}
	cfg := nridConfig(t, r)
	if len(cfg.Plugins) != 2 {
		t.Fatalf("[[plugin]] entries %+v, want 2", cfg.Plugins)
	}
	p := cfg.Plugins[0]
	if p.Name != "20-ulimit-adjuster" || p.Required == nil || !*p.Required || p.NotReady != "wait" ||
		p.MaxTimeout != "2s" || p.WaitOnRestart == nil || !*p.WaitOnRestart {
		t.Errorf("plugin[0] %+v", p)
	}
	if len(p.Selectors) != 2 || !slices.Equal(p.Selectors[0].Namespaces, []string{"apps", "team-a"}) ||
		p.Selectors[1].PodLabels != "nri.example.com/ulimits in (on), app.kubernetes.io/name != ulimit-adjuster" ||
		!slices.Equal(p.Selectors[1].ContainerNames, []string{"app-*"}) || !slices.Equal(p.Selectors[1].RuntimeHandlers, []string{"", "runc"}) {
		t.Errorf("plugin[0] selectors %+v", p.Selectors)
	}
	if q := cfg.Plugins[1]; q.Name != "logger" || q.Required == nil || *q.Required || q.KeepConnected == nil || !*q.KeepConnected {
		t.Errorf("plugin[1] %+v", q)
	}
	// settings merged over the chart's keys, rawConfig's [[policy]].
	if cfg.Server.RequestTimeout.D().String() != "1s" || cfg.Server.MaxConcurrentCalls != 8 || cfg.Server.RegisterRate != 2.5 ||
		cfg.Server.SocketMode != 0o660 || cfg.Observability.Tracing != "stdout" || cfg.Log.Format != "json" {
		t.Errorf("server %+v, observability %+v, log %+v", cfg.Server, cfg.Observability, cfg.Log)
	}
	if len(cfg.Policy) != 1 || !slices.Equal(cfg.Validator.RequiredPlugins, []string{"validator"}) {
		t.Errorf("policy %+v, required_plugins %v", cfg.Policy, cfg.Validator.RequiredPlugins)
	}
	ds := r.get(t, "DaemonSet", "nrid")
	c := &ds.Spec.Template.Spec.Containers[0]
	if c.Image != "localhost/nri-grpc@sha256:0000000000000000000000000000000000000000000000000000000000000000" {
		t.Errorf("image %q", c.Image)
	}
	if len(c.Ports) != 1 || c.Ports[0].ContainerPort != 9465 || cfg.Observability.MetricsAddress != "0.0.0.0:9465" {
		t.Errorf("port %+v, metrics_address %q: want 9465 both", c.Ports, cfg.Observability.MetricsAddress)
	}
	if got := ds.Spec.Template.Metadata.Annotations["prometheus.io/port"]; got != "9465" {
		t.Errorf("prometheus.io/port %q", got)
	}
	svc := r.get(t, "Service", "nrid-metrics")
	if svc.Spec.ClusterIP != "None" || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "metrics" || svc.Spec.Ports[0].Port != 9465 {
		t.Errorf("service %+v", svc.Spec)
	}
	sm := r.get(t, "ServiceMonitor", "nrid")
	if sm.APIVersion != "monitoring.coreos.com/v1" || len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" ||
		sm.Spec.Endpoints[0].Path != "/metrics" || sm.Metadata.Labels["release"] != "prometheus" {
		t.Errorf("ServiceMonitor %s %+v labels %v", sm.APIVersion, sm.Spec.Endpoints, sm.Metadata.Labels)
	}
}

func TestNridChartWithoutMetrics(t *testing.T) {
	r := mustTemplate(t, "nri-grpc", "nrid", []string{"ci/no-metrics-values.yaml"})
	cfg := nridConfig(t, r)
	if cfg.Observability.MetricsAddress != "" || cfg.Server.StateDir != "" || cfg.Runtime.Required {
		t.Errorf("metrics_address %q, state_dir %q, runtime.required %v: want all off",
			cfg.Observability.MetricsAddress, cfg.Server.StateDir, cfg.Runtime.Required)
	}
	ds := r.get(t, "DaemonSet", "nrid")
	pod := &ds.Spec.Template
	c := &pod.Spec.Containers[0]
	want := []string{"/usr/local/bin/nrictl", "--socket=/var/run/nri/nri-grpc.sock", "--timeout=2s", "health"}
	if p := c.ReadinessProbe; p == nil || p.Exec == nil || !slices.Equal(p.Exec.Command, want) {
		t.Errorf("readiness probe %+v, want exec %v", p, want)
	}
	if p := c.LivenessProbe; p == nil || p.Exec == nil || !slices.Equal(p.Exec.Command, append(want, "-live")) {
		t.Errorf("liveness probe %+v, want exec nrictl health -live", p)
	}
	if len(c.Ports) != 0 || pod.Metadata.Annotations["prometheus.io/scrape"] != "" {
		t.Errorf("ports %+v, annotations %v: want no metrics", c.Ports, pod.Metadata.Annotations)
	}
	if _, ok := pod.Metadata.Annotations[validate.DefaultTolerateMissingPluginsAnnotation]; ok || cfg.Validator.TolerateMissingPluginsAnnotation != "" {
		t.Error("tolerateMissingPluginsAnnotation \"\" still annotates the pod or sets the validator's key")
	}
	for _, v := range pod.Spec.Volumes {
		if v.Name == "state" {
			t.Error("a state volume without config.stateDir")
		}
	}
}

func TestNridChartRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		set        []string
	}{
		{"socket outside the mounted directory", "must be below config.hostRunDir", []string{"config.socket=/run/nrid.sock"}},
		{"plugin socket dir outside it", "config.pluginSocketDir", []string{"config.pluginSocketDir=/tmp/plugins"}},
		{"containerd's socket outside it", "config.bridge.runtimeSocket", []string{"config.bridge.runtimeSocket=/run/containerd/nri.sock"}},
		{"plugin without a name", "plugins[0]: name is required", []string{"plugins[0].required=true"}},
		{"ServiceMonitor without metrics", "needs metrics.enabled", []string{"metrics.enabled=false", "metrics.serviceMonitor.enabled=true"}},
		{"a setting that is a table", "cannot be rendered", []string{"config.settings.server.x.y=1"}},
		{"a setting the pod spec follows", "set config.stateDir instead", []string{"config.settings.server.state_dir=/x"}},
		{"the metrics address as a setting", "set metrics.address and metrics.port", []string{"config.settings.observability.metrics_address=:1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, err := helmTemplate(t, "nri-grpc", "nrid", nil, tc.set...)
			if err == nil || !strings.Contains(stderr, tc.want) {
				t.Errorf("--set %v: err %v, stderr %q; want a failure saying %q", tc.set, err, stderr, tc.want)
			}
		})
	}
}

func TestPluginChartDefaults(t *testing.T) {
	r := mustTemplate(t, "nri-grpc-plugin", "ulimit-adjuster", nil)
	if got, want := r.kinds(), []string{"DaemonSet/ulimit-adjuster"}; !slices.Equal(got, want) {
		t.Fatalf("objects %v, want %v (no ConfigMap without config)", got, want)
	}
	// The plugin must find nrid where the nrid chart's defaults put it.
	nrid := nridConfig(t, mustTemplate(t, "nri-grpc", "nrid", nil))
	ds := r.get(t, "DaemonSet", "ulimit-adjuster")
	pod := &ds.Spec.Template
	c := &pod.Spec.Containers[0]
	if c.Image != "ghcr.io/nri-grpc/nri-grpc-ulimit-adjuster:v0.1.0" {
		t.Errorf("image %q", c.Image)
	}
	wantEnv := map[string]string{
		plugin.EnvPluginName:     "ulimit-adjuster",
		plugin.EnvPluginIndex:    "20",
		plugin.EnvServerAddress:  "unix://" + nrid.Server.Socket,
		plugin.EnvPluginEndpoint: nrid.Server.PluginSocketDir + "/20-ulimit-adjuster.sock",
	}
	for k, want := range wantEnv {
		if got, _ := c.env(k); got != want {
			t.Errorf("env %s = %q, want %q", k, got, want)
		}
	}
	if got := pod.Spec.mountOf(c, "/var/run/nri"); got != "hostPath:/var/run/nri" {
		t.Errorf("/var/run/nri is %q, want the host's", got)
	}
	if got := pod.Metadata.Annotations[nrid.Validator.TolerateMissingPluginsAnnotation]; got != "true" {
		t.Errorf("the plugin's pod annotation %s = %q, want \"true\"", nrid.Validator.TolerateMissingPluginsAnnotation, got)
	}
	want := []string{"/usr/local/bin/nrictl", "--socket=" + nrid.Server.Socket, "--timeout=2s", "health", "-service", "nri.plugin/20-ulimit-adjuster"}
	if p := c.ReadinessProbe; p == nil || p.Exec == nil || !slices.Equal(p.Exec.Command, want) {
		t.Errorf("readiness probe %+v, want exec %v", p, want)
	}
	sc := c.SecurityContext
	if sc.RunAsUser == nil || *sc.RunAsUser != 0 || !sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil ||
		*sc.AllowPrivilegeEscalation || !slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("securityContext %+v: want root (nrid's default identity) with no capabilities", sc)
	}
	if a := pod.Spec.AutomountServiceAccountToken; a == nil || *a {
		t.Error("automountServiceAccountToken must be false")
	}
}

func TestPluginChartFullValues(t *testing.T) {
	r := mustTemplate(t, "nri-grpc-plugin", "validator", []string{"ci/full-values.yaml"})
	if got, want := r.kinds(), []string{"ConfigMap/validator-config", "DaemonSet/validator"}; !slices.Equal(got, want) {
		t.Fatalf("objects %v, want %v", got, want)
	}
	cm := r.get(t, "ConfigMap", "validator-config")
	if got := cm.Data["90-validator.conf"]; got != "allowed_mount_sources: [/srv]\n" {
		t.Errorf("90-validator.conf %q", got)
	}
	ds := r.get(t, "DaemonSet", "validator")
	pod := &ds.Spec.Template
	c := &pod.Spec.Containers[0]
	if got := pod.Spec.mountOf(c, "/etc/nri-grpc/plugin"); got != "configMap:validator-config" {
		t.Errorf("/etc/nri-grpc/plugin is %q", got)
	}
	if got, _ := c.env("PLUGIN_CONFIG_FILE"); got != "/etc/nri-grpc/plugin/90-validator.conf" {
		t.Errorf("PLUGIN_CONFIG_FILE %q", got)
	}
	if got, _ := c.env(plugin.EnvPluginEndpoint); got != "/var/run/nri/plugins/90-validator.sock" {
		t.Errorf("endpoint %q", got)
	}
	if !slices.Equal(c.Args, []string{"-allowed-mount-sources=/srv", "-verbose"}) || c.ReadinessProbe != nil || c.Image != "localhost/nri-grpc-validator:dev" {
		t.Errorf("args %v, readiness %+v, image %q", c.Args, c.ReadinessProbe, c.Image)
	}
	if pod.Metadata.Annotations["checksum/config"] == "" {
		t.Error("no checksum/config annotation")
	}
}

func TestPluginChartRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		set        []string
	}{
		{"a one-digit index", "must be two digits", []string{"plugin.index=5"}},
		{"a name with a slash", "plugin.name", []string{"plugin.name=a/b"}},
		{"nrid's socket outside the mounted directory", "must be below nrid.hostRunDir", []string{"nrid.socket=/run/nrid.sock"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, err := helmTemplate(t, "nri-grpc-plugin", "p", nil, tc.set...)
			if err == nil || !strings.Contains(stderr, tc.want) {
				t.Errorf("--set %v: err %v, stderr %q; want a failure saying %q", tc.set, err, stderr, tc.want)
			}
		})
	}
}
