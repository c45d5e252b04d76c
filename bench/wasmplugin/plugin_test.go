package main

import (
	"context"
	"strings"
	"testing"

	"github.com/containerd/nri/pkg/api"
)

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct{ in, err string }{
		{`{"annotation": "a", "env": "E"}`, ""},
		{``, "invalid configuration"},
		{`{"annotation": "a"}`, "env must be"},
		{`{"annotation": "a=b", "env": "E"}`, "annotation must be"},
		{`{"annotation": "a", "env": "E", "x": 1}`, "unknown field"},
		{`{"annotation": "a", "env": "E"} {}`, "data after"},
		{`{"annotation": "` + strings.Repeat("a", maxKey+1) + `", "env": "E"}`, "annotation must be"},
	} {
		_, err := parseConfig(tc.in)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("parseConfig(%.40q) = %v, want %q", tc.in, err, tc.err)
		}
	}
}

func TestCreateContainerAnswersItsKeys(t *testing.T) {
	ctx := context.Background()
	p := &plugin{}
	rsp, err := p.Configure(ctx, &api.ConfigureRequest{Config: `{"annotation": "bench/a", "env": "BENCH_A"}`})
	if err != nil {
		t.Fatal(err)
	}
	if m := api.EventMask(rsp.GetEvents()); m != api.MustParseEventMask("CreateContainer") {
		t.Errorf("events %s, want CreateContainer only", m.PrettyString())
	}
	pod := &api.PodSandbox{Id: "pod0", Name: "web", Namespace: "default"}
	ctr := &api.Container{Id: "ctr0", PodSandboxId: "pod0", Name: "app"}
	c, err := p.CreateContainer(ctx, &api.CreateContainerRequest{Pod: pod, Container: ctr})
	if err != nil {
		t.Fatal(err)
	}
	adj := c.GetAdjust()
	if adj.GetAnnotations()["bench/a"] != "1" || len(adj.GetEnv()) != 1 || adj.GetEnv()[0].GetKey() != "BENCH_A" {
		t.Errorf("adjustment %v", adj)
	}
	if p.sink == 0 {
		t.Error("the request was not touched")
	}
}
