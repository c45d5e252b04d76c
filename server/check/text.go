package check

import (
	"strconv"
	"strings"

	"github.com/nri-grpc/nri-grpc/internal/untrusted"
)

// Length bounds of strings. Each names the kernel or runtime limit it
// follows; where there is none, the bound is far above any real value and
// only keeps one entry from being unbounded (the message size limit bounds
// the whole response anyway).
const (
	// MaxPathLen bounds paths: mount destinations and sources, hook paths,
	// device paths, namespace paths, cgroups_path, the seccomp listener
	// path. PATH_MAX (include/uapi/linux/limits.h).
	MaxPathLen = 4096
	// MaxNameLen bounds names that become one file or directory name, or
	// name a kernel object: cgroup v2 unified file names, the RDT clos_id
	// and class, the block I/O class, mount types, seccomp syscall names.
	// NAME_MAX (include/uapi/linux/limits.h).
	MaxNameLen = 255
	// MaxKeyLen bounds keys and other short strings: annotation keys,
	// sysctl keys, CDI device names, mount options, device cgroup access
	// strings. No kernel limit applies; PATH_MAX is used as a generous
	// bound (a sysctl key is a path below /proc/sys, a mount option goes
	// into a mount(2) data page).
	MaxKeyLen = 4096
	// MaxArgLen bounds one process argument or one environment entry
	// ("NAME=value", the NUL excluded): MAX_ARG_STRLEN (32 pages of 4 KiB,
	// include/uapi/linux/binfmts.h), beyond which execve(2) fails with
	// E2BIG.
	MaxArgLen = 32*4096 - 1
	// MaxValueLen bounds values: annotation values, sysctl values, cgroup
	// v2 unified values, RDT schemata lines, the seccomp listener metadata.
	// 256 KiB is Kubernetes' limit for all annotations of an object
	// together (TotalAnnotationSizeLimitB), so no annotation a kubelet
	// passes on is longer.
	MaxValueLen = 256 << 10
	// MaxContainerIDLen bounds the container ID of an update or eviction
	// (containerd's IDs are at most 76 bytes, CRI-O's are 64).
	MaxContainerIDLen = 256
	// MaxReasonLen bounds the reason of an eviction.
	MaxReasonLen = 4096
)

// text checks that s is at most n bytes long (limit names the bound in the
// message) and holds no NUL byte. Every string an adjustment or update
// carries becomes a string of the OCI runtime spec, which C runtimes (crun,
// libocispec) read as C strings: a NUL would cut it short there, so what
// nrid and validators saw would differ from what the runtime applies.
func text(s string, n int, limit string) *Error {
	if len(s) > n {
		return tooLong(s, n, limit)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return hasNUL(s)
	}
	return nil
}

func tooLong(s string, n int, limit string) *Error {
	return fail(untrusted.Quote(s) + " is longer than " + strconv.Itoa(n) + " bytes (" + limit + ")")
}

func hasNUL(s string) *Error {
	return fail(untrusted.Quote(s) + " holds a NUL byte (a C runtime reads OCI spec strings as C strings, cut short by a NUL; runc refuses NULs in mount fields)")
}

// absPath checks a path that must be absolute: a bounded string, no NUL,
// starting with "/". what names the rule ("runtime-spec config.md
// \"Mounts\"").
func absPath(p, what string) *Error {
	if e := text(p, MaxPathLen, "PATH_MAX"); e != nil {
		return e
	}
	if !strings.HasPrefix(p, "/") {
		return fail(untrusted.Quote(p) + " is not an absolute path (" + what + ")")
	}
	return nil
}

// unmark splits a removal marker "-key" into key and true.
func unmark(key string) (string, bool) {
	if len(key) > 0 && key[0] == '-' {
		return key[1:], true
	}
	return key, false
}

// containerID checks the ID of a container to update or evict: 1 to
// MaxContainerIDLen printable ASCII bytes, no space (containerd's
// identifiers are [A-Za-z0-9._-], CRI-O's are hexadecimal).
func containerID(id string) *Error {
	if id == "" {
		return fail("must not be empty")
	}
	if len(id) > MaxContainerIDLen {
		return tooLong(id, MaxContainerIDLen, "MaxContainerIDLen")
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c > '~' {
			return fail(untrusted.Quote(id) + " holds a byte that is not printable ASCII (container IDs are [A-Za-z0-9._-] in containerd, hexadecimal in CRI-O)")
		}
	}
	return nil
}

// isSpace reports whether c is white space for the kernel's isspace() in
// the C locale.
func isSpace(c byte) bool {
	return c == ' ' || (c >= '\t' && c <= '\r')
}

// isAlnum reports whether c is an ASCII letter or digit.
func isAlnum(c byte) bool {
	return isLetter(c) || isDigit(c)
}

func isLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// itoa renders an integer for messages.
func itoa[T ~int | ~int32 | ~int64](v T) string { return strconv.FormatInt(int64(v), 10) }

// utoa renders an unsigned integer for messages.
func utoa[T ~uint32 | ~uint64](v T) string { return strconv.FormatUint(uint64(v), 10) }
