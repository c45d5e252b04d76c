package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	yaml "go.yaml.in/yaml/v3"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/plugin"
	"github.com/nri-grpc/nri-grpc/plugin/plugintest"
)

// buffer is a bytes.Buffer safe for concurrent use.
type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

var lifecycle = []string{"Configure", "Synchronize", "RunPodSandbox", "CreateContainer", "PostCreateContainer",
	"StartContainer", "PostStartContainer", "UpdateContainer", "PostUpdateContainer", "UpdatePodSandbox",
	"PostUpdatePodSandbox", "StopContainer", "RemoveContainer", "StopPodSandbox", "RemovePodSandbox"}

func TestLoggerYAML(t *testing.T) {
	env := plugintest.New(t)
	var out buffer
	l, err := newLogger(&out, Config{})
	if err != nil {
		t.Fatal(err)
	}
	p := env.Start(t, l, plugin.WithName("logger"), plugin.WithIndex("00"))
	if got := p.Registered().GetEvents(); got != 0x1FFF {
		t.Errorf("subscription %#x, want every event but validation (0x1FFF)", got)
	}
	env.Lifecycle(t, 1)

	var events []string
	dec := yaml.NewDecoder(strings.NewReader(out.String()))
	for {
		var e struct {
			Event   string         `yaml:"event"`
			Request map[string]any `yaml:"request"`
		}
		if err := dec.Decode(&e); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("output is not YAML: %v\n%s", err, out.String())
		}
		events = append(events, e.Event)
		if e.Event == "CreateContainer" {
			ctr, _ := e.Request["container"].(map[string]any)
			if ctr["name"] != "app-0" || ctr["pod_sandbox_id"] == nil {
				t.Errorf("CreateContainer request logged as %v", e.Request)
			}
		}
	}
	if !slices.Equal(events, lifecycle) {
		t.Errorf("logged events\n got %v\nwant %v", events, lifecycle)
	}
}

func TestLoggerJSONAndEvents(t *testing.T) {
	env := plugintest.New(t)
	var out buffer
	l, err := newLogger(&out, Config{Format: "json", Events: []string{"CreateContainer", "validatecontaineradjustment"}})
	if err != nil {
		t.Fatal(err)
	}
	p := env.Start(t, l, plugin.WithName("logger"))
	want := nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER, nriv1beta1.Event_EVENT_VALIDATE_CONTAINER_ADJUSTMENT)
	if got := p.Registered().GetEvents(); got != want {
		t.Errorf("subscription %#x, want %#x", got, want)
	}
	env.Lifecycle(t, 1)
	var events []string
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line is not JSON: %v: %s", err, sc.Text())
		}
		events = append(events, e.Event)
	}
	if w := []string{"Configure", "Synchronize", "CreateContainer", "ValidateContainerAdjustment"}; !slices.Equal(events, w) {
		t.Errorf("logged %v, want %v", events, w)
	}
}

func TestLoggerConfig(t *testing.T) {
	l, err := newLogger(io.Discard, Config{})
	if err != nil {
		t.Fatal(err)
	}
	rsp, err := l.Configure(context.Background(), &nriv1beta1.ConfigureRequest{Config: "format: json\nevents: [RunPodSandbox]\n"})
	if err != nil {
		t.Fatal(err)
	}
	if rsp.GetEvents() != nri.EventMask(nriv1beta1.Event_EVENT_RUN_POD_SANDBOX) || l.format != "json" {
		t.Errorf("configured: events %#x, format %s", rsp.GetEvents(), l.format)
	}
	for _, bad := range []Config{{Format: "xml"}, {Events: []string{"Nope"}}} {
		if _, err := newLogger(io.Discard, bad); err == nil {
			t.Errorf("config %+v accepted", bad)
		}
	}
}

// waitPlugin waits until the server lists plugin full ("NN-name") as ready.
func waitPlugin(t *testing.T, env *plugintest.Env, full string, done <-chan error) {
	t.Helper()
	for {
		for _, p := range env.Server().Plugins() {
			if p.GetPlugin().GetIndex()+"-"+p.GetPlugin().GetName() == full &&
				p.GetState() == nriv1beta1.PluginState_PLUGIN_STATE_READY {
				return
			}
		}
		select {
		case err := <-done:
			t.Fatalf("run returned before %s registered: %v", full, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestRunAsBinary runs the command's run function, as the binary does, with
// flags and then with the environment nrid sets for pre-launched plugins.
func TestRunAsBinary(t *testing.T) {
	env := plugintest.New(t)
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		full string
	}{
		{"flags", []string{"-name", "flagged", "-idx", "05", "-server", env.ServerAddress(),
			"-endpoint", filepath.Join(env.PluginDir, "05-flagged.sock"), "-format", "json"}, nil, "05-flagged"},
		{"pre-launched", []string{"-format", "json"}, map[string]string{
			plugin.EnvPluginName:     "launched",
			plugin.EnvPluginIndex:    "07",
			plugin.EnvServerAddress:  env.Socket, // a bare path is accepted too
			plugin.EnvPluginEndpoint: filepath.Join(env.PluginDir, "07-launched.sock"),
		}, "07-launched"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var out buffer
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- run(ctx, tc.args, &out) }()
			waitPlugin(t, env, tc.full, done)
			cancel()
			if err := <-done; err != nil {
				t.Errorf("run: %v", err)
			}
			if !strings.Contains(out.String(), `"event":"Synchronize"`) {
				t.Errorf("no JSON Synchronize entry in %q", out.String())
			}
		})
	}
}
