package server

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// state is the server's view of the runtime's pods and containers: seeded
// from the runtime when it attaches, then kept current by the events the
// server dispatches and the updates it relays. New plugins are synchronized
// from it, at the registration cut, so what a plugin learns through
// Synchronize and what it then sees through events never overlap or leave a
// gap.
//
// Every pod and container is kept as its protobuf encoding (a byte slice
// the garbage collector does not scan) with a small index of what the
// server looks up: Synchronize pages are copied from the encodings, and
// whoever needs an object (in-process plugins, Snapshot, GetState,
// selectors) decodes it on demand. An entry's bytes are never modified
// once stored: a change stores new bytes, so that anyone holding the old
// ones (a page being sent, a snapshot) keeps seeing what it took.
type state struct {
	mu   sync.RWMutex
	pods map[string]podEntry
	ctrs map[string]ctrEntry
	// journals are the open attaches' journals: every change is also
	// logged in each (attach.go).
	journals []*journal
}

// maxJournal bounds the changes one attach's journal keeps: an attach
// whose snapshot takes longer than that many state changes fails.
const maxJournal = 1 << 16

// journal is what changed in the state since an attach began: the changes
// that its runtime's snapshot, taken after that moment, may predate. The
// attach applies them again on top of the snapshot (replaceJournaled),
// so that no event that arrived meanwhile is erased.
type journal struct {
	ops  []journalOp
	over bool // more than maxJournal changes
}

// journalOp is one change: an entry stored, or an id deleted.
type journalOp struct {
	pod    *podEntry
	ctr    *ctrEntry
	delPod string
	delCtr string
}

// startJournal begins logging every change of the state for an attach.
func (s *state) startJournal() *journal {
	j := &journal{}
	s.mu.Lock()
	s.journals = append(s.journals, j)
	s.mu.Unlock()
	return j
}

// stopJournal ends j (a no-op once replaceJournaled took it).
func (s *state) stopJournal(j *journal) {
	s.mu.Lock()
	s.dropJournalLocked(j)
	s.mu.Unlock()
}

func (s *state) dropJournalLocked(j *journal) {
	s.journals = slices.DeleteFunc(s.journals, func(o *journal) bool { return o == j })
}

// logLocked records op in every open journal.
func (s *state) logLocked(op journalOp) {
	for _, j := range s.journals {
		if len(j.ops) >= maxJournal {
			j.over = true
			continue
		}
		j.ops = append(j.ops, op)
	}
}

// putPodLocked stores e and logs it.
func (s *state) putPodLocked(e podEntry) {
	s.pods[e.id] = e
	if len(s.journals) > 0 {
		s.logLocked(journalOp{pod: &e})
	}
}

// putCtrLocked stores e, never in an earlier state than the one stored
// (see recordContainer), and logs it.
func (s *state) putCtrLocked(e ctrEntry) {
	e = keepLater(s.ctrs, e)
	s.ctrs[e.id] = e
	if len(s.journals) > 0 {
		s.logLocked(journalOp{ctr: &e})
	}
}

// keepLater returns e, or e in the state of the entry of the same id in
// ctrs when that state is later along a container's life.
func keepLater(ctrs map[string]ctrEntry, e ctrEntry) ctrEntry {
	if cur, ok := ctrs[e.id]; ok && stateRank(cur.st) > stateRank(e.st) && e.raw != nil {
		if ne, err := indexContainer(withState(e.raw, cur.st)); err == nil {
			return ne
		}
	}
	return e
}

// podEntry is a stored pod: its encoding and its id, which aliases the
// encoding.
type podEntry struct {
	id  string
	raw []byte
}

// ctrEntry is a stored container: its encoding and the fields the server
// looks up, whose strings alias the encoding.
type ctrEntry struct {
	id, pod, name string
	st            nriv1beta1.ContainerState
	raw           []byte
}

// encodedState is a snapshot of the state's entries, sorted by id.
type encodedState struct {
	pods []podEntry
	ctrs []ctrEntry
}

func newState() *state {
	return &state{pods: map[string]podEntry{}, ctrs: map[string]ctrEntry{}}
}

// encoded returns the entries, sorted by id for determinism. Entries are
// immutable: they may be read without the lock.
func (s *state) encoded() encodedState {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.encodedLocked()
}

func (s *state) encodedLocked() encodedState {
	out := encodedState{pods: make([]podEntry, 0, len(s.pods)), ctrs: make([]ctrEntry, 0, len(s.ctrs))}
	for _, p := range s.pods {
		out.pods = append(out.pods, p)
	}
	for _, c := range s.ctrs {
		out.ctrs = append(out.ctrs, c)
	}
	slices.SortFunc(out.pods, func(a, b podEntry) int { return strings.Compare(a.id, b.id) })
	slices.SortFunc(out.ctrs, func(a, b ctrEntry) int { return strings.Compare(a.id, b.id) })
	return out
}

// counts returns how many pods and containers the state has.
func (s *state) counts() (pods, ctrs int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.pods), len(s.ctrs)
}

// snapshot returns the pods and containers, decoded, sorted by id. The
// objects are the caller's, but their strings alias the stored encodings:
// they must not be modified in place through unsafe means.
func (s *state) snapshot() ([]*nriv1beta1.PodSandbox, []*nriv1beta1.Container) {
	return s.encoded().decode()
}

// decode decodes every entry of st.
func (st encodedState) decode() ([]*nriv1beta1.PodSandbox, []*nriv1beta1.Container) {
	pods := make([]*nriv1beta1.PodSandbox, len(st.pods))
	for i, p := range st.pods {
		pods[i] = p.decode()
	}
	ctrs := make([]*nriv1beta1.Container, len(st.ctrs))
	for i, c := range st.ctrs {
		ctrs[i] = c.decode()
	}
	return pods, ctrs
}

// decode returns the pod. The stored encodings were either made by the
// server or checked when the runtime attached (checkEncoded): an encoding
// that does not decode is a bug, and yields a pod with just its id.
func (p podEntry) decode() *nriv1beta1.PodSandbox {
	out := &nriv1beta1.PodSandbox{}
	if err := out.UnmarshalVTUnsafe(p.raw); err != nil {
		return &nriv1beta1.PodSandbox{Id: p.id}
	}
	return out
}

// decode returns the container (see podEntry.decode).
func (c ctrEntry) decode() *nriv1beta1.Container {
	out := &nriv1beta1.Container{}
	if err := out.UnmarshalVTUnsafe(c.raw); err != nil {
		return &nriv1beta1.Container{Id: c.id, PodSandboxId: c.pod, Name: c.name, State: c.st}
	}
	return out
}

// encodePod stores p: encoded once, into an exact-size slice.
func encodePod(p *nriv1beta1.PodSandbox) podEntry {
	raw, err := p.MarshalVT()
	if err != nil {
		// vtproto's marshalling only fails on an oversized message.
		return podEntry{id: strings.Clone(p.GetId())}
	}
	e, _ := indexPod(raw)
	return e
}

// encodeContainer stores c (see encodePod).
func encodeContainer(c *nriv1beta1.Container) ctrEntry {
	raw, err := c.MarshalVT()
	if err != nil {
		return ctrEntry{id: strings.Clone(c.GetId()), pod: strings.Clone(c.GetPodSandboxId()), name: strings.Clone(c.GetName()), st: c.GetState()}
	}
	e, _ := indexContainer(raw)
	return e
}

// errJournalFull fails an attach whose snapshot took longer than
// maxJournal changes of the state.
var errJournalFull = errors.New("more state changes arrived while the runtime's snapshot was taken than an attach keeps")

// replaceJournaled swaps in a new state, the runtime's snapshot with every
// change logged in j since the attach began applied again on top of it
// (events the snapshot may predate: a pod created while its pages were on
// their way stays; a container removed meanwhile is gone), ends j, and
// returns what vanished, decoded. j nil: the snapshot alone.
func (s *state) replaceJournaled(pods []podEntry, ctrs []ctrEntry, j *journal) (gonePods []*nriv1beta1.PodSandbox, goneCtrs []*nriv1beta1.Container, err error) {
	np := make(map[string]podEntry, len(pods))
	for _, p := range pods {
		np[p.id] = p
	}
	nc := make(map[string]ctrEntry, len(ctrs))
	for _, c := range ctrs {
		nc[c.id] = c
	}
	s.mu.Lock()
	if j != nil {
		s.dropJournalLocked(j)
		if j.over {
			s.mu.Unlock()
			return nil, nil, errJournalFull
		}
		for _, op := range j.ops {
			switch {
			case op.pod != nil:
				np[op.pod.id] = *op.pod
			case op.ctr != nil:
				e := keepLater(nc, *op.ctr)
				nc[e.id] = e
			case op.delPod != "":
				delete(np, op.delPod)
			case op.delCtr != "":
				delete(nc, op.delCtr)
			}
		}
	}
	old := s.encodedLocked()
	s.pods, s.ctrs = np, nc
	s.mu.Unlock()
	for _, p := range old.pods {
		if _, ok := np[p.id]; !ok {
			gonePods = append(gonePods, p.decode())
		}
	}
	for _, c := range old.ctrs {
		if _, ok := nc[c.id]; !ok {
			goneCtrs = append(goneCtrs, c.decode())
		}
	}
	return gonePods, goneCtrs, nil
}

// replace swaps in a new state and returns what vanished, decoded.
func (s *state) replace(pods []podEntry, ctrs []ctrEntry) (gonePods []*nriv1beta1.PodSandbox, goneCtrs []*nriv1beta1.Container) {
	gonePods, goneCtrs, _ = s.replaceJournaled(pods, ctrs, nil)
	return gonePods, goneCtrs
}

func (s *state) setPod(p *nriv1beta1.PodSandbox) {
	e := encodePod(p)
	s.mu.Lock()
	s.putPodLocked(e)
	s.mu.Unlock()
}

// pod returns the pod, decoded, or nil.
func (s *state) pod(id string) *nriv1beta1.PodSandbox {
	s.mu.RLock()
	e, ok := s.pods[id]
	s.mu.RUnlock()
	if !ok {
		return nil
	}
	return e.decode()
}

func (s *state) deletePod(id string) {
	s.mu.Lock()
	delete(s.pods, id)
	if len(s.journals) > 0 {
		s.logLocked(journalOp{delPod: id})
	}
	s.mu.Unlock()
}

// recordContainer stores c as an event the server relayed left it: in at
// least the state the event implies (created, running after
// PostStartContainer, stopped after StopContainer), and never in an earlier
// state than the state already knows. Runtimes send the container as it was
// when the event began (containerd reports a started container as created
// in StartContainer and PostStartContainer), and a plugin that registers
// later must get it in Synchronize as it is now. c itself is not modified:
// plugins may still hold it.
func (s *state) recordContainer(c *nriv1beta1.Container, implied nriv1beta1.ContainerState) {
	// Events of a container are ordered (the pod's lock): the state read
	// here is the one the event replaces, unless an attach replaced the
	// state meanwhile; it is checked again under the write lock.
	s.mu.RLock()
	old, known := s.ctrs[c.GetId()]
	s.mu.RUnlock()
	st := c.GetState()
	if stateRank(implied) > stateRank(st) {
		st = implied
	}
	if known && stateRank(old.st) > stateRank(st) {
		st = old.st
	}
	e := encodeContainerAs(c, st)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.putCtrLocked(e)
}

// encodeContainerAs stores c in state st without modifying c: encoded once,
// then the state field (right after id, pod_sandbox_id and name in
// MarshalVT's field order) swapped in place, moving only the fields before
// it. The bytes are MarshalVT's of c with its state set to st.
func encodeContainerAs(c *nriv1beta1.Container, st nriv1beta1.ContainerState) ctrEntry {
	if c.GetState() == st {
		return encodeContainer(c)
	}
	size := c.SizeVT()
	extra := 0
	if st != 0 {
		extra = protowire.SizeTag(fieldCtrState) + protowire.SizeVarint(uint64(int64(st)))
	}
	buf := make([]byte, extra+size)
	if _, err := c.MarshalToSizedBufferVT(buf[extra:]); err != nil {
		return encodeContainer(c)
	}
	// The fields before the state, then the state field if any.
	prefix, oldLen := 0, 0
	for rest := buf[extra:]; len(rest) > 0; {
		num, typ, n := protowire.ConsumeTag(rest)
		if n < 0 || num > fieldCtrState {
			break
		}
		m := protowire.ConsumeFieldValue(num, typ, rest[n:])
		if m < 0 {
			break
		}
		if num == fieldCtrState {
			oldLen = n + m
			break
		}
		prefix += n + m
		rest = rest[n+m:]
	}
	// New layout: prefix | new state | the rest, ending where the
	// encoding ends; it starts oldLen bytes into buf.
	copy(buf[oldLen:], buf[extra:extra+prefix])
	if st != 0 {
		f := protowire.AppendTag(buf[oldLen+prefix:oldLen+prefix], fieldCtrState, protowire.VarintType)
		protowire.AppendVarint(f, uint64(int64(st)))
	}
	raw := buf[oldLen : extra+size : extra+size]
	e, err := indexContainer(raw)
	if err != nil {
		return encodeContainer(c)
	}
	return e
}

// stateRank orders container states along a container's life; paused is a
// kind of running.
func stateRank(st nriv1beta1.ContainerState) int {
	switch st {
	case nriv1beta1.ContainerState_CONTAINER_STATE_CREATED:
		return 1
	case nriv1beta1.ContainerState_CONTAINER_STATE_RUNNING, nriv1beta1.ContainerState_CONTAINER_STATE_PAUSED:
		return 2
	case nriv1beta1.ContainerState_CONTAINER_STATE_STOPPED:
		return 3
	}
	return 0
}

// container returns the container, decoded, or nil.
func (s *state) container(id string) *nriv1beta1.Container {
	s.mu.RLock()
	e, ok := s.ctrs[id]
	s.mu.RUnlock()
	if !ok {
		return nil
	}
	return e.decode()
}

// containerPod returns the pod id of a known container.
func (s *state) containerPod(id string) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.ctrs[id]
	return e.pod, ok
}

func (s *state) deleteContainer(id string) {
	s.mu.Lock()
	delete(s.ctrs, id)
	if len(s.journals) > 0 {
		s.logLocked(journalOp{delCtr: id})
	}
	s.mu.Unlock()
}

// applyUpdates records applied resource updates in the stored containers:
// each updated container is decoded, changed and encoded again.
func (s *state) applyUpdates(updates []*nriv1beta1.ContainerUpdate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range updates {
		old, ok := s.ctrs[u.GetContainerId()]
		res := u.GetLinux().GetResources()
		if !ok || res == nil {
			continue
		}
		c := old.decode()
		if c.Linux == nil {
			c.Linux = &nriv1beta1.LinuxContainer{}
		}
		c.Linux.Resources = overlayResources(c.Linux.Resources, res)
		s.putCtrLocked(encodeContainer(c))
	}
}

// The top-level fields of PodSandbox and Container the index reads.
const (
	fieldPodID       = 1
	fieldCtrID       = 1
	fieldCtrPod      = 2
	fieldCtrName     = 3
	fieldCtrState    = 4
	maxIndexedString = 4096 // ids and names longer than this are refused from a runtime
)

// errMalformed is wire format that does not parse.
var errMalformed = errors.New("malformed protobuf wire format")

// scanTop calls fn for every top-level field of raw, with the field's
// value bytes (length-delimited: the payload) or varint value; it fails on
// malformed wire format.
func scanTop(raw []byte, fn func(num protowire.Number, typ protowire.Type, b []byte, v uint64) error) error {
	for len(raw) > 0 {
		num, typ, n := protowire.ConsumeTag(raw)
		if n < 0 {
			return errMalformed
		}
		raw = raw[n:]
		var (
			b []byte
			v uint64
		)
		switch typ {
		case protowire.BytesType:
			b, n = protowire.ConsumeBytes(raw)
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(raw)
		default:
			n = protowire.ConsumeFieldValue(num, typ, raw)
		}
		if n < 0 {
			return errMalformed
		}
		raw = raw[n:]
		if err := fn(num, typ, b, v); err != nil {
			return err
		}
	}
	return nil
}

// alias returns b as a string sharing b's bytes: the stored encodings are
// never modified, so the index's strings can point into them.
func alias(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// indexPod scans a pod's encoding for its index. As protobuf decoding
// does, the last occurrence of a field wins.
func indexPod(raw []byte) (podEntry, error) {
	e := podEntry{raw: raw}
	err := scanTop(raw, func(num protowire.Number, typ protowire.Type, b []byte, _ uint64) error {
		if num == fieldPodID {
			if typ != protowire.BytesType {
				return fmt.Errorf("field id: wire type %d, want length-delimited", typ)
			}
			e.id = alias(b)
		}
		return nil
	})
	return e, err
}

// indexContainer scans a container's encoding for its index.
func indexContainer(raw []byte) (ctrEntry, error) {
	e := ctrEntry{raw: raw}
	err := scanTop(raw, func(num protowire.Number, typ protowire.Type, b []byte, v uint64) error {
		want := protowire.BytesType
		var dst *string
		switch num {
		case fieldCtrID:
			dst = &e.id
		case fieldCtrPod:
			dst = &e.pod
		case fieldCtrName:
			dst = &e.name
		case fieldCtrState:
			want = protowire.VarintType
		default:
			return nil
		}
		if typ != want {
			return fmt.Errorf("field %d: wire type %d, want %d", num, typ, want)
		}
		if dst != nil {
			*dst = alias(b)
		} else {
			e.st = nriv1beta1.ContainerState(int32(v))
		}
		return nil
	})
	return e, err
}

// withState returns a new encoding of the container raw encodes with its
// state set to st: every state field dropped and, unless st is the
// default, one written after the fields numbered below it, where a
// canonical encoding has it. raw is not modified.
func withState(raw []byte, st nriv1beta1.ContainerState) []byte {
	out := make([]byte, 0, len(raw)+1+protowire.SizeVarint(uint64(st)))
	placed := st == 0
	place := func() {
		if !placed {
			out = protowire.AppendTag(out, fieldCtrState, protowire.VarintType)
			out = protowire.AppendVarint(out, uint64(st))
			placed = true
		}
	}
	for rest := raw; len(rest) > 0; {
		num, typ, n := protowire.ConsumeTag(rest)
		if n < 0 {
			return raw
		}
		m := protowire.ConsumeFieldValue(num, typ, rest[n:])
		if m < 0 {
			return raw
		}
		field := rest[:n+m]
		rest = rest[n+m:]
		if num == fieldCtrState {
			continue
		}
		if num > fieldCtrState {
			place()
		}
		out = append(out, field...)
	}
	place()
	return out
}

// checkEntry validates what the index of an entry a runtime sent took
// from it: the id is set and every indexed string is valid UTF-8 and
// bounded.
func checkEntry(strs ...string) error {
	names := [...]string{"id", "pod_sandbox_id", "name"}
	for i, s := range strs {
		switch {
		case i == 0 && s == "":
			return errors.New("id: must not be empty")
		case len(s) > maxIndexedString:
			return fmt.Errorf("%s: %d bytes, over the limit of %d", names[i], len(s), maxIndexedString)
		case !utf8.ValidString(s):
			return fmt.Errorf("%s: not valid UTF-8", names[i])
		}
	}
	return nil
}

// overlayResources returns base with every field set in upd applied.
func overlayResources(base, upd *nriv1beta1.LinuxResources) *nriv1beta1.LinuxResources {
	out := base.CloneVT()
	if out == nil {
		out = &nriv1beta1.LinuxResources{}
	}
	if m := upd.GetMemory(); m != nil {
		if out.Memory == nil {
			out.Memory = &nriv1beta1.LinuxMemory{}
		}
		o := out.Memory
		setIf(&o.Limit, m.Limit)
		setIf(&o.Reservation, m.Reservation)
		setIf(&o.Swap, m.Swap)
		setIf(&o.Kernel, m.Kernel)
		setIf(&o.KernelTcp, m.KernelTcp)
		setIf(&o.Swappiness, m.Swappiness)
		setIf(&o.DisableOomKiller, m.DisableOomKiller)
		setIf(&o.UseHierarchy, m.UseHierarchy)
	}
	if c := upd.GetCpu(); c != nil {
		if out.Cpu == nil {
			out.Cpu = &nriv1beta1.LinuxCPU{}
		}
		o := out.Cpu
		setIf(&o.Shares, c.Shares)
		setIf(&o.Quota, c.Quota)
		setIf(&o.Period, c.Period)
		setIf(&o.RealtimeRuntime, c.RealtimeRuntime)
		setIf(&o.RealtimePeriod, c.RealtimePeriod)
		if c.Cpus != "" {
			o.Cpus = c.Cpus
		}
		if c.Mems != "" {
			o.Mems = c.Mems
		}
	}
	if len(upd.HugepageLimits) > 0 {
		out.HugepageLimits = upd.CloneVT().HugepageLimits
	}
	setIf(&out.BlockioClass, upd.BlockioClass)
	setIf(&out.RdtClass, upd.RdtClass)
	for k, v := range upd.Unified {
		if out.Unified == nil {
			out.Unified = map[string]string{}
		}
		out.Unified[k] = v
	}
	if upd.Pids != nil {
		out.Pids = upd.Pids.CloneVT()
	}
	return out
}

func setIf[T any](dst **T, src *T) {
	if src != nil {
		*dst = src
	}
}
