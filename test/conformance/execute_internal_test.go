package conformance

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestExecuteOne checks the runner outside go test: Fatal ends the
// scenario goroutine and fails it, Skip skips it, cleanups run last first
// even after Fatal, and a scenario that does not end within its bound
// fails.
func TestExecuteOne(t *testing.T) {
	var order []string
	cases := []struct {
		name string
		run  func(s *S)
		want Result
		msg  string
	}{
		{"pass", func(s *S) { s.T.Log("hello", 1) }, Pass, "hello 1"},
		{"fatal", func(s *S) {
			s.Cleanup(func() { order = append(order, "first") })
			s.Cleanup(func() { order = append(order, "second") })
			s.Fatalf("boom %d", 7)
			s.Error("not reached")
		}, Fail, "boom 7"},
		{"error", func(s *S) { s.Errorf("bad"); s.T.Log("goes on") }, Fail, "goes on"},
		{"warn", func(s *S) { Warnf(s.T, "careful %s", "there") }, Warn, "warning: careful there"},
		{"skip", func(s *S) { s.Skip("not here"); s.Error("not reached") }, Skip, "not here"},
		{"stuck", func(s *S) {
			stop := make(chan struct{})
			s.Cleanup(func() { close(stop) })
			<-stop
		}, Fail, "did not end within"},
	}
	for _, c := range cases {
		run := c.run
		sc := Check{ScenarioInfo: ScenarioInfo{Group: "G", Name: c.name}, Run: func(ctx context.Context, t T) { run(&S{T: t, ctx: ctx}) }}
		r := executeOne(context.Background(), sc, 200*time.Millisecond)
		if r.Result != c.want {
			t.Errorf("%s: result %s, want %s (%v)", c.name, r.Result, c.want, r.Messages)
		}
		if !slices.ContainsFunc(r.Messages, func(m string) bool { return strings.Contains(m, c.msg) }) {
			t.Errorf("%s: messages %q lack %q", c.name, r.Messages, c.msg)
		}
		if slices.ContainsFunc(r.Messages, func(m string) bool { return strings.Contains(m, "not reached") }) {
			t.Errorf("%s: the scenario went on after Fatal/Skip: %q", c.name, r.Messages)
		}
	}
	if !slices.Equal(order, []string{"second", "first"}) {
		t.Errorf("cleanups ran as %v, want [second first]", order)
	}
}

// TestExecuteBoundsParallelism checks that Execute runs at most Parallel
// scenarios at once and reports them in catalog order.
func TestExecuteBoundsParallelism(t *testing.T) {
	saved, savedGroups := scenarios, groups
	t.Cleanup(func() { scenarios, groups = saved, savedGroups })
	scenarios, groups = nil, nil
	running, peak := make(chan struct{}, 10), 0
	probe := make(chan int, 10)
	for i := range 6 {
		addManual(Gap, "P", string(rune('a'+i)), func(s *S) {
			running <- struct{}{}
			probe <- len(running)
			time.Sleep(time.Millisecond) // widen the window in which overlap shows
			<-running
		})
	}
	rep := Execute(context.Background(), nil, Parallel(2), SkipScenarios(func(s ScenarioInfo) string {
		if s.Name == "f" {
			return "left out"
		}
		return ""
	}))
	close(probe)
	for n := range probe {
		peak = max(peak, n)
	}
	if peak > 2 {
		t.Errorf("%d scenarios ran at once, want at most 2", peak)
	}
	if rep.Count(Pass) != 5 || rep.Count(Skip) != 1 || rep.Failed() {
		t.Errorf("report %+v", rep)
	}
	for i, s := range rep.Scenarios {
		if s.Name != string(rune('a'+i)) {
			t.Errorf("report entry %d is %q", i, s.Name)
		}
	}
}
