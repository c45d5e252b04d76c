package server

import (
	"sync"
	"sync/atomic"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// flights orders events against registration cuts.
//
// Every event begins in the generation current when it starts and takes the
// dispatch order of that moment. A registration cut inserts the new plugin
// and starts a new generation in one step, then waits for the events of
// earlier generations (which do not see the new plugin, and whose changes to
// the state land when they end) before it takes the snapshot: nothing lost,
// nothing twice. Events that start after the cut are not held up by it; they
// wait for the new plugin only if it subscribed to them, and only within
// their timeout for it. So an event that hangs in a plugin holds up the
// registration that waits for it, not every other pod's events.
//
// A runtime attach is not ordered here: it waits for no event and holds
// none back (attach.go).
type flights struct {
	mu      sync.Mutex
	cond    sync.Cond
	gen     uint64
	active  map[uint64]int // events in flight by generation
	cutting int            // cuts waiting for earlier events
}

// flight is one event in flight: the dispatch order and generation it
// started with, and its record.
type flight struct {
	gen   uint64
	order []*slot
	rec   *nriv1beta1.DispatchRecord
	opts  eventOptions
	raw   []byte // the request's encoding handed over (Encoded), normalised
	// The event's pod, and container (nil for a pod event): what the
	// plugins' selectors are matched against (selectors.go).
	pod *nriv1beta1.PodSandbox
	ctr *nriv1beta1.Container
	// notReady lists the plugins this event did not call because they were
	// NOT_READY (status.go); the validators' list of plugins leaves them out.
	notReady []string
	// marks are left for plugins that may miss the event's change
	// (missed.go); markBuf holds the first few without an allocation.
	marks   []mark
	markBuf [4]mark
}

func (f *flights) init() {
	f.cond.L = &f.mu
	f.active = map[uint64]int{}
}

// begin registers an event with the dispatch order current now, which the
// event uses throughout.
func (f *flights) begin(order *atomic.Pointer[[]*slot]) *flight {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.active[f.gen]++
	fl := &flight{gen: f.gen, order: *order.Load()}
	fl.marks = fl.markBuf[:0]
	return fl
}

// end unregisters an event.
func (f *flights) end(fl *flight) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.active[fl.gen]--; f.active[fl.gen] <= 0 {
		delete(f.active, fl.gen)
	}
	f.cond.Broadcast()
}

// cut runs insert with the new generation, under the lock (events that
// begin afterwards see what it inserted), then waits until no event of an
// earlier generation is in flight, and runs snapshot. An error from insert
// ends the cut before anything changed.
func (f *flights) cut(insert func(gen uint64) error, snapshot func()) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := insert(f.gen + 1); err != nil {
		return err
	}
	before := f.gen
	f.gen++
	f.cutting++
	for f.inFlightUpTo(before) {
		f.cond.Wait()
	}
	snapshot()
	f.cutting--
	f.cond.Broadcast()
	return nil
}

func (f *flights) inFlightUpTo(gen uint64) bool {
	for g := range f.active {
		if g <= gen {
			return true
		}
	}
	return false
}
