package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/nri"
)

// simStep is one event of a simulated lifecycle and what the plugins made
// of it.
type simStep struct {
	pod    *nriv1beta1.PodSandbox
	ctr    *nriv1beta1.Container
	event  nriv1beta1.Event
	err    error
	result proto.Message // the AdaptationService response
	// requested resources of an UpdateContainer, to show what plugins changed
	requested *nriv1beta1.LinuxResources
}

func (s *simStep) pluginErrors() []*nriv1beta1.PluginError {
	if r, ok := s.result.(interface {
		GetPluginErrors() []*nriv1beta1.PluginError
	}); ok {
		return r.GetPluginErrors()
	}
	return nil
}

// details renders what plugins changed, as flattened lines.
func (s *simStep) details() []string {
	var out []string
	switch r := s.result.(type) {
	case *nriv1beta1.AdaptationServiceCreateContainerResponse:
		out = append(out, flatten(r)...)
	case *nriv1beta1.AdaptationServiceUpdateContainerResponse:
		out = append(out, prefixed("linux_resources.", newLines(flatten(s.requested), flatten(r.GetLinuxResources())))...)
		out = append(out, flatten(&nriv1beta1.AdaptationServiceUpdateContainerResponse{Update: r.GetUpdate(), Evict: r.GetEvict()})...)
	case *nriv1beta1.AdaptationServiceStopContainerResponse:
		out = append(out, flatten(&nriv1beta1.AdaptationServiceStopContainerResponse{Update: r.GetUpdate(), Evict: r.GetEvict()})...)
	}
	for _, e := range s.pluginErrors() {
		out = append(out, fmt.Sprintf("plugin error: %s: %s: %s", plugin(e.GetPlugin()), strings.ToUpper(codeName(codes.Code(e.GetCode()))), e.GetMessage()))
	}
	return out
}

// simulator drives synthetic lifecycles through AdaptationService.
type simulator struct {
	g     *globals
	ctx   context.Context
	adapt nriv1beta1.AdaptationServiceClient
	steps []*simStep
}

// fatal is an error that ends the whole simulation: the server refused or
// could not be reached, as opposed to a plugin's verdict on one event.
type fatal struct{ err error }

func (f fatal) Error() string { return f.err.Error() }
func (f fatal) Unwrap() error { return f.err }

// isOutcome reports whether err is the result of dispatching the event
// (a veto, a conflict, a rejection, an invalid request), which the
// simulation reports and goes on from.
func isOutcome(err error) bool {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == nri.ErrorDomain {
			return true
		}
	}
	return false
}

// do runs one event and records it; it returns whether the event succeeded.
func (s *simulator) do(pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container, ev nriv1beta1.Event,
	call func(ctx context.Context) (proto.Message, error)) (bool, error) {
	ctx, cancel := s.g.callContext(s.ctx)
	defer cancel()
	rsp, err := call(ctx)
	if err != nil && !isOutcome(err) {
		return false, fatal{fmt.Errorf("%s: %w", eventName(ev), explain(err, s.g.socket))}
	}
	st := &simStep{pod: pod, ctr: ctr, event: ev, err: err, result: rsp}
	if ev == nriv1beta1.Event_EVENT_UPDATE_CONTAINER {
		st.requested = ctr.GetLinux().GetResources()
	}
	s.steps = append(s.steps, st)
	return err == nil, nil
}

// lifecycle drives one pod with its containers from RunPodSandbox to
// RemovePodSandbox, tearing down what was set up when an event is vetoed.
func (s *simulator) lifecycle(pod *nriv1beta1.PodSandbox, ctrs []*nriv1beta1.Container) error {
	a := s.adapt
	teardownPod := func() error {
		if _, err := s.do(pod, nil, nriv1beta1.Event_EVENT_STOP_POD_SANDBOX, func(ctx context.Context) (proto.Message, error) {
			return a.StopPodSandbox(ctx, &nriv1beta1.AdaptationServiceStopPodSandboxRequest{Pod: pod})
		}); err != nil {
			return err
		}
		_, err := s.do(pod, nil, nriv1beta1.Event_EVENT_REMOVE_POD_SANDBOX, func(ctx context.Context) (proto.Message, error) {
			return a.RemovePodSandbox(ctx, &nriv1beta1.AdaptationServiceRemovePodSandboxRequest{Pod: pod})
		})
		return err
	}
	ok, err := s.do(pod, nil, nriv1beta1.Event_EVENT_RUN_POD_SANDBOX, func(ctx context.Context) (proto.Message, error) {
		return a.RunPodSandbox(ctx, &nriv1beta1.AdaptationServiceRunPodSandboxRequest{Pod: pod})
	})
	if err != nil {
		return err
	}
	if !ok {
		return teardownPod()
	}
	res := pod.GetLinux().GetPodResources()
	if ok, err = s.do(pod, nil, nriv1beta1.Event_EVENT_UPDATE_POD_SANDBOX, func(ctx context.Context) (proto.Message, error) {
		return a.UpdatePodSandbox(ctx, &nriv1beta1.AdaptationServiceUpdatePodSandboxRequest{Pod: pod, LinuxResources: res})
	}); err != nil {
		return err
	}
	if ok {
		if _, err := s.do(pod, nil, nriv1beta1.Event_EVENT_POST_UPDATE_POD_SANDBOX, func(ctx context.Context) (proto.Message, error) {
			return a.PostUpdatePodSandbox(ctx, &nriv1beta1.AdaptationServicePostUpdatePodSandboxRequest{Pod: pod})
		}); err != nil {
			return err
		}
	}
	var created []*nriv1beta1.Container
	for _, ctr := range ctrs {
		ok, err := s.startContainer(pod, ctr)
		if err != nil {
			return err
		}
		created = append(created, ctr)
		if !ok {
			if err := s.teardownContainer(pod, ctr); err != nil {
				return err
			}
			created = created[:len(created)-1]
		}
	}
	for _, ctr := range created {
		if err := s.teardownContainer(pod, ctr); err != nil {
			return err
		}
	}
	return teardownPod()
}

// startContainer runs CreateContainer to PostUpdateContainer; ok is false
// when a creating event was vetoed (the container must be torn down).
func (s *simulator) startContainer(pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container) (bool, error) {
	a := s.adapt
	steps := []struct {
		ev       nriv1beta1.Event
		creating bool
		call     func(ctx context.Context) (proto.Message, error)
	}{
		{nriv1beta1.Event_EVENT_CREATE_CONTAINER, true, func(ctx context.Context) (proto.Message, error) {
			return a.CreateContainer(ctx, &nriv1beta1.AdaptationServiceCreateContainerRequest{Pod: pod, Container: ctr})
		}},
		{nriv1beta1.Event_EVENT_POST_CREATE_CONTAINER, false, func(ctx context.Context) (proto.Message, error) {
			return a.PostCreateContainer(ctx, &nriv1beta1.AdaptationServicePostCreateContainerRequest{Pod: pod, Container: ctr})
		}},
		{nriv1beta1.Event_EVENT_START_CONTAINER, true, func(ctx context.Context) (proto.Message, error) {
			return a.StartContainer(ctx, &nriv1beta1.AdaptationServiceStartContainerRequest{Pod: pod, Container: ctr})
		}},
		{nriv1beta1.Event_EVENT_POST_START_CONTAINER, false, func(ctx context.Context) (proto.Message, error) {
			return a.PostStartContainer(ctx, &nriv1beta1.AdaptationServicePostStartContainerRequest{Pod: pod, Container: ctr})
		}},
		{nriv1beta1.Event_EVENT_UPDATE_CONTAINER, false, func(ctx context.Context) (proto.Message, error) {
			return a.UpdateContainer(ctx, &nriv1beta1.AdaptationServiceUpdateContainerRequest{Pod: pod, Container: ctr,
				LinuxResources: ctr.GetLinux().GetResources()})
		}},
		{nriv1beta1.Event_EVENT_POST_UPDATE_CONTAINER, false, func(ctx context.Context) (proto.Message, error) {
			return a.PostUpdateContainer(ctx, &nriv1beta1.AdaptationServicePostUpdateContainerRequest{Pod: pod, Container: ctr})
		}},
	}
	for _, st := range steps {
		ok, err := s.do(pod, ctr, st.ev, st.call)
		if err != nil {
			return false, err
		}
		if !ok && st.creating {
			return false, nil
		}
		if !ok && st.ev == nriv1beta1.Event_EVENT_UPDATE_CONTAINER {
			break // a vetoed update leaves the container running: no PostUpdateContainer
		}
	}
	return true, nil
}

func (s *simulator) teardownContainer(pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container) error {
	a := s.adapt
	if _, err := s.do(pod, ctr, nriv1beta1.Event_EVENT_STOP_CONTAINER, func(ctx context.Context) (proto.Message, error) {
		return a.StopContainer(ctx, &nriv1beta1.AdaptationServiceStopContainerRequest{Pod: pod, Container: ctr})
	}); err != nil {
		return err
	}
	_, err := s.do(pod, ctr, nriv1beta1.Event_EVENT_REMOVE_CONTAINER, func(ctx context.Context) (proto.Message, error) {
		return a.RemoveContainer(ctx, &nriv1beta1.AdaptationServiceRemoveContainerRequest{Pod: pod, Container: ctr})
	})
	return err
}

func runSimulate(ctx context.Context, g *globals, args []string) error {
	fs := g.flags("simulate", "simulate [-pods N] [-containers M] [-name NAME] [-annotation k=v]...")
	pods := fs.Int("pods", 1, "number of synthetic pods, driven one after the other")
	ctrs := fs.Int("containers", 1, "containers per pod")
	var so synthOpts
	so.register(fs, "nrictl-sim")
	if err := parse(fs, g, args); err != nil {
		return err
	}
	if *pods < 1 || *pods > 1000 {
		return usagef("-pods %d: use 1 to 1000", *pods)
	}
	if *ctrs < 1 || *ctrs > 100 {
		return usagef("-containers %d: use 1 to 100", *ctrs)
	}
	c, err := g.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	sim := &simulator{
		g:     g,
		ctx:   metadata.AppendToOutgoingContext(ctx, nri.MetadataSimulate, "1"),
		adapt: c.adaptation(),
	}
	var runErr error
	for i := range *pods {
		name := so.name
		if *pods > 1 {
			name = fmt.Sprintf("%s-%d", so.name, i)
		}
		pod := so.pod(name)
		var list []*nriv1beta1.Container
		for j := range *ctrs {
			list = append(list, so.container(pod, fmt.Sprintf("app-%d", j)))
		}
		if runErr = sim.lifecycle(pod, list); runErr != nil {
			break
		}
	}
	if len(sim.steps) > 0 || runErr == nil {
		if g.json() {
			err = printSimJSON(g.stdout, sim.steps)
		} else {
			err = printSimTable(g.stdout, sim.steps)
		}
		if err != nil {
			return err
		}
	}
	if runErr != nil {
		return runErr
	}
	failed := 0
	for _, st := range sim.steps {
		if st.err != nil {
			failed++
		}
	}
	if failed > 0 {
		fmt.Fprintf(g.stderr, "nrictl: %d event(s) failed\n", failed)
		return quietError{1}
	}
	return nil
}

// simJSON is the -o json form of a simulation; the messages are protojson.
type simJSON struct {
	Steps []simStepJSON `json:"steps"`
}

type simStepJSON struct {
	Event        string            `json:"event"`
	PodID        string            `json:"podId"`
	Pod          string            `json:"pod"`
	ContainerID  string            `json:"containerId,omitempty"`
	Container    string            `json:"container,omitempty"`
	Error        string            `json:"error,omitempty"`
	Code         string            `json:"code,omitempty"`
	Response     json.RawMessage   `json:"response,omitempty"`
	PluginErrors []json.RawMessage `json:"pluginErrors,omitempty"`
}

func printSimJSON(w io.Writer, steps []*simStep) error {
	out := simJSON{Steps: []simStepJSON{}}
	for _, st := range steps {
		j := simStepJSON{
			Event:       st.event.String(),
			PodID:       st.pod.GetId(),
			Pod:         st.pod.GetNamespace() + "/" + st.pod.GetName(),
			ContainerID: st.ctr.GetId(),
			Container:   st.ctr.GetName(),
		}
		if st.err != nil {
			s := status.Convert(st.err)
			j.Error, j.Code = s.Message(), strings.ToUpper(codeName(s.Code()))
		}
		if st.result != nil {
			b, err := jsonLine.Marshal(st.result)
			if err != nil {
				return err
			}
			if string(b) != "{}" {
				j.Response = b
			}
		}
		for _, e := range st.pluginErrors() {
			b, err := jsonLine.Marshal(e)
			if err != nil {
				return err
			}
			j.PluginErrors = append(j.PluginErrors, b)
		}
		out.Steps = append(out.Steps, j)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func printSimTable(w io.Writer, steps []*simStep) error {
	podW, ctrW, evW := len("POD"), len("CONTAINER"), len("EVENT")
	for _, st := range steps {
		podW = max(podW, len(st.pod.GetNamespace())+1+len(st.pod.GetName()))
		ctrW = max(ctrW, len(st.ctr.GetName()))
		evW = max(evW, len(eventName(st.event)))
	}
	fmt.Fprintf(w, "%-*s  %-*s  %-*s  %s\n", podW, "POD", ctrW, "CONTAINER", evW, "EVENT", "RESULT")
	failed := 0
	for _, st := range steps {
		result := "ok"
		if st.err != nil {
			failed++
			result = "failed: " + status.Convert(st.err).Message()
		} else if n := len(st.pluginErrors()); n > 0 {
			result = fmt.Sprintf("ok (%d plugin error(s))", n)
		}
		fmt.Fprintf(w, "%-*s  %-*s  %-*s  %s\n", podW, st.pod.GetNamespace()+"/"+st.pod.GetName(), ctrW, orDash(st.ctr.GetName()),
			evW, eventName(st.event), result)
		for _, d := range st.details() {
			fmt.Fprintf(w, "%*s  %s\n", podW+ctrW+evW+6, "", d)
		}
	}
	_, err := fmt.Fprintf(w, "\n%d events, %d failed\n", len(steps), failed)
	return err
}
