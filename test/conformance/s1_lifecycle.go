package conformance

import (
	"context"
	"errors"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// Classic NRI's TestConfiguration, TestAdaptation, TestPluginConnection and
// TestPodAndContainerRequestsAndEvents.

func init() {
	const cfg = "Configuration"
	add(Upstream, cfg, "no (extra) options given: should allow startup", Options{}, func(s *S) {
		s.must("RunPodSandbox without plugins", s.RT().RunPodSandbox(s.ctx, &nriv1beta1.RunPodSandboxRequest{Pod: newPod("pod0", nil)}))
	})
	add(Upstream, cfg, "no (extra) options given: should allow external plugins to connect", Options{}, func(s *S) {
		s.Start("00", "test")
		eq(s, "calls", s.Log().Strings(), []string{"00-test:Configure", "00-test:Synchronize"})
	})
	add(Upstream, cfg, "external connections are explicitly disabled: should prevent plugins from connecting",
		Options{DisableExternalConnections: true}, func(s *S) {
			if _, err := s.TryStart("00", "test"); err == nil {
				s.Fatal("a plugin registered although external connections are disabled")
			}
			eq(s, "calls", s.Log().Strings(), nil)
		})

	// Classic NRI refuses an adaptation without its sync or update function;
	// nri-grpc's equivalent is a configuration the server refuses.
	addManual(Upstream, cfg, "SyncFn is nil: should prevent Adaptation creation with an error (non-positive request timeout)", func(s *S) {
		env, err := s.NewEnv(Options{RequestTimeout: -1})
		if err == nil || env != nil {
			s.Fatalf("NRI with a negative request timeout was created (err %v)", err)
		}
	})
	addManual(Upstream, cfg, "UpdateFn is nil: should prevent Adaptation creation with an error (non-positive registration timeout)", func(s *S) {
		env, err := s.NewEnv(Options{RegistrationTimeout: -1})
		if err == nil || env != nil {
			s.Fatalf("NRI with a negative registration timeout was created (err %v)", err)
		}
	})

	const conn = "PluginConnection"
	add(Upstream, conn, "should reject plugins with an invalid name", Options{}, func(s *S) {
		if _, err := s.TryStart("05", "abcd-0123+EFGH_4567.ijkl"); err != nil {
			s.Fatalf("valid name refused: %v", err)
		}
		_, err := s.TryStart("10", "foo,bar")
		s.failsWith("registering 10-foo,bar", err, codes.InvalidArgument, "REGISTRATION_REFUSAL_INVALID_NAME", "plugin_name")
		eq(s, "calls", s.Log().Strings(), []string{"05-abcd-0123+EFGH_4567.ijkl:Configure", "05-abcd-0123+EFGH_4567.ijkl:Synchronize"})
	})
	add(Upstream, conn, "should configure the plugin", Options{}, func(s *S) {
		p := s.Start("00", "test")
		calls := s.Log().Calls()
		if len(calls) == 0 || calls[0].Method != "Configure" {
			s.Fatalf("first call is not Configure: %v", s.Log().Strings())
		}
		cfg := calls[0].Req.(*nriv1beta1.ConfigureRequest)
		if cfg.GetInstanceId() == "" || cfg.GetInstanceId() != p.InstanceID() {
			s.Errorf("Configure instance id %q, plugin's %q", cfg.GetInstanceId(), p.InstanceID())
		}
	})
	add(Upstream, conn, "should synchronize the plugin after configuration", Options{}, func(s *S) {
		pods := []*nriv1beta1.PodSandbox{newPod("pod0", nil), newPod("pod1", nil)}
		ctrs := []*nriv1beta1.Container{newCtr("pod0", "ctr0"), newCtr("pod1", "ctr1")}
		s.Env().SetState(s.T, clonePods(pods), cloneCtrs(ctrs))
		s.Start("00", "test")
		eq(s, "calls", s.Log().Strings(), []string{"00-test:Configure", "00-test:Synchronize"})
		sync := s.Log().Calls("Synchronize")[0].Req.(*nriv1beta1.SynchronizeRequest)
		if len(sync.GetPods()) != 2 || len(sync.GetContainers()) != 2 {
			s.Fatalf("synchronized %d pods and %d containers, want 2 and 2", len(sync.GetPods()), len(sync.GetContainers()))
		}
		for i := range pods {
			protoEq(s, "synchronized pod", byID(sync.GetPods(), pods[i].Id), pods[i])
			protoEq(s, "synchronized container", byID(sync.GetContainers(), ctrs[i].Id), ctrs[i])
		}
	})
	add(Upstream, conn, "close plugins on failed synchronization", Options{}, func(s *S) {
		s.Start("00", "test")
		_, err := s.TryStart("10", "bar", onSync(func(context.Context, *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
			return nil, errors.New("cannot synchronize")
		}))
		s.failsWith("registering 10-bar", err, codes.OK, "REGISTRATION_REFUSAL_SYNCHRONIZE_FAILED", "10-bar")
		s.Log().Reset()
		s.lifecycle(newPod("pod0", nil), newCtr("pod0", "ctr0"))
		for _, c := range s.Log().Calls() {
			if c.Plugin == "10-bar" {
				s.Errorf("the plugin whose synchronization failed received %s", c)
			}
		}
	})

	const ev = "PodAndContainerRequestsAndEvents"
	add(Upstream, ev, "there are no plugins: should always succeed", Options{}, func(s *S) {
		s.lifecycle(newPod("pod0", nil), newCtr("pod0", "ctr0"))
		s.lifecycle(newPod("pod1", nil), newCtr("pod1", "ctr1"))
	})
	single := func(subscriptions ...string) func(s *S) {
		return func(s *S) {
			evs := parseEvents(subscriptions...)
			s.Start("00", "test", events(evs...))
			s.Log().Reset()
			s.lifecycle(newPod("pod0", nil), newCtr("pod0", "ctr0"))
			var want []string
			for _, e := range lifecycleEvents {
				if slices.Contains(evs, eventOf[e]) {
					want = append(want, "00-test:"+e)
				}
			}
			eq(s, "calls, in lifecycle order", s.Log().Strings(), want)
		}
	}
	for _, e := range []string{
		"RunPodSandbox", "UpdatePodSandbox", "PostUpdatePodSandbox", "StopPodSandbox", "RemovePodSandbox",
		"CreateContainer", "PostCreateContainer", "StartContainer", "PostStartContainer",
		"UpdateContainer", "PostUpdateContainer", "StopContainer", "RemoveContainer",
	} {
		add(Upstream, ev, "when there are plugins: should honor plugins' event subscriptions: with "+e, Options{}, single(e))
	}
	masks := []struct {
		name string
		subs []string
	}{
		{"with all pod events", []string{"RunPodSandbox,StopPodSandbox,RemovePodSandbox"}},
		{"with all container requests", []string{"CreateContainer,UpdateContainer,StopContainer"}},
		{"with all container requests and events", []string{"CreateContainer,PostCreateContainer", "StartContainer,PostStartContainer",
			"UpdateContainer,PostUpdateContainer", "StopContainer", "RemoveContainer"}},
		{"with all pod and container requests and events", []string{"RunPodSandbox,UpdatePodSandbox,PostUpdatePodSandbox,StopPodSandbox,RemovePodSandbox",
			"CreateContainer,PostCreateContainer", "StartContainer,PostStartContainer",
			"UpdateContainer,PostUpdateContainer", "StopContainer", "RemoveContainer"}},
	}
	for _, m := range masks {
		add(Upstream, ev, "when there are plugins: should honor plugins' event subscriptions: "+m.name, Options{}, single(m.subs...))
	}
	multi := func(subscriptions ...string) func(s *S) {
		return func(s *S) {
			evs := parseEvents(subscriptions...)
			// Started in classic's order; called in index order.
			for _, id := range [][2]string{{"20", "test"}, {"99", "foo"}, {"00", "bar"}} {
				s.Start(id[0], id[1], events(evs...))
			}
			s.Log().Reset()
			s.lifecycle(newPod("pod0", nil), newCtr("pod0", "ctr0"))
			eq(s, "StartContainer order", s.Log().Strings("StartContainer"),
				[]string{"00-bar:StartContainer", "20-test:StartContainer", "99-foo:StartContainer"})
			var want []string
			for _, e := range lifecycleEvents {
				if slices.Contains(evs, eventOf[e]) {
					want = append(want, "00-bar:"+e, "20-test:"+e, "99-foo:"+e)
				}
			}
			eq(s, "every call, in strict order", s.Log().Strings(), want)
		}
	}
	add(Upstream, ev, "when there are multiple plugins: should honor plugins' event subscriptions: with StartContainer", Options{},
		multi("StartContainer"))
	add(Upstream, ev, "when there are multiple plugins: should honor plugins' event subscriptions: with all container CRI requests", Options{},
		multi("CreateContainer,StartContainer,UpdateContainer,StopContainer,RemoveContainer"))
	add(Upstream, ev, "when there are multiple plugins: should honor plugins' event subscriptions: with all container requests and events", Options{},
		multi(masks[2].subs...))
	add(Upstream, ev, "when there are multiple plugins: should honor plugins' event subscriptions: with all pod and container requests and events", Options{},
		multi(masks[3].subs...))
}

func clonePods(in []*nriv1beta1.PodSandbox) []*nriv1beta1.PodSandbox {
	out := make([]*nriv1beta1.PodSandbox, len(in))
	for i, p := range in {
		out[i] = clone(p)
	}
	return out
}

func cloneCtrs(in []*nriv1beta1.Container) []*nriv1beta1.Container {
	out := make([]*nriv1beta1.Container, len(in))
	for i, c := range in {
		out[i] = clone(c)
	}
	return out
}

// byID finds the object with the given id.
func byID[T interface {
	proto.Message
	GetId() string
}](list []T, id string) T {
	var zero T
	for _, x := range list {
		if x.GetId() == id {
			return x
		}
	}
	return zero
}
