package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/nri/pkg/api"
)

// logLine is one line the plugin logged.
type logLine struct {
	level api.LogRequest_Level
	msg   string
}

// recorder collects the plugin's log lines (calls are sequential).
type recorder struct{ lines []logLine }

func (r *recorder) log(_ context.Context, level api.LogRequest_Level, msg string) {
	r.lines = append(r.lines, logLine{level, msg})
}

// msgs returns the logged messages.
func (r *recorder) msgs() []string {
	var out []string
	for _, l := range r.lines {
		out = append(out, l.msg)
	}
	return out
}

// configured returns a plugin configured with cfg, failing t on error.
func configured(t *testing.T, cfg string) (*adjuster, *recorder, *api.ConfigureResponse) {
	t.Helper()
	rec := &recorder{}
	a := newAdjuster(rec.log)
	rpl, err := a.Configure(t.Context(), &api.ConfigureRequest{Config: cfg, RuntimeName: "rt", RuntimeVersion: "v9"})
	if err != nil {
		t.Fatalf("Configure(%q): %v", cfg, err)
	}
	return a, rec, rpl
}

// testPod is a pod with the given annotations.
func testPod(annotations map[string]string) *api.PodSandbox {
	return &api.PodSandbox{Id: "pod-id", Name: "web", Namespace: "shop", Annotations: annotations}
}

// testContainer is a container of testPod.
func testContainer() *api.Container {
	return &api.Container{Id: "ctr-id", PodSandboxId: "pod-id", Name: "app"}
}

func TestConfigureDefaults(t *testing.T) {
	for _, cfg := range []string{"", "  \n", "{}", `{"env": {}, "events": []}`} {
		_, rec, rpl := configured(t, cfg)
		want := api.EventMask(0)
		want.Set(api.Event_RUN_POD_SANDBOX, api.Event_CREATE_CONTAINER, api.Event_START_CONTAINER,
			api.Event_UPDATE_CONTAINER, api.Event_STOP_CONTAINER, api.Event_REMOVE_CONTAINER,
			api.Event_REMOVE_POD_SANDBOX)
		if got := api.EventMask(rpl.GetEvents()); got != want {
			t.Errorf("config %q: events %s, want %s", cfg, got.PrettyString(), want.PrettyString())
		}
		if len(rec.lines) != 1 || !strings.HasPrefix(rec.lines[0].msg, "configured by rt v9") ||
			rec.lines[0].level != api.LogRequest_LEVEL_INFO {
			t.Errorf("config %q: logged %q", cfg, rec.msgs())
		}
	}
}

func TestConfigureEvents(t *testing.T) {
	_, _, rpl := configured(t, `{"events": ["CreateContainer", "stopcontainer"]}`)
	want := api.EventMask(0)
	want.Set(api.Event_CREATE_CONTAINER, api.Event_STOP_CONTAINER)
	if got := api.EventMask(rpl.GetEvents()); got != want {
		t.Errorf("events %s, want %s", got.PrettyString(), want.PrettyString())
	}
}

func TestConfigureRejects(t *testing.T) {
	for _, cfg := range []string{
		`{"env": {"A": "1"}, "extra": true}`,
		`{"Env ": {}}`,
		`{"events": ["CreateContainer", "NoSuchEvent"]}`,
		`{"env": {"": "x"}}`,
		`{"env": {"A=B": "x"}}`,
		`{"env": {"A": 1}}`,
		`{"env": {}} {}`,
		`[]`,
		`not json`,
	} {
		rec := &recorder{}
		a := newAdjuster(rec.log)
		before := a.events
		if _, err := a.Configure(t.Context(), &api.ConfigureRequest{Config: cfg}); err == nil {
			t.Errorf("Configure(%q) succeeded", cfg)
			continue
		}
		if a.events != before || a.env != nil {
			t.Errorf("Configure(%q) failed but changed the plugin", cfg)
		}
		if len(rec.lines) != 1 || rec.lines[0].level != api.LogRequest_LEVEL_ERROR {
			t.Errorf("Configure(%q) logged %v", cfg, rec.lines)
		}
	}
}

func TestCreateContainer(t *testing.T) {
	a, rec, _ := configured(t, `{"env": {"ZONE": "b", "TIER": "gold"}}`)
	rpl, err := a.CreateContainer(t.Context(), &api.CreateContainerRequest{
		Pod:       testPod(map[string]string{nofileAnnotation: "1024:4096"}),
		Container: testContainer(),
	})
	if err != nil {
		t.Fatal(err)
	}
	adj := rpl.GetAdjust()
	var env []string
	for _, kv := range adj.GetEnv() {
		env = append(env, kv.GetKey()+"="+kv.GetValue())
	}
	if want := []string{"WASM_ADJUSTER=app", "TIER=gold", "ZONE=b"}; !slices.Equal(env, want) {
		t.Errorf("env %q, want %q", env, want)
	}
	if got := adj.GetAnnotations()[podAnnotation]; got != "shop/web" {
		t.Errorf("annotation %s = %q, want shop/web", podAnnotation, got)
	}
	rl := adj.GetRlimits()
	if len(rl) != 1 || rl[0].GetType() != "RLIMIT_NOFILE" || rl[0].GetSoft() != 1024 || rl[0].GetHard() != 4096 {
		t.Errorf("rlimits %v, want RLIMIT_NOFILE 1024/4096", rl)
	}
	if len(rpl.GetUpdate()) != 0 || len(rpl.GetEvict()) != 0 {
		t.Errorf("updates %v, evictions %v", rpl.GetUpdate(), rpl.GetEvict())
	}
	if got := rec.msgs(); got[len(got)-1] != "CreateContainer shop/web/app" {
		t.Errorf("logged %q", got)
	}
}

func TestCreateContainerWithoutNofile(t *testing.T) {
	a, _, _ := configured(t, "")
	rpl, err := a.CreateContainer(t.Context(), &api.CreateContainerRequest{Pod: testPod(nil), Container: testContainer()})
	if err != nil {
		t.Fatal(err)
	}
	if rl := rpl.GetAdjust().GetRlimits(); len(rl) != 0 {
		t.Errorf("rlimits %v without the annotation", rl)
	}
	if env := rpl.GetAdjust().GetEnv(); len(env) != 1 || env[0].GetKey() != envName {
		t.Errorf("env %v", env)
	}
}

func TestCreateContainerMalformedNofile(t *testing.T) {
	for _, v := range []string{"", "1024", "1024:", ":4096", "a:b", "-1:10", "10:5", "1:2:3", " 1:2",
		"1:18446744073709551616"} {
		a, rec, _ := configured(t, "")
		_, err := a.CreateContainer(t.Context(), &api.CreateContainerRequest{
			Pod:       testPod(map[string]string{nofileAnnotation: v}),
			Container: testContainer(),
		})
		if err == nil || !strings.Contains(err.Error(), nofileAnnotation) {
			t.Errorf("nofile %q: error %v, want one naming %s", v, err, nofileAnnotation)
		}
		if last := rec.lines[len(rec.lines)-1]; last.level != api.LogRequest_LEVEL_WARN {
			t.Errorf("nofile %q: last log %v", v, last)
		}
	}
}

func TestCreateContainerLargestNofile(t *testing.T) {
	a, _, _ := configured(t, "")
	rpl, err := a.CreateContainer(t.Context(), &api.CreateContainerRequest{
		Pod:       testPod(map[string]string{nofileAnnotation: "0:18446744073709551615"}),
		Container: testContainer(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if rl := rpl.GetAdjust().GetRlimits(); len(rl) != 1 || rl[0].GetSoft() != 0 || rl[0].GetHard() != 1<<64-1 {
		t.Errorf("rlimits %v", rl)
	}
}

func TestOtherEventsLogAndChangeNothing(t *testing.T) {
	a, rec, _ := configured(t, "")
	ctx := t.Context()
	pod, ctr := testPod(nil), testContainer()
	rec.lines = nil

	if rpl, err := a.UpdateContainer(ctx, &api.UpdateContainerRequest{Pod: pod, Container: ctr}); err != nil || len(rpl.GetUpdate()) != 0 || len(rpl.GetEvict()) != 0 {
		t.Errorf("UpdateContainer: %v, %v", rpl, err)
	}
	if rpl, err := a.StopContainer(ctx, &api.StopContainerRequest{Pod: pod, Container: ctr}); err != nil || len(rpl.GetUpdate()) != 0 {
		t.Errorf("StopContainer: %v, %v", rpl, err)
	}
	if rpl, err := a.UpdatePodSandbox(ctx, &api.UpdatePodSandboxRequest{Pod: pod}); err != nil || rpl == nil {
		t.Errorf("UpdatePodSandbox: %v, %v", rpl, err)
	}
	if rpl, err := a.Synchronize(ctx, &api.SynchronizeRequest{Pods: []*api.PodSandbox{pod}, Containers: []*api.Container{ctr}}); err != nil || len(rpl.GetUpdate()) != 0 {
		t.Errorf("Synchronize: %v, %v", rpl, err)
	}
	if rpl, err := a.ValidateContainerAdjustment(ctx, &api.ValidateContainerAdjustmentRequest{Pod: pod, Container: ctr}); err != nil || rpl.GetReject() {
		t.Errorf("ValidateContainerAdjustment: %v, %v", rpl, err)
	}
	calls := []func() error{
		func() error { _, err := a.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod}); return err },
		func() error {
			_, err := a.PostUpdatePodSandbox(ctx, &api.PostUpdatePodSandboxRequest{Pod: pod})
			return err
		},
		func() error { _, err := a.StopPodSandbox(ctx, &api.StopPodSandboxRequest{Pod: pod}); return err },
		func() error { _, err := a.RemovePodSandbox(ctx, &api.RemovePodSandboxRequest{Pod: pod}); return err },
		func() error {
			_, err := a.PostCreateContainer(ctx, &api.PostCreateContainerRequest{Pod: pod, Container: ctr})
			return err
		},
		func() error {
			_, err := a.StartContainer(ctx, &api.StartContainerRequest{Pod: pod, Container: ctr})
			return err
		},
		func() error {
			_, err := a.PostStartContainer(ctx, &api.PostStartContainerRequest{Pod: pod, Container: ctr})
			return err
		},
		func() error {
			_, err := a.PostUpdateContainer(ctx, &api.PostUpdateContainerRequest{Pod: pod, Container: ctr})
			return err
		},
		func() error {
			_, err := a.RemoveContainer(ctx, &api.RemoveContainerRequest{Pod: pod, Container: ctr})
			return err
		},
		func() error {
			_, err := a.StateChange(ctx, &api.StateChangeEvent{Event: api.Event_STOP_POD_SANDBOX, Pod: pod})
			return err
		},
		func() error {
			_, err := a.StateChange(ctx, &api.StateChangeEvent{Event: api.Event_START_CONTAINER, Pod: pod, Container: ctr})
			return err
		},
		func() error { _, err := a.Shutdown(ctx, &api.Empty{}); return err },
	}
	for i, call := range calls {
		if err := call(); err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
	want := []string{
		"UpdateContainer shop/web/app",
		"StopContainer shop/web/app",
		"UpdatePodSandbox shop/web",
		"Synchronize 1 pods, 1 containers",
		"ValidateContainerAdjustment shop/web/app",
		"RunPodSandbox shop/web",
		"PostUpdatePodSandbox shop/web",
		"StopPodSandbox shop/web",
		"RemovePodSandbox shop/web",
		"PostCreateContainer shop/web/app",
		"StartContainer shop/web/app",
		"PostStartContainer shop/web/app",
		"PostUpdateContainer shop/web/app",
		"RemoveContainer shop/web/app",
		"StopPodSandbox shop/web",
		"StartContainer shop/web/app",
		"Shutdown",
	}
	if got := rec.msgs(); !slices.Equal(got, want) {
		t.Errorf("logged\n%q\nwant\n%q", got, want)
	}
}
