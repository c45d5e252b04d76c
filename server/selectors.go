package server

import (
	"context"
	"errors"
	"slices"
	"sync"

	"google.golang.org/grpc/codes"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/selector"
)

// Event selectors (RegisterPluginRequest.selectors, package selector).
//
// A plugin's selectors are compiled once at registration (a refusal names
// the field: REGISTRATION_REFUSAL_INVALID_SELECTORS) and matched against
// each event's pod, and container for a container event, in the select
// stage of the dispatch pipeline (flight.takes): a plugin whose selectors
// exclude the event is not called, not waited for (readiness, registration
// cut), not given a share of the caller's budget and not checked as
// required. Its Synchronize pages, and the teardown synthesized for it after
// a runtime restart, carry only what it selects. Unsolicited updates and
// evictions it asks for containers outside its selectors are refused, each
// reported failed.
//
// A required plugin that is absent is required only for what its selectors
// select, when they are known: those it registered with last in this
// process, or those RememberSelectors was given (nrid's state across
// restarts). Unknown selectors mean everything.

// FilterMetrics is implemented by a Metrics that also counts the events a
// plugin's selectors filtered out. It is optional: a Metrics without it
// counts nothing for them (AdminService still does).
type FilterMetrics interface {
	// Filtered records one event the plugin subscribed to but was not
	// given because its selectors exclude the event's pod or container.
	Filtered(plugin string, event nriv1beta1.Event)
}

// compileSelectors compiles a registration's selectors; an invalid one is
// refused with the field path and the rule.
func compileSelectors(sels []*nriv1beta1.EventSelector) (*selector.Set, error) {
	set, err := selector.Compile(sels)
	if err != nil {
		var se *selector.Error
		field := "selectors"
		if errors.As(err, &se) {
			field = se.Field
		}
		return nil, refusal(codes.InvalidArgument, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_SELECTORS,
			field, "%s", err.Error())
	}
	return set, nil
}

// selectorsFor compiles the selectors p registers with: its own, or when
// it has none the operator's (PluginPolicy.Selectors).
func (s *Server) selectorsFor(p *plugin, own []*nriv1beta1.EventSelector) (*selector.Set, error) {
	set, err := compileSelectors(own)
	if err != nil || !set.Empty() {
		if pol := s.pluginPolicy(p.identity, p.full); err == nil && pol != nil && len(pol.Selectors) > 0 {
			s.log.Info("plugin registers with selectors of its own; the operator's for it do not apply", "plugin", p.full)
		}
		return set, err
	}
	pol := s.pluginPolicy(p.identity, p.full)
	if pol == nil || len(pol.Selectors) == 0 {
		return set, nil
	}
	if set, err = selector.Compile(pol.Selectors); err != nil {
		return nil, refusal(codes.FailedPrecondition, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_SELECTORS,
			"", "the operator's selectors for %s are invalid: %v", p.full, err)
	}
	return set, nil
}

// takes reports whether p receives an event of mask in this flight: it
// subscribed to the event, and its selectors select the event's pod (a pod
// event) or container (a container event).
func (fl *flight) takes(p *plugin, mask uint32) bool {
	return p.mask&mask != 0 && fl.selects(p.sel)
}

// selects reports whether set selects the flight's pod or container. A
// flight without a pod (none today) is selected by everything.
func (fl *flight) selects(set *selector.Set) bool {
	if set.Empty() || fl.pod == nil {
		return true
	}
	return set.Match(fl.pod, fl.ctr)
}

// countFiltered counts an event a plugin of sl subscribed to but was not
// given because of its selectors (after instanceFor found none that takes
// it).
func (s *Server) countFiltered(sl *slot, ev *eventInfo, fl *flight) {
	cur, pend := sl.instances(fl.gen)
	p := pend
	if p == nil || p.mask&ev.mask() == 0 {
		p = cur
	}
	if p == nil || p.mask&ev.mask() == 0 {
		return // not subscribed: not filtered
	}
	p.counters.filtered.Add(1)
	if m, ok := s.opts.metrics.(FilterMetrics); ok {
		m.Filtered(p.full, ev.event)
	}
}

// selectState keeps the pods and containers of a Synchronize that p's
// selectors select. The slices are not modified.
func selectState(p *plugin, pods []*nriv1beta1.PodSandbox, ctrs []*nriv1beta1.Container) ([]*nriv1beta1.PodSandbox, []*nriv1beta1.Container) {
	if p.sel.Empty() {
		return pods, ctrs
	}
	podOf := make(map[string]*nriv1beta1.PodSandbox, len(pods))
	var keptPods []*nriv1beta1.PodSandbox
	for _, pod := range pods {
		podOf[pod.GetId()] = pod
		if p.sel.MatchPod(pod) {
			keptPods = append(keptPods, pod)
		}
	}
	var keptCtrs []*nriv1beta1.Container
	for _, c := range ctrs {
		pod := podOf[c.GetPodSandboxId()]
		if pod == nil {
			pod = &nriv1beta1.PodSandbox{Id: c.GetPodSandboxId()}
		}
		if p.sel.MatchContainer(pod, c) {
			keptCtrs = append(keptCtrs, c)
		}
	}
	return keptPods, keptCtrs
}

// selectEncoded keeps the entries of a Synchronize that p's selectors
// select. Pods are decoded to match (their namespace, labels and runtime
// handler); containers are matched by the name in their index, which is
// all of a container that selectors read (selector.Set.MatchContainer).
// st's slices are not modified.
func selectEncoded(p *plugin, st encodedState) encodedState {
	if p.sel.Empty() {
		return st
	}
	podOf := make(map[string]*nriv1beta1.PodSandbox, len(st.pods))
	var out encodedState
	for _, e := range st.pods {
		pod := e.decode()
		podOf[e.id] = pod
		if p.sel.MatchPod(pod) {
			out.pods = append(out.pods, e)
		}
	}
	for _, e := range st.ctrs {
		pod := podOf[e.pod]
		if pod == nil {
			pod = &nriv1beta1.PodSandbox{Id: e.pod}
		}
		if p.sel.MatchContainer(pod, &nriv1beta1.Container{Id: e.id, PodSandboxId: e.pod, Name: e.name, State: e.st}) {
			out.ctrs = append(out.ctrs, e)
		}
	}
	return out
}

// outsideSelectors splits unsolicited updates and evictions of p into
// those it may ask for and those that target containers its selectors do
// not select (known containers only: unknown ones fail later anyway).
func (s *Server) outsideSelectors(p *plugin, updates []*nriv1beta1.ContainerUpdate, evictions []*nriv1beta1.ContainerEviction) (
	okU, badU []*nriv1beta1.ContainerUpdate, okE, badE []*nriv1beta1.ContainerEviction) {
	if p.sel.Empty() {
		return updates, nil, evictions, nil
	}
	selected := func(id string) bool {
		c := s.state.container(id)
		if c == nil {
			return true
		}
		pod := s.state.pod(c.GetPodSandboxId())
		if pod == nil {
			pod = &nriv1beta1.PodSandbox{Id: c.GetPodSandboxId()}
		}
		return p.sel.MatchContainer(pod, c)
	}
	for _, u := range updates {
		if selected(u.GetContainerId()) {
			okU = append(okU, u)
		} else {
			badU = append(badU, u)
		}
	}
	for _, e := range evictions {
		if selected(e.GetContainerId()) {
			okE = append(okE, e)
		} else {
			badE = append(badE, e)
		}
	}
	return okU, badU, okE, badE
}

// updateFor applies unsolicited updates and evictions of p: those for
// containers outside its selectors are not applied and are reported failed,
// with the runtime's failures.
func (s *Server) updateFor(ctx context.Context, p *plugin, updates []*nriv1beta1.ContainerUpdate,
	evictions []*nriv1beta1.ContainerEviction) ([]*nriv1beta1.ContainerUpdate, []*nriv1beta1.ContainerEviction, error) {
	okU, badU, okE, badE := s.outsideSelectors(p, updates, evictions)
	if len(badU)+len(badE) > 0 {
		s.log.Warn("plugin updates outside its selectors refused", "plugin", p.full, "updates", len(badU), "evictions", len(badE))
	}
	if len(okU)+len(okE) == 0 && len(badU)+len(badE) > 0 {
		return badU, badE, nil
	}
	failed, failedEv, err := s.UpdateContainers(ctx, p.full, okU, okE)
	if err != nil {
		return nil, nil, err
	}
	return append(failed, badU...), append(failedEv, badE...), nil
}

// knownSelectors remembers the selectors of plugins by full name, so that
// an absent required plugin is required only for what it selects. The zero
// value is ready to use.
type knownSelectors struct {
	mu  sync.Mutex
	by  map[string]*selector.Set // "NN-name" → selectors; absent: unknown (everything)
	ord []string                 // insertion order, to bound the map
}

// maxKnownSelectors bounds how many plugins' selectors are remembered.
const maxKnownSelectors = 1024

func (k *knownSelectors) set(full string, set *selector.Set) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.by == nil {
		k.by = map[string]*selector.Set{}
	}
	if _, ok := k.by[full]; !ok {
		if len(k.ord) >= maxKnownSelectors {
			delete(k.by, k.ord[0])
			k.ord = k.ord[1:]
		}
		k.ord = append(k.ord, full)
	}
	k.by[full] = set
}

// lookup returns the known selectors of the plugins name refers to ("NN-name"
// or "name"); ok false: none known.
func (k *knownSelectors) lookup(name string) (sets []*selector.Set, ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if set, ok := k.by[name]; ok {
		return []*selector.Set{set}, true
	}
	for full, set := range k.by {
		if len(full) > 3 && full[3:] == name {
			sets = append(sets, set)
		}
	}
	return sets, len(sets) > 0
}

// all returns a copy of the map.
func (k *knownSelectors) all() map[string]*selector.Set {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make(map[string]*selector.Set, len(k.by))
	for n, s := range k.by {
		out[n] = s
	}
	return out
}

// RememberSelectors records the selectors of the plugin full ("NN-name")
// as if it had registered with them: while it is absent, a requirement for
// it (the operator's required plugins, RequireUntilRegistered, HoldEvents,
// the required-plugins annotation) applies only to what they select. nrid
// calls it after a restart with the selectors its required plugins had.
// Its next registration replaces them.
func (s *Server) RememberSelectors(full string, sels []*nriv1beta1.EventSelector) error {
	if err := checkIdentity(full[min(3, len(full)):], full[:min(2, len(full))]); err != nil || len(full) < 4 || full[2] != '-' {
		return errors.New("RememberSelectors: " + clip(full) + " is not a plugin's full name (NN-name)")
	}
	set, err := selector.Compile(sels)
	if err != nil {
		return err
	}
	s.knownSel.set(full, set)
	return nil
}

// absentSelects reports whether the absent plugin name would select the
// flight's event: true unless selectors are known for it and none of them
// does.
func (s *Server) absentSelects(name string, fl *flight) bool {
	sets, ok := s.knownSel.lookup(name)
	if !ok {
		return true
	}
	return slices.ContainsFunc(sets, fl.selects)
}

// excusedAbsent returns the plugins that are not registered and whose known
// selectors exclude the flight's container: a requirement for them does not
// apply to it (the default validator counts them as present).
func (s *Server) excusedAbsent(fl *flight, registered []*nriv1beta1.PluginInstance) []*nriv1beta1.PluginInstance {
	var out []*nriv1beta1.PluginInstance
	for full, set := range s.knownSel.all() {
		if slices.ContainsFunc(registered, func(p *nriv1beta1.PluginInstance) bool { return p.GetIndex()+"-"+p.GetName() == full }) {
			continue
		}
		if !fl.selects(set) {
			out = append(out, &nriv1beta1.PluginInstance{Index: full[:2], Name: full[3:]})
		}
	}
	return out
}
