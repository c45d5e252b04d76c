package check

import (
	"strconv"
	"strings"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/untrusted"
)

// checkLinux checks the Linux part of an adjustment in field-number order:
// devices (1), resources (2), cgroups_path (3), oom_score_adj (4),
// io_priority (5), seccomp_policy (6), namespaces (7), sysctl (8),
// net_devices (9), scheduler (10), rdt (11), memory_policy (12).
func checkLinux(l *nriv1beta1.LinuxContainerAdjustment) *Error {
	if l == nil {
		return nil
	}
	for i, d := range l.GetDevices() {
		if e := device(d); e != nil {
			return e.at("devices", i)
		}
	}
	if e := checkResources(l.GetResources()); e != nil {
		return e.under("resources")
	}
	if e := cgroupsPath(l.GetCgroupsPath()); e != nil {
		return e.under("cgroups_path")
	}
	if v := l.GetOomScoreAdj(); v != nil {
		// include/uapi/linux/oom.h; runtime-spec config.md "Linux Process".
		if x := v.GetValue(); x < -1000 || x > 1000 {
			return failAt("oom_score_adj", itoa(x)+" is outside -1000..1000 (the kernel's OOM_SCORE_ADJ_MIN..OOM_SCORE_ADJ_MAX)")
		}
	}
	if e := ioPriority(l.GetIoPriority()); e != nil {
		return e.under("io_priority")
	}
	if e := seccomp(l.GetSeccompPolicy()); e != nil {
		return e.under("seccomp_policy")
	}
	for i, n := range l.GetNamespaces() {
		if e := namespace(n); e != nil {
			return e.at("namespaces", i)
		}
	}
	if e := firstInMap("sysctl", l.GetSysctl(), sysctlEntry); e != nil {
		return e
	}
	if e := firstInMap("net_devices", l.GetNetDevices(), netDevice); e != nil {
		return e
	}
	if e := scheduler(l.GetScheduler()); e != nil {
		return e.under("scheduler")
	}
	if e := rdt(l.GetRdt()); e != nil {
		return e.under("rdt")
	}
	if e := memoryPolicy(l.GetMemoryPolicy()); e != nil {
		return e.under("memory_policy")
	}
	return nil
}

// Device number bounds: the kernel's dev_t is 32 bits, MINORBITS (20) of
// them the minor (include/linux/kdev_t.h). mknod(2) takes an unsigned int
// dev, so larger numbers are cut, and runc then refuses the node it made
// (libcontainer/rootfs_linux.go mknodDevice: VerifyInode compares rdev).
const (
	maxMajor = 1<<12 - 1
	maxMinor = 1<<20 - 1
)

// device checks a device node: path (1), type (2), major (3), minor (4),
// file_mode (5) (runtime-spec config-linux.md "Devices"). A "-/dev/x" path
// removes /dev/x: only the path is checked.
func device(d *nriv1beta1.LinuxDevice) *Error {
	if d == nil {
		return nil
	}
	p, marked := unmark(d.GetPath())
	// The spec allows a node anywhere in the container, not only in /dev.
	if e := absPath(p, `runtime-spec config-linux.md "Devices": path is the full path in the container`); e != nil {
		return e.under("path")
	}
	if marked {
		return nil
	}
	t := d.GetType()
	switch t {
	case "c", "b", "u", "p":
	default:
		return failAt("type", untrusted.Quote(t)+` is not a device type: c, b, u or p (runtime-spec config-linux.md "Devices"; runc specconv stringToDeviceRune)`)
	}
	major, minor := d.GetMajor(), d.GetMinor()
	if t == "p" {
		// A FIFO has no device number; runc passes the numbers to mknod(2)
		// and refuses the node when its rdev (0) differs.
		if major != 0 {
			return failAt("major", itoa(major)+" must be 0 for a FIFO (type p has no device number; runc's VerifyInode refuses a mismatch)")
		}
		if minor != 0 {
			return failAt("minor", itoa(minor)+" must be 0 for a FIFO (type p has no device number; runc's VerifyInode refuses a mismatch)")
		}
	}
	if major < 0 || major > maxMajor {
		return failAt("major", itoa(major)+" is outside 0..4095 (12-bit major of the kernel's dev_t, include/linux/kdev_t.h)")
	}
	if minor < 0 || minor > maxMinor {
		return failAt("minor", itoa(minor)+" is outside 0..1048575 (20-bit minor of the kernel's dev_t, MINORBITS in include/linux/kdev_t.h)")
	}
	if m := d.GetFileMode(); m != nil && !fileMode(t, m.GetValue()) {
		return failAt("file_mode", "0"+otoa(m.GetValue())+" (octal) has bits beyond the permission bits 07777 other than the node's own S_IFMT type (runc and containerd keep only the bits below S_IFMT; mknod(2))")
	}
	return nil
}

// S_IFMT and the node types of stat(2) (include/uapi/linux/stat.h).
const (
	sIFMT  = 0o170000
	sIFCHR = 0o020000
	sIFBLK = 0o060000
	sIFIFO = 0o010000
)

// fileMode reports whether m is a valid mode for a node of type t: the
// permission, set-ID and sticky bits (07777), plus, optionally, the type
// bits of t itself, as stat(2) reports a node's mode. runc and containerd
// clear the type bits (specconv createDevices, oci.DeviceFromPath); any
// other bit would only be cut off by mknod(2).
func fileMode(t string, m uint32) bool {
	typ := m & sIFMT
	if m&^(sIFMT|0o7777) != 0 {
		return false
	}
	switch t {
	case "c", "u":
		return typ == 0 || typ == sIFCHR
	case "b":
		return typ == 0 || typ == sIFBLK
	default: // "p"
		return typ == 0 || typ == sIFIFO
	}
}

// cgroupsPath checks cgroups_path: empty leaves it unchanged; otherwise a
// path (runtime-spec config-linux.md "Cgroups Path") or systemd's
// "slice:prefix:name" (runc specconv CreateCgroupConfig), bounded, without
// NUL, without a ".." element.
func cgroupsPath(p string) *Error {
	if e := text(p, MaxPathLen, "PATH_MAX"); e != nil {
		return e
	}
	for rest := p; rest != ""; {
		var elem string
		elem, rest, _ = strings.Cut(rest, "/")
		if elem == ".." {
			return fail(untrusted.Quote(p) + ` has a ".." element: a cgroups path must stay below the cgroup root (runc cleans it as if rooted; other runtimes may not)`)
		}
	}
	return nil
}

// ioPriority checks an I/O priority: class (1), priority (2). The runtime
// spec (config.md "Linux Process": ioPriority) allows only the RT, BE and
// IDLE classes and priorities 0 to 7; runc refuses other classes
// (validate.ioPriority, setIOPriority), the kernel other levels
// (IOPRIO_NR_LEVELS, include/uapi/linux/ioprio.h).
func ioPriority(p *nriv1beta1.LinuxIOPriority) *Error {
	if p == nil {
		return nil
	}
	switch c := p.GetClass(); c {
	case nriv1beta1.IOPrioClass_IO_PRIO_CLASS_RT, nriv1beta1.IOPrioClass_IO_PRIO_CLASS_BE, nriv1beta1.IOPrioClass_IO_PRIO_CLASS_IDLE:
	case nriv1beta1.IOPrioClass_IO_PRIO_CLASS_NONE:
		return failAt("class", `IO_PRIO_CLASS_NONE is not a class the runtime spec allows (config.md "Linux Process": IOPRIO_CLASS_RT, _BE or _IDLE; runc refuses the empty class NONE maps to)`)
	default:
		return failAt("class", itoa(int32(c))+" is not an IOPrioClass value (1 RT, 2 BE, 3 IDLE)")
	}
	if v := p.GetPriority(); v < 0 || v > 7 {
		return failAt("priority", itoa(v)+" is outside 0..7 (IOPRIO_NR_LEVELS, include/uapi/linux/ioprio.h; runc validate.ioPriority)")
	}
	return nil
}

// namespace checks a namespace: type (1), path (2) (runtime-spec
// config-linux.md "Namespaces"). A "-type" entry removes that namespace:
// only the type is checked (the runtime refuses to remove an unknown
// type).
func namespace(n *nriv1beta1.LinuxNamespace) *Error {
	if n == nil {
		return nil
	}
	t, marked := unmark(n.GetType())
	switch t {
	case "pid", "network", "mount", "ipc", "uts", "user", "cgroup", "time":
	default:
		return failAt("type", untrusted.Quote(n.GetType())+` is not a namespace type: pid, network, mount, ipc, uts, user, cgroup or time, "-" before one to remove it (runtime-spec config-linux.md "Namespaces")`)
	}
	if marked {
		return nil
	}
	if p := n.GetPath(); p != "" {
		if e := absPath(p, `runtime-spec config-linux.md "Namespaces": path must be absolute`); e != nil {
			return e.under("path")
		}
	}
	return nil
}

// sysctlEntry checks a sysctl; "-key" removes key. The key names a file
// below /proc/sys (runtime-spec config-linux.md "Sysctl"; runc
// internal/sys WriteSysctls); the value is written to it.
func sysctlEntry(k, v string) *Error {
	key, marked := unmark(k)
	if r := sysctlKeyProblem(key); r != "" {
		return fail(untrusted.Quote(key) + r)
	}
	if marked {
		return nil
	}
	return text(v, MaxValueLen, "MaxValueLen")
}

// netDevice checks a host network device moved into the container: the
// host name (the key; "-name" removes an entry) and the name inside the
// container, which may be empty (runtime-spec config-linux.md "Network
// Devices": the host name is kept). Both must be names the kernel accepts
// (net/core/dev.c dev_valid_name; runc validate.netdevices).
func netDevice(k string, d *nriv1beta1.LinuxNetDevice) *Error {
	host, marked := unmark(k)
	if r := netDevNameProblem(host); r != "" {
		return fail(untrusted.Quote(host) + r)
	}
	if marked {
		return nil
	}
	if n := d.GetName(); n != "" {
		if r := netDevNameProblem(n); r != "" {
			return failAt("name", untrusted.Quote(n)+r)
		}
	}
	return nil
}

// rdt checks RDT settings: clos_id (1), schemata (2) (runtime-spec
// config-linux.md "IntelRdt"). remove and enable_monitoring need no check.
func rdt(r *nriv1beta1.LinuxRdt) *Error {
	if r == nil {
		return nil
	}
	if c := r.GetClosId(); c != nil {
		if e := closID(c.GetValue()); e != nil {
			return e.under("clos_id")
		}
	}
	for i, line := range r.GetSchemata().GetValue() {
		if e := text(line, MaxValueLen, "MaxValueLen"); e != nil {
			return e.at("schemata.value", i)
		}
		if strings.ContainsAny(line, "\n\r") {
			return fail(untrusted.Quote(line)+` holds a line break (runtime-spec config-linux.md "IntelRdt": each schemata element is one line and must not contain newlines)`).at("schemata.value", i)
		}
	}
	return nil
}

// closID checks an RDT class of service ID, a directory of the resctrl
// file system: "/" is its root (runtime-spec config-linux.md "IntelRdt"),
// empty is unset; otherwise a single name, not "." or ".." (runc
// validate.intelrdtCheck).
func closID(c string) *Error {
	if e := text(c, MaxNameLen, "NAME_MAX"); e != nil {
		return e
	}
	if c == "." || c == ".." || (len(c) > 1 && strings.IndexByte(c, '/') >= 0) {
		return fail(untrusted.Quote(c) + ` is not a resctrl group name: "/" (the root), or one directory name other than "." and ".." (runc validate.intelrdtCheck)`)
	}
	return nil
}

// otoa renders a mode in octal.
func otoa(m uint32) string { return strconv.FormatUint(uint64(m), 8) }
