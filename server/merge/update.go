package merge

import (
	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// updates merges the container updates and evictions of plugins' responses.
// It is shared by Create, Update and Stop.
type updates struct {
	own ownerTable

	list []*nriv1beta1.ContainerUpdate // merged, first-touch order
	byID map[string]*nriv1beta1.ContainerUpdate

	evictions []*nriv1beta1.ContainerEviction
	evicted   map[string]struct{}

	// CreateContainer: updating the container being created is an error.
	creating   bool
	creatingID string

	// UpdateContainer: updates of the target go to its requested resources.
	hasTarget bool
	targetID  string
	target    *nriv1beta1.LinuxResources
}

// apply merges the updates of one plugin's response. Every update is first
// checked for conflicts as a whole: a conflicting update with
// ignore_failure is dropped whole, one without fails the event. It reports
// whether the UpdateContainer target's resources changed.
func (u *updates) apply(plugin string, in []*nriv1beta1.ContainerUpdate, rec recorder) (targetChanged bool, err error) {
	for _, x := range in {
		if x == nil {
			continue
		}
		id := x.ContainerId
		if u.creating && id == u.creatingID {
			return targetChanged, &SelfUpdateError{Plugin: plugin, ContainerID: id}
		}
		res := x.GetLinux().GetResources()
		if res != nil {
			check := resMerge{mode: resCheck, own: u.own.lookup(id), plugin: plugin, id: id}
			if _, err := check.run(res); err != nil {
				if x.IgnoreFailure {
					continue
				}
				return targetChanged, err
			}
		}
		isTarget := u.hasTarget && id == u.targetID
		var dst *nriv1beta1.LinuxResources
		if isTarget {
			dst = u.target
		} else {
			dst = u.entry(id, x.IgnoreFailure)
		}
		if res == nil {
			continue
		}
		commit := resMerge{mode: resUpdate, table: &u.own, plugin: plugin, id: id, dst: dst, rec: rec}
		changed, err := commit.run(res)
		if err != nil {
			return targetChanged, err // not reached: the check passed
		}
		if isTarget && changed {
			targetChanged = true
		}
	}
	return targetChanged, nil
}

// entry returns the resources of the merged update of container id,
// creating the update on first touch. ignore_failure is ANDed.
func (u *updates) entry(id string, ignore bool) *nriv1beta1.LinuxResources {
	var e *nriv1beta1.ContainerUpdate
	if u.byID != nil {
		e = u.byID[id]
	} else {
		for _, x := range u.list {
			if x.ContainerId == id {
				e = x
				break
			}
		}
	}
	if e != nil {
		e.IgnoreFailure = e.IgnoreFailure && ignore
		return e.Linux.Resources
	}
	e = &nriv1beta1.ContainerUpdate{
		ContainerId:   id,
		Linux:         &nriv1beta1.LinuxContainerUpdate{Resources: &nriv1beta1.LinuxResources{}},
		IgnoreFailure: ignore,
	}
	u.list = append(u.list, e)
	if u.byID != nil {
		u.byID[id] = e
	} else if len(u.list) > linearLimit {
		u.byID = make(map[string]*nriv1beta1.ContainerUpdate, 2*len(u.list))
		for _, x := range u.list {
			u.byID[x.ContainerId] = x
		}
	}
	return e.Linux.Resources
}

// evict collects evictions, one per container: the first reason wins.
func (u *updates) evict(in []*nriv1beta1.ContainerEviction) {
	for _, e := range in {
		if e == nil {
			continue
		}
		id := e.ContainerId
		if u.evicted != nil {
			if _, dup := u.evicted[id]; dup {
				continue
			}
			u.evicted[id] = struct{}{}
		} else {
			dup := false
			for _, x := range u.evictions {
				if x.ContainerId == id {
					dup = true
					break
				}
			}
			if dup {
				continue
			}
		}
		u.evictions = append(u.evictions, e)
		if u.evicted == nil && len(u.evictions) > linearLimit {
			u.evicted = make(map[string]struct{}, 2*len(u.evictions))
			for _, x := range u.evictions {
				u.evicted[x.ContainerId] = struct{}{}
			}
		}
	}
}

// Update merges the UpdateContainer responses of plugins, in dispatch
// order. Updates of the target container change its requested resources,
// which later plugins see; updates of other containers are merged as for
// CreateContainer. An Update is not safe for concurrent use; it keeps
// references to the messages of the responses it applies.
type Update struct {
	req *nriv1beta1.UpdateContainerRequest
	upd updates
}

// NewUpdate prepares the merging of the UpdateContainer responses for req.
// As classic NRI does, it normalizes req.LinuxResources in place (nil
// resources, memory or cpu become empty messages). Call it before encoding
// the request for the first plugin.
func NewUpdate(req *nriv1beta1.UpdateContainerRequest) *Update {
	if req.LinuxResources == nil {
		req.LinuxResources = &nriv1beta1.LinuxResources{}
	}
	if req.LinuxResources.Memory == nil {
		req.LinuxResources.Memory = &nriv1beta1.LinuxMemory{}
	}
	if req.LinuxResources.Cpu == nil {
		req.LinuxResources.Cpu = &nriv1beta1.LinuxCPU{}
	}
	u := &Update{req: req}
	u.upd.hasTarget = true
	u.upd.targetID = req.GetContainer().GetId()
	u.upd.target = req.LinuxResources
	return u
}

// Apply merges the response of plugin (its full name, "NN-name"). An update
// of the target container is written into req.LinuxResources, so that the
// next plugin sees it; changed reports whether it was (the request needs
// re-encoding only then). When changes is not nil, one FieldChange per
// changed field or entry is appended. Errors are *ConflictError; a
// conflicting update with ignore_failure set is dropped whole instead.
func (u *Update) Apply(plugin string, rsp *nriv1beta1.UpdateContainerResponse, changes *[]*nriv1beta1.FieldChange) (changed bool, err error) {
	if rsp == nil {
		return false, nil
	}
	if len(rsp.Update) > 0 {
		if changed, err = u.upd.apply(plugin, rsp.Update, recorder{changes}); err != nil {
			return changed, err
		}
	}
	u.upd.evict(rsp.Evict)
	return changed, nil
}

// Result returns the merged result: LinuxResources, always set, is the
// target's final resources (the requested ones with every plugin's changes;
// it is req.LinuxResources itself), Update the merged updates of other
// containers (one per container, first-touch order) and Evict the
// evictions (one per container, first reason wins). Call it after the last
// Apply.
func (u *Update) Result() *nriv1beta1.AdaptationServiceUpdateContainerResponse {
	return &nriv1beta1.AdaptationServiceUpdateContainerResponse{
		Update:         u.upd.list,
		Evict:          u.upd.evictions,
		LinuxResources: u.req.LinuxResources,
	}
}

// Stop merges the StopContainer responses of plugins, in dispatch order:
// updates of any container (the stopping one included, as in classic NRI)
// and evictions. A Stop is not safe for concurrent use; it keeps references
// to the messages of the responses it applies.
type Stop struct {
	upd updates
}

// NewStop prepares the merging of the StopContainer responses for req. The
// request is not modified.
func NewStop(req *nriv1beta1.StopContainerRequest) *Stop {
	_ = req
	return &Stop{}
}

// Apply merges the response of plugin (its full name, "NN-name"). The
// request is never modified, so changed is always false. When changes is
// not nil, one FieldChange per changed field or entry is appended. Errors
// are *ConflictError; a conflicting update with ignore_failure set is
// dropped whole instead.
func (s *Stop) Apply(plugin string, rsp *nriv1beta1.StopContainerResponse, changes *[]*nriv1beta1.FieldChange) (changed bool, err error) {
	if rsp == nil {
		return false, nil
	}
	if len(rsp.Update) > 0 {
		if _, err := s.upd.apply(plugin, rsp.Update, recorder{changes}); err != nil {
			return false, err
		}
	}
	s.upd.evict(rsp.Evict)
	return false, nil
}

// Result returns the merged updates (one per container, first-touch order)
// and evictions (one per container, first reason wins). PluginErrors is
// left for the caller. Call it after the last Apply.
func (s *Stop) Result() *nriv1beta1.AdaptationServiceStopContainerResponse {
	return &nriv1beta1.AdaptationServiceStopContainerResponse{
		Update: s.upd.list,
		Evict:  s.upd.evictions,
	}
}
