//! Builders of adjustments, updates and evictions, with the removal-marker
//! conventions of classic NRI (docs/PROTOCOL.md §9).

use crate::v1beta1::{
    CdiDevice, ContainerAdjustment, ContainerEviction, ContainerUpdate, CreateContainerResponse, Hooks, HugepageLimit,
    KeyValue, LinuxContainerAdjustment, LinuxContainerUpdate, LinuxCpu, LinuxDevice, LinuxDeviceCgroup,
    LinuxIoPriority, LinuxMemory, LinuxMemoryPolicy, LinuxNamespace, LinuxNetDevice, LinuxPids, LinuxRdt,
    LinuxResources, LinuxScheduler, LinuxSeccomp, Mount, MpolFlag, MpolMode, OptionalRepeatedString, PosixRlimit,
};

/// `key` with the removal marker: `"-key"`. In an adjustment it asks nrid to
/// remove the entry `key`, whether the runtime or an earlier plugin set it.
pub fn mark_for_removal(key: &str) -> String {
    format!("-{key}")
}

/// Whether `key` carries the removal marker, and `key` without it.
pub fn is_marked_for_removal(key: &str) -> (&str, bool) {
    match key.strip_prefix('-') {
        Some(k) => (k, true),
        None => (key, false),
    }
}

/// The value of a scoped annotation, most specific first, with the
/// conventions of NRI's annotations: `<key>/container.<container_name>`, then
/// `<key>/pod`, then `<key>`.
///
/// ```
/// use std::collections::HashMap;
/// let a = HashMap::from([
///     ("env.example.dev/pod".to_owned(), "A=1".to_owned()),
///     ("env.example.dev/container.app".to_owned(), "B=2".to_owned()),
/// ]);
/// assert_eq!(nri_grpc::effective_annotation(&a, "env.example.dev", "app"), Some("B=2"));
/// assert_eq!(nri_grpc::effective_annotation(&a, "env.example.dev", "sidecar"), Some("A=1"));
/// ```
pub fn effective_annotation<'a>(
    annotations: &'a std::collections::HashMap<String, String>,
    key: &str,
    container_name: &str,
) -> Option<&'a str> {
    [format!("{key}/container.{container_name}"), format!("{key}/pod"), key.to_owned()]
        .iter()
        .find_map(|k| annotations.get(k))
        .map(String::as_str)
}

/// An eviction of container `id`, for the `evict` lists of responses and
/// for [`PluginHandle::update_containers`](crate::PluginHandle::update_containers).
pub fn evict(id: impl Into<String>, reason: impl Into<String>) -> ContainerEviction {
    ContainerEviction { container_id: id.into(), reason: reason.into() }
}

/// Builds the [`ContainerAdjustment`] a `create_container` handler returns.
///
/// The methods have the names of classic NRI's `api.ContainerAdjustment`
/// helpers (in snake case) and return `&mut Self`, so calls chain:
///
/// ```
/// let rsp = nri_grpc::Adjustment::new()
///     .add_env("FOO", "bar")
///     .remove_env("DEBUG")
///     .add_rlimit("RLIMIT_NOFILE", 4096, 1024)
///     .response();
/// assert_eq!(rsp.adjust.unwrap().env[1].key, "-DEBUG");
/// ```
///
/// Setting an entry claims it; two plugins setting the same entry conflict.
/// To override a value an earlier plugin set, remove it and set it again in
/// the same adjustment (`remove_env` then `add_env`, ...).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Adjustment {
    a: ContainerAdjustment,
}

impl Adjustment {
    /// An empty adjustment.
    pub fn new() -> Self {
        Self::default()
    }

    /// A builder that adds to `a`.
    pub fn from_proto(a: ContainerAdjustment) -> Self {
        Adjustment { a }
    }

    /// The adjustment built so far.
    pub fn as_proto(&self) -> &ContainerAdjustment {
        &self.a
    }

    /// The adjustment.
    pub fn into_proto(self) -> ContainerAdjustment {
        self.a
    }

    /// A `CreateContainerResponse` carrying the adjustment.
    pub fn into_response(self) -> CreateContainerResponse {
        CreateContainerResponse { adjust: Some(self.a), ..Default::default() }
    }

    /// A `CreateContainerResponse` carrying the adjustment built so far,
    /// which it takes out of the builder (left empty), so that it ends a
    /// chain: `Adjustment::new().add_env("A", "1").response()`.
    pub fn response(&mut self) -> CreateContainerResponse {
        std::mem::take(self).into_response()
    }

    fn linux(&mut self) -> &mut LinuxContainerAdjustment {
        self.a.linux.get_or_insert_with(Default::default)
    }

    fn resources(&mut self) -> &mut LinuxResources {
        self.linux().resources.get_or_insert_with(Default::default)
    }

    fn rdt(&mut self) -> &mut LinuxRdt {
        self.linux().rdt.get_or_insert_with(Default::default)
    }

    /// Sets the annotation `key` to `value`.
    pub fn add_annotation(&mut self, key: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.a.annotations.insert(key.into(), value.into());
        self
    }

    /// Removes the annotation `key`.
    pub fn remove_annotation(&mut self, key: &str) -> &mut Self {
        self.add_annotation(mark_for_removal(key), "")
    }

    /// Adds a mount, replacing any mount at the same destination.
    pub fn add_mount(&mut self, m: Mount) -> &mut Self {
        self.a.mounts.push(m);
        self
    }

    /// Removes the mount at `destination`.
    pub fn remove_mount(&mut self, destination: &str) -> &mut Self {
        self.a.mounts.push(Mount { destination: mark_for_removal(destination), ..Default::default() });
        self
    }

    /// Sets the environment variable `key` to `value`.
    pub fn add_env(&mut self, key: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.a.env.push(KeyValue { key: key.into(), value: value.into() });
        self
    }

    /// Removes the environment variable `key`.
    pub fn remove_env(&mut self, key: &str) -> &mut Self {
        self.a.env.push(KeyValue { key: mark_for_removal(key), value: String::new() });
        self
    }

    /// Replaces the process arguments. It conflicts with an earlier plugin
    /// that set them; see [`update_args`](Self::update_args).
    pub fn set_args<S: Into<String>>(&mut self, args: impl IntoIterator<Item = S>) -> &mut Self {
        self.a.args = args.into_iter().map(Into::into).collect();
        self
    }

    /// Replaces the process arguments, overriding those an earlier plugin
    /// set (they are sent after an empty first element).
    pub fn update_args<S: Into<String>>(&mut self, args: impl IntoIterator<Item = S>) -> &mut Self {
        self.a.args = std::iter::once(String::new()).chain(args.into_iter().map(Into::into)).collect();
        self
    }

    /// Appends OCI hooks. Hooks accumulate across plugins and never conflict.
    pub fn add_hooks(&mut self, h: Hooks) -> &mut Self {
        let t = self.a.hooks.get_or_insert_with(Default::default);
        t.prestart.extend(h.prestart);
        t.create_runtime.extend(h.create_runtime);
        t.create_container.extend(h.create_container);
        t.start_container.extend(h.start_container);
        t.poststart.extend(h.poststart);
        t.poststop.extend(h.poststop);
        self
    }

    /// Sets the POSIX resource limit `typ` ("RLIMIT_NOFILE").
    pub fn add_rlimit(&mut self, typ: impl Into<String>, hard: u64, soft: u64) -> &mut Self {
        self.a.rlimits.push(PosixRlimit { r#type: typ.into(), hard, soft });
        self
    }

    /// Adds a device node, replacing any device at the same path.
    pub fn add_device(&mut self, d: LinuxDevice) -> &mut Self {
        self.linux().devices.push(d);
        self
    }

    /// Removes the device node at `path`.
    pub fn remove_device(&mut self, path: &str) -> &mut Self {
        let d = LinuxDevice { path: mark_for_removal(path), ..Default::default() };
        self.linux().devices.push(d);
        self
    }

    /// Injects a CDI device ("vendor.com/class=name"). CDI devices cannot be
    /// removed, and two plugins injecting the same one conflict.
    pub fn add_cdi_device(&mut self, name: impl Into<String>) -> &mut Self {
        self.a.cdi_devices.push(CdiDevice { name: name.into() });
        self
    }

    /// Adds a namespace, replacing any of the same type.
    pub fn add_or_replace_namespace(&mut self, n: LinuxNamespace) -> &mut Self {
        self.linux().namespaces.push(n);
        self
    }

    /// Removes the namespace of type `typ` ("network").
    pub fn remove_namespace(&mut self, typ: &str) -> &mut Self {
        let n = LinuxNamespace { r#type: mark_for_removal(typ), path: String::new() };
        self.linux().namespaces.push(n);
        self
    }

    /// Moves the host network interface `host_dev` into the container, as `d`.
    pub fn add_linux_net_device(&mut self, host_dev: impl Into<String>, d: LinuxNetDevice) -> &mut Self {
        self.linux().net_devices.insert(host_dev.into(), d);
        self
    }

    /// Removes the net device entry of `host_dev`.
    pub fn remove_linux_net_device(&mut self, host_dev: &str) -> &mut Self {
        self.linux().net_devices.insert(mark_for_removal(host_dev), LinuxNetDevice::default());
        self
    }

    /// Sets the namespaced sysctl `key`.
    pub fn set_linux_sysctl(&mut self, key: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.linux().sysctl.insert(key.into(), value.into());
        self
    }

    /// Removes the sysctl `key`.
    pub fn remove_linux_sysctl(&mut self, key: &str) -> &mut Self {
        self.set_linux_sysctl(mark_for_removal(key), "")
    }

    /// Sets the NUMA memory policy.
    pub fn set_linux_memory_policy(
        &mut self,
        mode: MpolMode,
        nodes: impl Into<String>,
        flags: &[MpolFlag],
    ) -> &mut Self {
        self.linux().memory_policy = Some(LinuxMemoryPolicy {
            mode: mode as i32,
            nodes: nodes.into(),
            flags: flags.iter().map(|f| *f as i32).collect(),
        });
        self
    }

    /// Sets the cgroups path.
    pub fn set_linux_cgroups_path(&mut self, v: impl Into<String>) -> &mut Self {
        self.linux().cgroups_path = v.into();
        self
    }

    /// Sets the OOM score adjustment.
    pub fn set_linux_oom_score_adj(&mut self, v: i64) -> &mut Self {
        self.linux().oom_score_adj = Some(v);
        self
    }

    /// Sets the I/O priority.
    pub fn set_linux_io_priority(&mut self, p: LinuxIoPriority) -> &mut Self {
        self.linux().io_priority = Some(p);
        self
    }

    /// Sets the seccomp policy.
    pub fn set_linux_seccomp_policy(&mut self, s: LinuxSeccomp) -> &mut Self {
        self.linux().seccomp_policy = Some(s);
        self
    }

    /// Sets the scheduling attributes.
    pub fn set_linux_scheduler(&mut self, s: LinuxScheduler) -> &mut Self {
        self.linux().scheduler = Some(s);
        self
    }

    /// Sets the RDT class of service id.
    pub fn set_linux_rdt_clos_id(&mut self, v: impl Into<String>) -> &mut Self {
        self.rdt().clos_id = Some(v.into());
        self
    }

    /// Sets the RDT schemata lines.
    pub fn set_linux_rdt_schemata<S: Into<String>>(&mut self, v: impl IntoIterator<Item = S>) -> &mut Self {
        self.rdt().schemata = Some(OptionalRepeatedString { value: v.into_iter().map(Into::into).collect() });
        self
    }

    /// Enables or disables RDT monitoring.
    pub fn set_linux_rdt_enable_monitoring(&mut self, v: bool) -> &mut Self {
        self.rdt().enable_monitoring = Some(v);
        self
    }

    /// Removes every RDT setting made by the runtime or earlier plugins
    /// before this adjustment's own RDT settings apply.
    pub fn remove_linux_rdt(&mut self) -> &mut Self {
        self.rdt().remove = true;
        self
    }
}

/// Builds a [`ContainerUpdate`]: a change of the resources of an existing
/// container, for the `update` lists of CreateContainer, UpdateContainer,
/// StopContainer and Synchronize responses, and for
/// [`PluginHandle::update_containers`](crate::PluginHandle::update_containers).
///
/// ```
/// let mut u = nri_grpc::Update::new("ctr1");
/// u.set_linux_cpu_set_cpus("0-3").set_linux_memory_limit(1 << 30).set_ignore_failure();
/// let u = u.into_proto();
/// assert_eq!(u.linux.unwrap().resources.unwrap().memory.unwrap().limit, Some(1 << 30));
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Update {
    u: ContainerUpdate,
}

impl Update {
    /// An update of container `id`.
    pub fn new(id: impl Into<String>) -> Self {
        Update { u: ContainerUpdate { container_id: id.into(), ..Default::default() } }
    }

    /// A builder that adds to `u`.
    pub fn from_proto(u: ContainerUpdate) -> Self {
        Update { u }
    }

    /// The update built so far.
    pub fn as_proto(&self) -> &ContainerUpdate {
        &self.u
    }

    /// The update.
    pub fn into_proto(self) -> ContainerUpdate {
        self.u
    }

    fn resources(&mut self) -> &mut LinuxResources {
        self.u.linux.get_or_insert_with(LinuxContainerUpdate::default).resources.get_or_insert_with(Default::default)
    }

    /// Sets the id of the container to update.
    pub fn set_container_id(&mut self, id: impl Into<String>) -> &mut Self {
        self.u.container_id = id.into();
        self
    }

    /// Lets the update fail (or, in a merge conflict, be dropped) without
    /// failing the event.
    pub fn set_ignore_failure(&mut self) -> &mut Self {
        self.u.ignore_failure = true;
        self
    }

    /// Replaces the whole resources of the update.
    pub fn set_linux_resources(&mut self, r: LinuxResources) -> &mut Self {
        *self.resources() = r;
        self
    }
}

/// The resource setters Adjustment and Update share (classic NRI's names).
macro_rules! resource_setters {
    ($t:ty) => {
        impl $t {
            fn memory(&mut self) -> &mut LinuxMemory {
                self.resources().memory.get_or_insert_with(Default::default)
            }

            fn cpu(&mut self) -> &mut LinuxCpu {
                self.resources().cpu.get_or_insert_with(Default::default)
            }

            /// Sets the memory limit in bytes.
            pub fn set_linux_memory_limit(&mut self, v: i64) -> &mut Self {
                self.memory().limit = Some(v);
                self
            }

            /// Sets the memory soft limit (reservation) in bytes.
            pub fn set_linux_memory_reservation(&mut self, v: i64) -> &mut Self {
                self.memory().reservation = Some(v);
                self
            }

            /// Sets the memory plus swap limit in bytes.
            pub fn set_linux_memory_swap(&mut self, v: i64) -> &mut Self {
                self.memory().swap = Some(v);
                self
            }

            /// Sets the kernel memory limit (cgroup v1).
            pub fn set_linux_memory_kernel(&mut self, v: i64) -> &mut Self {
                self.memory().kernel = Some(v);
                self
            }

            /// Sets the kernel TCP memory limit (cgroup v1).
            pub fn set_linux_memory_kernel_tcp(&mut self, v: i64) -> &mut Self {
                self.memory().kernel_tcp = Some(v);
                self
            }

            /// Sets the swappiness.
            pub fn set_linux_memory_swappiness(&mut self, v: u64) -> &mut Self {
                self.memory().swappiness = Some(v);
                self
            }

            /// Disables the OOM killer (cgroup v1).
            pub fn set_linux_memory_disable_oom_killer(&mut self) -> &mut Self {
                self.memory().disable_oom_killer = Some(true);
                self
            }

            /// Enables hierarchical memory accounting (cgroup v1).
            pub fn set_linux_memory_use_hierarchy(&mut self) -> &mut Self {
                self.memory().use_hierarchy = Some(true);
                self
            }

            /// Sets the CPU shares.
            pub fn set_linux_cpu_shares(&mut self, v: u64) -> &mut Self {
                self.cpu().shares = Some(v);
                self
            }

            /// Sets the CPU CFS quota.
            pub fn set_linux_cpu_quota(&mut self, v: i64) -> &mut Self {
                self.cpu().quota = Some(v);
                self
            }

            /// Sets the CPU CFS period.
            pub fn set_linux_cpu_period(&mut self, v: u64) -> &mut Self {
                self.cpu().period = Some(v);
                self
            }

            /// Sets the realtime runtime.
            pub fn set_linux_cpu_realtime_runtime(&mut self, v: i64) -> &mut Self {
                self.cpu().realtime_runtime = Some(v);
                self
            }

            /// Sets the realtime period.
            pub fn set_linux_cpu_realtime_period(&mut self, v: u64) -> &mut Self {
                self.cpu().realtime_period = Some(v);
                self
            }

            /// Sets the cpuset CPUs ("0-3,8").
            pub fn set_linux_cpu_set_cpus(&mut self, v: impl Into<String>) -> &mut Self {
                self.cpu().cpus = v.into();
                self
            }

            /// Sets the cpuset memory nodes ("0").
            pub fn set_linux_cpu_set_mems(&mut self, v: impl Into<String>) -> &mut Self {
                self.cpu().mems = v.into();
                self
            }

            /// Sets the pids limit.
            pub fn set_linux_pid_limits(&mut self, v: i64) -> &mut Self {
                self.resources().pids = Some(LinuxPids { limit: v });
                self
            }

            /// Sets the limit of one huge page size ("2MB").
            pub fn add_linux_hugepage_limit(&mut self, page_size: impl Into<String>, v: u64) -> &mut Self {
                self.resources().hugepage_limits.push(HugepageLimit { page_size: page_size.into(), limit: v });
                self
            }

            /// Sets the block I/O class.
            pub fn set_linux_blockio_class(&mut self, v: impl Into<String>) -> &mut Self {
                self.resources().blockio_class = Some(v.into());
                self
            }

            /// Sets the RDT class.
            pub fn set_linux_rdt_class(&mut self, v: impl Into<String>) -> &mut Self {
                self.resources().rdt_class = Some(v.into());
                self
            }

            /// Sets a cgroup v2 unified setting ("memory.high").
            pub fn add_linux_unified(&mut self, key: impl Into<String>, value: impl Into<String>) -> &mut Self {
                self.resources().unified.insert(key.into(), value.into());
                self
            }

            /// Appends a device cgroup rule (rules never conflict).
            pub fn add_linux_device_cgroup(&mut self, rule: LinuxDeviceCgroup) -> &mut Self {
                self.resources().devices.push(rule);
                self
            }
        }
    };
}

resource_setters!(Adjustment);
resource_setters!(Update);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers() {
        assert_eq!(mark_for_removal("FOO"), "-FOO");
        assert_eq!(is_marked_for_removal("-FOO"), ("FOO", true));
        assert_eq!(is_marked_for_removal("FOO"), ("FOO", false));
    }

    #[test]
    fn adjustment() {
        let mut a = Adjustment::new();
        a.add_annotation("a", "1")
            .remove_annotation("b")
            .remove_mount("/data")
            .add_mount(Mount {
                destination: "/data".into(),
                source: "/srv".into(),
                r#type: "bind".into(),
                options: vec!["ro".into()],
            })
            .remove_env("FOO")
            .add_env("FOO", "bar")
            .update_args(["sh", "-c"])
            .add_rlimit("RLIMIT_NOFILE", 4096, 1024)
            .remove_device("/dev/x")
            .remove_namespace("network")
            .set_linux_sysctl("net.core.somaxconn", "1024")
            .remove_linux_sysctl("net.ipv4.ip_forward")
            .remove_linux_net_device("eth1")
            .set_linux_memory_limit(0)
            .set_linux_cpu_set_cpus("0-1")
            .set_linux_pid_limits(100)
            .set_linux_oom_score_adj(-1)
            .remove_linux_rdt()
            .set_linux_rdt_clos_id("gold")
            .add_cdi_device("vendor.com/gpu=0");
        let p = a.into_proto();
        assert_eq!(p.annotations.get("-b").map(String::as_str), Some(""));
        assert_eq!(p.mounts[0].destination, "-/data");
        assert_eq!(p.env.iter().map(|kv| kv.key.as_str()).collect::<Vec<_>>(), ["-FOO", "FOO"]);
        assert_eq!(p.args, ["", "sh", "-c"]);
        assert_eq!(p.rlimits[0], PosixRlimit { r#type: "RLIMIT_NOFILE".into(), hard: 4096, soft: 1024 });
        let l = p.linux.unwrap();
        assert_eq!(l.devices[0].path, "-/dev/x");
        assert_eq!(l.namespaces[0].r#type, "-network");
        assert!(l.sysctl.contains_key("-net.ipv4.ip_forward") && l.sysctl.contains_key("net.core.somaxconn"));
        assert!(l.net_devices.contains_key("-eth1"));
        let r = l.resources.unwrap();
        // A set wrapper holding zero means "set to zero".
        assert_eq!(r.memory.unwrap().limit, Some(0));
        assert_eq!(r.cpu.unwrap().cpus, "0-1");
        assert_eq!(r.pids.unwrap().limit, 100);
        assert_eq!(l.oom_score_adj, Some(-1));
        let rdt = l.rdt.unwrap();
        assert!(rdt.remove);
        assert_eq!(rdt.clos_id.as_deref(), Some("gold"));
        assert_eq!(p.cdi_devices[0].name, "vendor.com/gpu=0");
    }

    #[test]
    fn update_and_evict() {
        let mut u = Update::new("c1");
        u.set_linux_cpu_shares(512)
            .set_linux_memory_swap(7)
            .add_linux_unified("memory.high", "1G")
            .set_ignore_failure();
        let u = u.into_proto();
        assert_eq!(u.container_id, "c1");
        assert!(u.ignore_failure);
        let r = u.linux.unwrap().resources.unwrap();
        assert_eq!(r.cpu.unwrap().shares, Some(512));
        assert_eq!(r.memory.unwrap().swap, Some(7));
        assert_eq!(r.unified["memory.high"], "1G");
        assert_eq!(
            evict("c2", "overcommitted"),
            ContainerEviction { container_id: "c2".into(), reason: "overcommitted".into() }
        );
    }
}
