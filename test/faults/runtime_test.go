package faults_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/internal/testwait"
	"github.com/nri-grpc/nri-grpc/nri"
)

// lifecycleMethods are the events of one pod's lifecycle, in the order the
// runtime sends them.
var lifecycleMethods = []string{
	"RunPodSandbox", "UpdatePodSandbox", "PostUpdatePodSandbox",
	"CreateContainer", "PostCreateContainer", "StartContainer", "PostStartContainer",
	"UpdateContainer", "PostUpdateContainer", "StopContainer", "RemoveContainer",
	"StopPodSandbox", "RemovePodSandbox",
}

// lifecycleMask subscribes to every lifecycle event (not validation).
var lifecycleMask = nri.EventMask(
	nriv1beta1.Event_EVENT_RUN_POD_SANDBOX, nriv1beta1.Event_EVENT_UPDATE_POD_SANDBOX, nriv1beta1.Event_EVENT_POST_UPDATE_POD_SANDBOX,
	nriv1beta1.Event_EVENT_CREATE_CONTAINER, nriv1beta1.Event_EVENT_POST_CREATE_CONTAINER, nriv1beta1.Event_EVENT_START_CONTAINER,
	nriv1beta1.Event_EVENT_POST_START_CONTAINER, nriv1beta1.Event_EVENT_UPDATE_CONTAINER, nriv1beta1.Event_EVENT_POST_UPDATE_CONTAINER,
	nriv1beta1.Event_EVENT_STOP_CONTAINER, nriv1beta1.Event_EVENT_REMOVE_CONTAINER,
	nriv1beta1.Event_EVENT_STOP_POD_SANDBOX, nriv1beta1.Event_EVENT_REMOVE_POD_SANDBOX,
)

// step is one event the runtime sent and what it got back.
type step struct {
	method string
	err    error
	rsp    proto.Message
}

// podRun is one pod's lifecycle as the runtime drove it.
type podRun struct {
	pod   int // fixture pod number
	steps []step
}

// podID is the pod's sandbox id.
func (r podRun) podID() string { return fixture.Pod(r.pod).GetId() }

// failed returns the steps that returned an error.
func (r podRun) failed() []step {
	var out []step
	for _, s := range r.steps {
		if s.err != nil {
			out = append(out, s)
		}
	}
	return out
}

// stepOf returns the step of a method, if it was sent.
func (r podRun) stepOf(method string) (step, bool) {
	for _, s := range r.steps {
		if s.method == method {
			return s, true
		}
	}
	return step{}, false
}

// sendFunc sends one event of pod n, container 0, over AdaptationService.
type sendFunc func(ctx context.Context, c nriv1beta1.AdaptationServiceClient, n int) (proto.Message, error)

// senders maps each lifecycle event to its AdaptationService call.
var senders = map[string]sendFunc{
	"RunPodSandbox": func(ctx context.Context, c nriv1beta1.AdaptationServiceClient, n int) (proto.Message, error) {
		return c.RunPodSandbox(ctx, &nriv1beta1.AdaptationServiceRunPodSandboxRequest{Pod: fixture.Pod(n)})
	},
	"UpdatePodSandbox": func(ctx context.Context, c nriv1beta1.AdaptationServiceClient, n int) (proto.Message, error) {
		return c.UpdatePodSandbox(ctx, &nriv1beta1.AdaptationServiceUpdatePodSandboxRequest{
			Pod: fixture.Pod(n), LinuxResources: &nriv1beta1.LinuxResources{Memory: &nriv1beta1.LinuxMemory{Limit: wrapperspb.Int64(3 << 30)}}})
	},
	"PostUpdatePodSandbox": func(ctx context.Context, c nriv1beta1.AdaptationServiceClient, n int) (proto.Message, error) {
		return c.PostUpdatePodSandbox(ctx, &nriv1beta1.AdaptationServicePostUpdatePodSandboxRequest{Pod: fixture.Pod(n)})
	},
	"CreateContainer": func(ctx context.Context, c nriv1beta1.AdaptationServiceClient, n int) (proto.Message, error) {
		return c.CreateContainer(ctx, &nriv1beta1.AdaptationServiceCreateContainerRequest{Pod: fixture.Pod(n), Container: fixture.Container(n, 0)})
	},
	"PostCreateContainer": func(ctx context.Context, c nriv1beta1.AdaptationServiceClient, n int) (proto.Message, error) {
		return c.PostCreateContainer(ctx, &nriv1beta1.AdaptationServicePostCreateContainerRequest{Pod: fixture.Pod(n), Container: fixture.Container(n, 0)})
	},
	"StartContainer": func(ctx context.Context, c nriv1beta1.AdaptationServiceClient, n int) (proto.Message, error) {
		return c.StartContainer(ctx, &nriv1beta1.AdaptationServiceStartContainerRequest{Pod: fixture.Pod(n), Container: running(n)})
	},
	"PostStartContainer": func(ctx context.Context, c nriv1beta1.AdaptationServiceClient, n int) (proto.Message, error) {
		return c.PostStartContainer(ctx, &nriv1beta1.AdaptationServicePostStartContainerRequest{Pod: fixture.Pod(n), Container: running(n)})
	},
	"UpdateContainer": func(ctx context.Context, c nriv1beta1.AdaptationServiceClient, n int) (proto.Message, error) {
		return c.UpdateContainer(ctx, &nriv1beta1.AdaptationServiceUpdateContainerRequest{Pod: fixture.Pod(n), Container: running(n),
			LinuxResources: &nriv1beta1.LinuxResources{Memory: &nriv1beta1.LinuxMemory{Limit: wrapperspb.Int64(2 << 30)}}})
	},
	"PostUpdateContainer": func(ctx context.Context, c nriv1beta1.AdaptationServiceClient, n int) (proto.Message, error) {
		return c.PostUpdateContainer(ctx, &nriv1beta1.AdaptationServicePostUpdateContainerRequest{Pod: fixture.Pod(n), Container: running(n)})
	},
	"StopContainer": func(ctx context.Context, c nriv1beta1.AdaptationServiceClient, n int) (proto.Message, error) {
		return c.StopContainer(ctx, &nriv1beta1.AdaptationServiceStopContainerRequest{Pod: fixture.Pod(n), Container: running(n)})
	},
	"RemoveContainer": func(ctx context.Context, c nriv1beta1.AdaptationServiceClient, n int) (proto.Message, error) {
		ctr := fixture.Container(n, 0)
		ctr.State = nriv1beta1.ContainerState_CONTAINER_STATE_STOPPED
		return c.RemoveContainer(ctx, &nriv1beta1.AdaptationServiceRemoveContainerRequest{Pod: fixture.Pod(n), Container: ctr})
	},
	"StopPodSandbox": func(ctx context.Context, c nriv1beta1.AdaptationServiceClient, n int) (proto.Message, error) {
		return c.StopPodSandbox(ctx, &nriv1beta1.AdaptationServiceStopPodSandboxRequest{Pod: fixture.Pod(n)})
	},
	"RemovePodSandbox": func(ctx context.Context, c nriv1beta1.AdaptationServiceClient, n int) (proto.Message, error) {
		return c.RemovePodSandbox(ctx, &nriv1beta1.AdaptationServiceRemovePodSandboxRequest{Pod: fixture.Pod(n)})
	},
}

// running is container 0 of pod n once started.
func running(n int) *nriv1beta1.Container {
	c := fixture.Container(n, 0)
	c.State = nriv1beta1.ContainerState_CONTAINER_STATE_RUNNING
	return c
}

// skipAfter says which later events a runtime does not send when a
// creating event fails: no container after a failed CreateContainer, no
// Post* after a failed update, nothing after a failed RunPodSandbox.
var skipAfter = map[string][]string{
	"RunPodSandbox":    lifecycleMethods[1:],
	"UpdatePodSandbox": {"PostUpdatePodSandbox"},
	"CreateContainer": {"PostCreateContainer", "StartContainer", "PostStartContainer", "UpdateContainer",
		"PostUpdateContainer", "StopContainer", "RemoveContainer"},
	"StartContainer":  {"PostStartContainer", "UpdateContainer", "PostUpdateContainer"},
	"UpdateContainer": {"PostUpdateContainer"},
}

// lifecycle drives pod n through its lifecycle, leaving out the events in
// omit, and returns what each event got.
func lifecycle(ctx context.Context, c nriv1beta1.AdaptationServiceClient, n int, omit ...string) podRun {
	run := podRun{pod: n}
	skip := map[string]bool{}
	for _, m := range omit {
		skip[m] = true
	}
	for _, m := range lifecycleMethods {
		if skip[m] {
			continue
		}
		rsp, err := senders[m](ctx, c, n)
		run.steps = append(run.steps, step{method: m, err: err, rsp: rsp})
		if err != nil {
			for _, s := range skipAfter[m] {
				skip[s] = true
			}
		}
	}
	return run
}

// load drives the lifecycles of pods with workers pods at a time, and
// returns them in the order of pods.
func load(ctx context.Context, c nriv1beta1.AdaptationServiceClient, pods []int, workers int, omit ...string) []podRun {
	runs := make([]podRun, len(pods))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				runs[i] = lifecycle(ctx, c, pods[i], omit...)
			}
		})
	}
	for i := range pods {
		next <- i
	}
	close(next)
	wg.Wait()
	return runs
}

// errorPlugins returns the plugins named by an error's ErrorInfo, and its
// reason.
func errorPlugins(err error) (plugins []string, reason string) {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			if p := info.GetMetadata()["plugins"]; p != "" {
				plugins = strings.Split(p, ",")
			}
			return plugins, info.GetReason()
		}
	}
	return nil, ""
}

// reached reports whether an event that got err was delivered to plugin
// (full name): dispatch runs in the order of full names and stops at the
// plugin that failed a creating event.
func reached(err error, plugin string) bool {
	if err == nil {
		return true
	}
	named, _ := errorPlugins(err)
	if len(named) == 0 {
		return false
	}
	for _, p := range named {
		if p < plugin {
			return false
		}
	}
	return true
}

// expected returns the events plugin should have received of run, in order.
func expected(run podRun, plugin string) []string {
	var out []string
	for _, s := range run.steps {
		if reached(s.err, plugin) {
			out = append(out, s.method)
		}
	}
	return out
}

// received returns the lifecycle events of pod id that plugin received, in
// the order they arrived.
func received(log *testplugin.Log, plugin, id string) []string {
	var out []string
	for _, c := range log.Of(plugin, lifecycleMethods...) {
		if r, ok := c.Req.(interface{ GetPod() *nriv1beta1.PodSandbox }); ok && r.GetPod().GetId() == id {
			out = append(out, c.Method)
		}
	}
	return out
}

// checkDelivery asserts that each plugin received every event of runs that
// reached it exactly once and in each pod's order.
func checkDelivery(t testing.TB, log *testplugin.Log, runs []podRun, plugins ...string) {
	t.Helper()
	for _, p := range plugins {
		bad := 0
		for _, r := range runs {
			want, got := expected(r, p), received(log, p, r.podID())
			if !slices.Equal(want, got) {
				bad++
				if bad <= 3 {
					t.Errorf("%s, pod %d:\n got  %v\n want %v", p, r.pod, got, want)
				}
			}
		}
		if bad > 3 {
			t.Errorf("%s: %d pods in all with wrong deliveries", p, bad)
		}
	}
}

// checkNoFailures asserts that no event of runs failed.
func checkNoFailures(t testing.TB, runs []podRun) {
	t.Helper()
	n := 0
	for _, r := range runs {
		for _, s := range r.failed() {
			n++
			if n <= 3 {
				t.Errorf("pod %d: %s failed: %v", r.pod, s.method, clipErr(s.err))
			}
		}
	}
	if n > 3 {
		t.Errorf("%d events failed in all", n)
	}
}

// clipErr renders an error for a test message, clipped.
func clipErr(err error) string {
	s := fmt.Sprint(err)
	if len(s) > 300 {
		s = fmt.Sprintf("%s... (%d bytes)", s[:300], len(s))
	}
	return s
}

// attachment is the runtime's Attach stream: it answers every snapshot
// request with the state state returns, and every update request with an
// empty result (everything applied).
type attachment struct {
	stream    grpc.BidiStreamingClient[nriv1beta1.AttachRequest, nriv1beta1.AttachResponse]
	cancel    context.CancelFunc
	done      chan struct{}
	snapshots chan struct{} // signalled after each snapshot page sent (dropped when nobody waits)
	sendMu    sync.Mutex
	err       error // how the stream ended, set before done is closed
}

// attach attaches the runtime: hello, Attached, then the stream is served
// in the background until detach.
func attach(c *client, state func() ([]*nriv1beta1.PodSandbox, []*nriv1beta1.Container)) (*attachment, error) {
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := c.adapt.Attach(ctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("Attach: %w", err)
	}
	a := &attachment{stream: stream, cancel: cancel, done: make(chan struct{}), snapshots: make(chan struct{}, 1)}
	if err := a.send(&nriv1beta1.AttachRequest{Message: &nriv1beta1.AttachRequest_Hello{Hello: &nriv1beta1.AttachHello{
		RuntimeName: "faults-runtime", RuntimeVersion: "v1"}}}); err != nil {
		cancel()
		return nil, fmt.Errorf("Attach hello: %w", err)
	}
	m, err := stream.Recv()
	if err != nil || m.GetAttached() == nil {
		cancel()
		return nil, fmt.Errorf("Attach: no Attached (%v, %v)", m, err)
	}
	go a.serve(state)
	return a, nil
}

func (a *attachment) send(m *nriv1beta1.AttachRequest) error {
	a.sendMu.Lock()
	defer a.sendMu.Unlock()
	return a.stream.Send(m)
}

// serve answers the server until the stream ends.
func (a *attachment) serve(state func() ([]*nriv1beta1.PodSandbox, []*nriv1beta1.Container)) {
	defer close(a.done)
	for {
		m, err := a.stream.Recv()
		if err != nil {
			a.err = err
			return
		}
		switch {
		case m.GetSnapshotRequest() != nil:
			pods, ctrs := state()
			_ = a.send(&nriv1beta1.AttachRequest{Message: &nriv1beta1.AttachRequest_Snapshot{Snapshot: &nriv1beta1.StateSnapshot{
				RequestId: m.GetSnapshotRequest().GetRequestId(), Pods: pods, Containers: ctrs}}})
			select {
			case a.snapshots <- struct{}{}:
			default:
			}
		case m.GetApplyUpdates() != nil:
			_ = a.send(&nriv1beta1.AttachRequest{Message: &nriv1beta1.AttachRequest_UpdateResult{UpdateResult: &nriv1beta1.UpdateResult{
				RequestId: m.GetApplyUpdates().GetRequestId()}}})
		}
	}
}

// detach ends the stream and waits until the server ended it.
func (a *attachment) detach() {
	a.sendMu.Lock()
	_ = a.stream.CloseSend()
	a.sendMu.Unlock()
	select {
	case <-a.done:
	case <-time.After(testwait.Bound()):
	}
	a.cancel()
}
