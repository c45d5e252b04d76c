// Package merge merges the responses plugins give to CreateContainer,
// UpdateContainer and StopContainer into the one result returned to the
// runtime, with classic NRI's per-container, per-field ownership and
// conflict rules (github.com/containerd/nri pkg/adaptation/result.go).
//
// Plugins are applied in dispatch order. Each accepted change goes into the
// result and into the in-flight request, so that later plugins see it. A
// field or entry may be set by one plugin only: a second claim, even by the
// same plugin, is a *ConflictError. A removal ("-key" markers, args with a
// leading "", RDT remove) clears the owner to "-plugin", after which that
// plugin may claim the entry; removing then re-adding in one response is how
// a plugin overrides another's value. Hooks and device cgroup rules never
// conflict.
//
// Deliberate changes from classic NRI:
//
//  1. Pure removals of env variables and devices put the removal marker
//     ("-NAME", "-/dev/x") in the result, so that an entry of the runtime's
//     own spec can be removed; classic dropped the marker.
//  2. The result never holds both k and -k (annotations, sysctl, net
//     devices, env, devices, mounts, namespaces). Removing and re-adding k in
//     one response leaves k only (for namespaces, where a removal is itself a
//     claim, classic failed such a response as the plugin claiming twice); a
//     pure removal of k that an earlier plugin set drops that k, clears its
//     ownership to "-plugin" and leaves -k; an addition of k drops a -k an
//     earlier plugin left. Markers appear once. A pure removal also removes
//     the entry from the request, so later plugins see it gone.
//  3. Evictions are passed on, in order, one per container (first reason
//     wins); classic dropped them.
//  4. Pid limits in container updates are applied; classic ignored them (and
//     could fail on them spuriously when the runtime requested one).
//  5. A conflicting update with ignore_failure is dropped whole: nothing of
//     it is committed (classic kept the claims made before the conflict and
//     an empty update entry) and the event goes on.
//
// The UpdateContainer result carries the target's final resources in a
// field of their own, always set, instead of classic's last (possibly nil)
// element of the update list.
package merge
