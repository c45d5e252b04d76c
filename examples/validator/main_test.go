package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/plugin"
	"github.com/nri-grpc/nri-grpc/plugin/plugintest"
)

// injector adds a hook and a mount to containers whose name says so.
type injector struct{}

func (injector) CreateContainer(_ context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
	a := plugin.NewAdjustment()
	switch req.GetContainer().GetName() {
	case "hooked":
		a.AddHooks(&nriv1beta1.Hooks{Prestart: []*nriv1beta1.Hook{{Path: "/usr/local/bin/hook"}}})
	case "secret":
		a.AddMount(&nriv1beta1.Mount{Source: "/etc/shadow", Destination: "/x", Type: "bind", Options: []string{"rbind"}})
	case "data":
		a.AddMount(&nriv1beta1.Mount{Source: "/srv/data/app", Destination: "/data", Type: "bind", Options: []string{"rbind"}})
		a.AddMount(&nriv1beta1.Mount{Source: "tmpfs", Destination: "/tmp", Type: "tmpfs"})
		a.RemoveMount("/etc/tls")
	}
	return a.Response(), nil
}

func container(pod *nriv1beta1.PodSandbox, n int, name string) *nriv1beta1.Container {
	c := plugintest.Container(0, n)
	c.Name = name
	return c
}

func TestValidator(t *testing.T) {
	env := plugintest.New(t)
	env.Start(t, injector{}, plugin.WithName("injector"), plugin.WithIndex("10"))
	v := &validator{log: plugintest.TestLogger(t, slog.LevelInfo)}
	v.setConfig(Config{AllowedMountSources: []string{"/srv/data/"}})
	p := env.Start(t, v, plugin.WithName("validator"), plugin.WithIndex("90"))
	if p.Registered().GetEvents() != nri.EventMask(nriv1beta1.Event_EVENT_VALIDATE_CONTAINER_ADJUSTMENT) {
		t.Errorf("the validator subscribed to %#x, want only validation", p.Registered().GetEvents())
	}

	pod := plugintest.Pod(0)
	env.RunPodSandbox(t, pod)
	env.CreateContainer(t, pod, container(pod, 0, "plain"))
	env.CreateContainer(t, pod, container(pod, 1, "data"))

	_, err := env.TryCreateContainer(t, pod, container(pod, 2, "hooked"))
	if msg := status.Convert(err).Message(); !strings.Contains(msg, `validator "90-validator" rejected`) ||
		!strings.Contains(msg, "OCI hooks injected by 10-injector are not allowed") {
		t.Errorf("hooked container: %v; want a rejection naming 10-injector", err)
	}
	_, err = env.TryCreateContainer(t, pod, container(pod, 3, "secret"))
	if msg := status.Convert(err).Message(); !strings.Contains(msg, "mount of /etc/shadow at /x by 10-injector") {
		t.Errorf("secret container: %v; want a rejection of the /etc/shadow mount", err)
	}

	// The annotation lets one container have hooks.
	allowed := plugintest.Pod(1)
	allowed.Annotations[AllowHooksKey+"/container.hooked"] = "true"
	env.RunPodSandbox(t, allowed)
	c := plugintest.Container(1, 0)
	c.Name = "hooked"
	if rsp := env.CreateContainer(t, allowed, c); len(rsp.GetAdjust().GetHooks().GetPrestart()) != 1 {
		t.Errorf("annotated container: hooks %v", rsp.GetAdjust().GetHooks())
	}
}

func TestValidatorConfigure(t *testing.T) {
	v := &validator{log: slog.New(slog.DiscardHandler)}
	if _, err := v.Configure(context.Background(), &nriv1beta1.ConfigureRequest{
		Config: "allowed_mount_sources: [/srv/, /data]\nallow_oci_hooks: true\n",
	}); err != nil {
		t.Fatal(err)
	}
	cfg := v.config()
	if !cfg.AllowOCIHooks || strings.Join(cfg.AllowedMountSources, ",") != "/srv,/data" {
		t.Errorf("config %+v", cfg)
	}
	if _, err := v.Configure(context.Background(), &nriv1beta1.ConfigureRequest{Config: "allow_oci_hooks: [x"}); err == nil {
		t.Error("a malformed configuration was accepted")
	}
	for src, want := range map[string]bool{"/srv": true, "/srv/a/b": true, "/srvx": false, "/data/../etc": false} {
		if got := allowed(cfg.AllowedMountSources, src); got != want {
			t.Errorf("allowed(%s) = %v, want %v", src, got, want)
		}
	}
}
