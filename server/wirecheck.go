package server

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// maxWireDepth bounds how deep checkWire follows nested messages (the
// deepest of PodSandbox and Container is well under it).
const maxWireDepth = 32

// checkWire checks, without decoding into objects, that raw is a
// well-formed encoding of a message of md: every field parses, known
// fields have their type's wire type (repeated scalars also packed),
// nested messages and map entries are well-formed in turn, and every
// string is valid UTF-8. Unknown fields are only parsed: protobuf keeps
// them. A Synchronize copies stored encodings to plugins as they are, so a
// runtime's entry must be as decodable as a message the server encoded.
func checkWire(raw []byte, md protoreflect.MessageDescriptor, depth int) error {
	if depth > maxWireDepth {
		return fmt.Errorf("messages nested deeper than %d", maxWireDepth)
	}
	fields := md.Fields()
	for len(raw) > 0 {
		num, typ, n := protowire.ConsumeTag(raw)
		if n < 0 {
			return errMalformed
		}
		raw = raw[n:]
		m := protowire.ConsumeFieldValue(num, typ, raw)
		if m < 0 {
			return fmt.Errorf("field %d: %w", num, errMalformed)
		}
		val := raw[:m]
		raw = raw[m:]
		fd := fields.ByNumber(num)
		if fd == nil {
			continue
		}
		if err := checkField(fd, typ, val, depth); err != nil {
			return below(string(fd.Name()), err)
		}
	}
	return nil
}

// wireFault is a checkWire failure in a known field: the path of field
// names to it, outermost first, and the rule it breaks. Its text is the
// path and the rule joined by ": " ("container: name: not valid UTF-8").
type wireFault struct {
	inner []string // the path, innermost first (built on the way back)
	rule  error
}

func (f *wireFault) Error() string {
	var b strings.Builder
	for i := len(f.inner) - 1; i >= 0; i-- {
		b.WriteString(f.inner[i])
		b.WriteString(": ")
	}
	b.WriteString(f.rule.Error())
	return b.String()
}

func (f *wireFault) Unwrap() error { return f.rule }

// field is the path as a field reference: "container.name".
func (f *wireFault) field() string {
	out := slices.Clone(f.inner)
	slices.Reverse(out)
	return strings.Join(out, ".")
}

// below puts err, a failure in field name's value, under name.
func below(name string, err error) error {
	var f *wireFault
	if errors.As(err, &f) {
		f.inner = append(f.inner, name)
		return f
	}
	return &wireFault{inner: []string{name}, rule: err}
}

// checkField checks the value val (as it was on the wire, with a length
// prefix for length-delimited values) of field fd.
func checkField(fd protoreflect.FieldDescriptor, typ protowire.Type, val []byte, depth int) error {
	want := wireType(fd.Kind())
	if typ != want {
		if fd.IsList() && typ == protowire.BytesType && want != protowire.BytesType && want != protowire.StartGroupType {
			b, _ := protowire.ConsumeBytes(val)
			return checkPacked(b, want)
		}
		return fmt.Errorf("wire type %d, want %d", typ, want)
	}
	switch fd.Kind() {
	case protoreflect.MessageKind:
		b, _ := protowire.ConsumeBytes(val)
		return checkWire(b, fd.Message(), depth+1)
	case protoreflect.StringKind:
		if b, _ := protowire.ConsumeBytes(val); !utf8.Valid(b) {
			return errors.New("not valid UTF-8")
		}
	case protoreflect.GroupKind:
		return errors.New("groups are not supported")
	}
	return nil
}

// checkPacked checks a packed repeated scalar's payload.
func checkPacked(b []byte, typ protowire.Type) error {
	for len(b) > 0 {
		var n int
		switch typ {
		case protowire.VarintType:
			_, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			_, n = protowire.ConsumeFixed32(b)
		default:
			_, n = protowire.ConsumeFixed64(b)
		}
		if n < 0 {
			return fmt.Errorf("packed values: %w", errMalformed)
		}
		b = b[n:]
	}
	return nil
}

// wireType is the wire type of a field of kind k.
func wireType(k protoreflect.Kind) protowire.Type {
	switch k {
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind:
		return protowire.BytesType
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return protowire.Fixed32Type
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return protowire.Fixed64Type
	case protoreflect.GroupKind:
		return protowire.StartGroupType
	}
	return protowire.VarintType
}
