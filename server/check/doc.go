// Package check checks every value a plugin sends — container adjustments,
// container updates and evictions — against the rules of the OCI runtime
// spec (v1.3.0: config.md, config-linux.md), runc (1.2 to 1.5:
// libcontainer/specconv, libcontainer/configs/validate, and
// opencontainers/cgroups), containerd 2.x and classic NRI's generator
// (github.com/containerd/nri pkg/runtime-tools/generate), the CDI parser
// (tags.cncf.io/container-device-interface pkg/parser) and the Linux
// kernel. Without it a memory limit of -12345, an rlimit "RLIMIT_BOGUS" or a
// cgroups path "../../../evil" would reach the runtime.
//
// The checks are syntactic and need no state: they refuse values that the
// runtime or the kernel would refuse anyway (so the plugin gets a precise
// error naming the field, instead of a failed container), values a runtime
// would silently read as something else than they say (a negative device
// number, an "N" that escapes /proc/sys), and unbounded strings. They never
// refuse what containerd 2.x and runc 1.2 or later accept and apply: where
// runtimes differ or a rule is uncertain, the check is permissive, and the
// rules below say why. Rules that depend on the host (CPU count, enabled
// controllers, existing files) or on fields set by other plugins are left
// to the runtime.
//
// # Results
//
// Adjustment, Updates, Evictions, Resources and Response return nil or a
// *Error for the first violation in field-number order (a map's entries in
// sorted key order), so the same message is always refused the same way.
// Error.Field is the path of the value ("adjust.linux.oom_score_adj",
// `adjust.linux.sysctl["kernel.core_pattern"]`, "update[0].container_id");
// Error.Rule says what is wrong and cites the rule. A bad value is quoted
// at most 64 bytes long, with its length. Accepting a message allocates
// nothing.
//
// # Removal markers
//
// In an adjustment (server/merge: create.go mergeMap, mergeList,
// adjustNamespaces), a leading "-" removes an entry: annotation, sysctl and
// net device keys, env names (KeyValue.key), mount destinations, device
// paths and namespace types. The unmarked key must satisfy the same rules
// as when setting it (the runtime refuses to remove an unknown namespace
// type); the rest of a marker entry (its value, mount source, device type,
// namespace path) is not used and not checked. RDT has a remove flag
// instead, and args a leading "" meaning "replace the arguments of earlier
// plugins". Rlimits, CDI devices, hooks, hugepage limits, unified settings
// and device cgroup rules have no markers.
//
// # Strings
//
// Every string an adjustment or update carries becomes a string of the OCI
// spec, which C runtimes (crun, libocispec) read as C strings: none may hold
// a NUL, which would cut it short there and make what the runtime applies
// differ from what nrid and validators checked (runc itself refuses NULs in
// mount fields). Strings are valid UTF-8 already (the server checks). The
// length bounds are:
//
//   - MaxPathLen, 4096 (PATH_MAX): mount destination and source, hook path,
//     device path, namespace path, cgroups_path, seccomp listener_path.
//   - MaxNameLen, 255 (NAME_MAX): mount type, unified key, clos_id,
//     blockio_class, rdt_class, seccomp syscall name.
//   - MaxKeyLen, 4096: annotation key, sysctl key, CDI device name, mount
//     option, device cgroup access, cpuset and node lists.
//   - MaxArgLen, 131071 (MAX_ARG_STRLEN - 1, execve(2) E2BIG): each
//     argument, each hook argument and env entry, each env entry
//     "NAME=value".
//   - MaxValueLen, 262144 (Kubernetes' limit for all annotations of an
//     object): annotation, sysctl and unified values, RDT schemata lines,
//     seccomp listener_metadata.
//   - MaxContainerIDLen, 256: update and eviction container_id.
//   - MaxReasonLen, 4096: eviction reason.
//
// # Rules
//
// Adjustment (ContainerAdjustment):
//
//   - annotations: key non-empty (config.md "Annotations").
//   - mounts: destination absolute (config.md "Mounts" deprecates relative
//     ones; nrid refuses them); type, source and options bounded, no NUL
//     (runc specconv createLibcontainerMount refuses NULs).
//   - env: name non-empty, no "=" (environ(7)); value no NUL.
//   - hooks, every hook point: path absolute (config.md "POSIX-platform
//     Hooks"); timeout, when set, 1 to 9223372036 s (must be greater than
//     zero; runc multiplies it by time.Second, larger ones overflow);
//     args and env no NUL.
//   - rlimits: type one of the 16 of runc's rlimitMap (RLIMIT_AS, CORE, CPU,
//     DATA, FSIZE, LOCKS, MEMLOCK, MSGQUEUE, NICE, NOFILE, NPROC, RSS,
//     RTPRIO, RTTIME, SIGPENDING, STACK); not twice (config.md "POSIX
//     process"); soft <= hard (setrlimit(2) EINVAL).
//   - cdi_devices: name "vendor/class=name" as the CDI parser accepts it
//     (ParseQualifiedName): vendor and class start with a letter, end with
//     a letter or digit, hold [A-Za-z0-9_.-]; name starts and ends with a
//     letter or digit, holds [A-Za-z0-9_.:-].
//   - args: no NUL; a replacement (first element "") must leave at least one
//     argument, and the program (the first remaining one) must not be empty
//     (config.md "Process": args needs one entry, execvp's file).
//
// Linux part (LinuxContainerAdjustment):
//
//   - devices: path absolute (config-linux.md "Devices"; anywhere in the
//     container, not only /dev); type c, b, u or p (runc specconv
//     stringToDeviceRune); major 0 to 4095 and minor 0 to 1048575 (the
//     kernel's 32-bit dev_t, include/linux/kdev_t.h MINORBITS; runc's
//     VerifyInode refuses the node mknod(2) makes from larger numbers); 0
//     and 0 for p (a FIFO has no device number); file_mode within 07777,
//     optionally with the node's own S_IFMT bits as stat(2) reports them
//     (runc and containerd clear S_IFMT; other bits are cut by mknod(2)).
//   - cgroups_path: no ".." element (config-linux.md "Cgroups Path"; runc
//     cleans the path as if rooted, other runtimes may not); systemd's
//     "slice:prefix:name" is a path like any other here.
//   - oom_score_adj: -1000 to 1000 (include/uapi/linux/oom.h).
//   - io_priority: class RT, BE or IDLE (config.md "Linux Process"; NONE
//     becomes an empty class, which runc refuses); priority 0 to 7
//     (IOPRIO_NR_LEVELS; runc validate.ioPriority).
//   - seccomp_policy (config-linux.md "Seccomp"): default_action one of the
//     spec's actions, or empty when there are no syscall rules (runc reads
//     that as no seccomp); architectures, flags, syscall actions and
//     argument operators from the spec's lists; listener_path absolute
//     when set (the runtime connects to it from the bundle directory);
//     every syscall rule names at least one syscall, none empty; argument
//     index 0 to 5 (libseccomp).
//   - namespaces: type pid, network, mount, ipc, uts, user, cgroup or time;
//     path absolute when set (config-linux.md "Namespaces").
//   - sysctl: key non-empty, no empty element between "." or "/"
//     separators, which rules out leading, trailing and doubled separators
//     and, however a runtime maps the key to /proc/sys/<key> (runc replaces
//     "." by "/"; sysctl(8) and runc's validator swap them when the first
//     separator is "/"), any "." or ".." path element.
//   - net_devices: host name (the key) and, when set, container name valid
//     for the kernel (net/core/dev.c dev_valid_name): 1 to 15 bytes, not
//     "." or "..", no "/", ":" or white space. An empty container name
//     keeps the host name (config-linux.md "Network Devices").
//   - scheduler: policy NONE drops the scheduler (NRI's ToOCI), nothing
//     else is checked then; otherwise a defined policy; nice -20 to 19 for
//     OTHER and BATCH (runc validate.scheduler; the kernel clamps it for
//     the others); priority 0 except for FIFO and RR, and 1 to 99 for them
//     (runc; sched_setattr(2)); defined flags; runtime, deadline and period
//     0 except for DEADLINE (runc), and for DEADLINE runtime >= 1024 ns,
//     deadline > 0, runtime <= deadline <= period (period 0 means
//     deadline), below 2^63 (kernel __checkparam_dl). With the
//     KEEP_POLICY or KEEP_PARAMS flag the kernel checks the process's
//     current policy or parameters, so only runc's rules apply.
//   - rdt: clos_id "/" (the resctrl root), empty, or one directory name other
//     than "." and ".." (config-linux.md "IntelRdt"; runc
//     validate.intelrdtCheck); schemata lines without line breaks.
//   - memory_policy: defined mode and flags; nodes a list as runc parses it
//     (configs.ToCPUSet: N or N-M, N <= M, below 1024, spaces and empty
//     elements allowed, at least one node if not empty); no nodes for
//     DEFAULT and LOCAL, at least one for BIND, INTERLEAVE, PREFERRED_MANY
//     and WEIGHTED_INTERLEAVE (config-linux.md "Memory policy"; runc
//     validate.memoryPolicy); STATIC_NODES and RELATIVE_NODES exclusive,
//     NUMA_BALANCING only with BIND or PREFERRED_MANY (kernel
//     sanitize_mpol_flags).
//
// Resources (LinuxResources, in adjustments and updates):
//
//   - memory limit, reservation, swap: -1 (unlimited) or >= 0
//     (config-linux.md "Memory"; the kernel's page_counter_memparse
//     refuses other negative numbers). kernel and kernel_tcp: not checked,
//     runc 1.2 and later ignore them.
//   - memory swappiness: 0 to 100 (config-linux.md; runc), or 2^64-1, which
//     runc reads as unset.
//   - cpu quota: negative (unlimited; the kernel reads any negative quota
//     so), 0 (unset) or 1000 to 2^44-1 µs; period 0 (unset) or 1000 to
//     1000000 µs (kernel/sched/core.c tg_set_cfs_bandwidth,
//     Documentation/scheduler/sched-bwc.rst). shares: not checked (clamped
//     by the kernel and by runc's cgroup v2 conversion).
//   - cpu realtime_runtime and realtime_period: at most 2^64/1000 µs (the
//     kernel refuses values that overflow in nanoseconds); a negative
//     runtime is unlimited.
//   - cpu cpus and mems: a list as the kernel parses it (lib/bitmap-str.c
//     bitmap_parselist): regions "N", "N-M" (N <= M), "all", optionally
//     ":used/group" with 0 < group and used <= group, separated by "," or
//     white space; numbers decimal or "N" (the last), below 2^32. Empty
//     leaves them unchanged.
//   - hugepage_limits page_size: "<size>KB|MB|GB|TB|PB", size decimal
//     without leading zero (config-linux.md "Huge page limits"; it names a
//     hugetlb cgroup file).
//   - blockio_class: bounded, no NUL. rdt_class: not "." or ".." (it
//     becomes a resctrl group; goresctrl's root class "system/default" has
//     a "/").
//   - unified: key "<controller>.<file>" without "/" (runc fs2 setUnified;
//     config-linux.md "Unified"); value no NUL.
//   - devices (cgroup rules): type a, c, b or empty (config-linux.md
//     "Allowed Device list"; runc stringToCgroupDeviceRune); major and
//     minor, when set, -1 (all, as runc reads it) to 2^32-1 (runc's cgroup
//     v2 filter reads any negative number as all, and refuses larger ones);
//     access non-empty (runc specconv), letters r, w and m only.
//   - pids limit: not checked; runc writes "max" for any negative limit.
//
// Updates and evictions: container_id 1 to 256 printable ASCII bytes, no
// space (containerd IDs are [A-Za-z0-9._-], CRI-O's hexadecimal); an
// update's linux.resources as above; an eviction's reason bounded.
//
// NamespacedSysctl classifies sysctl keys for the policy's host_sysctls
// grant; see its documentation.
package check
