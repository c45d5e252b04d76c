package supervisor

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// launchedEnv names the file a plugin launched by TestLaunchDir writes its
// environment to before it crashes.
const launchedEnv = "SUPERVISOR_TEST_LAUNCHED"

// TestLaunchDir: every plugin of the directory starts with the environment
// setup gave it, setup is called once per plugin with its configuration,
// the before-start function before every start (restarts included), and a
// file that is not a plugin is reported while the others still start.
func TestLaunchDir(t *testing.T) {
	_, log := newRecorder(t)
	s := New(WithLogger(log), WithInitialBackoff(time.Millisecond), WithMaxBackoff(2*time.Millisecond))
	stopAtEnd(t, s)
	dir, conf, out := t.TempDir(), t.TempDir(), t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(dir, "10-crash")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "not-a-plugin"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(conf, "crash.conf"), []byte("answer: 42"), 0o644); err != nil {
		t.Fatal(err)
	}
	envFile := filepath.Join(out, "env")
	var setups []string
	starts := make(chan struct{}, 100)
	err = s.LaunchDir(ctxTimeout(t, waitLong()), dir, conf, func(index, name string, config []byte) ([]string, func()) {
		setups = append(setups, index+"-"+name+" "+string(config))
		return []string{launchedEnv + "=" + envFile, "PLUGIN=" + index + "-" + name}, func() { starts <- struct{}{} }
	})
	if err == nil || !strings.Contains(err.Error(), "not-a-plugin") {
		t.Errorf("LaunchDir should report the badly named file: %v", err)
	}
	if !slices.Equal(setups, []string{"10-crash answer: 42"}) {
		t.Errorf("setup calls: %q", setups)
	}
	// The plugin crashes at once: a second start means a restart, after
	// the first process wrote its environment.
	recv(t, starts, "first start")
	recv(t, starts, "restart")
	b, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	if env := strings.Split(string(b), "\n"); !slices.Equal(env, []string{launchedEnv + "=" + envFile, "PLUGIN=10-crash"}) {
		t.Errorf("the plugin's environment: %q", env)
	}
	if procs := s.Procs(); len(procs) != 1 {
		t.Errorf("%d processes supervised, want 1", len(procs))
	}
}
