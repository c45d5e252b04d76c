package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
)

// The gaps of classic NRI's suite (reference §9) and contract points of
// docs/PROTOCOL.md that every path must keep.

// creatingEvents can be vetoed.
var creatingEvents = []string{"RunPodSandbox", "UpdatePodSandbox", "CreateContainer", "StartContainer", "UpdateContainer"}

func init() {
	const g = "Gaps"
	for _, ev := range creatingEvents {
		add(Gap, g, "a verdict on "+ev+" vetoes it and stops delivery to later plugins", Options{}, func(s *S) {
			s.Start("10", "veto", failOn(status.Error(codes.PermissionDenied, "no GPUs for you"), ev))
			s.Start("20", "later")
			s.Log().Reset()
			err := s.send(ev, newPod("pod0", nil), newCtr("pod0", "ctr0"))
			s.failsWith(ev, err, codes.PermissionDenied, "DISPATCH_OUTCOME_VETOED", "10-veto", "no GPUs for you")
			s.namesPlugins(ev, err, "10-veto")
			eq(s, "calls", s.Log().Strings(ev), []string{"10-veto:" + ev})
		})
	}

	add(Gap, g, "a timeout disconnects the plugin and dispatch continues", Options{}, func(s *S) {
		slow := s.Start("10", "slow", shortTimeout(), blockOn("StartContainer"))
		s.Start("20", "fast")
		pod, ctr := newPod("pod0", nil), newCtr("pod0", "ctr0")
		s.Log().Reset()
		s.must("StartContainer with a timing-out plugin (ignore policy)", s.send("StartContainer", pod, ctr))
		eq(s, "StartContainer calls", s.Log().Strings("StartContainer"), []string{"10-slow:StartContainer", "20-fast:StartContainer"})
		s.waitDone(slow)
		s.Log().Reset()
		s.must("PostStartContainer", s.send("PostStartContainer", pod, ctr))
		eq(s, "later calls", s.Log().Strings(lifecycleEvents...), []string{"20-fast:PostStartContainer"})
	})

	add(Gap, g, "split synchronization: pages fit the plugin's message size and every reply but the last echoes more", Options{}, func(s *S) {
		var pods []*nriv1beta1.PodSandbox
		var ctrs []*nriv1beta1.Container
		for i := 0; i < 50; i++ {
			pods = append(pods, fixture.Pod(i))
			ctrs = append(ctrs, fixture.Container(i, 0), fixture.Container(i, 1))
		}
		s.Env().SetState(s.T, pods, ctrs)
		const limit = 64 << 10
		s.Start("10", "small", caps(&nriv1beta1.Capabilities{MaxMessageSize: limit}),
			timeouts(&nriv1beta1.Timeouts{Synchronize: durationpb.New(Wait)}))
		var pages []*nriv1beta1.SynchronizeRequest
		for _, c := range s.Log().Calls("Synchronize") {
			pages = append(pages, c.Req.(*nriv1beta1.SynchronizeRequest))
		}
		if len(pages) < 2 {
			s.Fatalf("%d page(s) for about 750 kB of state under a 64 KiB limit", len(pages))
		}
		seenPods := map[string]int{}
		seenCtrs := map[string]int{}
		for i, pg := range pages {
			if sz := proto.Size(pg); sz > limit {
				s.Errorf("page %d is %d bytes, over the %d byte limit", i, sz, limit)
			}
			if pg.GetMore() != (i < len(pages)-1) {
				s.Errorf("page %d of %d: more=%v", i+1, len(pages), pg.GetMore())
			}
			if pg.GetEpoch() != 1 || pg.GetReason() != nriv1beta1.SyncReason_SYNC_REASON_REGISTRATION {
				s.Errorf("page %d: epoch %d reason %v, want 1 REGISTRATION", i, pg.GetEpoch(), pg.GetReason())
			}
			for _, p := range pg.GetPods() {
				seenPods[p.GetId()]++
			}
			for _, c := range pg.GetContainers() {
				if seenPods[c.GetPodSandboxId()] == 0 {
					s.Errorf("container %s arrived before its pod", c.GetId())
				}
				seenCtrs[c.GetId()]++
			}
		}
		for _, p := range pods {
			if seenPods[p.GetId()] != 1 {
				s.Errorf("pod %s synchronized %d times", p.GetId(), seenPods[p.GetId()])
			}
		}
		for _, c := range ctrs {
			if seenCtrs[c.GetId()] != 1 {
				s.Errorf("container %s synchronized %d times", c.GetId(), seenCtrs[c.GetId()])
			}
		}
	})
	add(Gap, g, "split synchronization: a plugin that does not echo more is refused", Options{}, func(s *S) {
		var ctrs []*nriv1beta1.Container
		for i := 0; i < 40; i++ {
			ctrs = append(ctrs, fixture.Container(i, 0))
		}
		s.Env().SetState(s.T, nil, ctrs)
		_, err := s.TryStart("10", "old", caps(&nriv1beta1.Capabilities{MaxMessageSize: 64 << 10}),
			onSync(func(context.Context, *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
				return &nriv1beta1.SynchronizeResponse{}, nil
			}))
		s.failsWith("registering a plugin that does not echo more", err, codes.OK, "REGISTRATION_REFUSAL_SYNCHRONIZE_FAILED", "split synchronization")
		s.Log().Reset()
		s.lifecycle(newPod("pod0", nil), newCtr("pod0", "ctr0"))
		eq(s, "calls", s.Log().Strings(), nil)
	})
	add(Gap, g, "updates and evictions in the reply to the last Synchronize page reach the runtime", Options{}, func(s *S) {
		s.Env().SetState(s.T, []*nriv1beta1.PodSandbox{newPod("pod0", nil)}, []*nriv1beta1.Container{newCtr("pod0", "ctr0"), newCtr("pod0", "ctr1")})
		upd := containerUpdate("ctr0", &nriv1beta1.LinuxResources{Cpu: &nriv1beta1.LinuxCPU{Cpus: "2-3"}})
		ev := &nriv1beta1.ContainerEviction{ContainerId: "ctr1", Reason: "no room"}
		s.Start("10", "syncer", onSync(func(context.Context, *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
			return &nriv1beta1.SynchronizeResponse{Update: []*nriv1beta1.ContainerUpdate{upd}, Evict: []*nriv1beta1.ContainerEviction{ev}}, nil
		}))
		ctx, cancel := context.WithTimeout(s.ctx, Wait)
		defer cancel()
		s.must("waiting for the runtime", s.Env().Applied().Wait(ctx, func(a []Applied) bool {
			var u, e int
			for _, x := range a {
				u, e = u+len(x.Update), e+len(x.Evict)
			}
			return u >= 1 && e >= 1
		}))
		var us []*nriv1beta1.ContainerUpdate
		var es []*nriv1beta1.ContainerEviction
		for _, a := range s.Env().Applied().All() {
			if a.Plugin != "10-syncer" {
				s.Errorf("applied for %q, want 10-syncer", a.Plugin)
			}
			us, es = append(us, a.Update...), append(es, a.Evict...)
		}
		eq(s, "applied updates", us, []*nriv1beta1.ContainerUpdate{upd})
		eq(s, "applied evictions", es, []*nriv1beta1.ContainerEviction{ev})
	})

	add(Gap, g, "registration refusals name the rule", Options{}, func(s *S) {
		neg := int32(-1)
		for _, c := range []struct {
			idx, name string
			opts      []Opt
			reason    string
			field     string
		}{
			{"10", "", nil, "REGISTRATION_REFUSAL_INVALID_NAME", "plugin_name"},
			{"1", "ok", nil, "REGISTRATION_REFUSAL_INVALID_INDEX", "plugin_idx"},
			{"1a", "ok", nil, "REGISTRATION_REFUSAL_INVALID_INDEX", "plugin_idx"},
			{"100", "ok", nil, "REGISTRATION_REFUSAL_INVALID_INDEX", "plugin_idx"},
			{"10", "ok", []Opt{rawEvents(1 << 20)}, "REGISTRATION_REFUSAL_INVALID_EVENTS", "events"},
			{"10", "ok", []Opt{rawEvents(neg)}, "REGISTRATION_REFUSAL_INVALID_EVENTS", "events"},
			{"10", "ok", []Opt{timeouts(&nriv1beta1.Timeouts{Request: durationpb.New(-time.Second)})}, "REGISTRATION_REFUSAL_INVALID_CAPABILITIES", "timeouts.request"},
			{"10", "ok", []Opt{caps(&nriv1beta1.Capabilities{MaxMessageSize: 100})}, "REGISTRATION_REFUSAL_INVALID_CAPABILITIES", "capabilities.max_message_size"},
		} {
			_, err := s.TryStart(c.idx, c.name, c.opts...)
			s.failsWith(fmt.Sprintf("registering %s-%s", c.idx, c.name), err, codes.InvalidArgument, c.reason, c.field)
		}
		s.Log().Reset()
		s.lifecycle(newPod("pod0", nil), newCtr("pod0", "ctr0"))
		eq(s, "calls after the refusals", s.Log().Strings(), nil)
	})
	// docs/PROTOCOL.md §12: "If the refusal happens after nrid dialed you
	// (Configure or Synchronize failed, or the mask from Configure was
	// refused), you also get Shutdown{kind: SHUTDOWN_KIND_REGISTRATION_FAILED}
	// first, as a best effort."
	add(Gap, g, "a registration refused after the plugin was dialed sends Shutdown REGISTRATION_FAILED", Options{}, func(s *S) {
		_, err := s.TryStart("10", "badsync",
			onSync(func(context.Context, *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
				return nil, errors.New("cannot synchronize")
			}))
		s.failsWith("registering 10-badsync", err, codes.OK, "REGISTRATION_REFUSAL_SYNCHRONIZE_FAILED")
		_, err = s.TryStart("20", "badmask", rawEvents(1<<20))
		s.failsWith("registering 20-badmask", err, codes.InvalidArgument, "REGISTRATION_REFUSAL_INVALID_EVENTS")
		for _, full := range []string{"10-badsync", "20-badmask"} {
			got := s.Log().Of(full, "Shutdown")
			if len(got) != 1 || got[0].Req.(*nriv1beta1.ShutdownRequest).GetKind() != nriv1beta1.ShutdownKind_SHUTDOWN_KIND_REGISTRATION_FAILED {
				s.Errorf("%s: Shutdown calls %v, want one of kind REGISTRATION_FAILED (calls: %v)", full, got, s.Log().Strings())
			}
		}
	})
	add(Gap, g, "a 0 subscription means every event, validation included", Options{}, func(s *S) {
		s.Start("00", "all", rawEvents(0))
		s.Log().Reset()
		s.lifecycle(newPod("pod0", nil), newCtr("pod0", "ctr0"))
		var want []string
		for _, e := range lifecycleEvents {
			want = append(want, "00-all:"+e)
			if e == "CreateContainer" {
				want = append(want, "00-all:ValidateContainerAdjustment")
			}
		}
		eq(s, "calls", s.Log().Strings(), want)
	})
	add(Gap, g, "every call carries the instance id of the registration", Options{}, func(s *S) {
		p := s.Start("00", "test", onValidate(accept))
		s.lifecycle(newPod("pod0", nil), newCtr("pod0", "ctr0"))
		id := s.configureOf("00-test").GetInstanceId()
		if id == "" || id != p.InstanceID() {
			s.Fatalf("Configure instance id %q, plugin's %q", id, p.InstanceID())
		}
		for _, c := range s.Log().Calls() {
			if c.InstanceID != id {
				s.Errorf("%s carried instance id %q, want %q", c, c.InstanceID, id)
			}
		}
	})
	add(Gap, g, "StopContainer: a conflicting update is dropped and recorded as that plugin's error; the stop goes on", Options{}, func(s *S) {
		stopUpdate := func(shares uint64) Opt {
			return onStop(func(context.Context, *nriv1beta1.StopContainerRequest) (*nriv1beta1.StopContainerResponse, error) {
				return &nriv1beta1.StopContainerResponse{Update: []*nriv1beta1.ContainerUpdate{
					containerUpdate("ctr9", &nriv1beta1.LinuxResources{Cpu: &nriv1beta1.LinuxCPU{Shares: u64(shares)}})}}, nil
			})
		}
		s.Start("00", "a", stopUpdate(1))
		s.Start("10", "b", stopUpdate(2))
		s.Start("20", "c")
		s.Log().Reset()
		rsp, err := s.RT().StopContainer(s.ctx, &nriv1beta1.StopContainerRequest{Pod: newPod("pod0", nil), Container: newCtr("pod0", "ctr0")})
		s.must("StopContainer", err)
		eq(s, "calls", s.Log().Strings(), []string{"00-a:StopContainer", "10-b:StopContainer", "20-c:StopContainer"})
		eq(s, "updates", rsp.GetUpdate(), []*nriv1beta1.ContainerUpdate{
			containerUpdate("ctr9", &nriv1beta1.LinuxResources{Cpu: &nriv1beta1.LinuxCPU{Shares: u64(1)}})})
		pe := rsp.GetPluginErrors()
		if len(pe) != 1 || pe[0].GetPlugin().GetName() != "b" || !strings.Contains(pe[0].GetMessage(), `plugins "10-b" and "00-a" both tried to set CPUShares`) {
			s.Fatalf("plugin errors %v, want 10-b's conflict", pe)
		}
	})
	add(Gap, g, "a plugin is configured and synchronized before it receives any event", Options{}, func(s *S) {
		pod := newPod("pod0", nil)
		s.runPod(pod)
		s.Start("10", "late")
		s.lifecycle(newPod("pod1", nil), newCtr("pod1", "ctr1"))
		got := s.Log().Strings()
		if len(got) < 2 || got[0] != "10-late:Configure" || got[1] != "10-late:Synchronize" {
			s.Fatalf("calls %v do not start with Configure and Synchronize", got)
		}
		sync := s.Log().Calls("Synchronize")[0].Req.(*nriv1beta1.SynchronizeRequest)
		if len(sync.GetPods()) != 1 || sync.GetPods()[0].GetId() != "pod0" {
			s.Errorf("the snapshot lacks the pod that ran before: %v", sync.GetPods())
		}
		if n := len(s.Log().Of("10-late", "RunPodSandbox")); n != 1 {
			s.Errorf("10-late got %d RunPodSandbox calls, want 1 (pod1)", n)
		}
	})
	add(Gap, g, "a plugin that does not answer Configure within the registration timeout is refused",
		Options{RegistrationTimeout: shortCall}, func(s *S) {
			_, err := s.TryStart("10", "mute", blockOn("Configure"))
			s.failsWith("registering 10-mute", err, codes.DeadlineExceeded, "REGISTRATION_REFUSAL_CONFIGURE_FAILED", "10-mute")
			s.Log().Reset()
			s.must("RunPodSandbox", s.send("RunPodSandbox", newPod("pod0", nil), nil))
			eq(s, "calls", s.Log().Strings(), nil)
		})
	add(Gap, g, "a plugin that does not finish Synchronize within its budget is refused", Options{}, func(s *S) {
		_, err := s.TryStart("10", "slowsync", blockOn("Synchronize"),
			timeouts(&nriv1beta1.Timeouts{Synchronize: durationpb.New(shortCall)}))
		s.failsWith("registering 10-slowsync", err, codes.DeadlineExceeded, "REGISTRATION_REFUSAL_SYNCHRONIZE_FAILED", "10-slowsync")
		s.Log().Reset()
		s.must("RunPodSandbox", s.send("RunPodSandbox", newPod("pod0", nil), nil))
		eq(s, "calls", s.Log().Strings(), nil)
	})
}
