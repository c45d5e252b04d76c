package server

import (
	"context"
	"fmt"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// Events a plugin misses while it synchronizes.
//
// A plugin that is synchronizing (after its registration cut, or while it
// resynchronizes to a new runtime state) is waited for by the events it
// takes, once: the first event whose wait for it times out marks its gate,
// and later events go on without it until it is synchronized (plugin.wait).
// An event that went on without it changed the state after the plugin's
// snapshot was taken, or will: the plugin's view would be wrong from then
// on. So every such event leaves a mark, and when the event's change has
// landed in the state, the mark is checked against the plugin's
// synchronization sequence (syncSeq): if its snapshot (the one it is being
// synchronized with, or a later one) was taken before the change landed,
// the plugin owes a catch-up, which it gets right after its current
// Synchronize returns and before any further event reaches it:
//
//   - a plugin that declared resync gets a Synchronize of the next epoch,
//     reason SYNC_REASON_MISSED_EVENTS, with the state as it is then;
//   - a plugin without resync gets the events it missed, in their order,
//     each as the notification of what happened: teardown and Post* events
//     as they were, a creating event as its Post* event (PostCreateContainer
//     for CreateContainer; its adjustment could not be applied any more),
//     RunPodSandbox as itself with its answer ignored; only the events it
//     subscribed to.
//
// The same holds for an event a plugin with resync had been called for
// before its new snapshot was taken (an attach does not wait for events in
// flight) whose change landed only afterwards: the snapshot lacks what the
// plugin saw.
//
// syncSeq counts a plugin's snapshots twice: odd while the plugin awaits a
// snapshot (its gate is closed and the snapshot not yet taken), even once it
// is taken. A change that lands while the sequence is still at the odd value
// an event left is in the coming snapshot; any later value means the
// snapshot may predate it.

// MissedMetrics is implemented by a Metrics that also counts the events
// synchronizing plugins missed (told to them once they are synchronized: a
// Synchronize with reason SYNC_REASON_MISSED_EVENTS, or the events as
// notifications). The server uses it when its Metrics has it.
type MissedMetrics interface {
	// MissedEvent counts one event plugin missed while it synchronized.
	MissedEvent(plugin string, event nriv1beta1.Event)
}

// maxMissed bounds the missed events kept for one plugin without resync;
// past it the rest are counted and dropped (and logged).
const maxMissed = 4096

// missedEvent is an event a plugin without resync missed.
type missedEvent struct {
	ev  *eventInfo
	pod *nriv1beta1.PodSandbox
	ctr *nriv1beta1.Container
}

// mark is what an event leaves for a plugin it went on without (skipped)
// or called (a plugin with resync): the plugin's syncSeq at that moment.
type mark struct {
	p       *plugin
	seq     uint64
	skipped bool
}

// snapshots returns how many snapshots a syncSeq value has seen taken.
func snapshots(seq uint64) uint64 { return seq / 2 }

// awaitSnapshot marks p as awaiting a snapshot (syncSeq odd). Called where
// its gate closes for a resynchronization.
func (p *plugin) awaitSnapshot() {
	for {
		v := p.syncSeq.Load()
		if v%2 == 1 || p.syncSeq.CompareAndSwap(v, v+1) {
			return
		}
	}
}

// tookSnapshot records that p's snapshot is about to be read: called
// before the state is read, so that a change landing after this reads a
// later sequence.
func (p *plugin) tookSnapshot() {
	for {
		v := p.syncSeq.Load()
		if p.syncSeq.CompareAndSwap(v, (v|1)+1) {
			return
		}
	}
}

// markSkipped records that the event in flight fl went on without p
// because p was synchronizing.
func (fl *flight) markSkipped(p *plugin, ev *eventInfo) {
	if ev.event == nriv1beta1.Event_EVENT_VALIDATE_CONTAINER_ADJUSTMENT {
		return
	}
	fl.marks = append(fl.marks, mark{p: p, seq: p.syncSeq.Load(), skipped: true})
}

// markCalled records that fl called p, when p may be resynchronized before
// fl's change lands.
func (fl *flight) markCalled(p *plugin, ev *eventInfo) {
	if !p.caps.GetResync() || ev.event == nriv1beta1.Event_EVENT_VALIDATE_CONTAINER_ADJUSTMENT {
		return
	}
	fl.marks = append(fl.marks, mark{p: p, seq: p.syncSeq.Load()})
}

// landed checks fl's marks once its change is in the state (applied:
// the event changed the state; a failed creating event changed nothing),
// and gives each plugin that missed it a catch-up.
func (s *Server) landed(fl *flight, ev *eventInfo, applied bool) {
	if !applied {
		return
	}
	for _, m := range fl.marks {
		now := m.p.syncSeq.Load()
		owe := snapshots(now) > snapshots(m.seq)
		if m.skipped && m.seq%2 == 0 {
			owe = true // skipped after its snapshot was taken
		}
		if owe {
			s.owe(m.p, ev, fl.pod, fl.ctr)
		}
	}
}

// owe gives p a catch-up for ev: recorded for its synchronization under
// way, or, when that already ended, a catch-up of its own, its gate closed
// meanwhile (events of the pod still wait behind ev: ev holds the pod's
// lock, so nothing of the pod reaches p before it).
func (s *Server) owe(p *plugin, ev *eventInfo, pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container) {
	if p.isClosed() || p.retiring.Load() {
		return
	}
	if mm, ok := s.opts.metrics.(MissedMetrics); ok {
		mm.MissedEvent(p.full, ev.event)
	}
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if p.caps.GetResync() {
		p.catchUp.missedResync = true
	} else if len(p.catchUp.missed) < maxMissed {
		p.catchUp.missed = append(p.catchUp.missed, missedEvent{ev: ev, pod: pod, ctr: ctr})
	} else {
		p.catchUp.missedDropped++
	}
	if p.catchUp.syncing {
		return
	}
	// Its synchronization ended before ev's change landed.
	p.catchUp.syncing = true
	if p.caps.GetResync() {
		p.awaitSnapshot()
	}
	p.ready.Store(newGate())
	go s.catchUp(p, catchUpWork{})
}

// replayMissed tells a plugin without resync the events it missed (see
// the comment at the top of this file). Only an availability failure is an
// error, as for synthesized teardown events.
func (s *Server) replayMissed(ctx context.Context, p *plugin, missed []missedEvent, dropped int) error {
	if dropped > 0 {
		s.log.Warn("plugin missed more events while synchronizing than are kept; the rest are not told", "plugin", p.full,
			"kept", len(missed), "dropped", dropped)
	}
	if len(missed) > 0 {
		s.log.Info("telling a plugin the events it missed while synchronizing", "plugin", p.full, "events", len(missed))
	}
	for _, m := range missed {
		pod, ctr := m.pod, m.ctr
		var err error
		switch m.ev.event {
		case nriv1beta1.Event_EVENT_RUN_POD_SANDBOX:
			err = teardown(ctx, p, evRunPodSandbox, &nriv1beta1.RunPodSandboxRequest{Pod: pod})
		case nriv1beta1.Event_EVENT_UPDATE_POD_SANDBOX, nriv1beta1.Event_EVENT_POST_UPDATE_POD_SANDBOX:
			err = teardown(ctx, p, evPostUpdatePodSandbox, &nriv1beta1.PostUpdatePodSandboxRequest{Pod: pod})
		case nriv1beta1.Event_EVENT_STOP_POD_SANDBOX:
			err = teardown(ctx, p, evStopPodSandbox, &nriv1beta1.StopPodSandboxRequest{Pod: pod})
		case nriv1beta1.Event_EVENT_REMOVE_POD_SANDBOX:
			err = teardown(ctx, p, evRemovePodSandbox, &nriv1beta1.RemovePodSandboxRequest{Pod: pod})
		case nriv1beta1.Event_EVENT_CREATE_CONTAINER, nriv1beta1.Event_EVENT_POST_CREATE_CONTAINER:
			err = teardown(ctx, p, evPostCreateContainer, &nriv1beta1.PostCreateContainerRequest{Pod: pod, Container: ctr})
		case nriv1beta1.Event_EVENT_START_CONTAINER, nriv1beta1.Event_EVENT_POST_START_CONTAINER:
			err = teardown(ctx, p, evPostStartContainer, &nriv1beta1.PostStartContainerRequest{Pod: pod, Container: ctr})
		case nriv1beta1.Event_EVENT_UPDATE_CONTAINER, nriv1beta1.Event_EVENT_POST_UPDATE_CONTAINER:
			err = teardown(ctx, p, evPostUpdateContainer, &nriv1beta1.PostUpdateContainerRequest{Pod: pod, Container: ctr})
		case nriv1beta1.Event_EVENT_STOP_CONTAINER:
			err = teardown(ctx, p, evStopContainer, &nriv1beta1.StopContainerRequest{Pod: pod, Container: ctr})
		case nriv1beta1.Event_EVENT_REMOVE_CONTAINER:
			err = teardown(ctx, p, evRemoveContainer, &nriv1beta1.RemoveContainerRequest{Pod: pod, Container: ctr})
		}
		if err != nil {
			return fmt.Errorf("telling a missed %s: %w", m.ev.name, err)
		}
	}
	return nil
}
