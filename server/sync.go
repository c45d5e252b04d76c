package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// syncOverhead is what a page's fields other than pods and containers can
// take (more, epoch, reason), with a margin.
const syncOverhead = 64

// page is one Synchronize page: entries of the state.
type page struct {
	pods []podEntry
	ctrs []ctrEntry
}

// paginate splits the state into pages whose encoding fits limit bytes,
// computed from the entries' sizes: no oversized message is ever built. An
// entry that alone exceeds the limit is an error.
func paginate(st encodedState, limit int) ([]page, int, error) {
	var (
		pages []page
		cur   page
		size  = syncOverhead
		total int
	)
	add := func(n int, what string, id string) error {
		elem := 1 + protowire.SizeVarint(uint64(n)) + n
		if syncOverhead+elem > limit {
			return fmt.Errorf("%s %s alone encodes to %d bytes, over the plugin's maximum message size of %d", what, clip(id), elem, limit)
		}
		total += elem
		if size+elem > limit {
			pages = append(pages, cur)
			cur, size = page{}, syncOverhead
		}
		size += elem
		return nil
	}
	for _, p := range st.pods {
		if err := add(len(p.raw), "pod", p.id); err != nil {
			return nil, 0, err
		}
		cur.pods = append(cur.pods, p)
	}
	for _, c := range st.ctrs {
		if err := add(len(c.raw), "container", c.id); err != nil {
			return nil, 0, err
		}
		cur.ctrs = append(cur.ctrs, c)
	}
	pages = append(pages, cur)
	return pages, total, nil
}

// Field numbers of SynchronizeRequest.
const (
	fieldSyncPods       = 1
	fieldSyncContainers = 2
	fieldSyncMore       = 3
	fieldSyncEpoch      = 1000
	fieldSyncReason     = 1001
)

// encode writes the page as a SynchronizeRequest, copying the entries'
// encodings: the same bytes MarshalVT makes of the equivalent message
// (fields in number order, defaults left out).
func (pg page) encode(more bool, epoch uint64, reason nriv1beta1.SyncReason) []byte {
	n := 0
	for _, p := range pg.pods {
		n += 1 + protowire.SizeVarint(uint64(len(p.raw))) + len(p.raw)
	}
	for _, c := range pg.ctrs {
		n += 1 + protowire.SizeVarint(uint64(len(c.raw))) + len(c.raw)
	}
	b := make([]byte, 0, n+syncOverhead)
	for _, p := range pg.pods {
		b = protowire.AppendTag(b, fieldSyncPods, protowire.BytesType)
		b = protowire.AppendBytes(b, p.raw)
	}
	for _, c := range pg.ctrs {
		b = protowire.AppendTag(b, fieldSyncContainers, protowire.BytesType)
		b = protowire.AppendBytes(b, c.raw)
	}
	if more {
		b = protowire.AppendTag(b, fieldSyncMore, protowire.VarintType)
		b = protowire.AppendVarint(b, 1)
	}
	if epoch != 0 {
		b = protowire.AppendTag(b, fieldSyncEpoch, protowire.VarintType)
		b = protowire.AppendVarint(b, epoch)
	}
	if reason != 0 {
		b = protowire.AppendTag(b, fieldSyncReason, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(int64(reason)))
	}
	return b
}

// request decodes the page into a SynchronizeRequest, for an in-process
// plugin.
func (pg page) request(more bool, epoch uint64, reason nriv1beta1.SyncReason) *nriv1beta1.SynchronizeRequest {
	pods, ctrs := encodedState(pg).decode()
	return &nriv1beta1.SynchronizeRequest{Pods: pods, Containers: ctrs, More: more, Epoch: epoch, Reason: reason}
}

// synchronize hands the plugin the state in pages within its
// synchronization budget, and returns the updates and evictions it asked
// for in its reply to the last page. A remote plugin's pages are copied
// from the stored encodings; an in-process plugin's are decoded.
func (s *Server) synchronize(ctx context.Context, p *plugin, st encodedState,
	epoch uint64, reason nriv1beta1.SyncReason) ([]*nriv1beta1.ContainerUpdate, []*nriv1beta1.ContainerEviction, error) {
	start := time.Now()
	st = selectEncoded(p, st)
	pages, total, err := paginate(st, p.maxMsg)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeouts.sync)
	defer cancel()
	var last *nriv1beta1.SynchronizeResponse
	// A remote plugin's next page is written while it decodes the current
	// one: the pages still go one at a time, each after the reply to the
	// previous. (The channel holds the one page written ahead, so a failed
	// call leaves no goroutine behind.)
	ahead := make(chan []byte, 1)
	writeAhead := func(i int) {
		if p.c.remote() && i < len(pages) {
			go func() { ahead <- pages[i].encode(i < len(pages)-1, epoch, reason) }()
		}
	}
	writeAhead(0)
	for i, pg := range pages {
		more := i < len(pages)-1
		var (
			req = &nriv1beta1.SynchronizeRequest{}
			raw []byte
		)
		if p.c.remote() {
			raw = <-ahead
			writeAhead(i + 1)
		} else {
			req = pg.request(more, epoch, reason)
		}
		r, err := call(ctx, p, rpcSynchronize, p.timeouts.sync, req, raw)
		if err != nil {
			return nil, nil, fmt.Errorf("page %d of %d: %w", i+1, len(pages), err)
		}
		if more && (!r.GetMore() || len(r.GetUpdate()) > 0 || len(r.GetEvict()) > 0) {
			return nil, nil, status.Errorf(codes.FailedPrecondition,
				"plugin does not handle split synchronization: its reply to page %d of %d must echo more=true and carry no updates",
				i+1, len(pages))
		}
		last = r
	}
	s.opts.metrics.Synchronized(p.full, len(st.pods)+len(st.ctrs), total, time.Since(start))
	return last.GetUpdate(), last.GetEvict(), nil
}

// beginResync starts resynchronizing every plugin to a new runtime state,
// once the attach's state took effect (attach.go), so that events wait
// until each has caught up (once: plugin.wait).
// A ready plugin gets a closed gate and is returned, to be resynchronized by
// the caller. A plugin that is synchronizing already (a registrant after its
// cut, or a plugin still resynchronizing to an earlier attach) is marked to
// catch up again when that ends: its snapshot predates this state, and
// skipping it would leave it with the old one for good.
func (s *Server) beginResync(gonePods []*nriv1beta1.PodSandbox, goneCtrs []*nriv1beta1.Container) []*plugin {
	var out []*plugin
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sl := range s.slots {
		sl.mu.Lock()
		for _, p := range []*plugin{sl.current, sl.pending} {
			if p == nil || p.isClosed() || p.retiring.Load() {
				continue
			}
			if p.catchUp.syncing {
				p.catchUp.again = true
				p.catchUp.gonePods = append(p.catchUp.gonePods, gonePods...)
				p.catchUp.goneCtrs = append(p.catchUp.goneCtrs, goneCtrs...)
				continue
			}
			if p == sl.current && p.state() == nriv1beta1.PluginState_PLUGIN_STATE_READY {
				p.catchUp.syncing = true
				p.catchUp.gonePods, p.catchUp.goneCtrs = gonePods, goneCtrs
				if p.caps.GetResync() {
					p.awaitSnapshot()
				}
				p.setState(nriv1beta1.PluginState_PLUGIN_STATE_SYNCHRONIZING)
				p.ready.Store(newGate())
				out = append(out, p)
			}
		}
		sl.mu.Unlock()
	}
	return out
}

// catchUpWork is what a synchronizing plugin must still catch up on: the
// runtime attached again (with what vanished, for plugins without resync),
// and or the plugin asked for a resync (status.go).
type catchUpWork struct {
	gonePods  []*nriv1beta1.PodSandbox
	goneCtrs  []*nriv1beta1.Container
	attached  bool
	requested bool
	// Events it missed meanwhile (missed.go).
	missedResync  bool
	missed        []missedEvent
	missedDropped int
}

// takeCatchUp returns what a synchronizing plugin must still catch up on
// (ok false: nothing, and then done ran under the same lock, so that no
// attach or resync request can slip between the check and done).
func (s *Server) takeCatchUp(p *plugin, done func()) (w catchUpWork, ok bool) {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	requested := p.status.resync.requested && !s.deferResyncLocked(p)
	cu := &p.catchUp
	if !cu.again && !requested && !cu.missedResync && len(cu.missed) == 0 && cu.missedDropped == 0 {
		cu.syncing = false
		done()
		return catchUpWork{}, false
	}
	w = catchUpWork{gonePods: cu.gonePods, goneCtrs: cu.goneCtrs, attached: cu.again, requested: requested,
		missedResync: cu.missedResync, missed: cu.missed, missedDropped: cu.missedDropped}
	if w.missedResync {
		p.awaitSnapshot()
	}
	cu.again, cu.gonePods, cu.goneCtrs = false, nil, nil
	cu.missedResync, cu.missed, cu.missedDropped = false, nil, 0
	return w, true
}

// resync brings an already registered plugin up to a new runtime state, and
// again for each attach that came while it did; then it opens the plugin's
// gate.
func (s *Server) resync(p *plugin) {
	s.syncMu.Lock()
	w := catchUpWork{gonePods: p.catchUp.gonePods, goneCtrs: p.catchUp.goneCtrs, attached: true}
	p.catchUp.gonePods, p.catchUp.goneCtrs = nil, nil
	s.syncMu.Unlock()
	s.catchUp(p, w)
}

// catchUp runs w and whatever came meanwhile (attaches, resync requests)
// for a registered plugin whose gate is closed, then opens its gate. A
// failure ends the plugin's registration.
func (s *Server) catchUp(p *plugin, w catchUpWork) {
	for {
		if err := s.resyncOnce(p, w); err != nil {
			s.syncMu.Lock()
			p.catchUp.syncing = false
			s.syncMu.Unlock()
			p.ready.Load().settle(false)
			p.close(fmt.Errorf("resynchronization failed: %w", err))
			return
		}
		var again bool
		w, again = s.takeCatchUp(p, func() {
			wasReady := p.state() == nriv1beta1.PluginState_PLUGIN_STATE_READY
			p.setState(nriv1beta1.PluginState_PLUGIN_STATE_READY)
			p.ready.Load().settle(true)
			if !wasReady {
				// Ready for events again: a watcher that saw it
				// synchronizing learns it (PluginsChanged).
				s.pluginsChanged()
			}
		})
		if !again {
			return
		}
	}
}

// resyncOnce tells a plugin about one new runtime state: a repeated
// Synchronize with a higher epoch when it declared resync support, else
// synthesized Stop/Remove events for what vanished; then, when the plugin
// asked for a resync that this did not serve, a Synchronize with reason
// SYNC_REASON_PLUGIN_REQUESTED.
func (s *Server) resyncOnce(p *plugin, w catchUpWork) error {
	ctx := context.Background()
	if w.attached {
		if !p.caps.GetResync() {
			if err := s.synthesizeTeardown(ctx, p, w.gonePods, w.goneCtrs); err != nil {
				return err
			}
		} else {
			if err := s.resyncWith(ctx, p, nriv1beta1.SyncReason_SYNC_REASON_RUNTIME_RESTARTED); err != nil {
				return err
			}
			w.missedResync = false // that state has what it missed
		}
	}
	if w.requested && s.resyncPending(p) {
		if err := s.resyncWith(ctx, p, nriv1beta1.SyncReason_SYNC_REASON_PLUGIN_REQUESTED); err != nil {
			return err
		}
		w.missedResync = false // that state has what it missed
	}
	if w.missedResync {
		s.log.Info("synchronizing a plugin again with the events it missed while synchronizing", "plugin", p.full)
		if err := s.resyncWith(ctx, p, nriv1beta1.SyncReason_SYNC_REASON_MISSED_EVENTS); err != nil {
			return err
		}
	}
	return s.replayMissed(ctx, p, w.missed, w.missedDropped)
}

// resyncWith sends p the current state in a Synchronize of the next epoch
// (the one a pending resync request was promised, status.go).
func (s *Server) resyncWith(ctx context.Context, p *plugin, reason nriv1beta1.SyncReason) error {
	epoch := s.nextEpoch(p)
	p.tookSnapshot()
	updates, evictions, err := s.synchronize(ctx, p, s.state.encoded(), epoch, reason)
	if err != nil {
		return err
	}
	p.epoch.Store(epoch)
	s.applyAsync(p, updates, evictions)
	return nil
}

// teardown sends a synthesized teardown event to p if it subscribed to
// it. Only an availability failure is an error: errors are ignored as for
// any teardown event.
func teardown[Req, Rsp proto.Message](ctx context.Context, p *plugin, ev event[Req, Rsp], req Req) error {
	if p.mask&ev.mask() == 0 {
		return nil
	}
	_, err := call(ctx, p, ev.rpc, p.timeouts.forEvent(ev.event), req, nil)
	if o, avail := classify(err); err != nil && avail {
		return fmt.Errorf("%s: %s: %w", ev.name, o, err)
	}
	return nil
}

// synthesizeTeardown tells a plugin without resync support about the
// containers and pods that vanished, with the teardown events it
// subscribed to. Their errors are ignored, as for any teardown event.
func (s *Server) synthesizeTeardown(ctx context.Context, p *plugin, pods []*nriv1beta1.PodSandbox, ctrs []*nriv1beta1.Container) error {
	pods, ctrs = selectState(p, pods, ctrs)
	podOf := map[string]*nriv1beta1.PodSandbox{}
	for _, pod := range pods {
		podOf[pod.GetId()] = pod
	}
	for _, c := range ctrs {
		pod := podOf[c.GetPodSandboxId()]
		if pod == nil {
			pod = s.state.pod(c.GetPodSandboxId())
		}
		if pod == nil {
			pod = &nriv1beta1.PodSandbox{Id: c.GetPodSandboxId()}
		}
		if err := errors.Join(
			teardown(ctx, p, evStopContainer, &nriv1beta1.StopContainerRequest{Pod: pod, Container: c}),
			teardown(ctx, p, evRemoveContainer, &nriv1beta1.RemoveContainerRequest{Pod: pod, Container: c}),
		); err != nil {
			return err
		}
	}
	for _, pod := range pods {
		if err := errors.Join(
			teardown(ctx, p, evStopPodSandbox, &nriv1beta1.StopPodSandboxRequest{Pod: pod}),
			teardown(ctx, p, evRemovePodSandbox, &nriv1beta1.RemovePodSandboxRequest{Pod: pod}),
		); err != nil {
			return err
		}
	}
	return nil
}

// applyAsync relays updates and evictions a plugin asked for outside of an
// event (at synchronization) to the runtime, without blocking the caller.
func (s *Server) applyAsync(p *plugin, updates []*nriv1beta1.ContainerUpdate, evictions []*nriv1beta1.ContainerEviction) {
	if len(updates) == 0 && len(evictions) == 0 {
		return
	}
	if err := s.authorizeUpdates(p, &nriv1beta1.SynchronizeResponse{Update: updates, Evict: evictions}); err != nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.requestTimeout)
		defer cancel()
		if _, _, err := s.updateFor(ctx, p, updates, evictions); err != nil {
			s.log.Warn("applying synchronization updates", "plugin", p.full, "error", err)
		}
	}()
}

// UpdateContainers applies updates and evictions a plugin asked for outside
// of an event. The updates of each pod are applied under that pod's lock,
// so they keep their place in the pod's event order.
func (s *Server) UpdateContainers(ctx context.Context, plugin string, updates []*nriv1beta1.ContainerUpdate,
	evictions []*nriv1beta1.ContainerEviction) ([]*nriv1beta1.ContainerUpdate, []*nriv1beta1.ContainerEviction, error) {
	rt, _ := s.runtime()
	if rt == nil {
		return nil, nil, errNoRuntime
	}
	byPod := map[string]*struct {
		u []*nriv1beta1.ContainerUpdate
		e []*nriv1beta1.ContainerEviction
	}{}
	var order []string
	group := func(id string) *struct {
		u []*nriv1beta1.ContainerUpdate
		e []*nriv1beta1.ContainerEviction
	} {
		pod, ok := s.state.containerPod(id)
		if !ok {
			pod = unknownContainer
		}
		g := byPod[pod]
		if g == nil {
			g = &struct {
				u []*nriv1beta1.ContainerUpdate
				e []*nriv1beta1.ContainerEviction
			}{}
			byPod[pod] = g
			order = append(order, pod)
		}
		return g
	}
	for i, u := range updates {
		if u.GetContainerId() == "" {
			return nil, nil, invalid(fmt.Sprintf("update[%d].container_id", i), "must not be empty")
		}
		g := group(u.GetContainerId())
		g.u = append(g.u, u)
	}
	for i, e := range evictions {
		if e.GetContainerId() == "" {
			return nil, nil, invalid(fmt.Sprintf("evict[%d].container_id", i), "must not be empty")
		}
		g := group(e.GetContainerId())
		g.e = append(g.e, e)
	}
	var (
		failed   []*nriv1beta1.ContainerUpdate
		failedEv []*nriv1beta1.ContainerEviction
	)
	for _, pod := range order {
		g := byPod[pod]
		if pod == unknownContainer {
			// Containers nrid does not know (never created, or removed):
			// nothing to ask the runtime; they failed, as classic NRI
			// reports them.
			failed = append(failed, g.u...)
			failedEv = append(failedEv, g.e...)
			continue
		}
		unlock := s.pods.lock(pod)
		f, fe, err := rt.UpdateContainers(ctx, plugin, g.u, g.e)
		if err == nil {
			s.state.applyUpdates(succeeded(g.u, f))
		}
		unlock()
		if err != nil {
			return nil, nil, status.Errorf(codeOf(err, codes.Internal), "runtime failed to apply updates: %v", err)
		}
		failed = append(failed, f...)
		failedEv = append(failedEv, fe...)
	}
	return failed, failedEv, nil
}

// unknownContainer groups the updates and evictions of containers nrid
// does not know (no pod id has a NUL byte).
const unknownContainer = "\x00unknown"

// succeeded returns the updates not listed as failed.
func succeeded(all, failed []*nriv1beta1.ContainerUpdate) []*nriv1beta1.ContainerUpdate {
	if len(failed) == 0 {
		return all
	}
	bad := map[string]bool{}
	for _, f := range failed {
		bad[f.GetContainerId()] = true
	}
	var out []*nriv1beta1.ContainerUpdate
	for _, u := range all {
		if !bad[u.GetContainerId()] {
			out = append(out, u)
		}
	}
	return out
}
