"""Builders of adjustments and container updates, with classic NRI's removal markers.

Adjustment builds the ContainerAdjustment a ``create_container`` handler
returns; Update builds a ContainerUpdate (for the update lists of
CreateContainer, UpdateContainer, StopContainer and Synchronize responses
and for ``Plugin.update_containers``); evict builds a ContainerEviction. The
methods carry the names of classic NRI's Go helpers in snake_case
(``AddEnv`` -> ``add_env``) and return the builder, so calls chain::

    return Adjustment().remove_env("PROXY").add_env("PROXY", "http://p:3128").response()

Removal markers (docs/PROTOCOL.md section 9): a key, path, name or type
prefixed with "-" asks the server to remove that entry, whether the runtime
or an earlier plugin set it. To override an earlier plugin's value, remove it
and set it again in the same adjustment (the remove-then-add idiom).
"""

from __future__ import annotations

from typing import Iterable

from google.protobuf import wrappers_pb2

from .gen.nri.v1beta1 import plugin_service_pb2 as ps
from .gen.nri.v1beta1 import types_pb2 as t


def mark_for_removal(key: str) -> str:
    """Returns key with the removal marker: ``"-" + key``."""
    return "-" + key


def is_marked_for_removal(key: str) -> tuple[str, bool]:
    """Returns key without the removal marker, and whether it had one."""
    if key.startswith("-"):
        return key[1:], True
    return key, False


class _Resources:
    """Setters of LinuxResources fields shared by Adjustment and Update."""

    def _resources(self) -> t.LinuxResources:  # pragma: no cover - overridden
        raise NotImplementedError

    def set_linux_memory_limit(self, v: int):
        """Sets the memory limit in bytes."""
        self._resources().memory.limit.CopyFrom(wrappers_pb2.Int64Value(value=v))
        return self

    def set_linux_memory_reservation(self, v: int):
        """Sets the memory soft limit in bytes."""
        self._resources().memory.reservation.CopyFrom(wrappers_pb2.Int64Value(value=v))
        return self

    def set_linux_memory_swap(self, v: int):
        """Sets the memory plus swap limit in bytes."""
        self._resources().memory.swap.CopyFrom(wrappers_pb2.Int64Value(value=v))
        return self

    def set_linux_memory_kernel(self, v: int):
        """Sets the kernel memory limit (cgroup v1)."""
        self._resources().memory.kernel.CopyFrom(wrappers_pb2.Int64Value(value=v))
        return self

    def set_linux_memory_kernel_tcp(self, v: int):
        """Sets the kernel TCP memory limit (cgroup v1)."""
        self._resources().memory.kernel_tcp.CopyFrom(wrappers_pb2.Int64Value(value=v))
        return self

    def set_linux_memory_swappiness(self, v: int):
        """Sets the swappiness (0 to 100)."""
        self._resources().memory.swappiness.CopyFrom(wrappers_pb2.UInt64Value(value=v))
        return self

    def set_linux_memory_disable_oom_killer(self):
        """Disables the OOM killer (cgroup v1)."""
        self._resources().memory.disable_oom_killer.CopyFrom(wrappers_pb2.BoolValue(value=True))
        return self

    def set_linux_memory_use_hierarchy(self):
        """Enables hierarchical memory accounting (cgroup v1)."""
        self._resources().memory.use_hierarchy.CopyFrom(wrappers_pb2.BoolValue(value=True))
        return self

    def set_linux_cpu_shares(self, v: int):
        """Sets the CPU shares."""
        self._resources().cpu.shares.CopyFrom(wrappers_pb2.UInt64Value(value=v))
        return self

    def set_linux_cpu_quota(self, v: int):
        """Sets the CFS quota in microseconds (-1: unlimited)."""
        self._resources().cpu.quota.CopyFrom(wrappers_pb2.Int64Value(value=v))
        return self

    def set_linux_cpu_period(self, v: int):
        """Sets the CFS period in microseconds."""
        self._resources().cpu.period.CopyFrom(wrappers_pb2.UInt64Value(value=v))
        return self

    def set_linux_cpu_realtime_runtime(self, v: int):
        """Sets the realtime runtime in microseconds."""
        self._resources().cpu.realtime_runtime.CopyFrom(wrappers_pb2.Int64Value(value=v))
        return self

    def set_linux_cpu_realtime_period(self, v: int):
        """Sets the realtime period in microseconds."""
        self._resources().cpu.realtime_period.CopyFrom(wrappers_pb2.UInt64Value(value=v))
        return self

    def set_linux_cpuset_cpus(self, v: str):
        """Sets the allowed CPUs ("0-3,6")."""
        self._resources().cpu.cpus = v
        return self

    def set_linux_cpuset_mems(self, v: str):
        """Sets the allowed memory nodes."""
        self._resources().cpu.mems = v
        return self

    def set_linux_pid_limits(self, v: int):
        """Sets the pids limit."""
        self._resources().pids.limit = v
        return self

    def add_linux_hugepage_limit(self, page_size: str, v: int):
        """Sets the limit of one huge page size ("2MB")."""
        self._resources().hugepage_limits.add(page_size=page_size, limit=v)
        return self

    def set_linux_blockio_class(self, v: str):
        """Sets the block I/O class."""
        self._resources().blockio_class.CopyFrom(wrappers_pb2.StringValue(value=v))
        return self

    def set_linux_rdt_class(self, v: str):
        """Sets the RDT class."""
        self._resources().rdt_class.CopyFrom(wrappers_pb2.StringValue(value=v))
        return self

    def add_linux_unified(self, key: str, value: str):
        """Sets a cgroup v2 unified setting ("memory.high")."""
        self._resources().unified[key] = value
        return self


class Adjustment(_Resources):
    """Builds a ContainerAdjustment (the change of a container being created).

    ``Adjustment()`` starts empty; ``Adjustment(existing)`` adds to an
    existing message (not a copy).
    """

    def __init__(self, adjust: t.ContainerAdjustment | None = None) -> None:
        self.proto: t.ContainerAdjustment = adjust if adjust is not None else t.ContainerAdjustment()

    def response(
        self,
        update: Iterable[t.ContainerUpdate | "Update"] = (),
        evict: Iterable[t.ContainerEviction] = (),
    ) -> ps.CreateContainerResponse:
        """Returns a CreateContainerResponse with this adjustment, and updates of
        other containers and evictions if given."""
        return ps.CreateContainerResponse(
            adjust=self.proto,
            update=[u.proto if isinstance(u, Update) else u for u in update],
            evict=list(evict),
        )

    def _resources(self) -> t.LinuxResources:
        return self.proto.linux.resources

    def add_annotation(self, key: str, value: str) -> "Adjustment":
        """Sets the annotation key to value."""
        self.proto.annotations[key] = value
        return self

    def remove_annotation(self, key: str) -> "Adjustment":
        """Removes the annotation key."""
        self.proto.annotations[mark_for_removal(key)] = ""
        return self

    def add_mount(self, m: t.Mount) -> "Adjustment":
        """Adds a mount, replacing any mount at the same destination."""
        self.proto.mounts.append(m)
        return self

    def remove_mount(self, destination: str) -> "Adjustment":
        """Removes the mount at destination."""
        self.proto.mounts.add(destination=mark_for_removal(destination))
        return self

    def add_env(self, key: str, value: str) -> "Adjustment":
        """Sets the environment variable key to value."""
        self.proto.env.add(key=key, value=value)
        return self

    def remove_env(self, key: str) -> "Adjustment":
        """Removes the environment variable key."""
        self.proto.env.add(key=mark_for_removal(key))
        return self

    def set_args(self, args: Iterable[str]) -> "Adjustment":
        """Replaces the process arguments. Conflicts with an earlier plugin
        that set them; see update_args."""
        del self.proto.args[:]
        self.proto.args.extend(args)
        return self

    def update_args(self, args: Iterable[str]) -> "Adjustment":
        """Replaces the process arguments, overriding those an earlier plugin
        set (they are sent after an empty first element)."""
        del self.proto.args[:]
        self.proto.args.append("")
        self.proto.args.extend(args)
        return self

    def add_hooks(self, hooks: t.Hooks) -> "Adjustment":
        """Appends OCI hooks. Hooks accumulate across plugins and never conflict."""
        h = self.proto.hooks
        h.prestart.extend(hooks.prestart)
        h.create_runtime.extend(hooks.create_runtime)
        h.create_container.extend(hooks.create_container)
        h.start_container.extend(hooks.start_container)
        h.poststart.extend(hooks.poststart)
        h.poststop.extend(hooks.poststop)
        return self

    def add_rlimit(self, typ: str, hard: int, soft: int) -> "Adjustment":
        """Sets the POSIX resource limit typ ("RLIMIT_NOFILE")."""
        self.proto.rlimits.add(type=typ, hard=hard, soft=soft)
        return self

    def add_device(self, d: t.LinuxDevice) -> "Adjustment":
        """Adds a device node, replacing any device at the same path."""
        self.proto.linux.devices.append(d)
        return self

    def remove_device(self, path: str) -> "Adjustment":
        """Removes the device node at path."""
        self.proto.linux.devices.add(path=mark_for_removal(path))
        return self

    def add_cdi_device(self, name: str) -> "Adjustment":
        """Injects a CDI device ("vendor.com/class=name")."""
        self.proto.cdi_devices.add(name=name)
        return self

    def add_or_replace_namespace(self, ns: t.LinuxNamespace) -> "Adjustment":
        """Adds a namespace, replacing any of the same type."""
        self.proto.linux.namespaces.append(ns)
        return self

    def remove_namespace(self, typ: str) -> "Adjustment":
        """Removes the namespace of type typ ("network")."""
        self.proto.linux.namespaces.add(type=mark_for_removal(typ))
        return self

    def add_linux_net_device(self, host_dev: str, d: t.LinuxNetDevice) -> "Adjustment":
        """Moves the host network interface host_dev into the container, as d."""
        self.proto.linux.net_devices[host_dev].CopyFrom(d)
        return self

    def remove_linux_net_device(self, host_dev: str) -> "Adjustment":
        """Removes the net device entry of host_dev."""
        self.proto.linux.net_devices[mark_for_removal(host_dev)].CopyFrom(t.LinuxNetDevice())
        return self

    def set_linux_sysctl(self, key: str, value: str) -> "Adjustment":
        """Sets the namespaced sysctl key."""
        self.proto.linux.sysctl[key] = value
        return self

    def remove_linux_sysctl(self, key: str) -> "Adjustment":
        """Removes the sysctl key."""
        self.proto.linux.sysctl[mark_for_removal(key)] = ""
        return self

    def set_linux_memory_policy(self, mode: int, nodes: str, *flags: int) -> "Adjustment":
        """Sets the NUMA memory policy."""
        self.proto.linux.memory_policy.CopyFrom(t.LinuxMemoryPolicy(mode=mode, nodes=nodes, flags=flags))
        return self

    def add_linux_device_cgroup(self, rule: t.LinuxDeviceCgroup) -> "Adjustment":
        """Appends a device cgroup rule (rules never conflict)."""
        self.proto.linux.resources.devices.append(rule)
        return self

    def set_linux_cgroups_path(self, v: str) -> "Adjustment":
        """Sets the cgroups path."""
        self.proto.linux.cgroups_path = v
        return self

    def set_linux_oom_score_adj(self, v: int) -> "Adjustment":
        """Sets the OOM score adjustment."""
        self.proto.linux.oom_score_adj.CopyFrom(wrappers_pb2.Int64Value(value=v))
        return self

    def set_linux_io_priority(self, p: t.LinuxIOPriority) -> "Adjustment":
        """Sets the I/O priority."""
        self.proto.linux.io_priority.CopyFrom(p)
        return self

    def set_linux_seccomp_policy(self, s: t.LinuxSeccomp) -> "Adjustment":
        """Sets the seccomp policy."""
        self.proto.linux.seccomp_policy.CopyFrom(s)
        return self

    def set_linux_scheduler(self, s: t.LinuxScheduler) -> "Adjustment":
        """Sets the scheduling attributes."""
        self.proto.linux.scheduler.CopyFrom(s)
        return self

    def set_linux_rdt_clos_id(self, v: str) -> "Adjustment":
        """Sets the RDT class of service ID."""
        self.proto.linux.rdt.clos_id.CopyFrom(wrappers_pb2.StringValue(value=v))
        return self

    def set_linux_rdt_schemata(self, v: Iterable[str]) -> "Adjustment":
        """Sets the RDT schemata lines."""
        self.proto.linux.rdt.schemata.CopyFrom(t.OptionalRepeatedString(value=list(v)))
        return self

    def set_linux_rdt_enable_monitoring(self, v: bool) -> "Adjustment":
        """Enables or disables RDT monitoring."""
        self.proto.linux.rdt.enable_monitoring.CopyFrom(wrappers_pb2.BoolValue(value=v))
        return self

    def remove_linux_rdt(self) -> "Adjustment":
        """Removes every RDT setting of the runtime or earlier plugins before
        this adjustment's own RDT settings apply."""
        self.proto.linux.rdt.remove = True
        return self


class Update(_Resources):
    """Builds a ContainerUpdate: a change of the resources of an existing container.

    ``Update("ctr-id")`` starts an update of that container;
    ``Update(existing)`` adds to an existing message (not a copy).
    """

    def __init__(self, container: str | t.ContainerUpdate) -> None:
        if isinstance(container, t.ContainerUpdate):
            self.proto: t.ContainerUpdate = container
        else:
            self.proto = t.ContainerUpdate(container_id=container)

    def _resources(self) -> t.LinuxResources:
        return self.proto.linux.resources

    def set_container_id(self, container_id: str) -> "Update":
        """Sets the id of the container to update."""
        self.proto.container_id = container_id
        return self

    def set_ignore_failure(self) -> "Update":
        """Ignores a failure to apply this update (and, while merging, drops it
        instead of failing the event on a conflict)."""
        self.proto.ignore_failure = True
        return self

    def set_linux_resources(self, r: t.LinuxResources) -> "Update":
        """Replaces the resources to set."""
        self.proto.linux.resources.CopyFrom(r)
        return self


def evict(container_id: str, reason: str) -> t.ContainerEviction:
    """Returns an eviction of container_id, for the evict lists of responses
    and for Plugin.update_containers."""
    return t.ContainerEviction(container_id=container_id, reason=reason)
