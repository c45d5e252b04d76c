//go:build e2e

// Command e2e-grpc-plugin is the gRPC plugin of the e2e suite, written with
// the Go SDK (package plugin). It logs every request it receives as one JSON
// line (see eventLine) and, depending on its flags, adjusts containers:
//
//	-env K=V, -annotation K=V, -mount SRC:DST   injected in CreateContainer
//	-create-delay D                             slow but healthy CreateContainer
//	-block-create NAME -blocked-marker FILE     CreateContainer of container NAME writes FILE and blocks
//	-update-cpu-shares N                        UpdateContainer changes the target's cpu shares to N
//	-fail-policy fail|ignore                    the failure policy it asks for
//	-select-namespace NS, -select-labels SEL,
//	-select-container GLOB                      one event selector (plugin.WithSelectors)
//	-not-ready REASON                           registers NOT_READY
//	SIGUSR1                                     reports READY (logs "SetStatus", then "Status READY")
//	SIGUSR2                                     asks for a resync (logs "RequestResync" with the epoch)
//	-timeout EVENT=D                            asks for timeout D for EVENT (e.g. CreateContainer=20s; Synchronize=D: the sync budget)
//	-sync-marker FILE -sync-release FILE        the first Synchronize writes the marker, then blocks until the release file exists
//	-reject PREFIX                              a validator: rejects containers whose name starts with PREFIX
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/plugin"
)

// eventLine is one logged request; the e2e harness parses these lines.
type eventLine struct {
	Time       string `json:"time"`
	Event      string `json:"event"`
	Pod        string `json:"pod,omitempty"`
	Container  string `json:"container,omitempty"`
	Pods       int    `json:"pods,omitempty"`
	Containers int    `json:"containers,omitempty"`
	Epoch      uint64 `json:"epoch,omitempty"`
	Detail     string `json:"detail,omitempty"`
}

type kvList []string

func (l *kvList) String() string     { return strings.Join(*l, ",") }
func (l *kvList) Set(v string) error { *l = append(*l, v); return nil }

func split(kv, sep string) (string, string) {
	k, v, _ := strings.Cut(kv, sep)
	return k, v
}

type e2ePlugin struct {
	mu  sync.Mutex
	out *os.File

	env, annotations, mounts kvList
	createDelay              time.Duration
	blockCreate, blockedFile string
	updateCPUShares          uint64
	syncMarker, syncRelease  string
	syncOnce                 sync.Once
}

func (p *e2ePlugin) log(e eventLine) {
	e.Time = time.Now().UTC().Format(time.RFC3339Nano)
	b, _ := json.Marshal(e)
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _ = p.out.Write(append(b, '\n'))
}

func (p *e2ePlugin) pod(ev string, pod *nriv1beta1.PodSandbox) {
	p.log(eventLine{Event: ev, Pod: pod.GetName()})
}

func (p *e2ePlugin) ctr(ev string, pod *nriv1beta1.PodSandbox, c *nriv1beta1.Container) {
	p.log(eventLine{Event: ev, Pod: pod.GetName(), Container: c.GetName()})
}

func (p *e2ePlugin) Configure(_ context.Context, req *nriv1beta1.ConfigureRequest) (*nriv1beta1.ConfigureResponse, error) {
	p.log(eventLine{Event: "Configure", Detail: req.GetRuntimeName() + " " + req.GetRuntimeVersion()})
	return nil, nil
}

func (p *e2ePlugin) Synchronize(ctx context.Context, req *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
	p.log(eventLine{Event: "Synchronize", Pods: len(req.GetPods()), Containers: len(req.GetContainers()), Epoch: req.GetEpoch(),
		Detail: req.GetReason().String()})
	if p.syncMarker != "" {
		p.syncOnce.Do(func() { p.blockSync(ctx) })
	}
	return nil, nil
}

// blockSync writes the sync marker and waits until the release file
// exists (a slow Synchronize the test ends when it chooses).
func (p *e2ePlugin) blockSync(ctx context.Context) {
	if err := os.WriteFile(p.syncMarker, nil, 0o644); err != nil {
		slog.Error("writing the sync marker", "error", err)
		return
	}
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if _, err := os.Stat(p.syncRelease); err == nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (p *e2ePlugin) Resync(_ context.Context, req *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
	p.log(eventLine{Event: "Resync", Pods: len(req.GetPods()), Containers: len(req.GetContainers()), Epoch: req.GetEpoch(),
		Detail: req.GetReason().String()})
	return nil, nil
}

func (p *e2ePlugin) Shutdown(_ context.Context, req *nriv1beta1.ShutdownRequest) {
	p.log(eventLine{Event: "Shutdown", Detail: req.String()})
}

func (p *e2ePlugin) RunPodSandbox(_ context.Context, req *nriv1beta1.RunPodSandboxRequest) (*nriv1beta1.RunPodSandboxResponse, error) {
	p.pod("RunPodSandbox", req.GetPod())
	return nil, nil
}

func (p *e2ePlugin) UpdatePodSandbox(_ context.Context, req *nriv1beta1.UpdatePodSandboxRequest) (*nriv1beta1.UpdatePodSandboxResponse, error) {
	p.pod("UpdatePodSandbox", req.GetPod())
	return nil, nil
}

func (p *e2ePlugin) PostUpdatePodSandbox(_ context.Context, req *nriv1beta1.PostUpdatePodSandboxRequest) (*nriv1beta1.PostUpdatePodSandboxResponse, error) {
	p.pod("PostUpdatePodSandbox", req.GetPod())
	return nil, nil
}

func (p *e2ePlugin) StopPodSandbox(_ context.Context, req *nriv1beta1.StopPodSandboxRequest) (*nriv1beta1.StopPodSandboxResponse, error) {
	p.pod("StopPodSandbox", req.GetPod())
	return nil, nil
}

func (p *e2ePlugin) RemovePodSandbox(_ context.Context, req *nriv1beta1.RemovePodSandboxRequest) (*nriv1beta1.RemovePodSandboxResponse, error) {
	p.pod("RemovePodSandbox", req.GetPod())
	return nil, nil
}

func (p *e2ePlugin) CreateContainer(ctx context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
	p.ctr("CreateContainer", req.GetPod(), req.GetContainer())
	if p.blockCreate != "" && req.GetContainer().GetName() == p.blockCreate {
		if err := os.WriteFile(p.blockedFile, []byte(req.GetContainer().GetId()), 0o644); err != nil {
			return nil, err
		}
		<-ctx.Done() // until the server gives up on the call, or the plugin is killed
		return nil, ctx.Err()
	}
	if p.createDelay > 0 {
		time.Sleep(p.createDelay) // slow but healthy: ignores cancellation, like a busy handler
	}
	a := plugin.NewAdjustment()
	for _, kv := range p.env {
		a.AddEnv(split(kv, "="))
	}
	for _, kv := range p.annotations {
		a.AddAnnotation(split(kv, "="))
	}
	for _, m := range p.mounts {
		src, dst := split(m, ":")
		a.AddMount(&nriv1beta1.Mount{Source: src, Destination: dst, Type: "bind", Options: []string{"rbind", "ro"}})
	}
	return a.Response(), nil
}

func (p *e2ePlugin) PostCreateContainer(_ context.Context, req *nriv1beta1.PostCreateContainerRequest) (*nriv1beta1.PostCreateContainerResponse, error) {
	p.ctr("PostCreateContainer", req.GetPod(), req.GetContainer())
	return nil, nil
}

func (p *e2ePlugin) StartContainer(_ context.Context, req *nriv1beta1.StartContainerRequest) (*nriv1beta1.StartContainerResponse, error) {
	p.ctr("StartContainer", req.GetPod(), req.GetContainer())
	return nil, nil
}

func (p *e2ePlugin) PostStartContainer(_ context.Context, req *nriv1beta1.PostStartContainerRequest) (*nriv1beta1.PostStartContainerResponse, error) {
	p.ctr("PostStartContainer", req.GetPod(), req.GetContainer())
	return nil, nil
}

func (p *e2ePlugin) UpdateContainer(_ context.Context, req *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.UpdateContainerResponse, error) {
	p.log(eventLine{Event: "UpdateContainer", Pod: req.GetPod().GetName(), Container: req.GetContainer().GetName(),
		Detail: fmt.Sprintf("cpu.shares=%d", req.GetLinuxResources().GetCpu().GetShares().GetValue())})
	if p.updateCPUShares == 0 {
		return nil, nil
	}
	u := plugin.NewUpdate(req.GetContainer().GetId()).SetLinuxCPUShares(p.updateCPUShares)
	return &nriv1beta1.UpdateContainerResponse{Update: []*nriv1beta1.ContainerUpdate{u.Proto()}}, nil
}

func (p *e2ePlugin) PostUpdateContainer(_ context.Context, req *nriv1beta1.PostUpdateContainerRequest) (*nriv1beta1.PostUpdateContainerResponse, error) {
	p.ctr("PostUpdateContainer", req.GetPod(), req.GetContainer())
	return nil, nil
}

func (p *e2ePlugin) StopContainer(_ context.Context, req *nriv1beta1.StopContainerRequest) (*nriv1beta1.StopContainerResponse, error) {
	p.ctr("StopContainer", req.GetPod(), req.GetContainer())
	return nil, nil
}

func (p *e2ePlugin) RemoveContainer(_ context.Context, req *nriv1beta1.RemoveContainerRequest) (*nriv1beta1.RemoveContainerResponse, error) {
	p.ctr("RemoveContainer", req.GetPod(), req.GetContainer())
	return nil, nil
}

// validatingPlugin is e2ePlugin with ValidateContainerAdjustment: the
// plugin of -reject, a validator (the SDK subscribes it to validation
// because it implements the method).
type validatingPlugin struct {
	*e2ePlugin
	reject string
}

// rejectReason is the reason -reject gives; the e2e tests look for it.
const rejectReason = "e2e: containers named so are not allowed"

func (p *validatingPlugin) ValidateContainerAdjustment(_ context.Context, req *nriv1beta1.ValidateContainerAdjustmentRequest) (*nriv1beta1.ValidateContainerAdjustmentResponse, error) {
	p.ctr("ValidateContainerAdjustment", req.GetPod(), req.GetContainer())
	if strings.HasPrefix(req.GetContainer().GetName(), p.reject) {
		return &nriv1beta1.ValidateContainerAdjustmentResponse{Reject: true, Reason: rejectReason}, nil
	}
	return &nriv1beta1.ValidateContainerAdjustmentResponse{}, nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e-grpc-plugin:", err)
		os.Exit(1)
	}
}

func run() error {
	p := &e2ePlugin{}
	std := plugin.Flags{}
	std.Register(flag.CommandLine)
	events := flag.String("events", "", "file to append the JSON event lines to (required)")
	flag.Var(&p.env, "env", "K=V to inject (repeatable)")
	flag.Var(&p.annotations, "annotation", "K=V to inject (repeatable)")
	flag.Var(&p.mounts, "mount", "SRC:DST read-only bind mount to inject (repeatable)")
	flag.DurationVar(&p.createDelay, "create-delay", 0, "delay of every CreateContainer")
	flag.StringVar(&p.blockCreate, "block-create", "", "container name whose CreateContainer blocks")
	flag.StringVar(&p.blockedFile, "blocked-marker", "", "file written when CreateContainer blocks")
	flag.StringVar(&p.syncMarker, "sync-marker", "", "file the first Synchronize writes before it blocks (with -sync-release)")
	flag.StringVar(&p.syncRelease, "sync-release", "", "file whose existence ends the first Synchronize's block")
	flag.Uint64Var(&p.updateCPUShares, "update-cpu-shares", 0, "cpu shares UpdateContainer sets on its target (0: none)")
	failPolicy := flag.String("fail-policy", "", "failure policy to ask for: fail or ignore (default: the server's)")
	var selNamespaces, selContainers, timeouts kvList
	flag.Var(&selNamespaces, "select-namespace", "pod namespace of the plugin's event selector (repeatable)")
	flag.Var(&selContainers, "select-container", "container name pattern of the plugin's event selector (repeatable)")
	selLabels := flag.String("select-labels", "", "pod label selector (Kubernetes syntax) of the plugin's event selector")
	notReady := flag.String("not-ready", "", "register NOT_READY with this reason (SIGUSR1 reports READY)")
	flag.Var(&timeouts, "timeout", "EVENT=DURATION timeout to ask for, EVENT as in CreateContainer (repeatable)")
	reject := flag.String("reject", "", "validate, rejecting containers whose name starts with this prefix")
	flag.Parse()
	if *events == "" {
		return errors.New("-events is required")
	}
	f, err := os.OpenFile(*events, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // unbuffered: every event line was written already
	p.out = f

	opts := append(std.Options(), plugin.WithResync(), plugin.WithBackoff(50*time.Millisecond, time.Second),
		plugin.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	switch *failPolicy {
	case "":
	case "fail":
		opts = append(opts, plugin.WithFailurePolicy(&nriv1beta1.FailurePolicy{FailRequest: true}))
	case "ignore":
		opts = append(opts, plugin.WithFailurePolicy(&nriv1beta1.FailurePolicy{}))
	default:
		return fmt.Errorf("-fail-policy %q: want fail or ignore", *failPolicy)
	}
	extra, err := p.extraOptions(selNamespaces, selContainers, *selLabels, *notReady, timeouts)
	if err != nil {
		return err
	}
	var impl any = p
	if *reject != "" {
		impl = &validatingPlugin{e2ePlugin: p, reject: *reject}
	}
	pl, err := plugin.New(impl, append(opts, extra...)...)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGUSR2) // before Run: the test signals once the plugin is registered
	defer signal.Stop(sig)
	go p.onSignal(ctx, pl, sig)
	if err := pl.Run(ctx); err != nil && !errors.Is(err, plugin.ErrReplaced) && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// extraOptions are the options of the selector, status and timeout flags.
func (p *e2ePlugin) extraOptions(namespaces, containers kvList, labels, notReady string, timeouts kvList) ([]plugin.Option, error) {
	var opts []plugin.Option
	if len(namespaces) > 0 || len(containers) > 0 || labels != "" {
		opts = append(opts, plugin.WithSelectors(&nriv1beta1.EventSelector{
			Namespaces: namespaces, ContainerNames: containers, PodLabels: labels,
		}))
	}
	if notReady != "" {
		opts = append(opts, plugin.WithStatus(nriv1beta1.PluginStatus_PLUGIN_STATUS_NOT_READY, notReady))
	}
	if len(timeouts) > 0 {
		t := plugin.Timeouts{Events: map[nriv1beta1.Event]time.Duration{}}
		for _, kv := range timeouts {
			name, d := split(kv, "=")
			dur, err := time.ParseDuration(d)
			if err != nil {
				return nil, fmt.Errorf("-timeout %q: %w", kv, err)
			}
			if name == "Synchronize" {
				t.Synchronize = dur
				continue
			}
			ev, ok := nriv1beta1.Event_value["EVENT_"+snake(name)]
			if !ok {
				return nil, fmt.Errorf("-timeout %q: unknown event", kv)
			}
			t.Events[nriv1beta1.Event(ev)] = dur
		}
		opts = append(opts, plugin.WithTimeouts(t))
	}
	return opts, nil
}

// snake turns CreateContainer into CREATE_CONTAINER.
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return strings.ToUpper(b.String())
}

// onSignal reports READY on SIGUSR1: it logs "SetStatus READY" before the
// call, then "Status READY" once the server answered (the status is then in
// effect), or "Status" with the error. On SIGUSR2 it asks for a resync and
// logs "RequestResync" with the epoch (or the error).
func (p *e2ePlugin) onSignal(ctx context.Context, pl *plugin.Plugin, sig <-chan os.Signal) {
	for {
		var s os.Signal
		select {
		case <-ctx.Done():
			return
		case s = <-sig:
		}
		if s == syscall.SIGUSR2 {
			epoch, err := pl.RequestResync(ctx, "e2e: SIGUSR2")
			if err != nil {
				p.log(eventLine{Event: "RequestResync", Detail: "error: " + err.Error()})
				continue
			}
			p.log(eventLine{Event: "RequestResync", Epoch: epoch})
			continue
		}
		// Logged before the call: once the server has the status, calls
		// may come before SetStatus returns.
		p.log(eventLine{Event: "SetStatus", Detail: "READY"})
		if err := pl.SetStatus(ctx, nriv1beta1.PluginStatus_PLUGIN_STATUS_READY, "warmed up"); err != nil {
			p.log(eventLine{Event: "Status", Detail: "error: " + err.Error()})
			continue
		}
		p.log(eventLine{Event: "Status", Detail: "READY"})
	}
}
