package merge

import (
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/wrapperspb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// KeyDeviceCgroupRule is the FieldChange key of a device cgroup rule added to
// a container (linux.resources.devices). Such rules have no Field of their
// own (classic NRI does not track their ownership), so their changes carry
// FIELD_UNSPECIFIED and this key.
const KeyDeviceCgroupRule = "device_cgroup_rule"

// recorder appends FieldChanges for one Apply call, when asked to.
type recorder struct {
	out *[]*nriv1beta1.FieldChange
}

// on reports whether changes are recorded; callers test it before rendering
// values, so that nothing is rendered when nobody asked.
func (r recorder) on() bool { return r.out != nil }

func (r recorder) add(id string, field nriv1beta1.Field, key, value string, removed bool) {
	*r.out = append(*r.out, &nriv1beta1.FieldChange{
		ContainerId: id,
		Field:       field,
		Key:         key,
		Value:       value,
		Removed:     removed,
	})
}

func i64(v *wrapperspb.Int64Value) string   { return strconv.FormatInt(v.GetValue(), 10) }
func u64(v *wrapperspb.UInt64Value) string  { return strconv.FormatUint(v.GetValue(), 10) }
func bln(v *wrapperspb.BoolValue) string    { return strconv.FormatBool(v.GetValue()) }
func str(v *wrapperspb.StringValue) string  { return v.GetValue() }
func u32(v *wrapperspb.UInt32Value) string  { return strconv.FormatUint(uint64(v.GetValue()), 10) }
func joinArgs(args []string) string         { return strings.Join(args, " ") }
func optU32(v *wrapperspb.UInt32Value) bool { return v != nil }

func renderMount(m *nriv1beta1.Mount) string {
	var b strings.Builder
	b.WriteString("type=")
	b.WriteString(m.GetType())
	b.WriteString(" source=")
	b.WriteString(m.GetSource())
	if len(m.GetOptions()) > 0 {
		b.WriteString(" options=")
		b.WriteString(strings.Join(m.GetOptions(), ","))
	}
	return b.String()
}

func renderDevice(d *nriv1beta1.LinuxDevice) string {
	s := d.GetType() + " " + strconv.FormatInt(d.GetMajor(), 10) + ":" + strconv.FormatInt(d.GetMinor(), 10)
	if optU32(d.GetFileMode()) {
		s += " mode=0" + strconv.FormatUint(uint64(d.GetFileMode().GetValue()), 8)
	}
	if optU32(d.GetUid()) {
		s += " uid=" + u32(d.GetUid())
	}
	if optU32(d.GetGid()) {
		s += " gid=" + u32(d.GetGid())
	}
	return s
}

func renderHook(h *nriv1beta1.Hook) string {
	if len(h.GetArgs()) == 0 {
		return h.GetPath()
	}
	return h.GetPath() + " [" + joinArgs(h.GetArgs()) + "]"
}

func renderRlimit(l *nriv1beta1.POSIXRlimit) string {
	return "hard=" + strconv.FormatUint(l.GetHard(), 10) + " soft=" + strconv.FormatUint(l.GetSoft(), 10)
}

func renderDeviceRule(d *nriv1beta1.LinuxDeviceCgroup) string {
	s := "deny"
	if d.GetAllow() {
		s = "allow"
	}
	s += " " + d.GetType() + " "
	if d.GetMajor() != nil {
		s += i64(d.GetMajor())
	} else {
		s += "*"
	}
	s += ":"
	if d.GetMinor() != nil {
		s += i64(d.GetMinor())
	} else {
		s += "*"
	}
	return s + " " + d.GetAccess()
}

func renderIOPriority(p *nriv1beta1.LinuxIOPriority) string {
	return "class=" + nriv1beta1.IOPrioClass_name[int32(p.GetClass())] +
		" priority=" + strconv.FormatInt(int64(p.GetPriority()), 10)
}

func renderSeccomp(s *nriv1beta1.LinuxSeccomp) string {
	return "default_action=" + s.GetDefaultAction() +
		" syscall_rules=" + strconv.Itoa(len(s.GetSyscalls()))
}

func renderScheduler(s *nriv1beta1.LinuxScheduler) string {
	return "policy=" + nriv1beta1.LinuxSchedulerPolicy_name[int32(s.GetPolicy())] +
		" nice=" + strconv.FormatInt(int64(s.GetNice()), 10) +
		" priority=" + strconv.FormatInt(int64(s.GetPriority()), 10)
}

func renderMemoryPolicy(p *nriv1beta1.LinuxMemoryPolicy) string {
	return "mode=" + nriv1beta1.MpolMode_name[int32(p.GetMode())] + " nodes=" + p.GetNodes()
}

func renderNetDevice(d *nriv1beta1.LinuxNetDevice) string { return d.GetName() }
func renderString(s string) string                        { return s }

func renderPids(p *nriv1beta1.LinuxPids) string { return strconv.FormatInt(p.GetLimit(), 10) }
