package bridge

import (
	"fmt"
	"math/rand/v2"
	"testing"

	v1alpha1 "github.com/containerd/nri/pkg/api"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
)

// The bridge's path before messages crossed by their bytes, kept here to
// prove the new one gives the same messages: every v1beta1 message was
// converted to v1alpha1 (encoded, decoded), and the v1alpha1 message
// encoded again; every classic answer the other way.

// convert copies in into out, a message of the other API version, through
// their shared wire format.
func convert[T vtMessage](t testing.TB, in vtMessage, out T) T {
	t.Helper()
	b, err := in.MarshalVT()
	if err != nil {
		t.Fatalf("encoding %T: %v", in, err)
	}
	if err := out.UnmarshalVT(b); err != nil {
		t.Fatalf("decoding %T as %T: %v", in, out, err)
	}
	return out
}

func oldAlphaUpdates(t testing.TB, in []*nriv1beta1.ContainerUpdate) []*v1alpha1.ContainerUpdate {
	var out []*v1alpha1.ContainerUpdate
	for _, u := range in {
		out = append(out, convert(t, u, &v1alpha1.ContainerUpdate{}))
	}
	return out
}

func oldCreateReply(t testing.TB, rsp *nriv1beta1.AdaptationServiceCreateContainerResponse) vtMessage {
	out := &v1alpha1.CreateContainerResponse{}
	if rsp.GetAdjust() != nil {
		out.Adjust = convert(t, rsp.GetAdjust(), &v1alpha1.ContainerAdjustment{})
	}
	out.Update = oldAlphaUpdates(t, rsp.GetUpdate())
	return out
}

func oldUpdateReply(t testing.TB, rsp *nriv1beta1.AdaptationServiceUpdateContainerResponse, id string, requested *nriv1beta1.LinuxResources) vtMessage {
	updates := oldAlphaUpdates(t, rsp.GetUpdate())
	if final := rsp.GetLinuxResources(); final != nil && !final.EqualVT(requested) {
		updates = append(updates, convert(t, &nriv1beta1.ContainerUpdate{ContainerId: id,
			Linux: &nriv1beta1.LinuxContainerUpdate{Resources: final}}, &v1alpha1.ContainerUpdate{}))
	}
	return &v1alpha1.UpdateContainerResponse{Update: updates}
}

func oldStopReply(t testing.TB, rsp *nriv1beta1.AdaptationServiceStopContainerResponse) vtMessage {
	return &v1alpha1.StopContainerResponse{Update: oldAlphaUpdates(t, rsp.GetUpdate())}
}

// filler sets random fields of messages, to a bounded depth: every field
// is set or left unset at random, lists and maps get zero to three entries,
// enums take their declared values.
type filler struct {
	r     *rand.Rand
	depth int
}

func newFiller(seed uint64) *filler { return &filler{r: rand.New(rand.NewPCG(seed, 17)), depth: 6} }

func (f *filler) fill(m protoreflect.Message, depth int) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		isMsg := fd.Kind() == protoreflect.MessageKind || (fd.IsMap() && fd.MapValue().Kind() == protoreflect.MessageKind)
		if f.r.IntN(3) == 0 || (isMsg && depth >= f.depth) {
			continue
		}
		switch {
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for range f.r.IntN(4) {
				v := mp.NewValue()
				if fd.MapValue().Kind() == protoreflect.MessageKind {
					f.fill(v.Message(), depth+1)
				} else {
					v = f.scalar(fd.MapValue())
				}
				mp.Set(f.scalar(fd.MapKey()).MapKey(), v)
			}
		case fd.IsList():
			l := m.Mutable(fd).List()
			for range f.r.IntN(4) {
				if fd.Kind() == protoreflect.MessageKind {
					v := l.NewElement()
					f.fill(v.Message(), depth+1)
					l.Append(v)
				} else {
					l.Append(f.scalar(fd))
				}
			}
		case fd.Kind() == protoreflect.MessageKind:
			f.fill(m.Mutable(fd).Message(), depth+1)
		default:
			m.Set(fd, f.scalar(fd))
		}
	}
}

func (f *filler) scalar(fd protoreflect.FieldDescriptor) protoreflect.Value {
	n := f.r.Int64N(1 << 40)
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(f.r.IntN(2) == 1)
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		return protoreflect.ValueOfEnum(vals.Get(f.r.IntN(vals.Len())).Number())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(n) - 1<<20)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(n - 1<<39)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(n))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(n))
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(n) / 7)
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(float64(n) / 7)
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(fmt.Sprintf("%s-%x", fd.Name(), n))
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte(fmt.Sprintf("%s-%x", fd.Name(), n)))
	}
	panic(fmt.Sprintf("unhandled kind %v of %s", fd.Kind(), fd.FullName()))
}

// random returns m filled at random.
func random[M proto.Message](f *filler, m M) M {
	f.fill(m.ProtoReflect(), 0)
	return m
}

// sameAsAlpha checks that got and want, encodings of the v1alpha1 message
// like, decode to the same message, with no field v1alpha1 does not know.
func sameAsAlpha(t *testing.T, label string, got []byte, want vtMessage, like proto.Message) {
	t.Helper()
	wb, err := want.MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	g, w := like.ProtoReflect().New().Interface(), like.ProtoReflect().New().Interface()
	if err := proto.Unmarshal(got, g); err != nil {
		t.Fatalf("%s: the reply does not decode as %T: %v", label, like, err)
	}
	if err := proto.Unmarshal(wb, w); err != nil {
		t.Fatal(err)
	}
	if len(g.ProtoReflect().GetUnknown()) > 0 {
		t.Errorf("%s: the reply has fields %T does not know", label, like)
	}
	if !proto.Equal(g, w) {
		t.Errorf("%s: the reply decodes to\n  %v\nthe convert path gave\n  %v", label, g, w)
	}
}

// TestRepliesAsConvertPath: the replies the bridge encodes straight from
// the server's v1beta1 answers decode, as v1alpha1, to exactly what
// converting the answers to v1alpha1 and encoding those gave, for random
// answers (every field of every shared message, evictions and the
// v1beta1-only fields included) and a typical one.
func TestRepliesAsConvertPath(t *testing.T) {
	typical := &nriv1beta1.AdaptationServiceCreateContainerResponse{Adjust: fixture.CreateContainerResponse().Adjust,
		Update: []*nriv1beta1.ContainerUpdate{{ContainerId: "c1", Linux: &nriv1beta1.LinuxContainerUpdate{
			Resources: fixture.Container(1, 0).GetLinux().GetResources()}}},
		Evict: []*nriv1beta1.ContainerEviction{{ContainerId: "c2", Reason: "r"}}}
	b, err := createReply(typical)
	if err != nil {
		t.Fatal(err)
	}
	sameAsAlpha(t, "typical CreateContainer", b, oldCreateReply(t, typical), &v1alpha1.CreateContainerResponse{})
	for seed := range uint64(300) {
		f := newFiller(seed)
		crsp := random(f, &nriv1beta1.AdaptationServiceCreateContainerResponse{})
		b, err := createReply(crsp)
		if err != nil {
			t.Fatal(err)
		}
		sameAsAlpha(t, fmt.Sprintf("CreateContainer seed %d", seed), b, oldCreateReply(t, crsp), &v1alpha1.CreateContainerResponse{})

		ursp := random(f, &nriv1beta1.AdaptationServiceUpdateContainerResponse{})
		requested := random(f, &nriv1beta1.LinuxResources{})
		if seed%3 == 0 {
			ursp.LinuxResources = requested.CloneVT() // unchanged: no update of the target
		}
		b, err = updateReply(ursp, "target", requested)
		if err != nil {
			t.Fatal(err)
		}
		sameAsAlpha(t, fmt.Sprintf("UpdateContainer seed %d", seed), b, oldUpdateReply(t, ursp, "target", requested), &v1alpha1.UpdateContainerResponse{})

		srsp := random(f, &nriv1beta1.AdaptationServiceStopContainerResponse{})
		b, err = stopReply(srsp)
		if err != nil {
			t.Fatal(err)
		}
		sameAsAlpha(t, fmt.Sprintf("StopContainer seed %d", seed), b, oldStopReply(t, srsp), &v1alpha1.StopContainerResponse{})
		if t.Failed() {
			return
		}
	}
}

// TestUpdateReplyKeepsTheServersSlice: the target's final update is
// appended to a copy of the server's list, never into it.
func TestUpdateReplyKeepsTheServersSlice(t *testing.T) {
	updates := make([]*nriv1beta1.ContainerUpdate, 1, 4)
	updates[0] = &nriv1beta1.ContainerUpdate{ContainerId: "other"}
	rsp := &nriv1beta1.AdaptationServiceUpdateContainerResponse{Update: updates,
		LinuxResources: &nriv1beta1.LinuxResources{Cpu: &nriv1beta1.LinuxCPU{Cpus: "1"}}}
	if _, err := updateReply(rsp, "target", &nriv1beta1.LinuxResources{}); err != nil {
		t.Fatal(err)
	}
	if got := updates[:2][1]; got != nil {
		t.Fatalf("the server's update list was written into: %v", got)
	}
}

// TestStateChangeByItsBytes: a notification request's encoding becomes the
// StateChangeEvent the convert path built from its pod and container, and
// back.
func TestStateChangeByItsBytes(t *testing.T) {
	want := fixture.CreateContainerRequest(1, 0)
	req := &nriv1beta1.StartContainerRequest{Pod: want.Pod, Container: want.Container}
	b, err := req.MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	sc, err := toStateChange(int32(nriv1beta1.Event_EVENT_START_CONTAINER), b)
	if err != nil {
		t.Fatal(err)
	}
	old := &v1alpha1.StateChangeEvent{Event: v1alpha1.Event_START_CONTAINER,
		Pod: convert(t, want.Pod, &v1alpha1.PodSandbox{}), Container: convert(t, want.Container, &v1alpha1.Container{})}
	sameAsAlpha(t, "StateChange", sc, old, &v1alpha1.StateChangeEvent{})

	oldBytes, err := old.MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	for _, withCtr := range []bool{true, false} {
		event, back, err := fromStateChange(oldBytes, func(int32) bool { return withCtr })
		if err != nil {
			t.Fatal(err)
		}
		got := &nriv1beta1.StartContainerRequest{}
		if err := got.UnmarshalVT(back); err != nil {
			t.Fatal(err)
		}
		wantReq := &nriv1beta1.StartContainerRequest{Pod: want.Pod}
		if withCtr {
			wantReq.Container = want.Container
		}
		if event != int32(v1alpha1.Event_START_CONTAINER) || !got.EqualVT(wantReq) {
			t.Fatalf("with the container %v: event %d, request differs from the StateChange's pod and container", withCtr, event)
		}
	}
	if _, _, err := fromStateChange([]byte{0xff}, func(int32) bool { return true }); err == nil {
		t.Fatal("an undecodable StateChange was taken")
	}
}

// BenchmarkCreateReply: the bridge's reply to a CreateContainer with a
// typical adjustment and one update, encoded straight from the server's
// answer (direct) or converted to v1alpha1 first (convert, the old path).
func BenchmarkCreateReply(b *testing.B) {
	rsp := &nriv1beta1.AdaptationServiceCreateContainerResponse{Adjust: fixture.CreateContainerResponse().Adjust,
		Update: []*nriv1beta1.ContainerUpdate{{ContainerId: "c1", Linux: &nriv1beta1.LinuxContainerUpdate{
			Resources: fixture.Container(1, 0).GetLinux().GetResources()}}}}
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := createReply(rsp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("convert", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := oldCreateReply(b, rsp).MarshalVT(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
