package check

import (
	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/untrusted"
)

// seccomp checks a seccomp policy against the runtime spec's enumerations
// (config-linux.md "Seccomp"): default_action (1), architectures (3),
// flags (4), listener_path (5), listener_metadata (6), syscalls (7).
// default_errno (2) and errno_ret need no check: runc ignores an errno on
// an action without one, which the runtime spec would refuse.
func seccomp(s *nriv1beta1.LinuxSeccomp) *Error {
	if s == nil {
		return nil
	}
	if a := s.GetDefaultAction(); a == "" {
		// runc (specconv SetupSeccomp) reads an empty default action with
		// no syscall rules as "no seccomp"; with rules it refuses it.
		if len(s.GetSyscalls()) > 0 {
			return failAt("default_action", `must be set when there are syscall rules (runtime-spec config-linux.md "Seccomp": defaultAction is required; runc reads an empty policy as no seccomp)`)
		}
	} else if !seccompAction(a) {
		return failAt("default_action", untrusted.Quote(a)+badAction)
	}
	for i, a := range s.GetArchitectures() {
		if !seccompArch(a) {
			return fail(untrusted.Quote(a)+` is not a seccomp architecture (runtime-spec config-linux.md "Seccomp": SCMP_ARCH_X86, SCMP_ARCH_X86_64, SCMP_ARCH_AARCH64, ...)`).at("architectures", i)
		}
	}
	for i, f := range s.GetFlags() {
		if !seccompFlag(f) {
			return fail(untrusted.Quote(f)+` is not a seccomp flag (runtime-spec config-linux.md "Seccomp": SECCOMP_FILTER_FLAG_TSYNC, _LOG, _SPEC_ALLOW or _WAIT_KILLABLE_RECV)`).at("flags", i)
		}
	}
	if p := s.GetListenerPath(); p != "" {
		// The runtime connects to it; a relative path would be resolved
		// against the runtime's working directory (the bundle), which a
		// plugin cannot know.
		if e := absPath(p, "the runtime connects to it from the bundle directory, which a plugin cannot know"); e != nil {
			return e.under("listener_path")
		}
	}
	if e := text(s.GetListenerMetadata(), MaxValueLen, "MaxValueLen"); e != nil {
		return e.under("listener_metadata")
	}
	for i, sc := range s.GetSyscalls() {
		if e := syscallRule(sc); e != nil {
			return e.at("syscalls", i)
		}
	}
	return nil
}

const badAction = ` is not a seccomp action (runtime-spec config-linux.md "Seccomp": SCMP_ACT_KILL, _KILL_PROCESS, _KILL_THREAD, _TRAP, _ERRNO, _TRACE, _ALLOW, _LOG or _NOTIFY)`

// syscallRule checks a seccomp rule: names (1), action (2), args (4).
func syscallRule(sc *nriv1beta1.LinuxSyscall) *Error {
	if sc == nil {
		return nil
	}
	names := sc.GetNames()
	if len(names) == 0 {
		return failAt("names", `must hold at least one syscall name (runtime-spec config-linux.md "Seccomp")`)
	}
	for i, n := range names {
		if n == "" {
			return fail(`a syscall name must not be empty`).at("names", i)
		}
		if e := text(n, MaxNameLen, "NAME_MAX"); e != nil {
			return e.at("names", i)
		}
	}
	if a := sc.GetAction(); !seccompAction(a) {
		return failAt("action", untrusted.Quote(a)+badAction)
	}
	for i, a := range sc.GetArgs() {
		if a == nil {
			continue
		}
		// A syscall has six arguments at most; libseccomp refuses a
		// condition on index 6 or above (seccomp_rule_add: EINVAL).
		if a.GetIndex() > 5 {
			return failAt("index", utoa(a.GetIndex())+" is outside 0..5 (a syscall has six arguments; libseccomp refuses higher indices)").at("args", i)
		}
		if !seccompOp(a.GetOp()) {
			return failAt("op", untrusted.Quote(a.GetOp())+` is not a seccomp operator (runtime-spec config-linux.md "Seccomp": SCMP_CMP_NE, _LT, _LE, _EQ, _GE, _GT or _MASKED_EQ)`).at("args", i)
		}
	}
	return nil
}

// seccompAction reports whether a is an action of the runtime spec
// (config-linux.md "Seccomp", libseccomp 2.6.0; runc seccomp/config.go).
func seccompAction(a string) bool {
	switch a {
	case "SCMP_ACT_KILL", "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_THREAD", "SCMP_ACT_TRAP",
		"SCMP_ACT_ERRNO", "SCMP_ACT_TRACE", "SCMP_ACT_ALLOW", "SCMP_ACT_LOG", "SCMP_ACT_NOTIFY":
		return true
	}
	return false
}

// seccompArch reports whether a is an architecture of the runtime spec
// (config-linux.md "Seccomp", libseccomp 2.6.0). runc knows a subset and
// refuses the others itself; nrid accepts the whole list, since other
// runtimes may know more.
func seccompArch(a string) bool {
	switch a {
	case "SCMP_ARCH_X86", "SCMP_ARCH_X86_64", "SCMP_ARCH_X32", "SCMP_ARCH_ARM", "SCMP_ARCH_AARCH64",
		"SCMP_ARCH_MIPS", "SCMP_ARCH_MIPS64", "SCMP_ARCH_MIPS64N32", "SCMP_ARCH_MIPSEL",
		"SCMP_ARCH_MIPSEL64", "SCMP_ARCH_MIPSEL64N32", "SCMP_ARCH_PPC", "SCMP_ARCH_PPC64",
		"SCMP_ARCH_PPC64LE", "SCMP_ARCH_S390", "SCMP_ARCH_S390X", "SCMP_ARCH_PARISC",
		"SCMP_ARCH_PARISC64", "SCMP_ARCH_RISCV64", "SCMP_ARCH_LOONGARCH64", "SCMP_ARCH_M68K",
		"SCMP_ARCH_SH", "SCMP_ARCH_SHEB":
		return true
	}
	return false
}

// seccompFlag reports whether f is a seccomp(2) flag of the runtime spec
// (config-linux.md "Seccomp"; runc seccomp/config.go flags).
func seccompFlag(f string) bool {
	switch f {
	case "SECCOMP_FILTER_FLAG_TSYNC", "SECCOMP_FILTER_FLAG_LOG", "SECCOMP_FILTER_FLAG_SPEC_ALLOW",
		"SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV":
		return true
	}
	return false
}

// seccompOp reports whether op is a comparison of the runtime spec
// (config-linux.md "Seccomp"; runc seccomp/config.go operators).
func seccompOp(op string) bool {
	switch op {
	case "SCMP_CMP_NE", "SCMP_CMP_LT", "SCMP_CMP_LE", "SCMP_CMP_EQ", "SCMP_CMP_GE", "SCMP_CMP_GT",
		"SCMP_CMP_MASKED_EQ":
		return true
	}
	return false
}

// Scheduler bounds (include/linux/sched/prio.h MIN_NICE, MAX_NICE,
// MAX_RT_PRIO; kernel/sched/deadline.c DL_SCALE).
const (
	minNice   = -20
	maxNice   = 19
	maxRTPrio = 99
	minDLRun  = 1 << 10
	dlSignBit = uint64(1) << 63
)

// scheduler checks scheduling attributes: policy (1), nice (2), priority
// (3), flags (4), runtime (5), deadline (6), period (7). Policy NONE drops
// the scheduler (NRI's LinuxScheduler.ToOCI returns nil), so nothing else
// matters then. The rules are runc's (validate.scheduler) and the kernel's
// (sched_setattr(2): kernel/sched/syscalls.c __sched_setscheduler,
// kernel/sched/deadline.c __checkparam_dl). With SCHED_FLAG_KEEP_POLICY or
// SCHED_FLAG_KEEP_PARAMS the kernel checks the process's current policy or
// parameters instead, which nrid cannot know: only runc's rules apply then.
func scheduler(s *nriv1beta1.LinuxScheduler) *Error {
	if s == nil {
		return nil
	}
	p := s.GetPolicy()
	if p == nriv1beta1.LinuxSchedulerPolicy_LINUX_SCHEDULER_POLICY_NONE {
		return nil
	}
	if p < 0 || p > nriv1beta1.LinuxSchedulerPolicy_LINUX_SCHEDULER_POLICY_DEADLINE {
		return failAt("policy", itoa(int32(p))+" is not a LinuxSchedulerPolicy value (0 NONE to 7 DEADLINE)")
	}
	other := p == nriv1beta1.LinuxSchedulerPolicy_LINUX_SCHEDULER_POLICY_OTHER || p == nriv1beta1.LinuxSchedulerPolicy_LINUX_SCHEDULER_POLICY_BATCH
	rt := p == nriv1beta1.LinuxSchedulerPolicy_LINUX_SCHEDULER_POLICY_FIFO || p == nriv1beta1.LinuxSchedulerPolicy_LINUX_SCHEDULER_POLICY_RR
	dl := p == nriv1beta1.LinuxSchedulerPolicy_LINUX_SCHEDULER_POLICY_DEADLINE
	keep := false
	for _, f := range s.GetFlags() {
		if f == nriv1beta1.LinuxSchedulerFlag_LINUX_SCHEDULER_FLAG_KEEP_POLICY || f == nriv1beta1.LinuxSchedulerFlag_LINUX_SCHEDULER_FLAG_KEEP_PARAMS {
			keep = true
		}
	}
	if n := s.GetNice(); other && (n < minNice || n > maxNice) {
		return failAt("nice", itoa(n)+" is outside -20..19 for SCHED_OTHER and SCHED_BATCH (runc validate.scheduler; MIN_NICE..MAX_NICE)")
	}
	if e := schedPriority(s.GetPriority(), rt, keep); e != nil {
		return e.under("priority")
	}
	for i, f := range s.GetFlags() {
		if f < 0 || f > nriv1beta1.LinuxSchedulerFlag_LINUX_SCHEDULER_FLAG_UTIL_CLAMP_MAX {
			return fail(itoa(int32(f))+" is not a LinuxSchedulerFlag value (0 RESET_ON_FORK to 6 UTIL_CLAMP_MAX)").at("flags", i)
		}
	}
	if !dl {
		for _, x := range [...]struct {
			name string
			v    uint64
		}{{"runtime", s.GetRuntime()}, {"deadline", s.GetDeadline()}, {"period", s.GetPeriod()}} {
			if x.v != 0 {
				return failAt(x.name, utoa(x.v)+" must be 0: runtime, deadline and period are for SCHED_DEADLINE only (runc validate.scheduler)")
			}
		}
		return nil
	}
	if keep {
		return nil
	}
	return deadline(s.GetRuntime(), s.GetDeadline(), s.GetPeriod())
}

// schedPriority checks the static priority: 1 to 99 for SCHED_FIFO and
// SCHED_RR, 0 for the others (runc validate.scheduler; the kernel
// refuses a priority above MAX_RT_PRIO-1, or one that does not match the
// policy's kind).
func schedPriority(prio int32, rt, keep bool) *Error {
	if !rt {
		if prio != 0 {
			return fail(itoa(prio) + " must be 0: a priority is for SCHED_FIFO and SCHED_RR only (runc validate.scheduler; sched_setattr(2))")
		}
		return nil
	}
	if keep {
		return nil
	}
	if prio < 1 || prio > maxRTPrio {
		return fail(itoa(prio) + " is outside 1..99 for SCHED_FIFO and SCHED_RR (sched_setattr(2): MAX_RT_PRIO-1; 0 is refused for a realtime policy)")
	}
	return nil
}

// deadline checks the SCHED_DEADLINE parameters as the kernel does
// (kernel/sched/deadline.c __checkparam_dl): runtime at least 1024 ns
// (1 << DL_SCALE), deadline not 0, runtime <= deadline <= period (period 0
// means period = deadline), deadline and period below 2^63. The
// sched_deadline_period_{min,max}_us sysctls are the host's and not
// checked.
func deadline(runtime, dl, period uint64) *Error {
	if runtime < minDLRun {
		return failAt("runtime", utoa(runtime)+" ns is below 1024 ns, the SCHED_DEADLINE resolution (1 << DL_SCALE; kernel __checkparam_dl)")
	}
	switch {
	case dl == 0:
		return failAt("deadline", "must not be 0 for SCHED_DEADLINE (kernel __checkparam_dl)")
	case dl&dlSignBit != 0:
		return failAt("deadline", utoa(dl)+" ns is 2^63 or more (kernel __checkparam_dl)")
	case dl < runtime:
		return failAt("deadline", utoa(dl)+" ns is below the runtime "+utoa(runtime)+" ns (runtime <= deadline <= period; kernel __checkparam_dl)")
	}
	switch {
	case period&dlSignBit != 0:
		return failAt("period", utoa(period)+" ns is 2^63 or more (kernel __checkparam_dl)")
	case period != 0 && period < dl:
		return failAt("period", utoa(period)+" ns is below the deadline "+utoa(dl)+" ns (runtime <= deadline <= period; kernel __checkparam_dl)")
	}
	return nil
}

// memoryPolicy checks a NUMA memory policy: mode (1), nodes (2), flags (3)
// (runtime-spec config-linux.md "Memory policy"; runc
// validate.memoryPolicy and specconv; set_mempolicy(2), kernel
// mm/mempolicy.c sanitize_mpol_flags).
func memoryPolicy(p *nriv1beta1.LinuxMemoryPolicy) *Error {
	if p == nil {
		return nil
	}
	mode := p.GetMode()
	if mode < 0 || mode > nriv1beta1.MpolMode_MPOL_MODE_WEIGHTED_INTERLEAVE {
		return failAt("mode", itoa(int32(mode))+" is not an MpolMode value (0 DEFAULT to 6 WEIGHTED_INTERLEAVE)")
	}
	nodes := p.GetNodes()
	members, problem := nodeList(nodes)
	if problem != "" {
		return failAt("nodes", untrusted.Quote(nodes)+problem)
	}
	switch mode {
	case nriv1beta1.MpolMode_MPOL_MODE_DEFAULT, nriv1beta1.MpolMode_MPOL_MODE_LOCAL:
		if members {
			return failAt("nodes", untrusted.Quote(nodes)+` must be empty for MPOL_DEFAULT and MPOL_LOCAL (runtime-spec config-linux.md "Memory policy"; runc validate.memoryPolicy)`)
		}
	case nriv1beta1.MpolMode_MPOL_MODE_PREFERRED:
		// Zero or more nodes (runc validate.memoryPolicy).
	default:
		if !members {
			return failAt("nodes", `must name at least one node for MPOL_BIND, MPOL_INTERLEAVE, MPOL_PREFERRED_MANY and MPOL_WEIGHTED_INTERLEAVE (runtime-spec config-linux.md "Memory policy"; runc validate.memoryPolicy)`)
		}
	}
	var static, relative bool
	for i, f := range p.GetFlags() {
		switch f {
		case nriv1beta1.MpolFlag_MPOL_FLAG_STATIC_NODES:
			static = true
		case nriv1beta1.MpolFlag_MPOL_FLAG_RELATIVE_NODES:
			relative = true
		case nriv1beta1.MpolFlag_MPOL_FLAG_NUMA_BALANCING:
			if mode != nriv1beta1.MpolMode_MPOL_MODE_BIND && mode != nriv1beta1.MpolMode_MPOL_MODE_PREFERRED_MANY {
				return fail("MPOL_F_NUMA_BALANCING is only valid with MPOL_BIND and MPOL_PREFERRED_MANY (set_mempolicy(2): EINVAL; kernel sanitize_mpol_flags)").at("flags", i)
			}
		default:
			return fail(itoa(int32(f))+" is not an MpolFlag value (0 STATIC_NODES, 1 RELATIVE_NODES, 2 NUMA_BALANCING)").at("flags", i)
		}
		if static && relative {
			return fail("MPOL_F_STATIC_NODES and MPOL_F_RELATIVE_NODES exclude each other (set_mempolicy(2): EINVAL; kernel sanitize_mpol_flags)").at("flags", i)
		}
	}
	return nil
}
