package config

import (
	"testing"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

func TestNotReadyKeys(t *testing.T) {
	for _, c := range []struct {
		name string
		doc  string
		line int
		key  string
		has  []string
	}{
		{"bad default", "[server]\nnot_ready = \"later\"\n", 2, "server.not_ready", []string{`"wait", "fail", "skip"`}},
		{"bad plugin policy", "[[plugin]]\nname = \"10-a\"\nnot_ready = \"never\"\n", 3, "plugin[0].not_ready", []string{`"never"`}},
		{"negative interval", "[server]\nmin_resync_interval = \"-1s\"\n", 2, "server.min_resync_interval", []string{"negative"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.doc), "nrid.toml", Overrides{})
			wantError(t, err, c.line, c.key, c.has...)
		})
	}
	c, err := Parse([]byte("[server]\nnot_ready = \"fail\"\nmin_resync_interval = \"0s\"\n[[plugin]]\nname = \"warm\"\nnot_ready = \"wait\"\n"), "nrid.toml", Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.NotReady != "fail" || c.Server.MinResyncInterval != 0 {
		t.Fatalf("server: %+v", c.Server)
	}
	pol, err := c.CompilePolicy()
	if err != nil {
		t.Fatal(err)
	}
	if got := pol.PluginPolicy("uid:0", "10-warm").NotReady; got != nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_WAIT {
		t.Fatalf("plugin policy: %v", got)
	}
}
