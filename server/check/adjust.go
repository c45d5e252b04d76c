package check

import (
	"math"
	"strings"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/untrusted"
)

// checkAdjustment checks the fields of an adjustment in field-number
// order: annotations (2), mounts (3), env (4), hooks (5), linux (6),
// rlimits (7), cdi_devices (8), args (9).
func checkAdjustment(a *nriv1beta1.ContainerAdjustment) *Error {
	if a == nil {
		return nil
	}
	if e := firstInMap("annotations", a.GetAnnotations(), annotation); e != nil {
		return e
	}
	for i, m := range a.GetMounts() {
		if e := mount(m); e != nil {
			return e.at("mounts", i)
		}
	}
	for i, kv := range a.GetEnv() {
		if e := envEntry(kv); e != nil {
			return e.at("env", i)
		}
	}
	if e := hooks(a.GetHooks()); e != nil {
		return e.under("hooks")
	}
	if e := checkLinux(a.GetLinux()); e != nil {
		return e.under("linux")
	}
	if e := rlimits(a.GetRlimits()); e != nil {
		return e
	}
	for i, d := range a.GetCdiDevices() {
		if d == nil {
			continue
		}
		if e := cdiName(d.GetName()); e != nil {
			return e.under("name").at("cdi_devices", i)
		}
	}
	return args(a.GetArgs())
}

// annotation checks one annotation; "-key" removes key. The runtime spec
// (config.md "Annotations") requires a non-empty key.
func annotation(k, v string) *Error {
	key, marked := unmark(k)
	if e := text(key, MaxKeyLen, "MaxKeyLen"); e != nil {
		return e
	}
	if key == "" {
		if marked {
			return fail(`the removal marker "-" names no key (runtime-spec config.md "Annotations": keys must not be empty)`)
		}
		return fail(`the key must not be empty (runtime-spec config.md "Annotations")`)
	}
	if marked {
		return nil
	}
	return text(v, MaxValueLen, "MaxValueLen")
}

// mount checks a mount: destination (1), type (2), source (3), options (4).
// A "-/path" destination removes the mount at /path: only the destination
// is checked.
func mount(m *nriv1beta1.Mount) *Error {
	if m == nil {
		return nil
	}
	dest, marked := unmark(m.GetDestination())
	// runtime-spec config.md "Mounts" deprecates relative destinations;
	// nrid refuses them (a relative destination is resolved against "/"
	// by runc, against the working directory by older tools).
	if e := absPath(dest, `runtime-spec config.md "Mounts": destination should be absolute`); e != nil {
		return e.under("destination")
	}
	if marked {
		return nil
	}
	// runc (libcontainer/specconv createLibcontainerMount) refuses a NUL in
	// source, destination and type.
	if e := text(m.GetType(), MaxNameLen, "NAME_MAX"); e != nil {
		return e.under("type")
	}
	if e := text(m.GetSource(), MaxPathLen, "PATH_MAX"); e != nil {
		return e.under("source")
	}
	for i, o := range m.GetOptions() {
		if e := text(o, MaxKeyLen, "MaxKeyLen"); e != nil {
			return e.at("options", i)
		}
	}
	return nil
}

// envEntry checks an environment variable; "-NAME" removes NAME. The entry
// becomes "NAME=value" in the process environment (runtime-spec config.md
// "Process": env has environ's semantics): the name must be non-empty
// without "=", the entry at most MAX_ARG_STRLEN.
func envEntry(kv *nriv1beta1.KeyValue) *Error {
	if kv == nil {
		return nil
	}
	name, marked := unmark(kv.GetKey())
	if e := envName(name); e != nil {
		return e.under("key")
	}
	if marked {
		return nil
	}
	v := kv.GetValue()
	if strings.IndexByte(v, 0) >= 0 {
		return hasNUL(v).under("value")
	}
	if n := len(name) + 1 + len(v); n > MaxArgLen {
		return fail(untrusted.Quote(name+"="+untrusted.Cut(v, untrusted.QuoteLen)) + `: the entry "NAME=value" is ` + itoa(n) +
			" bytes, longer than MAX_ARG_STRLEN - 1 (" + itoa(MaxArgLen) + "; execve(2) fails with E2BIG)").under("value")
	}
	return nil
}

func envName(name string) *Error {
	if name == "" {
		return fail(`the variable name must not be empty (runtime-spec config.md "Process": env entries are "NAME=value")`)
	}
	if e := text(name, MaxArgLen, "MAX_ARG_STRLEN"); e != nil {
		return e
	}
	if strings.IndexByte(name, '=') >= 0 {
		return fail(untrusted.Quote(name) + ` holds "=", which ends a variable name (environ(7))`)
	}
	return nil
}

// hooks checks the hooks of every hook point, in field-number order.
func hooks(h *nriv1beta1.Hooks) *Error {
	if h == nil {
		return nil
	}
	for _, p := range [...]struct {
		name  string
		hooks []*nriv1beta1.Hook
	}{
		{"prestart", h.GetPrestart()},
		{"create_runtime", h.GetCreateRuntime()},
		{"create_container", h.GetCreateContainer()},
		{"start_container", h.GetStartContainer()},
		{"poststart", h.GetPoststart()},
		{"poststop", h.GetPoststop()},
	} {
		for i, x := range p.hooks {
			if e := hook(x); e != nil {
				return e.at(p.name, i)
			}
		}
	}
	return nil
}

// maxHookTimeout is the largest timeout, in seconds, that runc can turn
// into a time.Duration (it multiplies by time.Second): larger ones
// overflow into a negative duration, which kills the hook at once.
const maxHookTimeout = math.MaxInt64 / 1_000_000_000

// hook checks an OCI hook: path (1), args (2), env (3), timeout (4)
// (runtime-spec config.md "POSIX-platform Hooks").
func hook(h *nriv1beta1.Hook) *Error {
	if h == nil {
		return nil
	}
	if e := absPath(h.GetPath(), `runtime-spec config.md "POSIX-platform Hooks": path must be absolute`); e != nil {
		return e.under("path")
	}
	for i, a := range h.GetArgs() {
		if e := text(a, MaxArgLen, "MAX_ARG_STRLEN"); e != nil {
			return e.at("args", i)
		}
	}
	for i, v := range h.GetEnv() {
		if e := text(v, MaxArgLen, "MAX_ARG_STRLEN"); e != nil {
			return e.at("env", i)
		}
	}
	if t := h.GetTimeout(); t != nil {
		if v := t.GetValue(); v <= 0 || v > maxHookTimeout {
			return failAt("timeout", itoa(v)+` is outside 1..`+itoa(int64(maxHookTimeout))+
				` seconds (runtime-spec config.md "POSIX-platform Hooks": timeout must be greater than zero; runc multiplies it by time.Second)`)
		}
	}
	return nil
}

// rlimits checks POSIX rlimits: type (1), hard (2), soft (3); a type given
// twice is an error (runtime-spec config.md "POSIX process").
func rlimits(ls []*nriv1beta1.POSIXRlimit) *Error {
	for i, l := range ls {
		if l == nil {
			continue
		}
		if !rlimitType(l.GetType()) {
			return failAt("type", untrusted.Quote(l.GetType())+` is not a Linux rlimit type (runtime-spec config.md "POSIX process": getrlimit(2) types; runc's rlimitMap: RLIMIT_AS, CORE, CPU, DATA, FSIZE, LOCKS, MEMLOCK, MSGQUEUE, NICE, NOFILE, NPROC, RSS, RTPRIO, RTTIME, SIGPENDING, STACK)`).at("rlimits", i)
		}
		for j, o := range ls[:i] {
			if o != nil && o.GetType() == l.GetType() {
				return failAt("type", untrusted.Quote(l.GetType())+" is already set by rlimits["+itoa(j)+`] (runtime-spec config.md "POSIX process": duplicated types are an error)`).at("rlimits", i)
			}
		}
		if l.GetSoft() > l.GetHard() {
			return failAt("soft", "soft limit "+utoa(l.GetSoft())+" is above the hard limit "+utoa(l.GetHard())+" (setrlimit(2): EINVAL)").at("rlimits", i)
		}
	}
	return nil
}

// rlimitType reports whether t is one of the 16 Linux rlimits runc knows
// (runc rlimit_linux.go rlimitMap; include/uapi/asm-generic/resource.h).
func rlimitType(t string) bool {
	switch t {
	case "RLIMIT_AS", "RLIMIT_CORE", "RLIMIT_CPU", "RLIMIT_DATA", "RLIMIT_FSIZE", "RLIMIT_LOCKS",
		"RLIMIT_MEMLOCK", "RLIMIT_MSGQUEUE", "RLIMIT_NICE", "RLIMIT_NOFILE", "RLIMIT_NPROC",
		"RLIMIT_RSS", "RLIMIT_RTPRIO", "RLIMIT_RTTIME", "RLIMIT_SIGPENDING", "RLIMIT_STACK":
		return true
	}
	return false
}

// args checks the process arguments. A first element "" asks to replace
// the arguments set by earlier plugins and is dropped; what remains becomes
// the process's argv, which needs at least one entry whose first is
// execvp's file (runtime-spec config.md "Process": args).
func args(as []string) *Error {
	if len(as) == 0 {
		return nil
	}
	for i, a := range as {
		if e := text(a, MaxArgLen, "MAX_ARG_STRLEN"); e != nil {
			return e.at("args", i)
		}
	}
	first := 0
	if as[0] == "" {
		if len(as) == 1 {
			return failAt("args", `a replacement (a first element "") must be followed by at least one argument (runtime-spec config.md "Process": args needs at least one entry)`)
		}
		first = 1
	}
	if as[first] == "" {
		return failAt("args["+itoa(first)+"]", `the program (the first argument) must not be empty (runtime-spec config.md "Process": it is execvp's file)`)
	}
	return nil
}
