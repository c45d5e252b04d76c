package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/containerd/nri/pkg/adaptation"
	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/plugin"
	"github.com/nri-grpc/nri-grpc/test/conformance"
)

// envFake makes the test binary a plugin (fakePlugin) in the mode it
// names: nritest launches it as CMD.
const envFake = "NRITEST_FAKE_PLUGIN"

func TestMain(m *testing.M) {
	if mode := os.Getenv(envFake); mode != "" {
		if err := fakePlugin(mode); err != nil {
			fmt.Fprintln(os.Stderr, "fake plugin:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fake is a plugin whose misbehaviour the mode selects:
//
//	good       answers everything (CreateContainer sets an env variable)
//	slow       CreateContainer never answers (a timeout)
//	failing    PostStartContainer fails
//	crash      the process exits in StartContainer
//	invalid    CreateContainer answers an adjustment the server refuses
type fake struct{ mode string }

func (f *fake) RunPodSandbox(context.Context, *nriv1beta1.RunPodSandboxRequest) (*nriv1beta1.RunPodSandboxResponse, error) {
	return nil, nil
}

func (f *fake) CreateContainer(ctx context.Context, _ *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
	if f.mode == "slow" {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if f.mode == "invalid" {
		// A value the runtime spec forbids: the server refuses it.
		return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
			Rlimits: []*nriv1beta1.POSIXRlimit{{Type: "RLIMIT_BOGUS", Hard: 1, Soft: 2}}}}, nil
	}
	a := plugin.NewAdjustment()
	a.AddEnv("NRITEST", "1")
	return a.Response(), nil
}

func (f *fake) StartContainer(context.Context, *nriv1beta1.StartContainerRequest) (*nriv1beta1.StartContainerResponse, error) {
	if f.mode == "crash" {
		os.Exit(3)
	}
	return nil, nil
}

func (f *fake) PostStartContainer(context.Context, *nriv1beta1.PostStartContainerRequest) (*nriv1beta1.PostStartContainerResponse, error) {
	if f.mode == "failing" {
		return nil, errors.New("post-start hook failed")
	}
	return nil, nil
}

// classicFake is a classic stub plugin (containerd/nri pkg/stub): mode
// "classic" answers, "classic-crash" exits in StartContainer.
type classicFake struct{ mode string }

func (f *classicFake) CreateContainer(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	a := &api.ContainerAdjustment{}
	a.AddAnnotation("nritest", "1")
	return a, nil, nil
}

func (f *classicFake) StartContainer(context.Context, *api.PodSandbox, *api.Container) error {
	if f.mode == "classic-crash" {
		os.Exit(3)
	}
	return nil
}

func fakePlugin(mode string) error {
	if strings.HasPrefix(mode, "classic") {
		s, err := stub.New(&classicFake{mode: mode})
		if err != nil {
			return err
		}
		return s.Run(context.Background())
	}
	p, err := plugin.New(&fake{mode: mode}, plugin.WithTimeouts(plugin.Timeouts{Request: 500 * time.Millisecond}))
	if err != nil {
		return err
	}
	return p.Run(context.Background())
}

// runFake runs `nritest plugin --json` against the fake plugin in mode
// and returns the report and run's error.
func runFake(t *testing.T, mode string, extra ...string) (*report, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	args := append([]string{"plugin", "--json", "--name", "fake", "--env", envFake + "=" + mode, "--restart-timeout", "20s"}, extra...)
	args = append(args, "--", os.Args[0])
	err := run(context.Background(), args, &out, &errOut)
	var r report
	if jerr := json.Unmarshal(out.Bytes(), &r); jerr != nil {
		t.Fatalf("report: %v\n%s\n%s", jerr, out.String(), errOut.String())
	}
	return &r, err
}

func result(r *report, name string) conformance.ScenarioReport {
	for _, s := range r.Report.Scenarios {
		if s.Name == name {
			return s
		}
	}
	return conformance.ScenarioReport{}
}

func TestPluginGood(t *testing.T) {
	r, err := runFake(t, "good")
	if err != nil {
		t.Errorf("run: %v", err)
	}
	for _, s := range r.Report.Scenarios {
		want := conformance.Pass
		if strings.HasPrefix(s.Name, "event/") && !strings.Contains("event/RunPodSandbox event/CreateContainer event/StartContainer event/PostStartContainer", s.Name) {
			want = conformance.Skip
		}
		if s.Result != want {
			t.Errorf("%s: %s, want %s: %v", s.Name, s.Result, want, s.Messages)
		}
	}
	if m := result(r, "event/CreateContainer").Messages; len(m) == 0 || !strings.Contains(m[0], "adjusts env") {
		t.Errorf("event/CreateContainer detail %q does not describe the adjustment", m)
	}
}

func TestPluginMisbehaving(t *testing.T) {
	for _, c := range []struct {
		mode, check, text string
	}{
		{"slow", "event/CreateContainer", "timeout"},
		{"failing", "event/PostStartContainer", "post-start hook failed"},
		{"crash", "process", "exited"},
		{"invalid", "event/CreateContainer", "refused"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			r, err := runFake(t, c.mode, "--no-restart")
			if !errors.Is(err, errFailed) {
				t.Errorf("run: %v, want errFailed", err)
			}
			s := result(r, c.check)
			if s.Result != conformance.Fail || !strings.Contains(strings.Join(s.Messages, " "), c.text) {
				t.Errorf("%s: %s %q, want FAIL mentioning %q", c.check, s.Result, s.Messages, c.text)
			}
			if exitCode(err, &bytes.Buffer{}) != 1 {
				t.Errorf("exit code %d, want 1", exitCode(err, &bytes.Buffer{}))
			}
		})
	}
}

func TestPluginClassic(t *testing.T) {
	r, err := runFake(t, "classic", "--classic")
	if err != nil {
		t.Errorf("run: %v", err)
	}
	for _, name := range []string{"registers", "synchronize", "event/CreateContainer", "event/StartContainer", "concurrent-events", "shutdown"} {
		if s := result(r, name); s.Result != conformance.Pass {
			t.Errorf("%s: %s %q, want PASS", name, s.Result, s.Messages)
		}
	}
	if s := result(r, "event/RunPodSandbox"); s.Result != conformance.Skip {
		t.Errorf("event/RunPodSandbox: %s, want SKIP (not subscribed)", s.Result)
	}
	r, err = runFake(t, "classic-crash", "--classic")
	if !errors.Is(err, errFailed) {
		t.Errorf("crashing classic plugin: run: %v, want errFailed", err)
	}
	for _, name := range []string{"event/StartContainer", "process"} {
		if s := result(r, name); s.Result != conformance.Fail {
			t.Errorf("crashing classic plugin: %s: %s %q, want FAIL", name, s.Result, s.Messages)
		}
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"bogus"}, {"plugin"}, {"plugin", "--idx", "x", "--", "true"}} {
		err := run(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{})
		if exitCode(err, &bytes.Buffer{}) != 2 {
			t.Errorf("%q: exit code %d (%v), want 2", args, exitCode(err, &bytes.Buffer{}), err)
		}
	}
}

// TestRuntimeAdaptation runs part of the catalog against a real nrid.
func TestRuntimeAdaptation(t *testing.T) {
	nrid := t.TempDir() + "/nrid"
	build := exec.Command("go", "build", "-o", nrid, "github.com/nri-grpc/nri-grpc/cmd/nrid")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building nrid: %v\n%s", err, out)
	}
	var out bytes.Buffer
	err := run(context.Background(), []string{"runtime", "--json", "--nrid", nrid, "--run", "^(PluginConnection|ContainerCreationAdjustments)/"}, &out, &bytes.Buffer{})
	if err != nil {
		t.Errorf("run: %v", err)
	}
	var r report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.Report.Count(conformance.Pass) < 10 {
		t.Errorf("%d scenarios passed, want at least 10: %+v", r.Report.Count(conformance.Pass), r.Report)
	}
	for _, s := range r.Report.Scenarios {
		if s.Result == conformance.Fail {
			t.Errorf("%s/%s: %v", s.Group, s.Name, s.Messages)
		}
	}
}

// TestMatrix runs the version matrix (the classic helpers are built into
// the user's cache once, which needs the Go toolchain and the module
// cache or proxy). make nritest runs the matrix in CI; here it runs with
// NRITEST_MATRIX=1.
func TestMatrix(t *testing.T) {
	if os.Getenv("NRITEST_MATRIX") == "" {
		t.Skip("builds the classic helpers with the go toolchain (the module proxy when cold): set NRITEST_MATRIX=1; make nritest runs the matrix")
	}
	var out bytes.Buffer
	err := run(context.Background(), []string{"matrix", "--json"}, &out, &bytes.Buffer{})
	var r report
	if jerr := json.Unmarshal(out.Bytes(), &r); jerr != nil {
		t.Fatalf("report: %v\n%s", jerr, out.String())
	}
	if err != nil {
		t.Errorf("run: %v", err)
	}
	if n := r.Report.Count(conformance.Pass); n != 13 {
		t.Errorf("%d cells passed, want 13", n)
	}
	for _, s := range r.Report.Scenarios {
		if s.Result != conformance.Pass {
			t.Errorf("%s: %s %v", s.Name, s.Result, s.Messages)
		}
	}
	if err := run(context.Background(), []string{"matrix", "--old", "0.11"}, &bytes.Buffer{}, &bytes.Buffer{}); exitCode(err, &bytes.Buffer{}) != 2 {
		t.Errorf("--old 0.11: %v, want a usage error", err)
	}
}

// classicCount is a classic runtime's metrics: it signals the plugin count.
type classicCount struct{ n chan int }

func (c classicCount) RecordPluginInvocation(string, string, error)      {}
func (c classicCount) RecordPluginLatency(string, string, time.Duration) {}
func (c classicCount) RecordPluginAdjustments(string, string, *api.ContainerAdjustment, int, int) {
}
func (c classicCount) UpdatePluginCount(n int) {
	select {
	case c.n <- n:
	default:
	}
}

// TestRuntimeClassic runs `runtime --classic` against classic NRI's own
// runtime (pkg/adaptation) while the test creates a pod: a runtime that
// applies the adjustment passes, one that drops it fails.
func TestRuntimeClassic(t *testing.T) {
	for _, apply := range []bool{true, false} {
		t.Run(fmt.Sprint("apply=", apply), func(t *testing.T) {
			sock := t.TempDir() + "/nri.sock"
			count := classicCount{n: make(chan int, 16)}
			sync := func(ctx context.Context, cb adaptation.SyncCB) error {
				_, err := cb(ctx, []*api.PodSandbox{{Id: "p0", Name: "other"}}, []*api.Container{{Id: "c0", PodSandboxId: "p0"}})
				return err
			}
			update := func(context.Context, []*api.ContainerUpdate) ([]*api.ContainerUpdate, error) { return nil, nil }
			a, err := adaptation.New("classic-test", "v1.2.3", sync, update, adaptation.WithSocketPath(sock),
				adaptation.WithPluginPath(t.TempDir()), adaptation.WithPluginConfigPath(t.TempDir()), adaptation.WithMetrics(count))
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Start(); err != nil {
				t.Fatal(err)
			}
			defer a.Stop()
			type outcome struct {
				r   report
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				var out bytes.Buffer
				err := run(context.Background(), []string{"runtime", "--json", "--classic", sock, "--pod-timeout", "20s"}, &out, &bytes.Buffer{})
				var r report
				_ = json.Unmarshal(out.Bytes(), &r)
				done <- outcome{r, err}
			}()
			for n := range count.n {
				if n == 1 {
					break
				}
			}
			a.BlockPluginSync().Unblock()
			ctx := context.Background()
			pod := &api.PodSandbox{Id: "p1", Name: "nritest-pod", Namespace: "default"}
			ctr := &api.Container{Id: "c1", PodSandboxId: "p1", Name: "app"}
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(a.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod}))
			rsp, err := a.CreateContainer(ctx, &api.CreateContainerRequest{Pod: pod, Container: ctr})
			must(err)
			// The container as the runtime created it: with the
			// adjustment when it applies it.
			ctr = &api.Container{Id: "c1", PodSandboxId: "p1", Name: "app"}
			if apply {
				for _, e := range rsp.GetAdjust().GetEnv() {
					ctr.Env = append(ctr.Env, e.GetKey()+"="+e.GetValue())
				}
			}
			must(a.PostCreateContainer(ctx, &api.PostCreateContainerRequest{Pod: pod, Container: ctr}))
			must(a.StartContainer(ctx, &api.StartContainerRequest{Pod: pod, Container: ctr}))
			must(a.PostStartContainer(ctx, &api.PostStartContainerRequest{Pod: pod, Container: ctr}))
			res := <-done
			for _, name := range []string{"registers", "configure", "synchronize"} {
				if s := result(&res.r, name); s.Result != conformance.Pass {
					t.Errorf("%s: %s %v", name, s.Result, s.Messages)
				}
			}
			s := result(&res.r, "pod-events")
			switch {
			case apply && (s.Result != conformance.Pass || res.err != nil):
				t.Errorf("pod-events: %s %v (%v), want PASS", s.Result, s.Messages, res.err)
			case !apply && (s.Result != conformance.Fail || !strings.Contains(strings.Join(s.Messages, " "), "did not land")):
				t.Errorf("pod-events: %s %v, want FAIL: the adjustment did not land", s.Result, s.Messages)
			case !apply && strings.Contains(strings.Join(s.Messages, " "), "adjustment landed"):
				t.Errorf("pod-events: %v: a failure also says the adjustment landed", s.Messages)
			}
			if m := result(&res.r, "configure").Messages; len(m) == 0 || m[0] != "runtime classic-test v1.2.3" {
				t.Errorf("configure: %v", m)
			}
		})
	}
}
