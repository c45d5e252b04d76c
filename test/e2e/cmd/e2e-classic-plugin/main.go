//go:build e2e

// Command e2e-classic-plugin is the classic (v1alpha1, containerd/nri
// pkg/stub) plugin of the e2e suite. It connects to a classic NRI socket,
// either containerd's own or nrid's plugin side, logs every event as one JSON
// line (the same format as e2e-grpc-plugin) and injects, in CreateContainer,
// the -env and -annotation pairs, -mount bind mounts, -device devices and
// -rlimit limits of its flags (what upstream's device-injector and
// ulimit-adjuster samples inject); -fail-create makes CreateContainer fail. With -reject it is also a validator that
// rejects the adjustment of containers so named.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
)

type eventLine struct {
	Time       string `json:"time"`
	Event      string `json:"event"`
	Pod        string `json:"pod,omitempty"`
	Container  string `json:"container,omitempty"`
	Pods       int    `json:"pods,omitempty"`
	Containers int    `json:"containers,omitempty"`
	Detail     string `json:"detail,omitempty"`
}

type kvList []string

func (l *kvList) String() string     { return strings.Join(*l, ",") }
func (l *kvList) Set(v string) error { *l = append(*l, v); return nil }

type classic struct {
	mu  sync.Mutex
	out *os.File

	env, annotations kvList
	mounts, devices  kvList
	rlimits          kvList
	createDelay      time.Duration
	failCreate       string
}

// rejectReason is the reason -reject gives: the same as e2e-grpc-plugin's,
// so that the tests can compare the two validators' rejections.
const rejectReason = "e2e: containers named so are not allowed"

// validator is a classic plugin that also validates adjustments.
type validator struct {
	*classic
	reject string
}

// ValidateContainerAdjustment rejects the containers whose name starts with
// the -reject prefix.
func (v *validator) ValidateContainerAdjustment(_ context.Context, req *api.ValidateContainerAdjustmentRequest) error {
	name := req.GetContainer().GetName()
	v.log(eventLine{Event: "ValidateContainerAdjustment", Pod: req.GetPod().GetName(), Container: name})
	if strings.HasPrefix(name, v.reject) {
		return errors.New(rejectReason)
	}
	return nil
}

func (p *classic) log(e eventLine) {
	e.Time = time.Now().UTC().Format(time.RFC3339Nano)
	b, _ := json.Marshal(e)
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _ = p.out.Write(append(b, '\n'))
}

func (p *classic) pod(ev string, pod *api.PodSandbox) error {
	p.log(eventLine{Event: ev, Pod: pod.GetName()})
	return nil
}

func (p *classic) ctr(ev string, pod *api.PodSandbox, c *api.Container) error {
	p.log(eventLine{Event: ev, Pod: pod.GetName(), Container: c.GetName()})
	return nil
}

func (p *classic) Configure(_ context.Context, _, runtime, version string) (api.EventMask, error) {
	p.log(eventLine{Event: "Configure", Detail: runtime + " " + version})
	return 0, nil // every event implemented below
}

func (p *classic) Synchronize(_ context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	p.log(eventLine{Event: "Synchronize", Pods: len(pods), Containers: len(ctrs)})
	return nil, nil
}

func (p *classic) Shutdown(context.Context) { p.log(eventLine{Event: "Shutdown"}) }

func (p *classic) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	return p.pod("RunPodSandbox", pod)
}

func (p *classic) UpdatePodSandbox(_ context.Context, pod *api.PodSandbox, _, _ *api.LinuxResources) error {
	return p.pod("UpdatePodSandbox", pod)
}

func (p *classic) PostUpdatePodSandbox(_ context.Context, pod *api.PodSandbox) error {
	return p.pod("PostUpdatePodSandbox", pod)
}

func (p *classic) StopPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	return p.pod("StopPodSandbox", pod)
}

func (p *classic) RemovePodSandbox(_ context.Context, pod *api.PodSandbox) error {
	return p.pod("RemovePodSandbox", pod)
}

func (p *classic) CreateContainer(_ context.Context, pod *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	_ = p.ctr("CreateContainer", pod, c)
	if p.createDelay > 0 {
		time.Sleep(p.createDelay)
	}
	if p.failCreate != "" && strings.HasPrefix(c.GetName(), p.failCreate) {
		return nil, nil, fmt.Errorf("e2e: CreateContainer of %s fails (-fail-create %s)", c.GetName(), p.failCreate)
	}
	adj := &api.ContainerAdjustment{}
	for _, kv := range p.env {
		k, v, _ := strings.Cut(kv, "=")
		adj.AddEnv(k, v)
	}
	for _, kv := range p.annotations {
		k, v, _ := strings.Cut(kv, "=")
		adj.AddAnnotation(k, v)
	}
	for _, m := range p.mounts {
		src, dst, _ := strings.Cut(m, ":")
		adj.AddMount(&api.Mount{Source: src, Destination: dst, Type: "bind", Options: []string{"bind", "ro"}})
	}
	for _, d := range p.devices {
		dev, err := parseDevice(d)
		if err != nil {
			return nil, nil, err
		}
		adj.AddDevice(dev)
	}
	for _, r := range p.rlimits {
		typ, soft, hard, err := parseRlimit(r)
		if err != nil {
			return nil, nil, err
		}
		adj.AddRlimit(typ, hard, soft)
	}
	return adj, nil, nil
}

func (p *classic) PostCreateContainer(_ context.Context, pod *api.PodSandbox, c *api.Container) error {
	return p.ctr("PostCreateContainer", pod, c)
}

func (p *classic) StartContainer(_ context.Context, pod *api.PodSandbox, c *api.Container) error {
	return p.ctr("StartContainer", pod, c)
}

func (p *classic) PostStartContainer(_ context.Context, pod *api.PodSandbox, c *api.Container) error {
	return p.ctr("PostStartContainer", pod, c)
}

func (p *classic) UpdateContainer(_ context.Context, pod *api.PodSandbox, c *api.Container, _ *api.LinuxResources) ([]*api.ContainerUpdate, error) {
	return nil, p.ctr("UpdateContainer", pod, c)
}

func (p *classic) PostUpdateContainer(_ context.Context, pod *api.PodSandbox, c *api.Container) error {
	return p.ctr("PostUpdateContainer", pod, c)
}

func (p *classic) StopContainer(_ context.Context, pod *api.PodSandbox, c *api.Container) ([]*api.ContainerUpdate, error) {
	return nil, p.ctr("StopContainer", pod, c)
}

func (p *classic) RemoveContainer(_ context.Context, pod *api.PodSandbox, c *api.Container) error {
	return p.ctr("RemoveContainer", pod, c)
}

// parseDevice parses PATH:TYPE:MAJOR:MINOR:MODE (MODE octal).
func parseDevice(s string) (*api.LinuxDevice, error) {
	f := strings.Split(s, ":")
	if len(f) != 5 {
		return nil, fmt.Errorf("device %q: want PATH:TYPE:MAJOR:MINOR:MODE", s)
	}
	major, err1 := strconv.ParseInt(f[2], 10, 64)
	minor, err2 := strconv.ParseInt(f[3], 10, 64)
	mode, err3 := strconv.ParseUint(f[4], 8, 32)
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, fmt.Errorf("device %q: %w", s, err)
	}
	return &api.LinuxDevice{Path: f[0], Type: f[1], Major: major, Minor: minor,
		FileMode: api.FileMode(uint32(mode)), Uid: api.UInt32(uint32(0)), Gid: api.UInt32(uint32(0))}, nil
}

// parseRlimit parses TYPE=SOFT:HARD.
func parseRlimit(s string) (typ string, soft, hard uint64, err error) {
	typ, v, ok := strings.Cut(s, "=")
	sv, hv, ok2 := strings.Cut(v, ":")
	if !ok || !ok2 {
		return "", 0, 0, fmt.Errorf("rlimit %q: want TYPE=SOFT:HARD", s)
	}
	soft, err1 := strconv.ParseUint(sv, 10, 64)
	hard, err2 := strconv.ParseUint(hv, 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return "", 0, 0, fmt.Errorf("rlimit %q: %w", s, err)
	}
	return typ, soft, hard, nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e-classic-plugin:", err)
		os.Exit(1)
	}
}

func run() error {
	p := &classic{}
	socket := flag.String("socket-path", "", "classic NRI socket to connect to (required)")
	name := flag.String("name", "classic", "plugin name")
	idx := flag.String("idx", "10", "plugin index")
	events := flag.String("events", "", "file to append the JSON event lines to (required)")
	flag.Var(&p.env, "env", "K=V to inject (repeatable)")
	flag.Var(&p.annotations, "annotation", "K=V to inject (repeatable)")
	flag.Var(&p.mounts, "mount", "SRC:DST read-only bind mount to inject (repeatable)")
	flag.Var(&p.devices, "device", "PATH:TYPE:MAJOR:MINOR:MODE device to inject, MODE octal (repeatable)")
	flag.Var(&p.rlimits, "rlimit", "TYPE=SOFT:HARD rlimit to inject, TYPE as in RLIMIT_NOFILE (repeatable)")
	flag.DurationVar(&p.createDelay, "create-delay", 0, "delay of every CreateContainer")
	flag.StringVar(&p.failCreate, "fail-create", "", "fail the CreateContainer of containers whose name starts with this prefix")
	reject := flag.String("reject", "", "validate, rejecting containers whose name starts with this prefix")
	flag.Parse()
	if *socket == "" || *events == "" {
		return errors.New("-socket-path and -events are required")
	}
	f, err := os.OpenFile(*events, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // unbuffered: every event line was written already
	p.out = f

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var impl any = p
	if *reject != "" {
		impl = &validator{classic: p, reject: *reject}
	}
	s, err := stub.New(impl, stub.WithPluginName(*name), stub.WithPluginIdx(*idx), stub.WithSocketPath(*socket),
		stub.WithOnClose(func() { p.log(eventLine{Event: "Closed"}) }))
	if err != nil {
		return err
	}
	if err := s.Run(ctx); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}
