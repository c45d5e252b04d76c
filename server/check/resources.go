package check

import (
	"math"
	"strings"

	"google.golang.org/protobuf/types/known/wrapperspb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/untrusted"
)

// CPU bandwidth bounds of the kernel (kernel/sched/core.c
// tg_set_cfs_bandwidth, tg_set_bandwidth since 6.17;
// Documentation/scheduler/sched-bwc.rst), in microseconds: a quota and a
// period are at least 1 ms, a period at most 1 s, a quota at most MAX_BW
// (2^44 - 1 with BW_SHIFT 20, "more than 203 days"). A realtime runtime or
// period must survive the conversion to nanoseconds (kernel/sched/rt.c
// sched_group_set_rt_runtime, sched_group_set_rt_period).
const (
	minCFSUsec   = 1000
	maxPeriodUs  = 1_000_000
	maxQuotaUs   = 1<<44 - 1
	maxRTUsec    = math.MaxUint64 / 1000
	maxCPUNumber = math.MaxUint32
)

// checkResources checks cgroup resources in field-number order: memory
// (1), cpu (2), hugepage_limits (3), blockio_class (4), rdt_class (5),
// unified (6), devices (7). pids (8) needs no check: runc writes "max" for
// any negative limit (opencontainers/cgroups fs2/pids.go), which is what
// the protocol documents ("0 or less means unlimited").
func checkResources(r *nriv1beta1.LinuxResources) *Error {
	if r == nil {
		return nil
	}
	if e := memory(r.GetMemory()); e != nil {
		return e.under("memory")
	}
	if e := cpu(r.GetCpu()); e != nil {
		return e.under("cpu")
	}
	for i, h := range r.GetHugepageLimits() {
		if h == nil {
			continue
		}
		if p := h.GetPageSize(); !pageSize(p) {
			return failAt("page_size", untrusted.Quote(p)+` is not a huge page size "<size>KB|MB|GB|TB|PB" such as "2MB" or "1GB" (runtime-spec config-linux.md "Huge page limits"; the size names a hugetlb cgroup file)`).at("hugepage_limits", i)
		}
	}
	if c := r.GetBlockioClass(); c != nil {
		if e := text(c.GetValue(), MaxNameLen, "NAME_MAX"); e != nil {
			return e.under("blockio_class")
		}
	}
	if c := r.GetRdtClass(); c != nil {
		if e := rdtClass(c.GetValue()); e != nil {
			return e.under("rdt_class")
		}
	}
	if e := firstInMap("unified", r.GetUnified(), unifiedEntry); e != nil {
		return e
	}
	for i, d := range r.GetDevices() {
		if e := deviceRule(d); e != nil {
			return e.at("devices", i)
		}
	}
	return nil
}

// memory checks the memory controller settings: limit (1), reservation
// (2), swap (3): -1 (unlimited) or a size (runtime-spec config-linux.md
// "Memory"; the kernel's page_counter_memparse refuses other negative
// numbers); swappiness (6): 0 to 100, or 2^64-1, which runc reads as
// unset (opencontainers/cgroups fs/memory.go). kernel (4) and kernel_tcp
// (5) need no check: runc 1.2 and later ignore them.
func memory(m *nriv1beta1.LinuxMemory) *Error {
	if m == nil {
		return nil
	}
	if e := memorySize("limit", m.GetLimit()); e != nil {
		return e
	}
	if e := memorySize("reservation", m.GetReservation()); e != nil {
		return e
	}
	if e := memorySize("swap", m.GetSwap()); e != nil {
		return e
	}
	if s := m.GetSwappiness(); s != nil {
		if v := s.GetValue(); v > 100 && v != math.MaxUint64 {
			return failAt("swappiness", utoa(v)+` is outside 0..100 (runtime-spec config-linux.md "Memory"; runc: "valid range is 0-100")`)
		}
	}
	return nil
}

// memorySize checks a memory limit: -1 (unlimited) or a size in bytes.
func memorySize(name string, w *wrapperspb.Int64Value) *Error {
	if v := w.GetValue(); w != nil && v < -1 {
		return failAt(name, itoa(v)+` is neither -1 (unlimited) nor a size in bytes (runtime-spec config-linux.md "Memory"; the kernel refuses other negative limits)`)
	}
	return nil
}

// cpu checks the cpu and cpuset controller settings: quota (2), period
// (3), realtime_runtime (4), realtime_period (5), cpus (6), mems (7).
// shares (1) needs no check: the kernel clamps cpu.shares, and runc maps
// any value into cpu.weight's range on cgroup v2.
func cpu(c *nriv1beta1.LinuxCPU) *Error {
	if c == nil {
		return nil
	}
	if q := c.GetQuota(); q != nil {
		// Any negative quota means unlimited ("max"), 0 leaves it unset.
		if v := q.GetValue(); v > 0 && (v < minCFSUsec || v > maxQuotaUs) {
			return failAt("quota", itoa(v)+" µs is outside 1000..17592186044415 (the kernel's CFS bandwidth bounds: at least 1 ms, at most MAX_BW; a negative quota means unlimited)")
		}
	}
	if p := c.GetPeriod(); p != nil {
		// 0 leaves it unset (runc writes nothing, or the default 100 ms).
		if v := p.GetValue(); v != 0 && (v < minCFSUsec || v > maxPeriodUs) {
			return failAt("period", utoa(v)+" µs is outside 1000..1000000 (the kernel's CFS period bounds: 1 ms to 1 s)")
		}
	}
	if r := c.GetRealtimeRuntime(); r != nil {
		if v := r.GetValue(); v > 0 && uint64(v) > maxRTUsec {
			return failAt("realtime_runtime", itoa(v)+" µs overflows in nanoseconds (kernel sched_group_set_rt_runtime: EINVAL)")
		}
	}
	if p := c.GetRealtimePeriod(); p != nil {
		if v := p.GetValue(); v > maxRTUsec {
			return failAt("realtime_period", utoa(v)+" µs overflows in nanoseconds (kernel sched_group_set_rt_period: EINVAL)")
		}
	}
	if s := c.GetCpus(); s != "" {
		if r := cpuList(s); r != "" {
			return failAt("cpus", untrusted.Quote(s)+r)
		}
	}
	if s := c.GetMems(); s != "" {
		if r := cpuList(s); r != "" {
			return failAt("mems", untrusted.Quote(s)+r)
		}
	}
	return nil
}

// rdtClass checks an RDT class name. The runtime resolves it to a resctrl
// group (NRI's generator WithRdtResolver; goresctrl), whose directory name
// runc checks in turn. goresctrl names its root class "system/default", so
// a "/" is allowed; "." and ".." are never a class.
func rdtClass(c string) *Error {
	if e := text(c, MaxNameLen, "NAME_MAX"); e != nil {
		return e
	}
	if c == "." || c == ".." {
		return fail(untrusted.Quote(c) + ` is not an RDT class name (it would name a directory outside the resctrl groups)`)
	}
	return nil
}

// unifiedEntry checks a cgroup v2 setting: the key is a file of the
// container's cgroup directory, "<controller>.<file>" without "/" (runc
// fs2 setUnified: "must be a file name (no slashes)", "must be in the form
// CONTROLLER.PARAMETER"; runtime-spec config-linux.md "Unified"); the value
// is written to it line by line.
func unifiedEntry(k, v string) *Error {
	if e := text(k, MaxNameLen, "NAME_MAX"); e != nil {
		return e
	}
	if strings.IndexByte(k, '/') >= 0 {
		return fail(untrusted.Quote(k) + ` holds "/": a unified key is a file name of the cgroup directory (runc fs2 setUnified)`)
	}
	if dot := strings.IndexByte(k, '.'); dot <= 0 || dot == len(k)-1 {
		return fail(untrusted.Quote(k) + ` is not of the form "<controller>.<file>", such as "memory.high" (runc fs2 setUnified; cgroup v2 interface file names)`)
	}
	return text(v, MaxValueLen, "MaxValueLen")
}

// deviceRule checks a device cgroup rule: type (2), major (3), minor (4),
// access (5) (runtime-spec config-linux.md "Allowed Device list"; runc
// specconv CreateCgroupConfig).
func deviceRule(d *nriv1beta1.LinuxDeviceCgroup) *Error {
	if d == nil {
		return nil
	}
	switch t := d.GetType(); t {
	case "", "a", "c", "b":
	default:
		return failAt("type", untrusted.Quote(t)+` is not a device cgroup type: a, c or b, empty for all (runtime-spec config-linux.md "Allowed Device list"; runc stringToCgroupDeviceRune)`)
	}
	if e := ruleNumber("major", d.GetMajor()); e != nil {
		return e
	}
	if e := ruleNumber("minor", d.GetMinor()); e != nil {
		return e
	}
	a := d.GetAccess()
	if a == "" {
		return failAt("access", `must not be empty (runc specconv: "device access ... cannot be empty")`)
	}
	if len(a) > MaxKeyLen {
		return tooLong(a, MaxKeyLen, "MaxKeyLen").under("access")
	}
	for i := 0; i < len(a); i++ {
		if c := a[i]; c != 'r' && c != 'w' && c != 'm' {
			return failAt("access", untrusted.Quote(a)+` holds a letter other than r, w and m (runtime-spec config-linux.md "Allowed Device list"; runc's device filter refuses it)`)
		}
	}
	return nil
}

// ruleNumber checks the major or minor number of a device cgroup rule.
// Unset means all; runc reads -1 as all too. Another negative number would
// also match all devices in runc's cgroup v2 filter (devicefilter:
// "hasMajor := rule.Major >= 0") while reading as one device; runc refuses
// numbers above 2^32-1.
func ruleNumber(name string, w *wrapperspb.Int64Value) *Error {
	if v := w.GetValue(); w != nil && (v < -1 || v > math.MaxUint32) {
		return failAt(name, itoa(v)+" is outside -1..4294967295 (unset or -1 match all devices; runc's cgroup v2 device filter reads any other negative number as all too, and refuses numbers above 2^32-1)")
	}
	return nil
}
