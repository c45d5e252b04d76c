from google.protobuf import wrappers_pb2 as _wrappers_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Event(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EVENT_UNSPECIFIED: _ClassVar[Event]
    EVENT_RUN_POD_SANDBOX: _ClassVar[Event]
    EVENT_STOP_POD_SANDBOX: _ClassVar[Event]
    EVENT_REMOVE_POD_SANDBOX: _ClassVar[Event]
    EVENT_CREATE_CONTAINER: _ClassVar[Event]
    EVENT_POST_CREATE_CONTAINER: _ClassVar[Event]
    EVENT_START_CONTAINER: _ClassVar[Event]
    EVENT_POST_START_CONTAINER: _ClassVar[Event]
    EVENT_UPDATE_CONTAINER: _ClassVar[Event]
    EVENT_POST_UPDATE_CONTAINER: _ClassVar[Event]
    EVENT_STOP_CONTAINER: _ClassVar[Event]
    EVENT_REMOVE_CONTAINER: _ClassVar[Event]
    EVENT_UPDATE_POD_SANDBOX: _ClassVar[Event]
    EVENT_POST_UPDATE_POD_SANDBOX: _ClassVar[Event]
    EVENT_VALIDATE_CONTAINER_ADJUSTMENT: _ClassVar[Event]
    EVENT_LAST: _ClassVar[Event]

class ContainerState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONTAINER_STATE_UNSPECIFIED: _ClassVar[ContainerState]
    CONTAINER_STATE_CREATED: _ClassVar[ContainerState]
    CONTAINER_STATE_PAUSED: _ClassVar[ContainerState]
    CONTAINER_STATE_RUNNING: _ClassVar[ContainerState]
    CONTAINER_STATE_STOPPED: _ClassVar[ContainerState]

class IOPrioClass(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    IO_PRIO_CLASS_NONE: _ClassVar[IOPrioClass]
    IO_PRIO_CLASS_RT: _ClassVar[IOPrioClass]
    IO_PRIO_CLASS_BE: _ClassVar[IOPrioClass]
    IO_PRIO_CLASS_IDLE: _ClassVar[IOPrioClass]

class LinuxSchedulerPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LINUX_SCHEDULER_POLICY_NONE: _ClassVar[LinuxSchedulerPolicy]
    LINUX_SCHEDULER_POLICY_OTHER: _ClassVar[LinuxSchedulerPolicy]
    LINUX_SCHEDULER_POLICY_FIFO: _ClassVar[LinuxSchedulerPolicy]
    LINUX_SCHEDULER_POLICY_RR: _ClassVar[LinuxSchedulerPolicy]
    LINUX_SCHEDULER_POLICY_BATCH: _ClassVar[LinuxSchedulerPolicy]
    LINUX_SCHEDULER_POLICY_ISO: _ClassVar[LinuxSchedulerPolicy]
    LINUX_SCHEDULER_POLICY_IDLE: _ClassVar[LinuxSchedulerPolicy]
    LINUX_SCHEDULER_POLICY_DEADLINE: _ClassVar[LinuxSchedulerPolicy]

class LinuxSchedulerFlag(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LINUX_SCHEDULER_FLAG_RESET_ON_FORK: _ClassVar[LinuxSchedulerFlag]
    LINUX_SCHEDULER_FLAG_RECLAIM: _ClassVar[LinuxSchedulerFlag]
    LINUX_SCHEDULER_FLAG_DL_OVERRUN: _ClassVar[LinuxSchedulerFlag]
    LINUX_SCHEDULER_FLAG_KEEP_POLICY: _ClassVar[LinuxSchedulerFlag]
    LINUX_SCHEDULER_FLAG_KEEP_PARAMS: _ClassVar[LinuxSchedulerFlag]
    LINUX_SCHEDULER_FLAG_UTIL_CLAMP_MIN: _ClassVar[LinuxSchedulerFlag]
    LINUX_SCHEDULER_FLAG_UTIL_CLAMP_MAX: _ClassVar[LinuxSchedulerFlag]

class MpolMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MPOL_MODE_DEFAULT: _ClassVar[MpolMode]
    MPOL_MODE_PREFERRED: _ClassVar[MpolMode]
    MPOL_MODE_BIND: _ClassVar[MpolMode]
    MPOL_MODE_INTERLEAVE: _ClassVar[MpolMode]
    MPOL_MODE_LOCAL: _ClassVar[MpolMode]
    MPOL_MODE_PREFERRED_MANY: _ClassVar[MpolMode]
    MPOL_MODE_WEIGHTED_INTERLEAVE: _ClassVar[MpolMode]

class MpolFlag(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MPOL_FLAG_STATIC_NODES: _ClassVar[MpolFlag]
    MPOL_FLAG_RELATIVE_NODES: _ClassVar[MpolFlag]
    MPOL_FLAG_NUMA_BALANCING: _ClassVar[MpolFlag]

class Field(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FIELD_UNSPECIFIED: _ClassVar[Field]
    FIELD_ANNOTATIONS: _ClassVar[Field]
    FIELD_MOUNTS: _ClassVar[Field]
    FIELD_OCI_HOOKS: _ClassVar[Field]
    FIELD_DEVICES: _ClassVar[Field]
    FIELD_CDI_DEVICES: _ClassVar[Field]
    FIELD_ENV: _ClassVar[Field]
    FIELD_ARGS: _ClassVar[Field]
    FIELD_MEM_LIMIT: _ClassVar[Field]
    FIELD_MEM_RESERVATION: _ClassVar[Field]
    FIELD_MEM_SWAP_LIMIT: _ClassVar[Field]
    FIELD_MEM_KERNEL_LIMIT: _ClassVar[Field]
    FIELD_MEM_TCP_LIMIT: _ClassVar[Field]
    FIELD_MEM_SWAPPINESS: _ClassVar[Field]
    FIELD_MEM_DISABLE_OOM_KILLER: _ClassVar[Field]
    FIELD_MEM_USE_HIERARCHY: _ClassVar[Field]
    FIELD_CPU_SHARES: _ClassVar[Field]
    FIELD_CPU_QUOTA: _ClassVar[Field]
    FIELD_CPU_PERIOD: _ClassVar[Field]
    FIELD_CPU_REALTIME_RUNTIME: _ClassVar[Field]
    FIELD_CPU_REALTIME_PERIOD: _ClassVar[Field]
    FIELD_CPU_SET_CPUS: _ClassVar[Field]
    FIELD_CPU_SET_MEMS: _ClassVar[Field]
    FIELD_PIDS_LIMIT: _ClassVar[Field]
    FIELD_HUGEPAGE_LIMITS: _ClassVar[Field]
    FIELD_BLOCKIO_CLASS: _ClassVar[Field]
    FIELD_RDT_CLASS: _ClassVar[Field]
    FIELD_CGROUPS_UNIFIED: _ClassVar[Field]
    FIELD_CGROUPS_PATH: _ClassVar[Field]
    FIELD_OOM_SCORE_ADJ: _ClassVar[Field]
    FIELD_RLIMITS: _ClassVar[Field]
    FIELD_IO_PRIORITY: _ClassVar[Field]
    FIELD_SECCOMP_POLICY: _ClassVar[Field]
    FIELD_NAMESPACE: _ClassVar[Field]
    FIELD_SYSCTL: _ClassVar[Field]
    FIELD_LINUX_NET_DEVICES: _ClassVar[Field]
    FIELD_LINUX_SCHED: _ClassVar[Field]
    FIELD_RDT_CLOS_ID: _ClassVar[Field]
    FIELD_RDT_SCHEMATA: _ClassVar[Field]
    FIELD_RDT_ENABLE_MONITORING: _ClassVar[Field]
    FIELD_MEMORY_POLICY: _ClassVar[Field]

class PluginStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PLUGIN_STATUS_UNSPECIFIED: _ClassVar[PluginStatus]
    PLUGIN_STATUS_READY: _ClassVar[PluginStatus]
    PLUGIN_STATUS_NOT_READY: _ClassVar[PluginStatus]
    PLUGIN_STATUS_DEGRADED: _ClassVar[PluginStatus]
EVENT_UNSPECIFIED: Event
EVENT_RUN_POD_SANDBOX: Event
EVENT_STOP_POD_SANDBOX: Event
EVENT_REMOVE_POD_SANDBOX: Event
EVENT_CREATE_CONTAINER: Event
EVENT_POST_CREATE_CONTAINER: Event
EVENT_START_CONTAINER: Event
EVENT_POST_START_CONTAINER: Event
EVENT_UPDATE_CONTAINER: Event
EVENT_POST_UPDATE_CONTAINER: Event
EVENT_STOP_CONTAINER: Event
EVENT_REMOVE_CONTAINER: Event
EVENT_UPDATE_POD_SANDBOX: Event
EVENT_POST_UPDATE_POD_SANDBOX: Event
EVENT_VALIDATE_CONTAINER_ADJUSTMENT: Event
EVENT_LAST: Event
CONTAINER_STATE_UNSPECIFIED: ContainerState
CONTAINER_STATE_CREATED: ContainerState
CONTAINER_STATE_PAUSED: ContainerState
CONTAINER_STATE_RUNNING: ContainerState
CONTAINER_STATE_STOPPED: ContainerState
IO_PRIO_CLASS_NONE: IOPrioClass
IO_PRIO_CLASS_RT: IOPrioClass
IO_PRIO_CLASS_BE: IOPrioClass
IO_PRIO_CLASS_IDLE: IOPrioClass
LINUX_SCHEDULER_POLICY_NONE: LinuxSchedulerPolicy
LINUX_SCHEDULER_POLICY_OTHER: LinuxSchedulerPolicy
LINUX_SCHEDULER_POLICY_FIFO: LinuxSchedulerPolicy
LINUX_SCHEDULER_POLICY_RR: LinuxSchedulerPolicy
LINUX_SCHEDULER_POLICY_BATCH: LinuxSchedulerPolicy
LINUX_SCHEDULER_POLICY_ISO: LinuxSchedulerPolicy
LINUX_SCHEDULER_POLICY_IDLE: LinuxSchedulerPolicy
LINUX_SCHEDULER_POLICY_DEADLINE: LinuxSchedulerPolicy
LINUX_SCHEDULER_FLAG_RESET_ON_FORK: LinuxSchedulerFlag
LINUX_SCHEDULER_FLAG_RECLAIM: LinuxSchedulerFlag
LINUX_SCHEDULER_FLAG_DL_OVERRUN: LinuxSchedulerFlag
LINUX_SCHEDULER_FLAG_KEEP_POLICY: LinuxSchedulerFlag
LINUX_SCHEDULER_FLAG_KEEP_PARAMS: LinuxSchedulerFlag
LINUX_SCHEDULER_FLAG_UTIL_CLAMP_MIN: LinuxSchedulerFlag
LINUX_SCHEDULER_FLAG_UTIL_CLAMP_MAX: LinuxSchedulerFlag
MPOL_MODE_DEFAULT: MpolMode
MPOL_MODE_PREFERRED: MpolMode
MPOL_MODE_BIND: MpolMode
MPOL_MODE_INTERLEAVE: MpolMode
MPOL_MODE_LOCAL: MpolMode
MPOL_MODE_PREFERRED_MANY: MpolMode
MPOL_MODE_WEIGHTED_INTERLEAVE: MpolMode
MPOL_FLAG_STATIC_NODES: MpolFlag
MPOL_FLAG_RELATIVE_NODES: MpolFlag
MPOL_FLAG_NUMA_BALANCING: MpolFlag
FIELD_UNSPECIFIED: Field
FIELD_ANNOTATIONS: Field
FIELD_MOUNTS: Field
FIELD_OCI_HOOKS: Field
FIELD_DEVICES: Field
FIELD_CDI_DEVICES: Field
FIELD_ENV: Field
FIELD_ARGS: Field
FIELD_MEM_LIMIT: Field
FIELD_MEM_RESERVATION: Field
FIELD_MEM_SWAP_LIMIT: Field
FIELD_MEM_KERNEL_LIMIT: Field
FIELD_MEM_TCP_LIMIT: Field
FIELD_MEM_SWAPPINESS: Field
FIELD_MEM_DISABLE_OOM_KILLER: Field
FIELD_MEM_USE_HIERARCHY: Field
FIELD_CPU_SHARES: Field
FIELD_CPU_QUOTA: Field
FIELD_CPU_PERIOD: Field
FIELD_CPU_REALTIME_RUNTIME: Field
FIELD_CPU_REALTIME_PERIOD: Field
FIELD_CPU_SET_CPUS: Field
FIELD_CPU_SET_MEMS: Field
FIELD_PIDS_LIMIT: Field
FIELD_HUGEPAGE_LIMITS: Field
FIELD_BLOCKIO_CLASS: Field
FIELD_RDT_CLASS: Field
FIELD_CGROUPS_UNIFIED: Field
FIELD_CGROUPS_PATH: Field
FIELD_OOM_SCORE_ADJ: Field
FIELD_RLIMITS: Field
FIELD_IO_PRIORITY: Field
FIELD_SECCOMP_POLICY: Field
FIELD_NAMESPACE: Field
FIELD_SYSCTL: Field
FIELD_LINUX_NET_DEVICES: Field
FIELD_LINUX_SCHED: Field
FIELD_RDT_CLOS_ID: Field
FIELD_RDT_SCHEMATA: Field
FIELD_RDT_ENABLE_MONITORING: Field
FIELD_MEMORY_POLICY: Field
PLUGIN_STATUS_UNSPECIFIED: PluginStatus
PLUGIN_STATUS_READY: PluginStatus
PLUGIN_STATUS_NOT_READY: PluginStatus
PLUGIN_STATUS_DEGRADED: PluginStatus

class PodSandbox(_message.Message):
    __slots__ = ("id", "name", "uid", "namespace", "labels", "annotations", "runtime_handler", "linux", "pid", "ips")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class AnnotationsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_HANDLER_FIELD_NUMBER: _ClassVar[int]
    LINUX_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    IPS_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    uid: str
    namespace: str
    labels: _containers.ScalarMap[str, str]
    annotations: _containers.ScalarMap[str, str]
    runtime_handler: str
    linux: LinuxPodSandbox
    pid: int
    ips: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., uid: _Optional[str] = ..., namespace: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., annotations: _Optional[_Mapping[str, str]] = ..., runtime_handler: _Optional[str] = ..., linux: _Optional[_Union[LinuxPodSandbox, _Mapping]] = ..., pid: _Optional[int] = ..., ips: _Optional[_Iterable[str]] = ...) -> None: ...

class LinuxPodSandbox(_message.Message):
    __slots__ = ("pod_overhead", "pod_resources", "cgroup_parent", "cgroups_path", "namespaces", "resources")
    POD_OVERHEAD_FIELD_NUMBER: _ClassVar[int]
    POD_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    CGROUP_PARENT_FIELD_NUMBER: _ClassVar[int]
    CGROUPS_PATH_FIELD_NUMBER: _ClassVar[int]
    NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    pod_overhead: LinuxResources
    pod_resources: LinuxResources
    cgroup_parent: str
    cgroups_path: str
    namespaces: _containers.RepeatedCompositeFieldContainer[LinuxNamespace]
    resources: LinuxResources
    def __init__(self, pod_overhead: _Optional[_Union[LinuxResources, _Mapping]] = ..., pod_resources: _Optional[_Union[LinuxResources, _Mapping]] = ..., cgroup_parent: _Optional[str] = ..., cgroups_path: _Optional[str] = ..., namespaces: _Optional[_Iterable[_Union[LinuxNamespace, _Mapping]]] = ..., resources: _Optional[_Union[LinuxResources, _Mapping]] = ...) -> None: ...

class Container(_message.Message):
    __slots__ = ("id", "pod_sandbox_id", "name", "state", "labels", "annotations", "args", "env", "mounts", "hooks", "linux", "pid", "rlimits", "created_at", "started_at", "finished_at", "exit_code", "status_reason", "status_message", "cdi_devices", "user", "image")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class AnnotationsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    POD_SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    MOUNTS_FIELD_NUMBER: _ClassVar[int]
    HOOKS_FIELD_NUMBER: _ClassVar[int]
    LINUX_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    RLIMITS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    STATUS_REASON_FIELD_NUMBER: _ClassVar[int]
    STATUS_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CDI_DEVICES_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    id: str
    pod_sandbox_id: str
    name: str
    state: ContainerState
    labels: _containers.ScalarMap[str, str]
    annotations: _containers.ScalarMap[str, str]
    args: _containers.RepeatedScalarFieldContainer[str]
    env: _containers.RepeatedScalarFieldContainer[str]
    mounts: _containers.RepeatedCompositeFieldContainer[Mount]
    hooks: Hooks
    linux: LinuxContainer
    pid: int
    rlimits: _containers.RepeatedCompositeFieldContainer[POSIXRlimit]
    created_at: int
    started_at: int
    finished_at: int
    exit_code: int
    status_reason: str
    status_message: str
    cdi_devices: _containers.RepeatedCompositeFieldContainer[CDIDevice]
    user: User
    image: Image
    def __init__(self, id: _Optional[str] = ..., pod_sandbox_id: _Optional[str] = ..., name: _Optional[str] = ..., state: _Optional[_Union[ContainerState, str]] = ..., labels: _Optional[_Mapping[str, str]] = ..., annotations: _Optional[_Mapping[str, str]] = ..., args: _Optional[_Iterable[str]] = ..., env: _Optional[_Iterable[str]] = ..., mounts: _Optional[_Iterable[_Union[Mount, _Mapping]]] = ..., hooks: _Optional[_Union[Hooks, _Mapping]] = ..., linux: _Optional[_Union[LinuxContainer, _Mapping]] = ..., pid: _Optional[int] = ..., rlimits: _Optional[_Iterable[_Union[POSIXRlimit, _Mapping]]] = ..., created_at: _Optional[int] = ..., started_at: _Optional[int] = ..., finished_at: _Optional[int] = ..., exit_code: _Optional[int] = ..., status_reason: _Optional[str] = ..., status_message: _Optional[str] = ..., cdi_devices: _Optional[_Iterable[_Union[CDIDevice, _Mapping]]] = ..., user: _Optional[_Union[User, _Mapping]] = ..., image: _Optional[_Union[Image, _Mapping]] = ...) -> None: ...

class Image(_message.Message):
    __slots__ = ("name", "digest", "config_digest")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    CONFIG_DIGEST_FIELD_NUMBER: _ClassVar[int]
    name: str
    digest: str
    config_digest: str
    def __init__(self, name: _Optional[str] = ..., digest: _Optional[str] = ..., config_digest: _Optional[str] = ...) -> None: ...

class Mount(_message.Message):
    __slots__ = ("destination", "type", "source", "options")
    DESTINATION_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    destination: str
    type: str
    source: str
    options: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, destination: _Optional[str] = ..., type: _Optional[str] = ..., source: _Optional[str] = ..., options: _Optional[_Iterable[str]] = ...) -> None: ...

class Hooks(_message.Message):
    __slots__ = ("prestart", "create_runtime", "create_container", "start_container", "poststart", "poststop")
    PRESTART_FIELD_NUMBER: _ClassVar[int]
    CREATE_RUNTIME_FIELD_NUMBER: _ClassVar[int]
    CREATE_CONTAINER_FIELD_NUMBER: _ClassVar[int]
    START_CONTAINER_FIELD_NUMBER: _ClassVar[int]
    POSTSTART_FIELD_NUMBER: _ClassVar[int]
    POSTSTOP_FIELD_NUMBER: _ClassVar[int]
    prestart: _containers.RepeatedCompositeFieldContainer[Hook]
    create_runtime: _containers.RepeatedCompositeFieldContainer[Hook]
    create_container: _containers.RepeatedCompositeFieldContainer[Hook]
    start_container: _containers.RepeatedCompositeFieldContainer[Hook]
    poststart: _containers.RepeatedCompositeFieldContainer[Hook]
    poststop: _containers.RepeatedCompositeFieldContainer[Hook]
    def __init__(self, prestart: _Optional[_Iterable[_Union[Hook, _Mapping]]] = ..., create_runtime: _Optional[_Iterable[_Union[Hook, _Mapping]]] = ..., create_container: _Optional[_Iterable[_Union[Hook, _Mapping]]] = ..., start_container: _Optional[_Iterable[_Union[Hook, _Mapping]]] = ..., poststart: _Optional[_Iterable[_Union[Hook, _Mapping]]] = ..., poststop: _Optional[_Iterable[_Union[Hook, _Mapping]]] = ...) -> None: ...

class Hook(_message.Message):
    __slots__ = ("path", "args", "env", "timeout")
    PATH_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    path: str
    args: _containers.RepeatedScalarFieldContainer[str]
    env: _containers.RepeatedScalarFieldContainer[str]
    timeout: _wrappers_pb2.Int64Value
    def __init__(self, path: _Optional[str] = ..., args: _Optional[_Iterable[str]] = ..., env: _Optional[_Iterable[str]] = ..., timeout: _Optional[_Union[_wrappers_pb2.Int64Value, _Mapping]] = ...) -> None: ...

class LinuxContainer(_message.Message):
    __slots__ = ("namespaces", "devices", "resources", "oom_score_adj", "cgroups_path", "io_priority", "seccomp_profile", "seccomp_policy", "sysctl", "net_devices", "scheduler", "rdt")
    class SysctlEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class NetDevicesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: LinuxNetDevice
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[LinuxNetDevice, _Mapping]] = ...) -> None: ...
    NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    OOM_SCORE_ADJ_FIELD_NUMBER: _ClassVar[int]
    CGROUPS_PATH_FIELD_NUMBER: _ClassVar[int]
    IO_PRIORITY_FIELD_NUMBER: _ClassVar[int]
    SECCOMP_PROFILE_FIELD_NUMBER: _ClassVar[int]
    SECCOMP_POLICY_FIELD_NUMBER: _ClassVar[int]
    SYSCTL_FIELD_NUMBER: _ClassVar[int]
    NET_DEVICES_FIELD_NUMBER: _ClassVar[int]
    SCHEDULER_FIELD_NUMBER: _ClassVar[int]
    RDT_FIELD_NUMBER: _ClassVar[int]
    namespaces: _containers.RepeatedCompositeFieldContainer[LinuxNamespace]
    devices: _containers.RepeatedCompositeFieldContainer[LinuxDevice]
    resources: LinuxResources
    oom_score_adj: _wrappers_pb2.Int64Value
    cgroups_path: str
    io_priority: LinuxIOPriority
    seccomp_profile: SecurityProfile
    seccomp_policy: LinuxSeccomp
    sysctl: _containers.ScalarMap[str, str]
    net_devices: _containers.MessageMap[str, LinuxNetDevice]
    scheduler: LinuxScheduler
    rdt: LinuxRdt
    def __init__(self, namespaces: _Optional[_Iterable[_Union[LinuxNamespace, _Mapping]]] = ..., devices: _Optional[_Iterable[_Union[LinuxDevice, _Mapping]]] = ..., resources: _Optional[_Union[LinuxResources, _Mapping]] = ..., oom_score_adj: _Optional[_Union[_wrappers_pb2.Int64Value, _Mapping]] = ..., cgroups_path: _Optional[str] = ..., io_priority: _Optional[_Union[LinuxIOPriority, _Mapping]] = ..., seccomp_profile: _Optional[_Union[SecurityProfile, _Mapping]] = ..., seccomp_policy: _Optional[_Union[LinuxSeccomp, _Mapping]] = ..., sysctl: _Optional[_Mapping[str, str]] = ..., net_devices: _Optional[_Mapping[str, LinuxNetDevice]] = ..., scheduler: _Optional[_Union[LinuxScheduler, _Mapping]] = ..., rdt: _Optional[_Union[LinuxRdt, _Mapping]] = ...) -> None: ...

class LinuxNamespace(_message.Message):
    __slots__ = ("type", "path")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    type: str
    path: str
    def __init__(self, type: _Optional[str] = ..., path: _Optional[str] = ...) -> None: ...

class LinuxDevice(_message.Message):
    __slots__ = ("path", "type", "major", "minor", "file_mode", "uid", "gid")
    PATH_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    MAJOR_FIELD_NUMBER: _ClassVar[int]
    MINOR_FIELD_NUMBER: _ClassVar[int]
    FILE_MODE_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    GID_FIELD_NUMBER: _ClassVar[int]
    path: str
    type: str
    major: int
    minor: int
    file_mode: _wrappers_pb2.UInt32Value
    uid: _wrappers_pb2.UInt32Value
    gid: _wrappers_pb2.UInt32Value
    def __init__(self, path: _Optional[str] = ..., type: _Optional[str] = ..., major: _Optional[int] = ..., minor: _Optional[int] = ..., file_mode: _Optional[_Union[_wrappers_pb2.UInt32Value, _Mapping]] = ..., uid: _Optional[_Union[_wrappers_pb2.UInt32Value, _Mapping]] = ..., gid: _Optional[_Union[_wrappers_pb2.UInt32Value, _Mapping]] = ...) -> None: ...

class LinuxDeviceCgroup(_message.Message):
    __slots__ = ("allow", "type", "major", "minor", "access")
    ALLOW_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    MAJOR_FIELD_NUMBER: _ClassVar[int]
    MINOR_FIELD_NUMBER: _ClassVar[int]
    ACCESS_FIELD_NUMBER: _ClassVar[int]
    allow: bool
    type: str
    major: _wrappers_pb2.Int64Value
    minor: _wrappers_pb2.Int64Value
    access: str
    def __init__(self, allow: _Optional[bool] = ..., type: _Optional[str] = ..., major: _Optional[_Union[_wrappers_pb2.Int64Value, _Mapping]] = ..., minor: _Optional[_Union[_wrappers_pb2.Int64Value, _Mapping]] = ..., access: _Optional[str] = ...) -> None: ...

class CDIDevice(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class User(_message.Message):
    __slots__ = ("uid", "gid", "additional_gids")
    UID_FIELD_NUMBER: _ClassVar[int]
    GID_FIELD_NUMBER: _ClassVar[int]
    ADDITIONAL_GIDS_FIELD_NUMBER: _ClassVar[int]
    uid: int
    gid: int
    additional_gids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, uid: _Optional[int] = ..., gid: _Optional[int] = ..., additional_gids: _Optional[_Iterable[int]] = ...) -> None: ...

class LinuxResources(_message.Message):
    __slots__ = ("memory", "cpu", "hugepage_limits", "blockio_class", "rdt_class", "unified", "devices", "pids")
    class UnifiedEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    CPU_FIELD_NUMBER: _ClassVar[int]
    HUGEPAGE_LIMITS_FIELD_NUMBER: _ClassVar[int]
    BLOCKIO_CLASS_FIELD_NUMBER: _ClassVar[int]
    RDT_CLASS_FIELD_NUMBER: _ClassVar[int]
    UNIFIED_FIELD_NUMBER: _ClassVar[int]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    PIDS_FIELD_NUMBER: _ClassVar[int]
    memory: LinuxMemory
    cpu: LinuxCPU
    hugepage_limits: _containers.RepeatedCompositeFieldContainer[HugepageLimit]
    blockio_class: _wrappers_pb2.StringValue
    rdt_class: _wrappers_pb2.StringValue
    unified: _containers.ScalarMap[str, str]
    devices: _containers.RepeatedCompositeFieldContainer[LinuxDeviceCgroup]
    pids: LinuxPids
    def __init__(self, memory: _Optional[_Union[LinuxMemory, _Mapping]] = ..., cpu: _Optional[_Union[LinuxCPU, _Mapping]] = ..., hugepage_limits: _Optional[_Iterable[_Union[HugepageLimit, _Mapping]]] = ..., blockio_class: _Optional[_Union[_wrappers_pb2.StringValue, _Mapping]] = ..., rdt_class: _Optional[_Union[_wrappers_pb2.StringValue, _Mapping]] = ..., unified: _Optional[_Mapping[str, str]] = ..., devices: _Optional[_Iterable[_Union[LinuxDeviceCgroup, _Mapping]]] = ..., pids: _Optional[_Union[LinuxPids, _Mapping]] = ...) -> None: ...

class LinuxMemory(_message.Message):
    __slots__ = ("limit", "reservation", "swap", "kernel", "kernel_tcp", "swappiness", "disable_oom_killer", "use_hierarchy")
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    RESERVATION_FIELD_NUMBER: _ClassVar[int]
    SWAP_FIELD_NUMBER: _ClassVar[int]
    KERNEL_FIELD_NUMBER: _ClassVar[int]
    KERNEL_TCP_FIELD_NUMBER: _ClassVar[int]
    SWAPPINESS_FIELD_NUMBER: _ClassVar[int]
    DISABLE_OOM_KILLER_FIELD_NUMBER: _ClassVar[int]
    USE_HIERARCHY_FIELD_NUMBER: _ClassVar[int]
    limit: _wrappers_pb2.Int64Value
    reservation: _wrappers_pb2.Int64Value
    swap: _wrappers_pb2.Int64Value
    kernel: _wrappers_pb2.Int64Value
    kernel_tcp: _wrappers_pb2.Int64Value
    swappiness: _wrappers_pb2.UInt64Value
    disable_oom_killer: _wrappers_pb2.BoolValue
    use_hierarchy: _wrappers_pb2.BoolValue
    def __init__(self, limit: _Optional[_Union[_wrappers_pb2.Int64Value, _Mapping]] = ..., reservation: _Optional[_Union[_wrappers_pb2.Int64Value, _Mapping]] = ..., swap: _Optional[_Union[_wrappers_pb2.Int64Value, _Mapping]] = ..., kernel: _Optional[_Union[_wrappers_pb2.Int64Value, _Mapping]] = ..., kernel_tcp: _Optional[_Union[_wrappers_pb2.Int64Value, _Mapping]] = ..., swappiness: _Optional[_Union[_wrappers_pb2.UInt64Value, _Mapping]] = ..., disable_oom_killer: _Optional[_Union[_wrappers_pb2.BoolValue, _Mapping]] = ..., use_hierarchy: _Optional[_Union[_wrappers_pb2.BoolValue, _Mapping]] = ...) -> None: ...

class LinuxCPU(_message.Message):
    __slots__ = ("shares", "quota", "period", "realtime_runtime", "realtime_period", "cpus", "mems")
    SHARES_FIELD_NUMBER: _ClassVar[int]
    QUOTA_FIELD_NUMBER: _ClassVar[int]
    PERIOD_FIELD_NUMBER: _ClassVar[int]
    REALTIME_RUNTIME_FIELD_NUMBER: _ClassVar[int]
    REALTIME_PERIOD_FIELD_NUMBER: _ClassVar[int]
    CPUS_FIELD_NUMBER: _ClassVar[int]
    MEMS_FIELD_NUMBER: _ClassVar[int]
    shares: _wrappers_pb2.UInt64Value
    quota: _wrappers_pb2.Int64Value
    period: _wrappers_pb2.UInt64Value
    realtime_runtime: _wrappers_pb2.Int64Value
    realtime_period: _wrappers_pb2.UInt64Value
    cpus: str
    mems: str
    def __init__(self, shares: _Optional[_Union[_wrappers_pb2.UInt64Value, _Mapping]] = ..., quota: _Optional[_Union[_wrappers_pb2.Int64Value, _Mapping]] = ..., period: _Optional[_Union[_wrappers_pb2.UInt64Value, _Mapping]] = ..., realtime_runtime: _Optional[_Union[_wrappers_pb2.Int64Value, _Mapping]] = ..., realtime_period: _Optional[_Union[_wrappers_pb2.UInt64Value, _Mapping]] = ..., cpus: _Optional[str] = ..., mems: _Optional[str] = ...) -> None: ...

class HugepageLimit(_message.Message):
    __slots__ = ("page_size", "limit")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    page_size: str
    limit: int
    def __init__(self, page_size: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class SecurityProfile(_message.Message):
    __slots__ = ("profile_type", "localhost_ref")
    class ProfileType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        PROFILE_TYPE_RUNTIME_DEFAULT: _ClassVar[SecurityProfile.ProfileType]
        PROFILE_TYPE_UNCONFINED: _ClassVar[SecurityProfile.ProfileType]
        PROFILE_TYPE_LOCALHOST: _ClassVar[SecurityProfile.ProfileType]
    PROFILE_TYPE_RUNTIME_DEFAULT: SecurityProfile.ProfileType
    PROFILE_TYPE_UNCONFINED: SecurityProfile.ProfileType
    PROFILE_TYPE_LOCALHOST: SecurityProfile.ProfileType
    PROFILE_TYPE_FIELD_NUMBER: _ClassVar[int]
    LOCALHOST_REF_FIELD_NUMBER: _ClassVar[int]
    profile_type: SecurityProfile.ProfileType
    localhost_ref: str
    def __init__(self, profile_type: _Optional[_Union[SecurityProfile.ProfileType, str]] = ..., localhost_ref: _Optional[str] = ...) -> None: ...

class POSIXRlimit(_message.Message):
    __slots__ = ("type", "hard", "soft")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    HARD_FIELD_NUMBER: _ClassVar[int]
    SOFT_FIELD_NUMBER: _ClassVar[int]
    type: str
    hard: int
    soft: int
    def __init__(self, type: _Optional[str] = ..., hard: _Optional[int] = ..., soft: _Optional[int] = ...) -> None: ...

class LinuxPids(_message.Message):
    __slots__ = ("limit",)
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    limit: int
    def __init__(self, limit: _Optional[int] = ...) -> None: ...

class LinuxIOPriority(_message.Message):
    __slots__ = ("priority",)
    CLASS_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    priority: int
    def __init__(self, priority: _Optional[int] = ..., **kwargs) -> None: ...

class LinuxNetDevice(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class LinuxScheduler(_message.Message):
    __slots__ = ("policy", "nice", "priority", "flags", "runtime", "deadline", "period")
    POLICY_FIELD_NUMBER: _ClassVar[int]
    NICE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    FLAGS_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    PERIOD_FIELD_NUMBER: _ClassVar[int]
    policy: LinuxSchedulerPolicy
    nice: int
    priority: int
    flags: _containers.RepeatedScalarFieldContainer[LinuxSchedulerFlag]
    runtime: int
    deadline: int
    period: int
    def __init__(self, policy: _Optional[_Union[LinuxSchedulerPolicy, str]] = ..., nice: _Optional[int] = ..., priority: _Optional[int] = ..., flags: _Optional[_Iterable[_Union[LinuxSchedulerFlag, str]]] = ..., runtime: _Optional[int] = ..., deadline: _Optional[int] = ..., period: _Optional[int] = ...) -> None: ...

class ContainerAdjustment(_message.Message):
    __slots__ = ("annotations", "mounts", "env", "hooks", "linux", "rlimits", "cdi_devices", "args")
    class AnnotationsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    MOUNTS_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    HOOKS_FIELD_NUMBER: _ClassVar[int]
    LINUX_FIELD_NUMBER: _ClassVar[int]
    RLIMITS_FIELD_NUMBER: _ClassVar[int]
    CDI_DEVICES_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    annotations: _containers.ScalarMap[str, str]
    mounts: _containers.RepeatedCompositeFieldContainer[Mount]
    env: _containers.RepeatedCompositeFieldContainer[KeyValue]
    hooks: Hooks
    linux: LinuxContainerAdjustment
    rlimits: _containers.RepeatedCompositeFieldContainer[POSIXRlimit]
    cdi_devices: _containers.RepeatedCompositeFieldContainer[CDIDevice]
    args: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, annotations: _Optional[_Mapping[str, str]] = ..., mounts: _Optional[_Iterable[_Union[Mount, _Mapping]]] = ..., env: _Optional[_Iterable[_Union[KeyValue, _Mapping]]] = ..., hooks: _Optional[_Union[Hooks, _Mapping]] = ..., linux: _Optional[_Union[LinuxContainerAdjustment, _Mapping]] = ..., rlimits: _Optional[_Iterable[_Union[POSIXRlimit, _Mapping]]] = ..., cdi_devices: _Optional[_Iterable[_Union[CDIDevice, _Mapping]]] = ..., args: _Optional[_Iterable[str]] = ...) -> None: ...

class LinuxContainerAdjustment(_message.Message):
    __slots__ = ("devices", "resources", "cgroups_path", "oom_score_adj", "io_priority", "seccomp_policy", "namespaces", "sysctl", "net_devices", "scheduler", "rdt", "memory_policy")
    class SysctlEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class NetDevicesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: LinuxNetDevice
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[LinuxNetDevice, _Mapping]] = ...) -> None: ...
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    CGROUPS_PATH_FIELD_NUMBER: _ClassVar[int]
    OOM_SCORE_ADJ_FIELD_NUMBER: _ClassVar[int]
    IO_PRIORITY_FIELD_NUMBER: _ClassVar[int]
    SECCOMP_POLICY_FIELD_NUMBER: _ClassVar[int]
    NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    SYSCTL_FIELD_NUMBER: _ClassVar[int]
    NET_DEVICES_FIELD_NUMBER: _ClassVar[int]
    SCHEDULER_FIELD_NUMBER: _ClassVar[int]
    RDT_FIELD_NUMBER: _ClassVar[int]
    MEMORY_POLICY_FIELD_NUMBER: _ClassVar[int]
    devices: _containers.RepeatedCompositeFieldContainer[LinuxDevice]
    resources: LinuxResources
    cgroups_path: str
    oom_score_adj: _wrappers_pb2.Int64Value
    io_priority: LinuxIOPriority
    seccomp_policy: LinuxSeccomp
    namespaces: _containers.RepeatedCompositeFieldContainer[LinuxNamespace]
    sysctl: _containers.ScalarMap[str, str]
    net_devices: _containers.MessageMap[str, LinuxNetDevice]
    scheduler: LinuxScheduler
    rdt: LinuxRdt
    memory_policy: LinuxMemoryPolicy
    def __init__(self, devices: _Optional[_Iterable[_Union[LinuxDevice, _Mapping]]] = ..., resources: _Optional[_Union[LinuxResources, _Mapping]] = ..., cgroups_path: _Optional[str] = ..., oom_score_adj: _Optional[_Union[_wrappers_pb2.Int64Value, _Mapping]] = ..., io_priority: _Optional[_Union[LinuxIOPriority, _Mapping]] = ..., seccomp_policy: _Optional[_Union[LinuxSeccomp, _Mapping]] = ..., namespaces: _Optional[_Iterable[_Union[LinuxNamespace, _Mapping]]] = ..., sysctl: _Optional[_Mapping[str, str]] = ..., net_devices: _Optional[_Mapping[str, LinuxNetDevice]] = ..., scheduler: _Optional[_Union[LinuxScheduler, _Mapping]] = ..., rdt: _Optional[_Union[LinuxRdt, _Mapping]] = ..., memory_policy: _Optional[_Union[LinuxMemoryPolicy, _Mapping]] = ...) -> None: ...

class LinuxSeccomp(_message.Message):
    __slots__ = ("default_action", "default_errno", "architectures", "flags", "listener_path", "listener_metadata", "syscalls")
    DEFAULT_ACTION_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_ERRNO_FIELD_NUMBER: _ClassVar[int]
    ARCHITECTURES_FIELD_NUMBER: _ClassVar[int]
    FLAGS_FIELD_NUMBER: _ClassVar[int]
    LISTENER_PATH_FIELD_NUMBER: _ClassVar[int]
    LISTENER_METADATA_FIELD_NUMBER: _ClassVar[int]
    SYSCALLS_FIELD_NUMBER: _ClassVar[int]
    default_action: str
    default_errno: _wrappers_pb2.UInt32Value
    architectures: _containers.RepeatedScalarFieldContainer[str]
    flags: _containers.RepeatedScalarFieldContainer[str]
    listener_path: str
    listener_metadata: str
    syscalls: _containers.RepeatedCompositeFieldContainer[LinuxSyscall]
    def __init__(self, default_action: _Optional[str] = ..., default_errno: _Optional[_Union[_wrappers_pb2.UInt32Value, _Mapping]] = ..., architectures: _Optional[_Iterable[str]] = ..., flags: _Optional[_Iterable[str]] = ..., listener_path: _Optional[str] = ..., listener_metadata: _Optional[str] = ..., syscalls: _Optional[_Iterable[_Union[LinuxSyscall, _Mapping]]] = ...) -> None: ...

class LinuxSyscall(_message.Message):
    __slots__ = ("names", "action", "errno_ret", "args")
    NAMES_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    ERRNO_RET_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    action: str
    errno_ret: _wrappers_pb2.UInt32Value
    args: _containers.RepeatedCompositeFieldContainer[LinuxSeccompArg]
    def __init__(self, names: _Optional[_Iterable[str]] = ..., action: _Optional[str] = ..., errno_ret: _Optional[_Union[_wrappers_pb2.UInt32Value, _Mapping]] = ..., args: _Optional[_Iterable[_Union[LinuxSeccompArg, _Mapping]]] = ...) -> None: ...

class LinuxSeccompArg(_message.Message):
    __slots__ = ("index", "value", "value_two", "op")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    VALUE_TWO_FIELD_NUMBER: _ClassVar[int]
    OP_FIELD_NUMBER: _ClassVar[int]
    index: int
    value: int
    value_two: int
    op: str
    def __init__(self, index: _Optional[int] = ..., value: _Optional[int] = ..., value_two: _Optional[int] = ..., op: _Optional[str] = ...) -> None: ...

class LinuxMemoryPolicy(_message.Message):
    __slots__ = ("mode", "nodes", "flags")
    MODE_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    FLAGS_FIELD_NUMBER: _ClassVar[int]
    mode: MpolMode
    nodes: str
    flags: _containers.RepeatedScalarFieldContainer[MpolFlag]
    def __init__(self, mode: _Optional[_Union[MpolMode, str]] = ..., nodes: _Optional[str] = ..., flags: _Optional[_Iterable[_Union[MpolFlag, str]]] = ...) -> None: ...

class ContainerUpdate(_message.Message):
    __slots__ = ("container_id", "linux", "ignore_failure")
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    LINUX_FIELD_NUMBER: _ClassVar[int]
    IGNORE_FAILURE_FIELD_NUMBER: _ClassVar[int]
    container_id: str
    linux: LinuxContainerUpdate
    ignore_failure: bool
    def __init__(self, container_id: _Optional[str] = ..., linux: _Optional[_Union[LinuxContainerUpdate, _Mapping]] = ..., ignore_failure: _Optional[bool] = ...) -> None: ...

class LinuxContainerUpdate(_message.Message):
    __slots__ = ("resources",)
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    resources: LinuxResources
    def __init__(self, resources: _Optional[_Union[LinuxResources, _Mapping]] = ...) -> None: ...

class ContainerEviction(_message.Message):
    __slots__ = ("container_id", "reason")
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    container_id: str
    reason: str
    def __init__(self, container_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class LinuxRdt(_message.Message):
    __slots__ = ("clos_id", "schemata", "enable_monitoring", "remove")
    CLOS_ID_FIELD_NUMBER: _ClassVar[int]
    SCHEMATA_FIELD_NUMBER: _ClassVar[int]
    ENABLE_MONITORING_FIELD_NUMBER: _ClassVar[int]
    REMOVE_FIELD_NUMBER: _ClassVar[int]
    clos_id: _wrappers_pb2.StringValue
    schemata: OptionalRepeatedString
    enable_monitoring: _wrappers_pb2.BoolValue
    remove: bool
    def __init__(self, clos_id: _Optional[_Union[_wrappers_pb2.StringValue, _Mapping]] = ..., schemata: _Optional[_Union[OptionalRepeatedString, _Mapping]] = ..., enable_monitoring: _Optional[_Union[_wrappers_pb2.BoolValue, _Mapping]] = ..., remove: _Optional[bool] = ...) -> None: ...

class KeyValue(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: str
    def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class OptionalRepeatedString(_message.Message):
    __slots__ = ("value",)
    VALUE_FIELD_NUMBER: _ClassVar[int]
    value: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, value: _Optional[_Iterable[str]] = ...) -> None: ...

class CompoundFieldOwners(_message.Message):
    __slots__ = ("owners",)
    class OwnersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    OWNERS_FIELD_NUMBER: _ClassVar[int]
    owners: _containers.ScalarMap[str, str]
    def __init__(self, owners: _Optional[_Mapping[str, str]] = ...) -> None: ...

class FieldOwners(_message.Message):
    __slots__ = ("simple", "compound")
    class SimpleEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: str
        def __init__(self, key: _Optional[int] = ..., value: _Optional[str] = ...) -> None: ...
    class CompoundEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: CompoundFieldOwners
        def __init__(self, key: _Optional[int] = ..., value: _Optional[_Union[CompoundFieldOwners, _Mapping]] = ...) -> None: ...
    SIMPLE_FIELD_NUMBER: _ClassVar[int]
    COMPOUND_FIELD_NUMBER: _ClassVar[int]
    simple: _containers.ScalarMap[int, str]
    compound: _containers.MessageMap[int, CompoundFieldOwners]
    def __init__(self, simple: _Optional[_Mapping[int, str]] = ..., compound: _Optional[_Mapping[int, CompoundFieldOwners]] = ...) -> None: ...

class OwningPlugins(_message.Message):
    __slots__ = ("owners",)
    class OwnersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: FieldOwners
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[FieldOwners, _Mapping]] = ...) -> None: ...
    OWNERS_FIELD_NUMBER: _ClassVar[int]
    owners: _containers.MessageMap[str, FieldOwners]
    def __init__(self, owners: _Optional[_Mapping[str, FieldOwners]] = ...) -> None: ...

class PluginInstance(_message.Message):
    __slots__ = ("name", "index")
    NAME_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    name: str
    index: str
    def __init__(self, name: _Optional[str] = ..., index: _Optional[str] = ...) -> None: ...

class FailurePolicy(_message.Message):
    __slots__ = ("fail_request", "keep_connected")
    FAIL_REQUEST_FIELD_NUMBER: _ClassVar[int]
    KEEP_CONNECTED_FIELD_NUMBER: _ClassVar[int]
    fail_request: bool
    keep_connected: bool
    def __init__(self, fail_request: _Optional[bool] = ..., keep_connected: _Optional[bool] = ...) -> None: ...

class EventSelector(_message.Message):
    __slots__ = ("namespaces", "pod_labels", "container_names", "runtime_handlers")
    NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    POD_LABELS_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_NAMES_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_HANDLERS_FIELD_NUMBER: _ClassVar[int]
    namespaces: _containers.RepeatedScalarFieldContainer[str]
    pod_labels: str
    container_names: _containers.RepeatedScalarFieldContainer[str]
    runtime_handlers: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, namespaces: _Optional[_Iterable[str]] = ..., pod_labels: _Optional[str] = ..., container_names: _Optional[_Iterable[str]] = ..., runtime_handlers: _Optional[_Iterable[str]] = ...) -> None: ...
