package server

import (
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/nri"
)

// recorder hands dispatch records to watchers (AdminService.WatchEvents,
// audit, tracing). With no watcher no record is built: the dispatch path
// pays nothing for them.
type recorder struct {
	seq      atomic.Uint64
	watching atomic.Int32
	mu       sync.Mutex
	watchers map[*watcher]struct{}
}

type watcher struct {
	ch      chan *nriv1beta1.DispatchRecord
	dropped atomic.Uint64
}

// Watch registers fn to receive every dispatch record until cancel is
// called. Records are delivered in order from one goroutine; a watcher that
// falls more than buffer records behind loses records (counted).
func (s *Server) Watch(buffer int, fn func(*nriv1beta1.DispatchRecord)) (cancel func()) {
	w := &watcher{ch: make(chan *nriv1beta1.DispatchRecord, max(buffer, 1))}
	r := &s.records
	r.mu.Lock()
	if r.watchers == nil {
		r.watchers = map[*watcher]struct{}{}
	}
	r.watchers[w] = struct{}{}
	r.watching.Add(1)
	r.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for rec := range w.ch {
			fn(rec)
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			delete(r.watchers, w)
			r.watching.Add(-1)
			close(w.ch)
			r.mu.Unlock()
			<-done
		})
	}
}

func (r *recorder) begin(ev nriv1beta1.Event, pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container) *nriv1beta1.DispatchRecord {
	if r.watching.Load() == 0 {
		return nil
	}
	rec := &nriv1beta1.DispatchRecord{
		Sequence:  r.seq.Add(1),
		Event:     ev,
		PodId:     pod.GetId(),
		PodName:   pod.GetNamespace() + "/" + pod.GetName(),
		StartTime: timestamppb.Now(),
	}
	if ctr != nil {
		rec.ContainerId, rec.ContainerName = ctr.GetId(), ctr.GetName()
	}
	return rec
}

func (r *recorder) end(rec *nriv1beta1.DispatchRecord, err error) {
	if rec == nil {
		return
	}
	rec.Duration = durationpb.New(time.Since(rec.StartTime.AsTime()))
	rec.Outcome = nri.OutcomeOf(err)
	if err != nil {
		rec.Error = status.Convert(err).Message()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for w := range r.watchers {
		select {
		case w.ch <- rec:
		default:
			w.dropped.Add(1)
		}
	}
}
