package bench

import "testing"

// TestPluginCounter: wait returns once the runtime reported enough plugins,
// and fails, naming the count, when it never does.
func TestPluginCounter(t *testing.T) {
	c := newPluginCounter()
	done := make(chan error, 1)
	go func() { done <- c.wait(2, procWait) }()
	c.UpdatePluginCount(1)
	c.UpdatePluginCount(2)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := c.wait(2, 0); err != nil {
		t.Fatalf("reached count: %v", err)
	}
	c.UpdatePluginCount(1)
	if err := c.wait(2, 0); err == nil {
		t.Fatal("wait for 2 plugins with 1 reported succeeded")
	}
}

// TestAdaptationImplementations: both implementations are created with
// the same paths, and an unknown one is refused.
func TestAdaptationImplementations(t *testing.T) {
	p := adaptationPathsIn(t.TempDir())
	if err := p.prepare(); err != nil {
		t.Fatal(err)
	}
	for _, impl := range []string{implUpstream, implDropin} {
		r, err := newRuntimeNRI(impl, p)
		if err != nil {
			t.Fatalf("%s: %v", impl, err)
		}
		if r.adaptationAPI == nil || r.plugins == nil {
			t.Fatalf("%s: incomplete %+v", impl, r)
		}
	}
	if _, err := newRuntimeNRI("other", p); err == nil {
		t.Fatal("an unknown implementation was accepted")
	}
}
