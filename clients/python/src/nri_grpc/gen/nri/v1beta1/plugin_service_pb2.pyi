import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from nri_grpc.gen.nri.v1beta1 import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SyncReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SYNC_REASON_UNSPECIFIED: _ClassVar[SyncReason]
    SYNC_REASON_REGISTRATION: _ClassVar[SyncReason]
    SYNC_REASON_RUNTIME_RESTARTED: _ClassVar[SyncReason]
    SYNC_REASON_RUNTIME_RECONNECTED: _ClassVar[SyncReason]
    SYNC_REASON_PLUGIN_REQUESTED: _ClassVar[SyncReason]
    SYNC_REASON_MISSED_EVENTS: _ClassVar[SyncReason]

class ShutdownKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SHUTDOWN_KIND_UNSPECIFIED: _ClassVar[ShutdownKind]
    SHUTDOWN_KIND_SERVER_STOPPING: _ClassVar[ShutdownKind]
    SHUTDOWN_KIND_REPLACED: _ClassVar[ShutdownKind]
    SHUTDOWN_KIND_EVICTED: _ClassVar[ShutdownKind]
    SHUTDOWN_KIND_REGISTRATION_FAILED: _ClassVar[ShutdownKind]
SYNC_REASON_UNSPECIFIED: SyncReason
SYNC_REASON_REGISTRATION: SyncReason
SYNC_REASON_RUNTIME_RESTARTED: SyncReason
SYNC_REASON_RUNTIME_RECONNECTED: SyncReason
SYNC_REASON_PLUGIN_REQUESTED: SyncReason
SYNC_REASON_MISSED_EVENTS: SyncReason
SHUTDOWN_KIND_UNSPECIFIED: ShutdownKind
SHUTDOWN_KIND_SERVER_STOPPING: ShutdownKind
SHUTDOWN_KIND_REPLACED: ShutdownKind
SHUTDOWN_KIND_EVICTED: ShutdownKind
SHUTDOWN_KIND_REGISTRATION_FAILED: ShutdownKind

class ConfigureRequest(_message.Message):
    __slots__ = ("config", "runtime_name", "runtime_version", "registration_timeout", "request_timeout", "nri_version", "node_name", "instance_id", "capabilities", "server_version", "timeouts")
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_NAME_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_VERSION_FIELD_NUMBER: _ClassVar[int]
    REGISTRATION_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    REQUEST_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    NRI_VERSION_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    SERVER_VERSION_FIELD_NUMBER: _ClassVar[int]
    TIMEOUTS_FIELD_NUMBER: _ClassVar[int]
    config: str
    runtime_name: str
    runtime_version: str
    registration_timeout: int
    request_timeout: int
    nri_version: str
    node_name: str
    instance_id: str
    capabilities: Capabilities
    server_version: str
    timeouts: Timeouts
    def __init__(self, config: _Optional[str] = ..., runtime_name: _Optional[str] = ..., runtime_version: _Optional[str] = ..., registration_timeout: _Optional[int] = ..., request_timeout: _Optional[int] = ..., nri_version: _Optional[str] = ..., node_name: _Optional[str] = ..., instance_id: _Optional[str] = ..., capabilities: _Optional[_Union[Capabilities, _Mapping]] = ..., server_version: _Optional[str] = ..., timeouts: _Optional[_Union[Timeouts, _Mapping]] = ...) -> None: ...

class ConfigureResponse(_message.Message):
    __slots__ = ("events", "failure_policy")
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    FAILURE_POLICY_FIELD_NUMBER: _ClassVar[int]
    events: int
    failure_policy: _types_pb2.FailurePolicy
    def __init__(self, events: _Optional[int] = ..., failure_policy: _Optional[_Union[_types_pb2.FailurePolicy, _Mapping]] = ...) -> None: ...

class SynchronizeRequest(_message.Message):
    __slots__ = ("pods", "containers", "more", "epoch", "reason")
    PODS_FIELD_NUMBER: _ClassVar[int]
    CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    MORE_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    pods: _containers.RepeatedCompositeFieldContainer[_types_pb2.PodSandbox]
    containers: _containers.RepeatedCompositeFieldContainer[_types_pb2.Container]
    more: bool
    epoch: int
    reason: SyncReason
    def __init__(self, pods: _Optional[_Iterable[_Union[_types_pb2.PodSandbox, _Mapping]]] = ..., containers: _Optional[_Iterable[_Union[_types_pb2.Container, _Mapping]]] = ..., more: _Optional[bool] = ..., epoch: _Optional[int] = ..., reason: _Optional[_Union[SyncReason, str]] = ...) -> None: ...

class SynchronizeResponse(_message.Message):
    __slots__ = ("update", "more", "evict")
    UPDATE_FIELD_NUMBER: _ClassVar[int]
    MORE_FIELD_NUMBER: _ClassVar[int]
    EVICT_FIELD_NUMBER: _ClassVar[int]
    update: _containers.RepeatedCompositeFieldContainer[_types_pb2.ContainerUpdate]
    more: bool
    evict: _containers.RepeatedCompositeFieldContainer[_types_pb2.ContainerEviction]
    def __init__(self, update: _Optional[_Iterable[_Union[_types_pb2.ContainerUpdate, _Mapping]]] = ..., more: _Optional[bool] = ..., evict: _Optional[_Iterable[_Union[_types_pb2.ContainerEviction, _Mapping]]] = ...) -> None: ...

class ShutdownRequest(_message.Message):
    __slots__ = ("reason", "kind")
    REASON_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    reason: str
    kind: ShutdownKind
    def __init__(self, reason: _Optional[str] = ..., kind: _Optional[_Union[ShutdownKind, str]] = ...) -> None: ...

class ShutdownResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RunPodSandboxRequest(_message.Message):
    __slots__ = ("pod",)
    POD_FIELD_NUMBER: _ClassVar[int]
    pod: _types_pb2.PodSandbox
    def __init__(self, pod: _Optional[_Union[_types_pb2.PodSandbox, _Mapping]] = ...) -> None: ...

class RunPodSandboxResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class UpdatePodSandboxRequest(_message.Message):
    __slots__ = ("pod", "overhead_linux_resources", "linux_resources")
    POD_FIELD_NUMBER: _ClassVar[int]
    OVERHEAD_LINUX_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    LINUX_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    pod: _types_pb2.PodSandbox
    overhead_linux_resources: _types_pb2.LinuxResources
    linux_resources: _types_pb2.LinuxResources
    def __init__(self, pod: _Optional[_Union[_types_pb2.PodSandbox, _Mapping]] = ..., overhead_linux_resources: _Optional[_Union[_types_pb2.LinuxResources, _Mapping]] = ..., linux_resources: _Optional[_Union[_types_pb2.LinuxResources, _Mapping]] = ...) -> None: ...

class UpdatePodSandboxResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PostUpdatePodSandboxRequest(_message.Message):
    __slots__ = ("pod",)
    POD_FIELD_NUMBER: _ClassVar[int]
    pod: _types_pb2.PodSandbox
    def __init__(self, pod: _Optional[_Union[_types_pb2.PodSandbox, _Mapping]] = ...) -> None: ...

class PostUpdatePodSandboxResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StopPodSandboxRequest(_message.Message):
    __slots__ = ("pod",)
    POD_FIELD_NUMBER: _ClassVar[int]
    pod: _types_pb2.PodSandbox
    def __init__(self, pod: _Optional[_Union[_types_pb2.PodSandbox, _Mapping]] = ...) -> None: ...

class StopPodSandboxResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RemovePodSandboxRequest(_message.Message):
    __slots__ = ("pod",)
    POD_FIELD_NUMBER: _ClassVar[int]
    pod: _types_pb2.PodSandbox
    def __init__(self, pod: _Optional[_Union[_types_pb2.PodSandbox, _Mapping]] = ...) -> None: ...

class RemovePodSandboxResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CreateContainerRequest(_message.Message):
    __slots__ = ("pod", "container", "dry_run")
    POD_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    pod: _types_pb2.PodSandbox
    container: _types_pb2.Container
    dry_run: bool
    def __init__(self, pod: _Optional[_Union[_types_pb2.PodSandbox, _Mapping]] = ..., container: _Optional[_Union[_types_pb2.Container, _Mapping]] = ..., dry_run: _Optional[bool] = ...) -> None: ...

class CreateContainerResponse(_message.Message):
    __slots__ = ("adjust", "update", "evict")
    ADJUST_FIELD_NUMBER: _ClassVar[int]
    UPDATE_FIELD_NUMBER: _ClassVar[int]
    EVICT_FIELD_NUMBER: _ClassVar[int]
    adjust: _types_pb2.ContainerAdjustment
    update: _containers.RepeatedCompositeFieldContainer[_types_pb2.ContainerUpdate]
    evict: _containers.RepeatedCompositeFieldContainer[_types_pb2.ContainerEviction]
    def __init__(self, adjust: _Optional[_Union[_types_pb2.ContainerAdjustment, _Mapping]] = ..., update: _Optional[_Iterable[_Union[_types_pb2.ContainerUpdate, _Mapping]]] = ..., evict: _Optional[_Iterable[_Union[_types_pb2.ContainerEviction, _Mapping]]] = ...) -> None: ...

class PostCreateContainerRequest(_message.Message):
    __slots__ = ("pod", "container")
    POD_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    pod: _types_pb2.PodSandbox
    container: _types_pb2.Container
    def __init__(self, pod: _Optional[_Union[_types_pb2.PodSandbox, _Mapping]] = ..., container: _Optional[_Union[_types_pb2.Container, _Mapping]] = ...) -> None: ...

class PostCreateContainerResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StartContainerRequest(_message.Message):
    __slots__ = ("pod", "container")
    POD_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    pod: _types_pb2.PodSandbox
    container: _types_pb2.Container
    def __init__(self, pod: _Optional[_Union[_types_pb2.PodSandbox, _Mapping]] = ..., container: _Optional[_Union[_types_pb2.Container, _Mapping]] = ...) -> None: ...

class StartContainerResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PostStartContainerRequest(_message.Message):
    __slots__ = ("pod", "container")
    POD_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    pod: _types_pb2.PodSandbox
    container: _types_pb2.Container
    def __init__(self, pod: _Optional[_Union[_types_pb2.PodSandbox, _Mapping]] = ..., container: _Optional[_Union[_types_pb2.Container, _Mapping]] = ...) -> None: ...

class PostStartContainerResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class UpdateContainerRequest(_message.Message):
    __slots__ = ("pod", "container", "linux_resources", "dry_run")
    POD_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    LINUX_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    pod: _types_pb2.PodSandbox
    container: _types_pb2.Container
    linux_resources: _types_pb2.LinuxResources
    dry_run: bool
    def __init__(self, pod: _Optional[_Union[_types_pb2.PodSandbox, _Mapping]] = ..., container: _Optional[_Union[_types_pb2.Container, _Mapping]] = ..., linux_resources: _Optional[_Union[_types_pb2.LinuxResources, _Mapping]] = ..., dry_run: _Optional[bool] = ...) -> None: ...

class UpdateContainerResponse(_message.Message):
    __slots__ = ("update", "evict")
    UPDATE_FIELD_NUMBER: _ClassVar[int]
    EVICT_FIELD_NUMBER: _ClassVar[int]
    update: _containers.RepeatedCompositeFieldContainer[_types_pb2.ContainerUpdate]
    evict: _containers.RepeatedCompositeFieldContainer[_types_pb2.ContainerEviction]
    def __init__(self, update: _Optional[_Iterable[_Union[_types_pb2.ContainerUpdate, _Mapping]]] = ..., evict: _Optional[_Iterable[_Union[_types_pb2.ContainerEviction, _Mapping]]] = ...) -> None: ...

class PostUpdateContainerRequest(_message.Message):
    __slots__ = ("pod", "container")
    POD_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    pod: _types_pb2.PodSandbox
    container: _types_pb2.Container
    def __init__(self, pod: _Optional[_Union[_types_pb2.PodSandbox, _Mapping]] = ..., container: _Optional[_Union[_types_pb2.Container, _Mapping]] = ...) -> None: ...

class PostUpdateContainerResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StopContainerRequest(_message.Message):
    __slots__ = ("pod", "container")
    POD_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    pod: _types_pb2.PodSandbox
    container: _types_pb2.Container
    def __init__(self, pod: _Optional[_Union[_types_pb2.PodSandbox, _Mapping]] = ..., container: _Optional[_Union[_types_pb2.Container, _Mapping]] = ...) -> None: ...

class StopContainerResponse(_message.Message):
    __slots__ = ("update", "evict")
    UPDATE_FIELD_NUMBER: _ClassVar[int]
    EVICT_FIELD_NUMBER: _ClassVar[int]
    update: _containers.RepeatedCompositeFieldContainer[_types_pb2.ContainerUpdate]
    evict: _containers.RepeatedCompositeFieldContainer[_types_pb2.ContainerEviction]
    def __init__(self, update: _Optional[_Iterable[_Union[_types_pb2.ContainerUpdate, _Mapping]]] = ..., evict: _Optional[_Iterable[_Union[_types_pb2.ContainerEviction, _Mapping]]] = ...) -> None: ...

class RemoveContainerRequest(_message.Message):
    __slots__ = ("pod", "container")
    POD_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    pod: _types_pb2.PodSandbox
    container: _types_pb2.Container
    def __init__(self, pod: _Optional[_Union[_types_pb2.PodSandbox, _Mapping]] = ..., container: _Optional[_Union[_types_pb2.Container, _Mapping]] = ...) -> None: ...

class RemoveContainerResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ValidateContainerAdjustmentRequest(_message.Message):
    __slots__ = ("pod", "container", "adjust", "update", "owners", "plugins", "dry_run")
    POD_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    ADJUST_FIELD_NUMBER: _ClassVar[int]
    UPDATE_FIELD_NUMBER: _ClassVar[int]
    OWNERS_FIELD_NUMBER: _ClassVar[int]
    PLUGINS_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    pod: _types_pb2.PodSandbox
    container: _types_pb2.Container
    adjust: _types_pb2.ContainerAdjustment
    update: _containers.RepeatedCompositeFieldContainer[_types_pb2.ContainerUpdate]
    owners: _types_pb2.OwningPlugins
    plugins: _containers.RepeatedCompositeFieldContainer[_types_pb2.PluginInstance]
    dry_run: bool
    def __init__(self, pod: _Optional[_Union[_types_pb2.PodSandbox, _Mapping]] = ..., container: _Optional[_Union[_types_pb2.Container, _Mapping]] = ..., adjust: _Optional[_Union[_types_pb2.ContainerAdjustment, _Mapping]] = ..., update: _Optional[_Iterable[_Union[_types_pb2.ContainerUpdate, _Mapping]]] = ..., owners: _Optional[_Union[_types_pb2.OwningPlugins, _Mapping]] = ..., plugins: _Optional[_Iterable[_Union[_types_pb2.PluginInstance, _Mapping]]] = ..., dry_run: _Optional[bool] = ...) -> None: ...

class ValidateContainerAdjustmentResponse(_message.Message):
    __slots__ = ("reject", "reason")
    REJECT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    reject: bool
    reason: str
    def __init__(self, reject: _Optional[bool] = ..., reason: _Optional[str] = ...) -> None: ...

class Capabilities(_message.Message):
    __slots__ = ("max_concurrent_calls", "dry_run", "max_message_size", "resync")
    MAX_CONCURRENT_CALLS_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    MAX_MESSAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    RESYNC_FIELD_NUMBER: _ClassVar[int]
    max_concurrent_calls: int
    dry_run: bool
    max_message_size: int
    resync: bool
    def __init__(self, max_concurrent_calls: _Optional[int] = ..., dry_run: _Optional[bool] = ..., max_message_size: _Optional[int] = ..., resync: _Optional[bool] = ...) -> None: ...

class EventTimeout(_message.Message):
    __slots__ = ("event", "timeout")
    EVENT_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    event: _types_pb2.Event
    timeout: _duration_pb2.Duration
    def __init__(self, event: _Optional[_Union[_types_pb2.Event, str]] = ..., timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class Timeouts(_message.Message):
    __slots__ = ("request", "events", "synchronize")
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    SYNCHRONIZE_FIELD_NUMBER: _ClassVar[int]
    request: _duration_pb2.Duration
    events: _containers.RepeatedCompositeFieldContainer[EventTimeout]
    synchronize: _duration_pb2.Duration
    def __init__(self, request: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., events: _Optional[_Iterable[_Union[EventTimeout, _Mapping]]] = ..., synchronize: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...
