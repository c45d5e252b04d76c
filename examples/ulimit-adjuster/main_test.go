package main

import (
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nri-grpc/nri-grpc/plugin"
	"github.com/nri-grpc/nri-grpc/plugin/plugintest"
)

func TestUlimitAdjuster(t *testing.T) {
	env := plugintest.New(t)
	env.Start(t, &adjuster{log: plugintest.TestLogger(t, slog.LevelInfo)}, plugin.WithName("ulimit-adjuster"), plugin.WithIndex("20"))

	pod := plugintest.Pod(0)
	pod.Annotations[UlimitsKey+"/container.app-0"] = `
- type: RLIMIT_NOFILE
  soft: 1024
  hard: 4096
- type: memlock
  soft: 1073741824
  hard: 1073741824
`
	pod.Annotations[UlimitsKey+"/pod"] = `[{type: nproc, soft: 100, hard: 200}]`
	env.RunPodSandbox(t, pod)

	got := map[string][2]uint64{}
	for _, r := range env.CreateContainer(t, pod, plugintest.Container(0, 0)).GetAdjust().GetRlimits() {
		got[r.GetType()] = [2]uint64{r.GetSoft(), r.GetHard()}
	}
	if len(got) != 2 || got["RLIMIT_NOFILE"] != [2]uint64{1024, 4096} || got["RLIMIT_MEMLOCK"] != [2]uint64{1 << 30, 1 << 30} {
		t.Errorf("app-0 rlimits: %v", got)
	}
	rl := env.CreateContainer(t, pod, plugintest.Container(0, 1)).GetAdjust().GetRlimits()
	if len(rl) != 1 || rl[0].GetType() != "RLIMIT_NPROC" || rl[0].GetSoft() != 100 || rl[0].GetHard() != 200 {
		t.Errorf("app-1 rlimits (pod-wide annotation): %v", rl)
	}
}

func TestUlimitAdjusterVetoes(t *testing.T) {
	env := plugintest.New(t)
	env.Start(t, &adjuster{log: plugintest.TestLogger(t, slog.LevelInfo)}, plugin.WithName("ulimit-adjuster"), plugin.WithIndex("20"))
	for value, want := range map[string]string{
		`[{type: RLIMIT_BOGUS, soft: 1, hard: 1}]`: `unknown ulimit type "RLIMIT_BOGUS"`,
		`[{type: nofile, soft: 10, hard: 1}]`:      "soft limit 10 is above the hard limit 1",
		`{type: nofile}`:                           "cannot unmarshal",
	} {
		pod := plugintest.Pod(0)
		pod.Annotations[UlimitsKey] = value
		env.RunPodSandbox(t, pod)
		_, err := env.TryCreateContainer(t, pod, plugintest.Container(0, 0))
		if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), want) ||
			!strings.Contains(err.Error(), "20-ulimit-adjuster") {
			t.Errorf("annotation %s: %v; want a veto by 20-ulimit-adjuster containing %q", value, err, want)
		}
	}
}
