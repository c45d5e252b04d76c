// Package utf8check finds strings that are not valid UTF-8 in a decoded
// protobuf message.
//
// protobuf-go rejects such strings when it decodes, but the vtprotobuf fast
// paths nri-grpc decodes with do not check: a plugin's invalid string would
// otherwise travel on to a runtime whose protobuf-go client then cannot
// decode the answer at all. Check walks the message once, through
// protoreflect, at the edge where the message entered.
package utf8check

import (
	"strconv"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Check returns the path of the first string field of m, at any depth, that
// is not valid UTF-8 ("adjust.env[2].value", "annotations[\"k\"]"), or ""
// when every string is valid. Map keys are checked too.
func Check(m proto.Message) string {
	if m == nil {
		return ""
	}
	return walk(m.ProtoReflect())
}

// walk returns the path below m of the first invalid string, or "". The
// path is built only on the way back from a bad string: a valid message
// costs no allocation.
func walk(m protoreflect.Message) string {
	var bad string
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList():
			l := v.List()
			for i := range l.Len() {
				if sub, ok := value(fd, l.Get(i)); !ok {
					bad = join(string(fd.Name())+"["+strconv.Itoa(i)+"]", sub)
					return false
				}
			}
		case fd.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				key := k.Value()
				if fd.MapKey().Kind() == protoreflect.StringKind && !utf8.ValidString(key.String()) {
					bad = string(fd.Name()) + "[key]"
					return false
				}
				if sub, ok := value(fd.MapValue(), mv); !ok {
					bad = join(string(fd.Name())+"["+keyString(fd.MapKey(), key)+"]", sub)
					return false
				}
				return true
			})
			if bad != "" {
				return false
			}
		default:
			if sub, ok := value(fd, v); !ok {
				bad = join(string(fd.Name()), sub)
				return false
			}
		}
		return true
	})
	return bad
}

// value checks one singular value of fd's kind: ok false with the path
// below it (empty for a string itself) when it holds an invalid string.
func value(fd protoreflect.FieldDescriptor, v protoreflect.Value) (sub string, ok bool) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return "", utf8.ValidString(v.String())
	case protoreflect.MessageKind, protoreflect.GroupKind:
		sub := walk(v.Message())
		return sub, sub == ""
	}
	return "", true
}

func join(name, sub string) string {
	if sub == "" {
		return name
	}
	return name + "." + sub
}

// keyString renders a valid map key for a path, short.
func keyString(fd protoreflect.FieldDescriptor, k protoreflect.Value) string {
	if fd.Kind() == protoreflect.StringKind {
		s := k.String()
		if len(s) > 32 {
			s = s[:32] + "..."
		}
		return strconv.Quote(s)
	}
	return k.String()
}
