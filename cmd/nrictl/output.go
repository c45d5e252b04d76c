package main

import (
	"encoding/base64"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

var (
	jsonDoc  = protojson.MarshalOptions{Multiline: true, Indent: "  "}
	jsonLine = protojson.MarshalOptions{}
)

// printJSON writes m as an indented protojson document.
func printJSON(w io.Writer, m proto.Message) error {
	b, err := jsonDoc.Marshal(m)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// printJSONLine writes m as one line of protojson (for streams).
func printJSONLine(w io.Writer, m proto.Message) error {
	b, err := jsonLine.Marshal(m)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

// enumWords turns "EVENT_CREATE_CONTAINER" (prefix "EVENT_") into
// "CreateContainer".
func camel(name, prefix string) string {
	var b strings.Builder
	for _, w := range strings.Split(strings.TrimPrefix(name, prefix), "_") {
		if w == "" {
			continue
		}
		b.WriteString(w[:1])
		b.WriteString(strings.ToLower(w[1:]))
	}
	return b.String()
}

// kebab turns "CALL_OUTCOME_NOT_EVALUATED" (prefix "CALL_OUTCOME_") into
// "not-evaluated".
func kebab(name, prefix string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(name, prefix)), "_", "-")
}

func eventName(e nriv1beta1.Event) string { return camel(e.String(), "EVENT_") }

func callOutcome(o nriv1beta1.CallOutcome) string { return kebab(o.String(), "CALL_OUTCOME_") }

func dispatchOutcome(o nriv1beta1.DispatchOutcome) string {
	return kebab(o.String(), "DISPATCH_OUTCOME_")
}

// parseEvent accepts "CreateContainer", "create-container",
// "create_container", "EVENT_CREATE_CONTAINER" or the enum number.
func parseEvent(s string) (nriv1beta1.Event, error) {
	norm := func(x string) string {
		x = strings.ToUpper(strings.NewReplacer("-", "", "_", "").Replace(x))
		return strings.TrimPrefix(x, "EVENT")
	}
	want := norm(s)
	for v, name := range nriv1beta1.Event_name {
		e := nriv1beta1.Event(v)
		if e <= nriv1beta1.Event_EVENT_UNSPECIFIED || e >= nriv1beta1.Event_EVENT_LAST {
			continue
		}
		if norm(name) == want || strconv.Itoa(int(v)) == s {
			return e, nil
		}
	}
	return 0, fmt.Errorf("%q is not an event (for example CreateContainer, StopPodSandbox)", s)
}

// short shortens an id to n characters unless full is set.
func short(id string, n int, full bool) string {
	if full || len(id) <= n {
		return id
	}
	return id[:n]
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func plugin(p *nriv1beta1.PluginInstance) string { return p.GetIndex() + "-" + p.GetName() }

// change renders a FieldChange as "env[NAME]=value", "-mounts[/data]" or
// "cpu_set_cpus=2-3".
func change(c *nriv1beta1.FieldChange) string {
	s := strings.ToLower(strings.TrimPrefix(c.GetField().String(), "FIELD_"))
	switch {
	case c.GetField() == nriv1beta1.Field_FIELD_UNSPECIFIED:
		s = c.GetKey()
	case c.GetKey() != "":
		s += "[" + c.GetKey() + "]"
	}
	if c.GetRemoved() {
		return "-" + s
	}
	if c.GetValue() != "" {
		s += "=" + c.GetValue()
	}
	return s
}

func changes(cs []*nriv1beta1.FieldChange) string {
	var out []string
	for _, c := range cs {
		out = append(out, change(c))
	}
	return strings.Join(out, " ")
}

func dur(d interface{ AsDuration() time.Duration }, present bool) string {
	if !present {
		return "-"
	}
	return d.AsDuration().Round(time.Microsecond).String()
}

// flatten renders the fields set in m as "path=value" lines, for example
// "linux.resources.cpu.cpus=2-3", "annotations[key]=value", "env[NAME]=value"
// or "mounts[/data].source=/host". Entries of lists are keyed by their
// natural key (container id, destination, path, type, name) when they have
// one.
func flatten(m proto.Message) []string {
	if m == nil {
		return nil
	}
	rm := m.ProtoReflect()
	if !rm.IsValid() {
		return nil
	}
	var out []string
	flattenFields(rm, "", "", &out)
	return out
}

// listKeys are the fields that identify an entry of a list, in order of
// preference.
var listKeys = []protoreflect.Name{"container_id", "destination", "path", "type", "name", "event"}

func flattenFields(m protoreflect.Message, prefix string, skip protoreflect.Name, out *[]string) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if fd.Name() == skip || !m.Has(fd) {
			continue
		}
		name := prefix + string(fd.Name())
		v := m.Get(fd)
		switch {
		case fd.IsMap():
			var keys []string
			entries := map[string]protoreflect.Value{}
			v.Map().Range(func(k protoreflect.MapKey, val protoreflect.Value) bool {
				ks := k.String()
				keys = append(keys, ks)
				entries[ks] = val
				return true
			})
			slices.Sort(keys)
			for _, k := range keys {
				path := name + "[" + k + "]"
				if fd.MapValue().Kind() == protoreflect.MessageKind {
					flattenMessage(entries[k].Message(), path, "", out)
				} else {
					*out = append(*out, path+"="+scalar(fd.MapValue(), entries[k]))
				}
			}
		case fd.IsList():
			l := v.List()
			if fd.Kind() != protoreflect.MessageKind {
				var parts []string
				for j := 0; j < l.Len(); j++ {
					parts = append(parts, scalar(fd, l.Get(j)))
				}
				*out = append(*out, name+"=["+strings.Join(parts, " ")+"]")
				continue
			}
			for j := 0; j < l.Len(); j++ {
				em := l.Get(j).Message()
				if k, v, ok := keyValue(em); ok {
					*out = append(*out, name+"["+k+"]="+v)
					continue
				}
				key, keyField := strconv.Itoa(j), protoreflect.Name("")
				for _, kf := range listKeys {
					if f := em.Descriptor().Fields().ByName(kf); f != nil && f.Kind() == protoreflect.StringKind && em.Get(f).String() != "" {
						key, keyField = em.Get(f).String(), kf
						break
					}
				}
				flattenMessage(em, name+"["+key+"]", keyField, out)
			}
		case fd.Kind() == protoreflect.MessageKind:
			flattenMessage(v.Message(), name, "", out)
		default:
			*out = append(*out, name+"="+scalar(fd, v))
		}
	}
}

func flattenMessage(m protoreflect.Message, path string, skip protoreflect.Name, out *[]string) {
	if s, ok := wellKnown(m); ok {
		*out = append(*out, path+"="+s)
		return
	}
	before := len(*out)
	flattenFields(m, path+".", skip, out)
	if len(*out) == before {
		*out = append(*out, path)
	}
}

// keyValue recognizes KeyValue-like entries (a key and a value string).
func keyValue(m protoreflect.Message) (string, string, bool) {
	fields := m.Descriptor().Fields()
	k, v := fields.ByName("key"), fields.ByName("value")
	if fields.Len() != 2 || k == nil || v == nil || k.Kind() != protoreflect.StringKind || v.Kind() != protoreflect.StringKind {
		return "", "", false
	}
	return m.Get(k).String(), m.Get(v).String(), true
}

// wellKnown renders wrappers, durations and timestamps as one value.
func wellKnown(m protoreflect.Message) (string, bool) {
	d := m.Descriptor()
	full := string(d.FullName())
	if !strings.HasPrefix(full, "google.protobuf.") {
		return "", false
	}
	fields := d.Fields()
	switch full {
	case "google.protobuf.Duration":
		s, n := m.Get(fields.ByName("seconds")).Int(), m.Get(fields.ByName("nanos")).Int()
		return (time.Duration(s)*time.Second + time.Duration(n)).String(), true
	case "google.protobuf.Timestamp":
		s, n := m.Get(fields.ByName("seconds")).Int(), m.Get(fields.ByName("nanos")).Int()
		return time.Unix(s, n).UTC().Format(time.RFC3339Nano), true
	}
	if v := fields.ByName("value"); v != nil && fields.Len() == 1 {
		return scalar(v, m.Get(v)), true
	}
	return "", false
}

func scalar(fd protoreflect.FieldDescriptor, v protoreflect.Value) string {
	switch fd.Kind() {
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
		return strconv.Itoa(int(v.Enum()))
	case protoreflect.BytesKind:
		return base64.StdEncoding.EncodeToString(v.Bytes())
	default:
		return v.String()
	}
}
