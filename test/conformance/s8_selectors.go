package conformance

import (
	"slices"
	"strings"

	"google.golang.org/grpc/codes"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server/validate"
)

// SelectorsGroup is the group of the event selector scenarios.
const SelectorsGroup = "Selectors"

// Event selectors (docs/PROTOCOL.md, "Event selectors"): a plugin gets the
// events and the Synchronize state of what its selectors select, nothing
// else, and is required only for that. Classic plugins cannot declare
// selectors; behind the bridge the operator gives them theirs
// (bridge.WithClassicSelectors, nrid's [[plugin]] selectors).

// podIn returns pod id in namespace ns.
func podIn(id, ns string) *nriv1beta1.PodSandbox {
	p := newPod(id, nil)
	p.Namespace = ns
	return p
}

// eventKey names a lifecycle call by method, pod and container
// ("CreateContainer pod0/keep0"); ok false for Configure, Synchronize and
// Shutdown.
func eventKey(c Call) (string, bool) {
	switch c.Method {
	case "Configure", "Synchronize", "Shutdown":
		return "", false
	}
	key := c.Method
	if r, ok := c.Req.(interface{ GetPod() *nriv1beta1.PodSandbox }); ok {
		key += " " + r.GetPod().GetId()
	}
	if r, ok := c.Req.(interface{ GetContainer() *nriv1beta1.Container }); ok && r.GetContainer() != nil {
		key += "/" + r.GetContainer().GetName()
	}
	return key, true
}

func init() {
	const g = SelectorsGroup
	sel := &nriv1beta1.EventSelector{Namespaces: []string{"team-a"}, ContainerNames: []string{"keep*"}}

	add(Gap, g, "a plugin gets only the events of what its selectors select; pod events ignore container names", Options{}, func(s *S) {
		s.Start("10", "sel", selectors(sel))
		s.Start("20", "all")
		s.lifecycle(podIn("pod0", "team-a"), newCtr("pod0", "keep0"))
		s.lifecycle(podIn("pod1", "team-a"), newCtr("pod1", "drop1"))
		s.lifecycle(podIn("pod2", "team-b"), newCtr("pod2", "keep2"))
		// What 10-sel must have seen: 20-all's events, restricted.
		var want, got []string
		for _, c := range s.Log().Of("20-all") {
			key, ok := eventKey(c)
			if !ok || strings.Contains(key, "pod2") {
				continue
			}
			if i := strings.IndexByte(key, '/'); i < 0 || strings.HasPrefix(key[i+1:], "keep") {
				want = append(want, key)
			}
		}
		for _, c := range s.Log().Of("10-sel") {
			if key, ok := eventKey(c); ok {
				got = append(got, key)
			}
		}
		if len(want) < 10 {
			s.Fatalf("20-all saw too little to compare with: %v", want)
		}
		eq(s, "10-sel's events", got, want)
	})

	add(Gap, g, "Synchronize carries only the selected pods and containers", Options{}, func(s *S) {
		s.Env().SetState(s.T, []*nriv1beta1.PodSandbox{podIn("pod0", "team-a"), podIn("pod1", "team-b")},
			[]*nriv1beta1.Container{newCtr("pod0", "keep0"), newCtr("pod0", "drop0"), newCtr("pod1", "keep1")})
		s.Start("10", "sel", selectors(sel))
		var pods, ctrs []string
		for _, c := range s.Log().Of("10-sel", "Synchronize") {
			r := c.Req.(*nriv1beta1.SynchronizeRequest)
			for _, p := range r.GetPods() {
				pods = append(pods, p.GetId())
			}
			for _, x := range r.GetContainers() {
				ctrs = append(ctrs, x.GetId())
			}
		}
		slices.Sort(pods)
		eq(s, "synchronized pods", pods, []string{"pod0"})
		eq(s, "synchronized containers", ctrs, []string{"keep0"})
	})

	add(Gap, g, "an absent required plugin is required only for the pods its selectors select",
		Options{Validator: validate.Config{RequiredPlugins: []string{"req"}}}, func(s *S) {
			p := s.Start("10", "req", selectors(&nriv1beta1.EventSelector{Namespaces: []string{"team-a"}}))
			s.mustCreate(podIn("pod0", "team-b"), newCtr("pod0", "ctr0"))
			p.Stop()
			s.waitDone(p)
			s.mustCreate(podIn("pod1", "team-b"), newCtr("pod1", "ctr1"))
			_, err := s.create(podIn("pod2", "team-a"), newCtr("pod2", "ctr2"))
			s.failsWith("CreateContainer in team-a without 10-req", err, codes.Unavailable, "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE", "req")
		})

	add(Gap, g, "label selectors use the Kubernetes syntax", Options{}, func(s *S) {
		s.Start("10", "web", selectors(&nriv1beta1.EventSelector{PodLabels: "app in (web, api), tier!=canary, !legacy"}))
		labelled := func(id string, labels map[string]string) *nriv1beta1.PodSandbox {
			p := newPod(id, nil)
			p.Labels = labels
			return p
		}
		for _, p := range []*nriv1beta1.PodSandbox{
			labelled("pod0", map[string]string{"app": "web"}),
			labelled("pod1", map[string]string{"app": "api", "tier": "canary"}),
			labelled("pod2", map[string]string{"app": "db"}),
			labelled("pod3", map[string]string{"app": "api", "legacy": ""}),
			labelled("pod4", map[string]string{"app": "api", "tier": "stable"}),
		} {
			s.runPod(p)
		}
		var got []string
		for _, c := range s.Log().Of("10-web", "RunPodSandbox") {
			got = append(got, c.Req.(*nriv1beta1.RunPodSandboxRequest).GetPod().GetId())
		}
		eq(s, "selected pods", got, []string{"pod0", "pod4"})
	})
}
