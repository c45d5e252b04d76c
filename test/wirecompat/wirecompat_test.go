// Package wirecompat proves that NRI v1beta1 (proto/nri/v1beta1) is
// wire-compatible with NRI v1alpha1 (github.com/containerd/nri pkg/api):
// v1alpha1 bytes parse as v1beta1 with nothing left over, and re-encode to
// the same bytes; and the other way round.
//
// The corpus is built by reflection over the v1alpha1 descriptors: every
// field set, every enum value used, at least two entries in every list and
// map, nested to the leaves. A field added upstream that v1beta1 lacks shows
// up as an unknown field and fails the test.
package wirecompat

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	v1alpha1 "github.com/containerd/nri/pkg/api"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// notCarriedOver are the v1alpha1 messages v1beta1 deliberately drops
// (docs/PROTOCOL.md says why).
var notCarriedOver = map[protoreflect.FullName]bool{
	"nri.pkg.api.v1alpha1.StateChangeEvent": true,
	"nri.pkg.api.v1alpha1.Empty":            true,
	"nri.pkg.api.v1alpha1.LogRequest":       true,
}

// wrappers maps the v1alpha1 Optional* messages to the wire-identical
// google.protobuf wrappers v1beta1 uses instead.
var wrappers = map[protoreflect.FullName]protoreflect.FullName{
	"nri.pkg.api.v1alpha1.OptionalString":   "google.protobuf.StringValue",
	"nri.pkg.api.v1alpha1.OptionalInt":      "google.protobuf.Int64Value",
	"nri.pkg.api.v1alpha1.OptionalInt32":    "google.protobuf.Int32Value",
	"nri.pkg.api.v1alpha1.OptionalUInt32":   "google.protobuf.UInt32Value",
	"nri.pkg.api.v1alpha1.OptionalInt64":    "google.protobuf.Int64Value",
	"nri.pkg.api.v1alpha1.OptionalUInt64":   "google.protobuf.UInt64Value",
	"nri.pkg.api.v1alpha1.OptionalBool":     "google.protobuf.BoolValue",
	"nri.pkg.api.v1alpha1.OptionalFileMode": "google.protobuf.UInt32Value",
}

// firstBeta1Only is the lowest field number reserved for v1beta1-only
// fields in messages shared with v1alpha1.
const firstBeta1Only = 1000

func alphaFile() protoreflect.FileDescriptor { return v1alpha1.File_pkg_api_api_proto }

// counterpart returns the v1beta1 message a v1alpha1 message maps to.
func counterpart(t *testing.T, alpha protoreflect.MessageDescriptor) protoreflect.MessageType {
	t.Helper()
	name := alpha.FullName()
	if w, ok := wrappers[name]; ok {
		name = w
	} else {
		name = protoreflect.FullName("nri.v1beta1." + strings.TrimPrefix(string(name), "nri.pkg.api.v1alpha1."))
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(name)
	if err != nil {
		t.Fatalf("v1alpha1 message %s has no v1beta1 counterpart %s: %v", alpha.FullName(), name, err)
	}
	return mt
}

// topLevelMessages lists the v1alpha1 messages under test (nested messages
// are covered through their parents; map entries are not messages of their
// own on the wire).
func topLevelMessages() []protoreflect.MessageDescriptor {
	var out []protoreflect.MessageDescriptor
	msgs := alphaFile().Messages()
	for i := 0; i < msgs.Len(); i++ {
		md := msgs.Get(i)
		if notCarriedOver[md.FullName()] {
			continue
		}
		out = append(out, md)
	}
	return out
}

// filler builds fully populated messages. variant selects enum values, so
// that running variants 0..n-1 uses every value of every enum with at most n
// values.
type filler struct {
	variant int
	// skip returns true for fields that must stay unset.
	skip func(fd protoreflect.FieldDescriptor) bool
	seq  int
}

func (f *filler) fill(m protoreflect.Message, depth int) {
	if depth > 12 {
		panic(fmt.Sprintf("message nesting deeper than 12 at %s: recursive type?", m.Descriptor().FullName()))
	}
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if f.skip != nil && f.skip(fd) {
			continue
		}
		switch {
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for j := 0; j < 2; j++ {
				k := f.scalar(fd.MapKey(), j).MapKey()
				if fd.MapValue().Kind() == protoreflect.MessageKind {
					v := mp.NewValue()
					f.fill(v.Message(), depth+1)
					mp.Set(k, v)
				} else {
					mp.Set(k, f.scalar(fd.MapValue(), j))
				}
			}
		case fd.IsList():
			l := m.Mutable(fd).List()
			n := 2
			if fd.Kind() == protoreflect.EnumKind {
				n = fd.Enum().Values().Len() // every value, zero included
			}
			for j := 0; j < n; j++ {
				if fd.Kind() == protoreflect.MessageKind {
					v := l.NewElement()
					f.fill(v.Message(), depth+1)
					l.Append(v)
				} else {
					l.Append(f.scalar(fd, j))
				}
			}
		case fd.Kind() == protoreflect.MessageKind:
			f.fill(m.Mutable(fd).Message(), depth+1)
		default:
			m.Set(fd, f.scalar(fd, 0))
		}
	}
}

// scalar returns a non-default value for a scalar field; j distinguishes
// list and map entries.
func (f *filler) scalar(fd protoreflect.FieldDescriptor, j int) protoreflect.Value {
	f.seq++
	n := int64(f.seq*7 + j + 1)
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		idx := f.variant % vals.Len()
		if fd.IsList() {
			idx = j % vals.Len() // lists hold every value
		}
		return protoreflect.ValueOfEnum(vals.Get(idx).Number())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(-n))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(-n * 1_000_003)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(n))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(n) * 1_000_003)
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(n) + 0.5)
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(float64(n) + 0.25)
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(fmt.Sprintf("%s-%d", fd.Name(), n))
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte(fmt.Sprintf("%s-%d", fd.Name(), n)))
	}
	panic(fmt.Sprintf("unhandled kind %v of %s", fd.Kind(), fd.FullName()))
}

// maxEnumValues is the number of variants needed to use every enum value.
func maxEnumValues(fd protoreflect.FileDescriptor) int {
	n := 1
	enums := fd.Enums()
	for i := 0; i < enums.Len(); i++ {
		n = max(n, enums.Get(i).Values().Len())
	}
	msgs := fd.Messages()
	for i := 0; i < msgs.Len(); i++ {
		ne := msgs.Get(i).Enums()
		for j := 0; j < ne.Len(); j++ {
			n = max(n, ne.Get(j).Values().Len())
		}
	}
	return n
}

// unknownFields reports every unknown field left anywhere in m, by path.
func unknownFields(m protoreflect.Message, path string) []string {
	var out []string
	if u := m.GetUnknown(); len(u) > 0 {
		out = append(out, fmt.Sprintf("%s: %d bytes of unknown fields", path, len(u)))
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		p := path + "." + string(fd.Name())
		switch {
		case fd.IsMap():
			if fd.MapValue().Kind() == protoreflect.MessageKind {
				v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
					out = append(out, unknownFields(mv.Message(), fmt.Sprintf("%s[%v]", p, k.Interface()))...)
					return true
				})
			}
		case fd.IsList():
			if fd.Kind() == protoreflect.MessageKind {
				for i := 0; i < v.List().Len(); i++ {
					out = append(out, unknownFields(v.List().Get(i).Message(), fmt.Sprintf("%s[%d]", p, i))...)
				}
			}
		case fd.Kind() == protoreflect.MessageKind:
			out = append(out, unknownFields(v.Message(), p)...)
		}
		return true
	})
	return out
}

var deterministic = proto.MarshalOptions{Deterministic: true}

// roundTrip parses src's bytes as dst, checks nothing was unknown, and checks
// that dst re-encodes to the same bytes.
func roundTrip(t *testing.T, label string, src proto.Message, dst protoreflect.Message) {
	t.Helper()
	in, err := deterministic.Marshal(src)
	if err != nil {
		t.Fatalf("%s: marshal: %v", label, err)
	}
	if len(in) == 0 && src.ProtoReflect().Descriptor().Fields().Len() > 0 {
		t.Fatalf("%s: the corpus entry encodes to nothing", label)
	}
	if err := proto.Unmarshal(in, dst.Interface()); err != nil {
		t.Fatalf("%s: unmarshal as %s: %v", label, dst.Descriptor().FullName(), err)
	}
	if u := unknownFields(dst, string(dst.Descriptor().Name())); len(u) > 0 {
		t.Errorf("%s: fields unknown to %s:\n  %s", label, dst.Descriptor().FullName(), strings.Join(u, "\n  "))
	}
	out, err := deterministic.Marshal(dst.Interface())
	if err != nil {
		t.Fatalf("%s: re-marshal: %v", label, err)
	}
	if !bytes.Equal(in, out) {
		t.Errorf("%s: re-encoding differs: %d bytes in, %d bytes out", label, len(in), len(out))
	}
}

// TestAlphaToBeta: v1alpha1 bytes parse as v1beta1 without unknown fields
// and re-encode identically.
func TestAlphaToBeta(t *testing.T) {
	variants := maxEnumValues(alphaFile())
	for _, md := range topLevelMessages() {
		beta := counterpart(t, md)
		t.Run(string(md.Name()), func(t *testing.T) {
			for v := 0; v < variants; v++ {
				src := dynamicpb.NewMessage(md)
				(&filler{variant: v}).fill(src, 0)
				roundTrip(t, fmt.Sprintf("%s variant %d", md.Name(), v), src, beta.New())
				if t.Failed() {
					break // one failing variant says it all
				}
			}
		})
	}
}

// TestBetaToAlpha: v1beta1 bytes of every field v1alpha1 knows parse as
// v1alpha1 without unknown fields and re-encode identically.
func TestBetaToAlpha(t *testing.T) {
	variants := maxEnumValues(alphaFile())
	beta1Only := func(fd protoreflect.FieldDescriptor) bool { return fd.Number() >= firstBeta1Only }
	for _, md := range topLevelMessages() {
		beta := counterpart(t, md)
		t.Run(string(md.Name()), func(t *testing.T) {
			for v := 0; v < variants; v++ {
				src := beta.New()
				(&filler{variant: v, skip: beta1Only}).fill(src, 0)
				roundTrip(t, fmt.Sprintf("%s variant %d", md.Name(), v), src.Interface(), dynamicpb.NewMessage(md))
				if t.Failed() {
					break // one failing variant says it all
				}
			}
		})
	}
}

// TestFieldNumbers: every field of a shared message either matches a
// v1alpha1 field (same number, kind and cardinality) or is numbered from
// 1000 up; every enum keeps the v1alpha1 numbers.
func TestFieldNumbers(t *testing.T) {
	for _, md := range topLevelMessages() {
		if _, ok := wrappers[md.FullName()]; ok {
			continue
		}
		checkMessage(t, md, counterpart(t, md).Descriptor())
	}
	enums := alphaFile().Enums()
	for i := 0; i < enums.Len(); i++ {
		ae := enums.Get(i)
		if ae.Name() == "Level" {
			continue
		}
		et, err := protoregistry.GlobalTypes.FindEnumByName(protoreflect.FullName("nri.v1beta1." + string(ae.Name())))
		if err != nil {
			t.Errorf("enum %s has no v1beta1 counterpart: %v", ae.FullName(), err)
			continue
		}
		checkEnum(t, ae, et.Descriptor())
	}
}

func checkMessage(t *testing.T, alpha, beta protoreflect.MessageDescriptor) {
	t.Helper()
	af, bf := alpha.Fields(), beta.Fields()
	for i := 0; i < bf.Len(); i++ {
		b := bf.Get(i)
		a := af.ByNumber(b.Number())
		if a == nil {
			if b.Number() < firstBeta1Only {
				t.Errorf("%s.%s = %d: a v1beta1-only field must be numbered >= %d", beta.FullName(), b.Name(), b.Number(), firstBeta1Only)
			}
			continue
		}
		if a.Kind() != b.Kind() || a.Cardinality() != b.Cardinality() || a.IsMap() != b.IsMap() {
			t.Errorf("%s.%s = %d: kind %v/%v, v1alpha1 %s has %v/%v", beta.FullName(), b.Name(), b.Number(),
				b.Kind(), b.Cardinality(), a.FullName(), a.Kind(), a.Cardinality())
		}
	}
	for i := 0; i < af.Len(); i++ {
		if a := af.Get(i); bf.ByNumber(a.Number()) == nil {
			t.Errorf("v1alpha1 field %s = %d is missing from %s", a.FullName(), a.Number(), beta.FullName())
		}
	}
	nested := alpha.Enums()
	for i := 0; i < nested.Len(); i++ {
		ae := nested.Get(i)
		be := beta.Enums().ByName(ae.Name())
		if be == nil {
			t.Errorf("nested enum %s is missing from %s", ae.FullName(), beta.FullName())
			continue
		}
		checkEnum(t, ae, be)
	}
}

func checkEnum(t *testing.T, alpha, beta protoreflect.EnumDescriptor) {
	t.Helper()
	av := alpha.Values()
	for i := 0; i < av.Len(); i++ {
		if beta.Values().ByNumber(av.Get(i).Number()) == nil {
			t.Errorf("v1alpha1 enum value %s = %d is missing from %s", av.Get(i).FullName(), av.Get(i).Number(), beta.FullName())
		}
	}
	if beta.Values().Len() != av.Len() {
		t.Errorf("%s has %d values, v1alpha1 %s has %d", beta.FullName(), beta.Values().Len(), alpha.FullName(), av.Len())
	}
}

// TestPluginServiceMethods: every v1alpha1 Plugin and Runtime RPC but
// StateChange exists in v1beta1.
func TestPluginServiceMethods(t *testing.T) {
	pairs := map[protoreflect.Name]protoreflect.ServiceDescriptor{
		"Plugin":  nriv1beta1.File_nri_v1beta1_plugin_service_proto.Services().ByName("PluginService"),
		"Runtime": nriv1beta1.File_nri_v1beta1_runtime_service_proto.Services().ByName("RuntimeService"),
	}
	for alphaName, beta := range pairs {
		alpha := alphaFile().Services().ByName(alphaName)
		if alpha == nil || beta == nil {
			t.Fatalf("service %s or its counterpart is missing", alphaName)
		}
		for i := 0; i < alpha.Methods().Len(); i++ {
			m := alpha.Methods().Get(i)
			if m.Name() == "StateChange" {
				continue
			}
			if beta.Methods().ByName(m.Name()) == nil {
				t.Errorf("v1alpha1 %s.%s has no v1beta1 counterpart in %s", alphaName, m.Name(), beta.FullName())
			}
		}
	}
}

// TestCorpusIsComplete guards the test itself: the corpus must set every
// field of every message it builds, so a missing v1beta1 field cannot hide.
func TestCorpusIsComplete(t *testing.T) {
	for _, md := range topLevelMessages() {
		m := dynamicpb.NewMessage(md)
		(&filler{variant: 1}).fill(m, 0)
		checkAllSet(t, m, string(md.Name()))
	}
}

func checkAllSet(t *testing.T, m protoreflect.Message, path string) {
	t.Helper()
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		p := path + "." + string(fd.Name())
		if !m.Has(fd) {
			t.Errorf("corpus leaves %s unset", p)
			continue
		}
		switch {
		case fd.IsList():
			if n := m.Get(fd).List().Len(); n < 2 {
				t.Errorf("corpus has %d entries in %s, want >= 2", n, p)
			}
			if fd.Kind() == protoreflect.MessageKind {
				checkAllSet(t, m.Get(fd).List().Get(0).Message(), p+"[0]")
			}
		case fd.IsMap():
			if n := m.Get(fd).Map().Len(); n < 2 {
				t.Errorf("corpus has %d entries in %s, want >= 2", n, p)
			}
		case fd.Kind() == protoreflect.MessageKind:
			checkAllSet(t, m.Get(fd).Message(), p)
		}
	}
}
