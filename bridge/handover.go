package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/nri-grpc/nri-grpc/internal/classicwire"
	"github.com/nri-grpc/nri-grpc/server"
)

// Handover is the runtime side's connection to the classic runtime and
// what goes with it, handed from one nrid to the next (an upgrade) without
// the runtime seeing the bridge disappear: Detach in the old nrid, Adopt
// in the new one.
type Handover struct {
	// Conn is the stopped connection.
	Conn *classicwire.Detached
	// Timeout is the runtime's request timeout.
	Timeout time.Duration
	// Info names the runtime.
	Info server.RuntimeInfo
	// Pods and Containers are the runtime's state as the old nrid knew it
	// at the handover: the encodings of each nri.v1beta1.PodSandbox and
	// Container, as the server keeps them (Server.SnapshotEncoded), never
	// decoded on the way; the new nrid checks them when it adopts them
	// (Server.SetRuntimeEncoded). They must not be modified.
	Pods       [][]byte
	Containers [][]byte

	relay      []relayBatch       // unsolicited updates not relayed yet
	validation validationHandover // the runtime's validation: subscription and verdicts not asked for yet
}

// handoff is a RuntimeSide's handover state; RuntimeSide.mu guards it.
type handoff struct {
	paused  bool         // relaying is paused: batches are parked
	parked  []relayBatch // batches taken while paused
	gone    bool         // the connection was handed over (Detach)
	adopted chan struct{}
	resume  chan struct{} // Resume: the connection is back
}

// takeAdopted returns the close channel of a connection Adopt or Resume
// set up, once.
func (r *RuntimeSide) takeAdopted() chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.handoff.adopted
	r.handoff.adopted = nil
	return c
}

// Detach hands the runtime connection over: relaying of unsolicited
// updates pauses, the calls in flight and the runtime's event being served
// are finished, and the connection stops without closing (see
// classicwire.Conn.Detach). The runtime's next events wait in the socket
// for the next owner. Run keeps running, idle, until ctx ends or Resume
// brings the connection back. It fails unless the runtime has attached and
// synchronized the bridge.
func (r *RuntimeSide) Detach(ctx context.Context) (*Handover, error) {
	r.mu.Lock()
	c, h := r.conn, r.handlers
	if c == nil || h == nil || !h.synchronized.Load() {
		r.mu.Unlock()
		return nil, errors.New("bridge: not attached to a classic runtime, or not synchronized by it yet")
	}
	if r.handoff.gone || r.handoff.paused {
		r.mu.Unlock()
		return nil, errors.New("bridge: already being handed over")
	}
	r.handoff.paused, r.handoff.gone = true, true
	r.mu.Unlock()
	d, err := c.Detach(ctx)
	if err != nil {
		r.mu.Lock()
		r.handoff.paused, r.handoff.gone = false, false
		r.requeueLocked()
		r.mu.Unlock()
		return nil, fmt.Errorf("bridge: handing the runtime connection over: %w", err)
	}
	pods, ctrs := r.srv.SnapshotEncoded()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conn == c {
		r.conn, r.handlers = nil, nil
	}
	ho := &Handover{Conn: d, Timeout: r.timeout, Info: r.info, Pods: pods, Containers: ctrs, relay: r.handoff.parked,
		validation: h.verdicts.handover()}
	r.handoff.parked = nil
	for {
		select {
		case b := <-r.relay:
			ho.relay = append(ho.relay, b)
			continue
		default:
		}
		break
	}
	r.log.Info("classic runtime connection handed over", "pending_bytes", len(d.Pending), "pods", len(pods), "containers", len(ctrs),
		"updates", len(ho.relay))
	return ho, nil
}

// requeueLocked sends the parked batches back to the relay; r.mu is held.
func (r *RuntimeSide) requeueLocked() {
	for _, b := range r.handoff.parked {
		select {
		case r.relay <- b:
		default:
			r.log.Warn("relay queue full; updates dropped", "plugin", b.plugin, "count", b.count)
		}
	}
	r.handoff.parked = nil
}

// Adopt continues a connection another nrid handed over (Detach there):
// the server gets the runtime and the state that came with it, and the
// connection is served from where the old owner stopped. Call it before
// Run. It owns ho.Conn.File, also when it fails.
func (r *RuntimeSide) Adopt(ctx context.Context, ho *Handover) error {
	r.mu.Lock()
	r.handoff.paused = true
	r.mu.Unlock()
	// The state first: the runtime's next event may be read at once.
	if err := r.srv.SetRuntimeEncoded(ctx, ho.Info, r, ho.Pods, ho.Containers); err != nil {
		_ = ho.Conn.File.Close()
		return err
	}
	h := newClassicHandlers(r)
	h.synchronized.Store(true)
	h.verdicts.adopt(ho.validation)
	h.stopped = ho.Conn.Stopped
	closed := make(chan struct{})
	var once sync.Once
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := classicwire.Adopt(ho.Conn, h.serve,
		classicwire.WithLogger(r.log.With("component", "bridge-runtime")),
		classicwire.WithOnClose(func() { once.Do(func() { close(closed) }) }))
	if err != nil {
		r.handoff.paused = false
		return fmt.Errorf("bridge: adopting the runtime connection: %w", err)
	}
	r.conn, r.handlers = c, h
	r.timeout, r.info = ho.Timeout, ho.Info
	r.handoff.adopted = closed
	r.handoff.paused, r.handoff.gone = false, false
	r.handoff.parked = append(ho.relay, r.handoff.parked...)
	r.requeueLocked()
	select {
	case r.synced <- struct{}{}:
	default:
	}
	r.log.Info("continuing the classic runtime connection handed over", "plugin", r.idx+"-"+r.name, "request_timeout", ho.Timeout,
		"pods", len(ho.Pods), "containers", len(ho.Containers))
	return nil
}

// Resume takes back a connection that Detach handed over when the takeover
// failed: Run serves it again.
func (r *RuntimeSide) Resume(ctx context.Context, ho *Handover) error {
	if err := r.Adopt(ctx, ho); err != nil {
		return err
	}
	select {
	case r.handoff.resume <- struct{}{}:
	default:
	}
	return nil
}

// handoverDoc is a Handover's encoding between processes (the descriptor
// travels apart).
type handoverDoc struct {
	Pending        []byte          `json:"pending,omitempty"`
	NextID         uint32          `json:"next_id"`
	TimeoutNS      int64           `json:"timeout_ns"`
	RuntimeName    string          `json:"runtime_name"`
	RuntimeVersion string          `json:"runtime_version"`
	State          []byte          `json:"state"` // nri.v1beta1.SynchronizeRequest: pods and containers
	Relay          []relayBatchDoc `json:"relay,omitempty"`
	// Validation is the runtime's validation state (validate.go).
	Validation validationHandover `json:"validation"`
	// StoppedUnixNano is when the old nrid stopped reading (wall clock:
	// both nrids run on the same machine); 0 when it did not say.
	StoppedUnixNano int64 `json:"stopped_unix_nano,omitempty"`
}

type relayBatchDoc struct {
	Plugin  string `json:"plugin"`
	Updates []byte `json:"updates"` // v1alpha1.UpdateContainersRequest (relayBatch.req)
}

// MarshalJSON encodes everything of the handover but the descriptor.
func (ho *Handover) MarshalJSON() ([]byte, error) {
	state := syncPage(ho.Pods, ho.Containers)
	doc := handoverDoc{Pending: ho.Conn.Pending, NextID: ho.Conn.NextID, StoppedUnixNano: unixNano(ho.Conn.Stopped), TimeoutNS: int64(ho.Timeout),
		RuntimeName: ho.Info.Name, RuntimeVersion: ho.Info.Version, State: state, Validation: ho.validation}
	for _, b := range ho.relay {
		doc.Relay = append(doc.Relay, relayBatchDoc{Plugin: b.plugin, Updates: b.req})
	}
	return json.Marshal(doc)
}

// DecodeHandover rebuilds a Handover from its encoding (MarshalJSON) and
// the connection's descriptor, received from the old nrid.
func DecodeHandover(data []byte, f *os.File) (*Handover, error) {
	var doc handoverDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("bridge: handover: %w", err)
	}
	pods, ctrs, _, err := splitSyncPage(doc.State)
	if err != nil {
		return nil, fmt.Errorf("bridge: handover state: %w", err)
	}
	ho := &Handover{
		Conn:    &classicwire.Detached{File: f, Pending: doc.Pending, NextID: doc.NextID, Stopped: fromUnixNano(doc.StoppedUnixNano)},
		Timeout: time.Duration(doc.TimeoutNS),
		Info:    server.RuntimeInfo{Name: doc.RuntimeName, Version: doc.RuntimeVersion},
		Pods:    pods, Containers: ctrs,
		validation: doc.Validation,
	}
	for _, b := range doc.Relay {
		n := 0
		if err := eachBytes(b.Updates, 1, func([]byte) error { n++; return nil }); err != nil { // UpdateContainersRequest.update
			return nil, fmt.Errorf("bridge: handover updates: %w", err)
		}
		ho.relay = append(ho.relay, relayBatch{plugin: b.Plugin, req: b.Updates, count: n})
	}
	return ho, nil
}

// unixNano is t's wall clock in nanoseconds, 0 for the zero time.
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// fromUnixNano is the inverse of unixNano.
func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// syncPage writes pods and containers, each an encoding, as a
// SynchronizeRequest's (pods 1, containers 2), the inverse of
// splitSyncPage.
func syncPage(pods, ctrs [][]byte) []byte {
	n := 0
	for _, list := range [][][]byte{pods, ctrs} {
		for _, b := range list {
			n += 1 + protowire.SizeVarint(uint64(len(b))) + len(b)
		}
	}
	out := make([]byte, 0, n)
	for _, b := range pods {
		out = protowire.AppendBytes(protowire.AppendTag(out, 1, protowire.BytesType), b)
	}
	for _, b := range ctrs {
		out = protowire.AppendBytes(protowire.AppendTag(out, 2, protowire.BytesType), b)
	}
	return out
}
