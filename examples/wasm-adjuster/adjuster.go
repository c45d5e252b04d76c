// Command wasm-adjuster is nri-grpc's example WebAssembly NRI plugin, built
// for upstream NRI's WASM ABI (github.com/containerd/nri/pkg/api):
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o /opt/nri/plugins/30-wasm-adjuster ./examples/wasm-adjuster
//
// In CreateContainer it adds the environment variable WASM_ADJUSTER (the
// container's name) and the variables of its configuration, the annotation
// wasm-adjuster.nri-grpc.io/pod (the pod's namespace/name), and the
// RLIMIT_NOFILE limits that the pod annotation wasm-adjuster.nri-grpc.io/nofile
// ("SOFT:HARD") asks for. It logs every other event through the host's Log
// function. See README.md.
//
// The plugin logic in this file has no build constraint, so that its tests
// run natively; main_wasip1.go registers it with the WASM ABI.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/containerd/nri/pkg/api"
)

const (
	// envName is the variable that names the container.
	envName = "WASM_ADJUSTER"
	// podAnnotation is the annotation added to the container: namespace/name of its pod.
	podAnnotation = "wasm-adjuster.nri-grpc.io/pod"
	// nofileAnnotation is the pod annotation asking for RLIMIT_NOFILE "SOFT:HARD".
	nofileAnnotation = "wasm-adjuster.nri-grpc.io/nofile"
)

// defaultEvents are the events the plugin subscribes to without an "events"
// configuration.
var defaultEvents = []string{
	"RunPodSandbox", "CreateContainer", "StartContainer", "UpdateContainer",
	"StopContainer", "RemoveContainer", "RemovePodSandbox",
}

// logFunc writes one log line at a level: the host's Log function in WASM,
// a recorder in tests.
type logFunc func(ctx context.Context, level api.LogRequest_Level, msg string)

// config is the plugin's configuration, JSON in the config string.
type config struct {
	// Env are variables added to every container created.
	Env map[string]string `json:"env"`
	// Events are the events to subscribe to, as api.ParseEventMask takes
	// them ("CreateContainer", "pod", "all", ...).
	Events []string `json:"events"`
}

// envVar is one configured variable.
type envVar struct{ key, value string }

// adjuster is the plugin. NRI calls it one request at a time.
type adjuster struct {
	log    logFunc
	env    []envVar
	events api.EventMask
}

// newAdjuster returns the plugin, logging through log.
func newAdjuster(log logFunc) *adjuster {
	return &adjuster{log: log, events: api.MustParseEventMask(defaultEvents...)}
}

var _ api.Plugin = (*adjuster)(nil)

// parseConfig parses and validates a configuration string; an empty or
// blank one is the default configuration.
func parseConfig(s string) (env []envVar, events api.EventMask, err error) {
	var cfg config
	if strings.TrimSpace(s) != "" {
		dec := json.NewDecoder(strings.NewReader(s))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cfg); err != nil {
			return nil, 0, fmt.Errorf("invalid configuration: %w", err)
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return nil, 0, errors.New("invalid configuration: data after the JSON object")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.Env)) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, 0, fmt.Errorf("invalid configuration: env name %q", k)
		}
		env = append(env, envVar{k, cfg.Env[k]})
	}
	names := cfg.Events
	if len(names) == 0 {
		names = defaultEvents
	}
	events, err = api.ParseEventMask(names...)
	if err != nil {
		return nil, 0, fmt.Errorf("invalid configuration: events: %w", err)
	}
	return env, events, nil
}

// Configure applies the configuration and subscribes to its events.
func (a *adjuster) Configure(ctx context.Context, req *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	env, events, err := parseConfig(req.GetConfig())
	if err != nil {
		a.log(ctx, api.LogRequest_LEVEL_ERROR, err.Error())
		return nil, err
	}
	a.env, a.events = env, events
	a.log(ctx, api.LogRequest_LEVEL_INFO, fmt.Sprintf("configured by %s %s: events %s, %d env vars",
		req.GetRuntimeName(), req.GetRuntimeVersion(), events.PrettyString(), len(env)))
	return &api.ConfigureResponse{Events: int32(events)}, nil
}

// Synchronize logs how many pods and containers exist; it updates none.
func (a *adjuster) Synchronize(ctx context.Context, req *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	a.log(ctx, api.LogRequest_LEVEL_INFO, fmt.Sprintf("Synchronize %d pods, %d containers",
		len(req.GetPods()), len(req.GetContainers())))
	return &api.SynchronizeResponse{}, nil
}

// Shutdown logs that the runtime is going down.
func (a *adjuster) Shutdown(ctx context.Context, _ *api.Empty) (*api.Empty, error) {
	a.log(ctx, api.LogRequest_LEVEL_INFO, "Shutdown")
	return &api.Empty{}, nil
}

// parseNofile parses "SOFT:HARD", two decimal uint64s with SOFT <= HARD.
func parseNofile(v string) (soft, hard uint64, err error) {
	s, h, ok := strings.Cut(v, ":")
	if ok {
		soft, err = strconv.ParseUint(s, 10, 64)
		if err == nil {
			hard, err = strconv.ParseUint(h, 10, 64)
		}
	}
	switch {
	case !ok || err != nil:
		return 0, 0, fmt.Errorf("annotation %s: %q is not SOFT:HARD (decimal)", nofileAnnotation, v)
	case soft > hard:
		return 0, 0, fmt.Errorf("annotation %s: %q has SOFT above HARD", nofileAnnotation, v)
	}
	return soft, hard, nil
}

// CreateContainer adjusts the new container: environment, the pod
// annotation, and RLIMIT_NOFILE if the pod asks for it. A malformed nofile
// annotation fails the creation.
func (a *adjuster) CreateContainer(ctx context.Context, req *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	pod, ctr := req.GetPod(), req.GetContainer()
	where := containerName(pod, ctr)

	adjust := &api.ContainerAdjustment{}
	if v, ok := pod.GetAnnotations()[nofileAnnotation]; ok {
		soft, hard, err := parseNofile(v)
		if err != nil {
			a.log(ctx, api.LogRequest_LEVEL_WARN, "CreateContainer "+where+": "+err.Error())
			return nil, err
		}
		adjust.AddRlimit("RLIMIT_NOFILE", hard, soft)
	}
	adjust.AddEnv(envName, ctr.GetName())
	for _, e := range a.env {
		adjust.AddEnv(e.key, e.value)
	}
	adjust.AddAnnotation(podAnnotation, pod.GetNamespace()+"/"+pod.GetName())

	a.log(ctx, api.LogRequest_LEVEL_INFO, "CreateContainer "+where)
	return &api.CreateContainerResponse{Adjust: adjust}, nil
}

// UpdateContainer changes nothing.
func (a *adjuster) UpdateContainer(ctx context.Context, req *api.UpdateContainerRequest) (*api.UpdateContainerResponse, error) {
	a.logEvent(ctx, api.Event_UPDATE_CONTAINER, containerName(req.GetPod(), req.GetContainer()))
	return &api.UpdateContainerResponse{}, nil
}

// RunPodSandbox logs the event.
func (a *adjuster) RunPodSandbox(ctx context.Context, req *api.RunPodSandboxRequest) (*api.RunPodSandboxResponse, error) {
	a.logEvent(ctx, api.Event_RUN_POD_SANDBOX, podName(req.GetPod()))
	return &api.RunPodSandboxResponse{}, nil
}

// UpdatePodSandbox logs the event and changes nothing.
func (a *adjuster) UpdatePodSandbox(ctx context.Context, req *api.UpdatePodSandboxRequest) (*api.UpdatePodSandboxResponse, error) {
	a.logEvent(ctx, api.Event_UPDATE_POD_SANDBOX, podName(req.GetPod()))
	return &api.UpdatePodSandboxResponse{}, nil
}

// PostUpdatePodSandbox logs the event.
func (a *adjuster) PostUpdatePodSandbox(ctx context.Context, req *api.PostUpdatePodSandboxRequest) (*api.PostUpdatePodSandboxResponse, error) {
	a.logEvent(ctx, api.Event_POST_UPDATE_POD_SANDBOX, podName(req.GetPod()))
	return &api.PostUpdatePodSandboxResponse{}, nil
}

// StopPodSandbox logs the event.
func (a *adjuster) StopPodSandbox(ctx context.Context, req *api.StopPodSandboxRequest) (*api.StopPodSandboxResponse, error) {
	a.logEvent(ctx, api.Event_STOP_POD_SANDBOX, podName(req.GetPod()))
	return &api.StopPodSandboxResponse{}, nil
}

// RemovePodSandbox logs the event.
func (a *adjuster) RemovePodSandbox(ctx context.Context, req *api.RemovePodSandboxRequest) (*api.RemovePodSandboxResponse, error) {
	a.logEvent(ctx, api.Event_REMOVE_POD_SANDBOX, podName(req.GetPod()))
	return &api.RemovePodSandboxResponse{}, nil
}

// PostCreateContainer logs the event.
func (a *adjuster) PostCreateContainer(ctx context.Context, req *api.PostCreateContainerRequest) (*api.PostCreateContainerResponse, error) {
	a.logEvent(ctx, api.Event_POST_CREATE_CONTAINER, containerName(req.GetPod(), req.GetContainer()))
	return &api.PostCreateContainerResponse{}, nil
}

// StartContainer logs the event.
func (a *adjuster) StartContainer(ctx context.Context, req *api.StartContainerRequest) (*api.StartContainerResponse, error) {
	a.logEvent(ctx, api.Event_START_CONTAINER, containerName(req.GetPod(), req.GetContainer()))
	return &api.StartContainerResponse{}, nil
}

// PostStartContainer logs the event.
func (a *adjuster) PostStartContainer(ctx context.Context, req *api.PostStartContainerRequest) (*api.PostStartContainerResponse, error) {
	a.logEvent(ctx, api.Event_POST_START_CONTAINER, containerName(req.GetPod(), req.GetContainer()))
	return &api.PostStartContainerResponse{}, nil
}

// PostUpdateContainer logs the event.
func (a *adjuster) PostUpdateContainer(ctx context.Context, req *api.PostUpdateContainerRequest) (*api.PostUpdateContainerResponse, error) {
	a.logEvent(ctx, api.Event_POST_UPDATE_CONTAINER, containerName(req.GetPod(), req.GetContainer()))
	return &api.PostUpdateContainerResponse{}, nil
}

// StopContainer logs the event and updates no other container.
func (a *adjuster) StopContainer(ctx context.Context, req *api.StopContainerRequest) (*api.StopContainerResponse, error) {
	a.logEvent(ctx, api.Event_STOP_CONTAINER, containerName(req.GetPod(), req.GetContainer()))
	return &api.StopContainerResponse{}, nil
}

// RemoveContainer logs the event.
func (a *adjuster) RemoveContainer(ctx context.Context, req *api.RemoveContainerRequest) (*api.RemoveContainerResponse, error) {
	a.logEvent(ctx, api.Event_REMOVE_CONTAINER, containerName(req.GetPod(), req.GetContainer()))
	return &api.RemoveContainerResponse{}, nil
}

// StateChange logs the event (runtimes relay events over StateChange to
// plugins that lack the event's own method; WASM hosts call the methods).
func (a *adjuster) StateChange(ctx context.Context, ev *api.StateChangeEvent) (*api.Empty, error) {
	where := podName(ev.GetPod())
	if ev.GetContainer() != nil {
		where = containerName(ev.GetPod(), ev.GetContainer())
	}
	a.logEvent(ctx, ev.GetEvent(), where)
	return &api.Empty{}, nil
}

// ValidateContainerAdjustment accepts every adjustment (the plugin validates
// only when its configuration subscribes it to ValidateContainerAdjustment).
func (a *adjuster) ValidateContainerAdjustment(ctx context.Context, req *api.ValidateContainerAdjustmentRequest) (*api.ValidateContainerAdjustmentResponse, error) {
	a.logEvent(ctx, api.Event_VALIDATE_CONTAINER_ADJUSTMENT, containerName(req.GetPod(), req.GetContainer()))
	return &api.ValidateContainerAdjustmentResponse{}, nil
}

// logEvent logs "<event> <where>".
func (a *adjuster) logEvent(ctx context.Context, ev api.Event, where string) {
	a.log(ctx, api.LogRequest_LEVEL_INFO, ev.PrettyName()+" "+where)
}

// podName is "<namespace>/<pod>".
func podName(pod *api.PodSandbox) string {
	return pod.GetNamespace() + "/" + pod.GetName()
}

// containerName is "<namespace>/<pod>/<container>".
func containerName(pod *api.PodSandbox, ctr *api.Container) string {
	return podName(pod) + "/" + ctr.GetName()
}
