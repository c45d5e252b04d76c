package server

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// A runtime attach (SetRuntime, SetRuntimeEncoded, AdaptationService's
// Attach) replaces the server's state with the runtime's snapshot, and
// every registered plugin then learns the new state (DESIGN §5.9). It is
// not an exclusive step: events of every pod go on while it happens, and
// it never waits for an event in flight, so a plugin hanging in one pod's
// call holds up neither the attach nor any other pod.
//
// What keeps it consistent:
//   - Nothing that happened during the attach is erased. From the moment
//     the snapshot is asked for (for SetRuntime: the call), every change of
//     the state is logged in the attach's journal; the new state is the
//     snapshot with the journal applied again on top of it (a pod created
//     while the snapshot's pages were on their way stays, one removed
//     meanwhile is gone, a container keeps the latest of its states).
//     Plugins are told only what vanished from that merged state.
//   - Each plugin's gate closes when the new state takes effect: an event
//     that reaches it afterwards waits for its resynchronization (once, see
//     plugin.wait), and one that goes on without it is told to it right
//     after (missed.go). An event it had already been called for whose
//     change lands only after its new snapshot was taken is told to it
//     again the same way.
//
// Attaches take effect one at a time, in the order they finish.

// attach replaces the state with pods and ctrs plus what j logged since the
// attach began (nil: nothing, the snapshot is current), and resynchronizes
// every registered plugin.
func (s *Server) attach(_ context.Context, info RuntimeInfo, rt Runtime, pods []podEntry, ctrs []ctrEntry, j *journal) error {
	s.attachMu.Lock()
	defer s.attachMu.Unlock()
	gonePods, goneCtrs, err := s.state.replaceJournaled(pods, ctrs, j)
	if err != nil {
		return status.Errorf(codes.ResourceExhausted, "attach: %v (%d)", err, maxJournal)
	}
	s.mu.Lock()
	s.epoch++
	epoch := s.epoch
	s.rt, s.rtInfo = rt, info
	select {
	case <-s.attached:
	default:
		close(s.attached)
	}
	s.mu.Unlock()
	// Every registered plugin learns the new state, on the first attach
	// too: plugins that registered before any runtime attached were
	// synchronized with an empty state.
	resync := s.beginResync(gonePods, goneCtrs)
	nPods, nCtrs := s.state.counts()
	s.log.Info("runtime attached", "runtime", info.Name, "version", info.Version,
		"pods", nPods, "containers", nCtrs, "epoch", epoch, "changes_during_attach", journalLen(j))
	for _, p := range resync {
		go s.resync(p)
	}
	return nil
}

func journalLen(j *journal) int {
	if j == nil {
		return 0
	}
	return len(j.ops)
}

// beginAttach starts an attach whose snapshot the runtime is about to
// send: the state's changes from now on are applied on top of it. The
// caller ends it with attach, or abortAttach when the snapshot never
// came.
func (s *Server) beginAttach() *journal { return s.state.startJournal() }

// abortAttach ends an attach begun with beginAttach that did not complete.
func (s *Server) abortAttach(j *journal) { s.state.stopJournal(j) }

// encodeAll encodes a runtime's pods and containers once, for the state.
func encodeAll(pods []*nriv1beta1.PodSandbox, ctrs []*nriv1beta1.Container) ([]podEntry, []ctrEntry) {
	pe := make([]podEntry, len(pods))
	for i, p := range pods {
		pe[i] = encodePod(p)
	}
	ce := make([]ctrEntry, len(ctrs))
	for i, c := range ctrs {
		ce[i] = encodeContainer(c)
	}
	return pe, ce
}
