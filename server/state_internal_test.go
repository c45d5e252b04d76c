package server

import (
	"bytes"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/wrapperspb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
)

// oneKey trims every map in m to its smallest key, in place, so that
// MarshalVT (which writes maps in Go's random order) is deterministic and
// byte comparisons are possible. It returns m.
func oneKey[M proto.Message](m M) M {
	var trim func(protoreflect.Message)
	trim = func(r protoreflect.Message) {
		r.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case fd.IsMap():
				var keep protoreflect.MapKey
				first := true
				v.Map().Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
					if first || k.String() < keep.String() {
						keep, first = k, false
					}
					return true
				})
				var drop []protoreflect.MapKey
				v.Map().Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
					if k.String() != keep.String() {
						drop = append(drop, k)
					}
					return true
				})
				for _, k := range drop {
					v.Map().Clear(k)
				}
				if fd.MapValue().Kind() == protoreflect.MessageKind && v.Map().Len() > 0 {
					trim(v.Map().Get(keep).Message())
				}
			case fd.IsList() && fd.Kind() == protoreflect.MessageKind:
				for i := range v.List().Len() {
					trim(v.List().Get(i).Message())
				}
			case fd.Kind() == protoreflect.MessageKind:
				trim(v.Message())
			}
			return true
		})
	}
	trim(m.ProtoReflect())
	return m
}

func mustMarshal(t *testing.T, m interface{ MarshalVT() ([]byte, error) }) []byte {
	t.Helper()
	b, err := m.MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testState is a state of pods pods with two containers each, in
// deterministic encodings; the second container of every pod is running
// and its first one got a memory update.
func testState(t *testing.T, pods int) *state {
	t.Helper()
	s := newState()
	for n := range pods {
		s.setPod(oneKey(fixture.Pod(n)))
		for c := range 2 {
			ctr := oneKey(fixture.Container(n, c))
			implied := nriv1beta1.ContainerState_CONTAINER_STATE_CREATED
			if c == 1 {
				implied = nriv1beta1.ContainerState_CONTAINER_STATE_RUNNING
			}
			s.recordContainer(ctr, implied)
		}
		s.applyUpdates([]*nriv1beta1.ContainerUpdate{{ContainerId: fixture.Container(n, 0).GetId(),
			Linux: &nriv1beta1.LinuxContainerUpdate{Resources: &nriv1beta1.LinuxResources{
				Memory: &nriv1beta1.LinuxMemory{Limit: wrapperspb.Int64(int64(n+1) << 20)}}}}})
	}
	return s
}

// TestPagesAreMarshalVTBytes: a Synchronize page written from the stored
// encodings is byte for byte what MarshalVT makes of the equivalent
// SynchronizeRequest, for several states, page limits, epochs and
// reasons; and no page is over the limit.
func TestPagesAreMarshalVTBytes(t *testing.T) {
	reasons := []struct {
		epoch  uint64
		reason nriv1beta1.SyncReason
	}{
		{1, nriv1beta1.SyncReason_SYNC_REASON_REGISTRATION},
		{7, nriv1beta1.SyncReason_SYNC_REASON_RUNTIME_RESTARTED},
		{0, 0},
		{1 << 40, nriv1beta1.SyncReason_SYNC_REASON_PLUGIN_REQUESTED},
	}
	for _, pods := range []int{0, 1, 3, 40} {
		st := testState(t, pods)
		for _, limit := range []int{64 << 10, 16 << 10} {
			pages, total, err := paginate(st.encoded(), limit)
			if err != nil {
				t.Fatal(err)
			}
			if pods == 40 && len(pages) < 2 {
				t.Fatalf("pods=%d limit=%d: %d pages, want several", pods, limit, len(pages))
			}
			sum := 0
			for i, pg := range pages {
				more := i < len(pages)-1
				for _, r := range reasons {
					got := pg.encode(more, r.epoch, r.reason)
					want := mustMarshal(t, pg.request(more, r.epoch, r.reason))
					if !bytes.Equal(got, want) {
						t.Fatalf("pods=%d limit=%d page %d epoch=%d: the written page (%d bytes) differs from MarshalVT (%d bytes)",
							pods, limit, i, r.epoch, len(got), len(want))
					}
					if len(got) > limit {
						t.Fatalf("pods=%d limit=%d page %d: %d bytes", pods, limit, i, len(got))
					}
				}
				sum += len(pg.encode(false, 0, 0))
			}
			if sum != total {
				t.Fatalf("pods=%d limit=%d: total %d, pages sum to %d", pods, limit, total, sum)
			}
		}
	}
}

// TestPagesOfMultiKeyMaps: with maps of several keys (whose MarshalVT
// order is random) a page still decodes to the state's objects.
func TestPagesOfMultiKeyMaps(t *testing.T) {
	s := newState()
	pod, ctr := fixture.Pod(1), fixture.Container(1, 0)
	s.setPod(pod)
	s.recordContainer(ctr, nriv1beta1.ContainerState_CONTAINER_STATE_RUNNING)
	pages, _, err := paginate(s.encoded(), 1<<20)
	if err != nil || len(pages) != 1 {
		t.Fatal(len(pages), err)
	}
	got := &nriv1beta1.SynchronizeRequest{}
	if err := got.UnmarshalVT(pages[0].encode(false, 3, nriv1beta1.SyncReason_SYNC_REASON_REGISTRATION)); err != nil {
		t.Fatal(err)
	}
	want := ctr.CloneVT()
	want.State = nriv1beta1.ContainerState_CONTAINER_STATE_RUNNING
	if len(got.Pods) != 1 || !proto.Equal(got.Pods[0], pod) || len(got.Containers) != 1 || !proto.Equal(got.Containers[0], want) ||
		got.Epoch != 3 || got.Reason != nriv1beta1.SyncReason_SYNC_REASON_REGISTRATION || got.More {
		t.Fatalf("the page decodes to %d pods, %d containers, more %v, epoch %d, reason %v, or other objects",
			len(got.Pods), len(got.Containers), got.More, got.Epoch, got.Reason)
	}
}

// TestPaginateRefusesOversizedEntry: an entry that alone is over the
// plugin's limit fails the synchronization, naming it.
func TestPaginateRefusesOversizedEntry(t *testing.T) {
	s := testState(t, 1)
	_, _, err := paginate(s.encoded(), 1024)
	if err == nil || !strings.Contains(err.Error(), "alone encodes to") {
		t.Fatalf("an entry over the limit: %v", err)
	}
}

// TestRecordContainerRanksStates: the stored state only moves forward
// along a container's life, whatever state the event's object carries;
// the event's object is never modified; the stored bytes are MarshalVT's
// of the container in that state.
func TestRecordContainerRanksStates(t *testing.T) {
	s := newState()
	base := oneKey(fixture.Container(1, 0))
	steps := []struct {
		carried, implied, want nriv1beta1.ContainerState
	}{
		{nriv1beta1.ContainerState_CONTAINER_STATE_CREATED, nriv1beta1.ContainerState_CONTAINER_STATE_CREATED, nriv1beta1.ContainerState_CONTAINER_STATE_CREATED},
		{nriv1beta1.ContainerState_CONTAINER_STATE_CREATED, nriv1beta1.ContainerState_CONTAINER_STATE_RUNNING, nriv1beta1.ContainerState_CONTAINER_STATE_RUNNING},
		{nriv1beta1.ContainerState_CONTAINER_STATE_CREATED, nriv1beta1.ContainerState_CONTAINER_STATE_UNSPECIFIED, nriv1beta1.ContainerState_CONTAINER_STATE_RUNNING},
		{nriv1beta1.ContainerState_CONTAINER_STATE_PAUSED, nriv1beta1.ContainerState_CONTAINER_STATE_UNSPECIFIED, nriv1beta1.ContainerState_CONTAINER_STATE_PAUSED},
		{nriv1beta1.ContainerState_CONTAINER_STATE_UNSPECIFIED, nriv1beta1.ContainerState_CONTAINER_STATE_STOPPED, nriv1beta1.ContainerState_CONTAINER_STATE_STOPPED},
		{nriv1beta1.ContainerState_CONTAINER_STATE_RUNNING, nriv1beta1.ContainerState_CONTAINER_STATE_CREATED, nriv1beta1.ContainerState_CONTAINER_STATE_STOPPED},
	}
	for i, st := range steps {
		c := base.CloneVT()
		c.State = st.carried
		before := mustMarshal(t, c)
		s.recordContainer(c, st.implied)
		if c.State != st.carried || !bytes.Equal(mustMarshal(t, c), before) {
			t.Fatalf("step %d: the event's container was modified", i)
		}
		e := s.ctrs[c.Id]
		want := base.CloneVT()
		want.State = st.want
		if e.st != st.want || !bytes.Equal(e.raw, mustMarshal(t, want)) {
			t.Fatalf("step %d: stored %v (%d bytes), want %v (%d bytes)", i, e.st, len(e.raw), st.want, len(mustMarshal(t, want)))
		}
		if e.id != c.Id || e.pod != c.PodSandboxId || e.name != c.Name {
			t.Fatalf("step %d: index %q %q %q", i, e.id, e.pod, e.name)
		}
		if got := s.container(c.Id); got.GetState() != st.want {
			t.Fatalf("step %d: decoded state %v", i, got.GetState())
		}
	}
}

// TestWithState: setting a state in an encoding (withState) or while
// encoding (encodeContainerAs) yields MarshalVT's bytes of the container
// with that state, from any state, also none; a duplicated state field is
// replaced.
func TestWithState(t *testing.T) {
	for from := range int32(5) {
		for to := range int32(5) {
			c := oneKey(fixture.Container(2, 1))
			c.State = nriv1beta1.ContainerState(from)
			raw := mustMarshal(t, c)
			keep := bytes.Clone(raw)
			got := withState(raw, nriv1beta1.ContainerState(to))
			e := encodeContainerAs(c, nriv1beta1.ContainerState(to))
			if c.State != nriv1beta1.ContainerState(from) {
				t.Fatalf("%d -> %d: encodeContainerAs modified the container", from, to)
			}
			c.State = nriv1beta1.ContainerState(to)
			if !bytes.Equal(got, mustMarshal(t, c)) {
				t.Fatalf("%d -> %d: withState: not MarshalVT's bytes", from, to)
			}
			if !bytes.Equal(e.raw, mustMarshal(t, c)) || e.st != c.State || e.id != c.Id || e.name != c.Name {
				t.Fatalf("%d -> %d: encodeContainerAs: not MarshalVT's bytes, or a wrong index", from, to)
			}
			if !bytes.Equal(raw, keep) {
				t.Fatalf("%d -> %d: the input was modified", from, to)
			}
		}
	}
	dup := protowire.AppendVarint(protowire.AppendTag(nil, fieldCtrState, protowire.VarintType), 2)
	raw := append(mustMarshal(t, &nriv1beta1.Container{Id: "a", State: nriv1beta1.ContainerState_CONTAINER_STATE_CREATED}), dup...)
	if !bytes.Equal(withState(raw, nriv1beta1.ContainerState_CONTAINER_STATE_STOPPED),
		mustMarshal(t, &nriv1beta1.Container{Id: "a", State: nriv1beta1.ContainerState_CONTAINER_STATE_STOPPED})) {
		t.Fatal("a repeated state field was not replaced")
	}
}

// TestApplyUpdatesReencodes: an update overlays the stored container's
// resources in new bytes; the bytes a snapshot took are untouched, and
// unknown containers or updates without resources change nothing.
func TestApplyUpdatesReencodes(t *testing.T) {
	s := newState()
	c := oneKey(fixture.Container(1, 0))
	s.recordContainer(c, nriv1beta1.ContainerState_CONTAINER_STATE_CREATED)
	snap := s.encoded()
	old := bytes.Clone(snap.ctrs[0].raw)
	s.applyUpdates([]*nriv1beta1.ContainerUpdate{
		{ContainerId: c.Id, Linux: &nriv1beta1.LinuxContainerUpdate{Resources: &nriv1beta1.LinuxResources{
			Cpu: &nriv1beta1.LinuxCPU{Cpus: "0-3"}, Memory: &nriv1beta1.LinuxMemory{Limit: wrapperspb.Int64(1 << 30)}}}},
		{ContainerId: "unknown", Linux: &nriv1beta1.LinuxContainerUpdate{Resources: &nriv1beta1.LinuxResources{}}},
		{ContainerId: c.Id},
	})
	if !bytes.Equal(snap.ctrs[0].raw, old) {
		t.Fatal("an update wrote into bytes a snapshot holds")
	}
	want := c.CloneVT()
	want.Linux.Resources = overlayResources(want.Linux.Resources, &nriv1beta1.LinuxResources{
		Cpu: &nriv1beta1.LinuxCPU{Cpus: "0-3"}, Memory: &nriv1beta1.LinuxMemory{Limit: wrapperspb.Int64(1 << 30)}})
	got := s.container(c.Id)
	if !proto.Equal(got, want) || got.Linux.Resources.Cpu.Cpus != "0-3" {
		t.Fatalf("updated container %v", got.GetLinux().GetResources())
	}
	if !bytes.Equal(s.ctrs[c.Id].raw, mustMarshal(t, want)) {
		t.Fatal("the updated container is not stored as MarshalVT's bytes")
	}
	if _, ok := s.ctrs["unknown"]; ok {
		t.Fatal("an update of an unknown container was stored")
	}
}

// TestReplaceReturnsVanished: replace swaps the state and returns what is
// no longer in it, decoded; snapshots are sorted by id.
func TestReplaceReturnsVanished(t *testing.T) {
	s := newState()
	var pe []podEntry
	var ce []ctrEntry
	for _, n := range []int{3, 1, 2} {
		pe = append(pe, encodePod(fixture.Pod(n)))
		ce = append(ce, encodeContainer(fixture.Container(n, 0)))
	}
	if gp, gc := s.replace(pe, ce); len(gp)+len(gc) != 0 {
		t.Fatalf("replacing the empty state: %d, %d vanished", len(gp), len(gc))
	}
	pods, ctrs := s.snapshot()
	for i := 1; i < len(pods); i++ {
		if pods[i-1].Id >= pods[i].Id || ctrs[i-1].Id >= ctrs[i].Id {
			t.Fatal("the snapshot is not sorted by id")
		}
	}
	if !proto.Equal(pods[0], fixture.Pod(1)) || !proto.Equal(ctrs[0], fixture.Container(1, 0)) {
		t.Fatal("the snapshot does not decode to the objects")
	}
	gp, gc := s.replace(pe[1:], ce[:1])
	if len(gp) != 1 || !proto.Equal(gp[0], fixture.Pod(3)) || len(gc) != 2 {
		t.Fatalf("vanished %d pods, %d containers", len(gp), len(gc))
	}
	if s.pod(fixture.Pod(3).Id) != nil || s.container(fixture.Container(3, 0).Id) == nil {
		t.Fatal("the state after replace is wrong")
	}
	if pod, ok := s.containerPod(fixture.Container(3, 0).Id); !ok || pod != fixture.Pod(3).Id {
		t.Fatalf("containerPod: %q %v", pod, ok)
	}
}

// TestSetRuntimeEncoded: the runtime's encodings are kept as they are
// (the entries alias the input) and decode to its objects; a malformed
// entry fails the attach with INVALID_ARGUMENT naming it, and leaves the
// state as it was.
func TestSetRuntimeEncoded(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	pod, ctr := fixture.Pod(1), fixture.Container(1, 0)
	pods, ctrs := [][]byte{mustMarshal(t, pod)}, [][]byte{mustMarshal(t, ctr), mustMarshal(t, fixture.Container(1, 1))}
	if err := s.SetRuntimeEncoded(t.Context(), RuntimeInfo{}, nil, pods, ctrs); err != nil {
		t.Fatal(err)
	}
	snap := s.state.encoded()
	if &snap.pods[0].raw[0] != &pods[0][0] {
		t.Fatal("the pod's encoding was copied")
	}
	gotPods, gotCtrs := s.Snapshot()
	if !proto.Equal(gotPods[0], pod) || !proto.Equal(gotCtrs[0], ctr) {
		t.Fatal("the state does not decode to the runtime's objects")
	}
	bad := func(c *nriv1beta1.Container) []byte { return mustMarshal(t, c) }
	nested := mustMarshal(t, ctr)
	// A container whose linux message's length runs past its end: the
	// top level parses, the nested message does not.
	inner := protowire.AppendBytes(nil, []byte{0x0a, 0x05, 'x'})
	nested = append(protowire.AppendTag(nested, 12, protowire.BytesType), inner...)
	wrongType := protowire.AppendVarint(protowire.AppendTag(mustMarshal(t, &nriv1beta1.Container{Id: "c"}), 5, protowire.VarintType), 1)
	badLabel := ctr.CloneVT()
	badLabel.Labels["k"] = "\xff"
	for _, tc := range []struct {
		name string
		pods [][]byte
		ctrs [][]byte
		want string
	}{
		{"truncated", pods, [][]byte{ctrs[0][:len(ctrs[0])-3]}, "containers[0]: "},
		{"empty id", pods, [][]byte{ctrs[0], bad(&nriv1beta1.Container{Name: "x"})}, "containers[1]: id: must not be empty"},
		{"empty pod id", [][]byte{bad(&nriv1beta1.Container{Name: "x"})}, nil, "pods[0]: id: must not be empty"},
		{"invalid UTF-8 name", pods, [][]byte{bad(&nriv1beta1.Container{Id: "c", Name: "\xff"})}, "containers[0]: name: not valid UTF-8"},
		{"long id", pods, [][]byte{bad(&nriv1beta1.Container{Id: strings.Repeat("i", maxIndexedString+1)})}, "containers[0]: id: 4097 bytes"},
		{"id of the wrong wire type", pods, [][]byte{protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 1)}, "containers[0]: field 1: wire type 0"},
		{"malformed nested message", pods, [][]byte{nested}, "containers[0]: "},
		{"nested field of the wrong wire type", pods, [][]byte{wrongType}, "containers[0]: labels: wire type 0, want 2"},
		{"invalid UTF-8 in a label", pods, [][]byte{bad(badLabel)}, "containers[0]: labels: value: not valid UTF-8"},
		{"oversized", pods, [][]byte{append(mustMarshal(t, &nriv1beta1.Container{Id: "c"}), protowire.AppendBytes(protowire.AppendTag(nil, 999, protowire.BytesType), make([]byte, s.opts.maxMessageSize))...)}, "over the maximum message size"},
	} {
		err := s.SetRuntimeEncoded(t.Context(), RuntimeInfo{}, nil, tc.pods, tc.ctrs)
		if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.HasPrefix(st.Message(), tc.want) && !strings.Contains(st.Message(), tc.want) {
			t.Errorf("%s: %v, want INVALID_ARGUMENT %q", tc.name, err, tc.want)
		}
		if _, c := s.Snapshot(); len(c) != 2 {
			t.Fatalf("%s: the refused attach changed the state", tc.name)
		}
	}
	// Unknown fields pass (protobuf keeps them), and so do packed
	// repeated scalars.
	unknown := append(mustMarshal(t, &nriv1beta1.Container{Id: "u"}), protowire.AppendVarint(protowire.AppendTag(nil, 999, protowire.VarintType), 5)...)
	if err := s.SetRuntimeEncoded(t.Context(), RuntimeInfo{}, nil, nil, [][]byte{unknown}); err != nil {
		t.Fatalf("an unknown field: %v", err)
	}
}

// TestCheckWirePacked: a repeated scalar may come packed or not; a
// truncated packed payload is malformed.
func TestCheckWirePacked(t *testing.T) {
	md := (&nriv1beta1.User{}).ProtoReflect().Descriptor()
	const gids = 3 // User.additional_gids, repeated uint32
	packed := protowire.AppendBytes(protowire.AppendTag(nil, gids, protowire.BytesType), protowire.AppendVarint(protowire.AppendVarint(nil, 3), 300))
	unpacked := protowire.AppendVarint(protowire.AppendTag(nil, gids, protowire.VarintType), 7)
	for _, raw := range [][]byte{packed, unpacked, append(packed, unpacked...)} {
		if err := checkWire(raw, md, 0); err != nil {
			t.Fatalf("well-formed: %v", err)
		}
		u := &nriv1beta1.User{}
		if err := u.UnmarshalVT(raw); err != nil {
			t.Fatalf("vtproto refuses what checkWire passed: %v", err)
		}
	}
	if err := checkWire(protowire.AppendBytes(protowire.AppendTag(nil, gids, protowire.BytesType), []byte{0x80}), md, 0); err == nil {
		t.Fatal("a truncated packed varint passed")
	}
	if err := checkWire(protowire.AppendFixed32(protowire.AppendTag(nil, 1, protowire.Fixed32Type), 1), md, 0); err == nil {
		t.Fatal("a uint32 of wire type fixed32 passed")
	}
}
