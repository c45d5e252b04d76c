package check

import (
	"strings"

	"github.com/nri-grpc/nri-grpc/internal/untrusted"
)

// The functions here check the syntax of values that a runtime or the
// kernel parses. Those named ...Problem return "" for a valid value and
// otherwise the rest of a rule sentence (it follows the quoted value), so
// that the accepted path never builds a string.

// sysctlKeyProblem checks a sysctl key. The runtime turns it into the path
// /proc/sys/<key>: runc replaces "." by "/" (internal/sys WriteSysctls),
// sysctl(8) and runc's validator swap "." and "/" when the first separator
// is "/" (validate.convertSysctlVariableToDotsSeparator), other runtimes may
// use the key as it is. Every element between separators, "." or "/",
// must therefore be non-empty: that rules out a leading or trailing
// separator and, read any of these ways, a "." or ".." path element that
// could leave /proc/sys.
func sysctlKeyProblem(key string) string {
	if key == "" {
		return ` is not a sysctl key: it must not be empty (runtime-spec config-linux.md "Sysctl")`
	}
	if len(key) > MaxKeyLen {
		return " is longer than 4096 bytes (MaxKeyLen)"
	}
	if strings.IndexByte(key, 0) >= 0 {
		return " holds a NUL byte (the key names a file below /proc/sys)"
	}
	prev := byte('.') // a leading separator is an empty element
	for i := 0; i < len(key); i++ {
		c := key[i]
		if (c == '.' || c == '/') && (prev == '.' || prev == '/') {
			return ` has an empty element: no leading, trailing or doubled "." or "/" (the key names a file below /proc/sys and must not leave it)`
		}
		prev = c
	}
	if prev == '.' || prev == '/' {
		return ` has an empty element: no leading, trailing or doubled "." or "/" (the key names a file below /proc/sys and must not leave it)`
	}
	return ""
}

// netDevNameProblem checks a network interface name as the kernel does
// (net/core/dev.c dev_valid_name): 1 to 15 bytes (IFNAMSIZ - 1), not "."
// or "..", no "/", ":" or white space (isspace). runc checks the same
// (validate.devValidName) but allows 16 bytes, which the kernel refuses.
func netDevNameProblem(n string) string {
	if n == "" {
		return ` is not an interface name: it must not be empty (dev_valid_name)`
	}
	if len(n) > 15 {
		return ` is longer than 15 bytes (IFNAMSIZ - 1; dev_valid_name)`
	}
	if n == "." || n == ".." {
		return ` is not an interface name (dev_valid_name refuses "." and "..")`
	}
	for i := 0; i < len(n); i++ {
		if c := n[i]; c == '/' || c == ':' || c == 0 || isSpace(c) {
			return ` holds "/", ":", a NUL or white space, which an interface name must not (dev_valid_name)`
		}
	}
	return ""
}

// cdiName checks a fully qualified CDI device name "vendor/class=name" as
// the CDI parser does (tags.cncf.io/container-device-interface
// pkg/parser ParseQualifiedName): the vendor and the class start with a
// letter, end with a letter or digit and hold letters, digits, "_", "-"
// and "." in between; the name starts and ends with a letter or digit and
// holds letters, digits, "_", "-", "." and ":" in between.
func cdiName(d string) *Error {
	if len(d) > MaxKeyLen {
		return tooLong(d, MaxKeyLen, "MaxKeyLen")
	}
	qualifier, name, ok := strings.Cut(d, "=")
	vendor, class, ok2 := strings.Cut(qualifier, "/")
	if !ok || !ok2 || !cdiVendorOrClass(vendor) || !cdiVendorOrClass(class) || !cdiDeviceName(name) {
		return fail(untrusted.Quote(d) + ` is not a fully qualified CDI device name "vendor/class=name", such as "vendor.com/gpu=0" (CDI pkg/parser ParseQualifiedName)`)
	}
	return nil
}

func cdiVendorOrClass(s string) bool {
	if s == "" || !isLetter(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !isAlnum(c) && c != '_' && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

func cdiDeviceName(s string) bool {
	if s == "" || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !isAlnum(c) && c != '_' && c != '-' && c != '.' && c != ':' {
			return false
		}
	}
	return true
}

// pageSize reports whether p is a huge page size as the hugetlb cgroup
// files name it: a decimal size without leading zero and a unit, "2MB",
// "1GB", "64KB" (runtime-spec config-linux.md "Huge page limits"; the
// kernel's hugetlb_cgroup names use KB, MB and GB; kubelet also renders TB
// and PB). It holds no "/", so the file name stays in the cgroup.
func pageSize(p string) bool {
	n := len(p)
	if n < 3 || n > 24 || p[n-1] != 'B' || p[0] == '0' {
		return false
	}
	switch p[n-2] {
	case 'K', 'M', 'G', 'T', 'P':
	default:
		return false
	}
	for i := 0; i < n-2; i++ {
		if !isDigit(p[i]) {
			return false
		}
	}
	return true
}

// cpuList checks a cpuset list (cpus, mems) as the kernel parses it when
// runc writes it to cpuset.cpus or cpuset.mems (lib/bitmap-str.c
// bitmap_parselist): regions separated by "," or white space, each
// "all" or N or N-M, optionally followed by ":used/group" (a stride);
// a number is decimal or "N" (the last CPU); N <= M, group > 0, used <=
// group. The upper bound (the host's CPU or node count) is the host's and
// only bounded by 2^32-1 here. It returns "" or the rest of a rule
// sentence.
func cpuList(s string) string {
	const rule = ` is not a cpuset list such as "0-3,7" (runtime-spec config-linux.md "CPU"; the kernel's bitmap_parselist)`
	if len(s) > MaxKeyLen {
		return " is longer than 4096 bytes (MaxKeyLen)"
	}
	for i := 0; ; {
		for i < len(s) && (s[i] == ',' || isSpace(s[i])) {
			i++
		}
		if i == len(s) {
			return ""
		}
		next, ok := cpuRegion(s, i)
		if !ok {
			return rule
		}
		i = next
	}
}

// lastBit stands for the kernel's "N" (the last bit) in cpuRegion.
const lastBit = -1

// cpuRegion parses one region of a cpuset list starting at s[i]. It
// returns the index after it and whether it is valid.
func cpuRegion(s string, i int) (int, bool) {
	var start, end int64
	var ok bool
	if len(s)-i >= 3 && strings.EqualFold(s[i:i+3], "all") {
		start, end, i = 0, lastBit, i+3
	} else {
		if start, i, ok = cpuNumber(s, i); !ok {
			return i, false
		}
		end = start
		if i < len(s) && s[i] == '-' {
			if end, i, ok = cpuNumber(s, i+1); !ok {
				return i, false
			}
		}
	}
	if start != lastBit && end != lastBit && start > end {
		return i, false
	}
	if i < len(s) && s[i] == ':' {
		var used, group int64
		if used, i, ok = cpuNumber(s, i+1); !ok || i == len(s) || s[i] != '/' {
			return i, false
		}
		if group, i, ok = cpuNumber(s, i+1); !ok {
			return i, false
		}
		if group == 0 || (used != lastBit && group != lastBit && used > group) {
			return i, false
		}
	}
	// A region ends at a separator or the end.
	return i, i == len(s) || s[i] == ',' || isSpace(s[i])
}

// cpuNumber parses a decimal number or "N" at s[i], at most 2^32-1.
func cpuNumber(s string, i int) (int64, int, bool) {
	if i < len(s) && s[i] == 'N' {
		return lastBit, i + 1, true
	}
	j := i
	var v int64
	for j < len(s) && isDigit(s[j]) {
		v = v*10 + int64(s[j]-'0')
		if v > maxCPUNumber {
			return 0, j, false
		}
		j++
	}
	return v, j, j > i
}

// maxNode bounds NUMA node numbers: runc parses the nodes of a memory
// policy into a 1024-bit set and refuses larger numbers
// (configs.ToCPUSet).
const maxNode = 1023

// nodeList checks the nodes of a memory policy as runc parses them
// (libcontainer/configs ToCPUSet): elements separated by ",", each N or
// N-M (N <= M) with spaces around, empty elements allowed, numbers below
// 1024, at least one node unless the whole string is empty. It reports
// whether the list names a node and returns the rest of a rule sentence
// for an invalid list.
func nodeList(s string) (bool, string) {
	const rule = ` is not a node list such as "0-3,7" (runtime-spec config-linux.md "Memory policy"; runc configs.ToCPUSet: numbers 0 to 1023, N or N-M with N <= M)`
	if s == "" {
		return false, ""
	}
	if len(s) > MaxKeyLen {
		return false, " is longer than 4096 bytes (MaxKeyLen)"
	}
	members := false
	for rest := s; ; {
		elem, more, found := strings.Cut(rest, ",")
		elem = strings.Trim(elem, " \t\n\v\f\r")
		if elem != "" {
			lo, hi, isRange := strings.Cut(elem, "-")
			a, ok := nodeNumber(lo)
			b := a
			if ok && isRange {
				b, ok = nodeNumber(hi)
			}
			if !ok || a > b {
				return false, rule
			}
			members = true
		}
		if !found {
			break
		}
		rest = more
	}
	if !members {
		return false, ` names no node (runc configs.ToCPUSet: "no members found in set")`
	}
	return true, ""
}

// nodeNumber parses a node number as strconv.ParseUint(s, 10, 32) does,
// bounded by maxNode.
func nodeNumber(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	v := 0
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, false
		}
		v = v*10 + int(s[i]-'0')
		if v > maxNode {
			return 0, false
		}
	}
	return v, true
}
