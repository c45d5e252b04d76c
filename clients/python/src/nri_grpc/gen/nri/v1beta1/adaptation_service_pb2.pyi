from nri_grpc.gen.nri.v1beta1 import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PluginError(_message.Message):
    __slots__ = ("plugin", "code", "message")
    PLUGIN_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    plugin: _types_pb2.PluginInstance
    code: int
    message: str
    def __init__(self, plugin: _Optional[_Union[_types_pb2.PluginInstance, _Mapping]] = ..., code: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class AdaptationServiceRunPodSandboxRequest(_message.Message):
    __slots__ = ("pod",)
    POD_FIELD_NUMBER: _ClassVar[int]
    pod: _types_pb2.PodSandbox
    def __init__(self, pod: _Optional[_Union[_types_pb2.PodSandbox, _Mapping]] = ...) -> None: ...

class AdaptationServiceRunPodSandboxResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AdaptationServiceUpdatePodSandboxRequest(_message.Message):
    __slots__ = ("pod", "overhead_linux_resources", "linux_resources")
    POD_FIELD_NUMBER: _ClassVar[int]
    OVERHEAD_LINUX_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    LINUX_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    pod: _types_pb2.PodSandbox
    overhead_linux_resources: _types_pb2.LinuxResources
    linux_resources: _types_pb2.LinuxResources
    def __init__(self, pod: _Optional[_Union[_types_pb2.PodSandbox, _Mapping]] = ..., overhead_linux_resources: _Optional[_Union[_types_pb2.LinuxResources, _Mapping]] = ..., linux_resources: _Optional[_Union[_types_pb2.LinuxResources, _Mapping]] = ...) -> None: ...

class AdaptationServiceUpdatePodSandboxResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AdaptationServicePostUpdatePodSandboxRequest(_message.Message):
    __slots__ = ("pod",)
    POD_FIELD_NUMBER: _ClassVar[int]
    pod: _types_pb2.PodSandbox
    def __init__(self, pod: _Optional[_Union[_types_pb2.PodSandbox, _Mapping]] = ...) -> None: ...

class AdaptationServicePostUpdatePodSandboxResponse(_message.Message):
    __slots__ = ("plugin_errors",)
    PLUGIN_ERRORS_FIELD_NUMBER: _ClassVar[int]
    plugin_errors: _containers.RepeatedCompositeFieldContainer[PluginError]
    def __init__(self, plugin_errors: _Optional[_Iterable[_Union[PluginError, _Mapping]]] = ...) -> None: ...

class AdaptationServiceStopPodSandboxRequest(_message.Message):
    __slots__ = ("pod",)
    POD_FIELD_NUMBER: _ClassVar[int]
    pod: _types_pb2.PodSandbox
    def __init__(self, pod: _Optional[_Union[_types_pb2.PodSandbox, _Mapping]] = ...) -> None: ...

class AdaptationServiceStopPodSandboxResponse(_message.Message):
    __slots__ = ("plugin_errors",)
    PLUGIN_ERRORS_FIELD_NUMBER: _ClassVar[int]
    plugin_errors: _containers.RepeatedCompositeFieldContainer[PluginError]
    def __init__(self, plugin_errors: _Optional[_Iterable[_Union[PluginError, _Mapping]]] = ...) -> None: ...

class AdaptationServiceRemovePodSandboxRequest(_message.Message):
    __slots__ = ("pod",)
    POD_FIELD_NUMBER: _ClassVar[int]
    pod: _types_pb2.PodSandbox
    def __init__(self, pod: _Optional[_Union[_types_pb2.PodSandbox, _Mapping]] = ...) -> None: ...

class AdaptationServiceRemovePodSandboxResponse(_message.Message):
    __slots__ = ("plugin_errors",)
    PLUGIN_ERRORS_FIELD_NUMBER: _ClassVar[int]
    plugin_errors: _containers.RepeatedCompositeFieldContainer[PluginError]
    def __init__(self, plugin_errors: _Optional[_Iterable[_Union[PluginError, _Mapping]]] = ...) -> None: ...

class AdaptationServiceCreateContainerRequest(_message.Message):
    __slots__ = ("pod", "container")
    POD_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    pod: _types_pb2.PodSandbox
    container: _types_pb2.Container
    def __init__(self, pod: _Optional[_Union[_types_pb2.PodSandbox, _Mapping]] = ..., container: _Optional[_Union[_types_pb2.Container, _Mapping]] = ...) -> None: ...

class AdaptationServiceCreateContainerResponse(_message.Message):
    __slots__ = ("adjust", "update", "evict")
    ADJUST_FIELD_NUMBER: _ClassVar[int]
    UPDATE_FIELD_NUMBER: _ClassVar[int]
    EVICT_FIELD_NUMBER: _ClassVar[int]
    adjust: _types_pb2.ContainerAdjustment
    update: _containers.RepeatedCompositeFieldContainer[_types_pb2.ContainerUpdate]
    evict: _containers.RepeatedCompositeFieldContainer[_types_pb2.ContainerEviction]
    def __init__(self, adjust: _Optional[_Union[_types_pb2.ContainerAdjustment, _Mapping]] = ..., update: _Optional[_Iterable[_Union[_types_pb2.ContainerUpdate, _Mapping]]] = ..., evict: _Optional[_Iterable[_Union[_types_pb2.ContainerEviction, _Mapping]]] = ...) -> None: ...

class AdaptationServicePostCreateContainerRequest(_message.Message):
    __slots__ = ("pod", "container")
    POD_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    pod: _types_pb2.PodSandbox
    container: _types_pb2.Container
    def __init__(self, pod: _Optional[_Union[_types_pb2.PodSandbox, _Mapping]] = ..., container: _Optional[_Union[_types_pb2.Container, _Mapping]] = ...) -> None: ...

class AdaptationServicePostCreateContainerResponse(_message.Message):
    __slots__ = ("plugin_errors",)
    PLUGIN_ERRORS_FIELD_NUMBER: _ClassVar[int]
    plugin_errors: _containers.RepeatedCompositeFieldContainer[PluginError]
    def __init__(self, plugin_errors: _Optional[_Iterable[_Union[PluginError, _Mapping]]] = ...) -> None: ...

class AdaptationServiceStartContainerRequest(_message.Message):
    __slots__ = ("pod", "container")
    POD_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    pod: _types_pb2.PodSandbox
    container: _types_pb2.Container
    def __init__(self, pod: _Optional[_Union[_types_pb2.PodSandbox, _Mapping]] = ..., container: _Optional[_Union[_types_pb2.Container, _Mapping]] = ...) -> None: ...

class AdaptationServiceStartContainerResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AdaptationServicePostStartContainerRequest(_message.Message):
    __slots__ = ("pod", "container")
    POD_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    pod: _types_pb2.PodSandbox
    container: _types_pb2.Container
    def __init__(self, pod: _Optional[_Union[_types_pb2.PodSandbox, _Mapping]] = ..., container: _Optional[_Union[_types_pb2.Container, _Mapping]] = ...) -> None: ...

class AdaptationServicePostStartContainerResponse(_message.Message):
    __slots__ = ("plugin_errors",)
    PLUGIN_ERRORS_FIELD_NUMBER: _ClassVar[int]
    plugin_errors: _containers.RepeatedCompositeFieldContainer[PluginError]
    def __init__(self, plugin_errors: _Optional[_Iterable[_Union[PluginError, _Mapping]]] = ...) -> None: ...

class AdaptationServiceUpdateContainerRequest(_message.Message):
    __slots__ = ("pod", "container", "linux_resources")
    POD_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    LINUX_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    pod: _types_pb2.PodSandbox
    container: _types_pb2.Container
    linux_resources: _types_pb2.LinuxResources
    def __init__(self, pod: _Optional[_Union[_types_pb2.PodSandbox, _Mapping]] = ..., container: _Optional[_Union[_types_pb2.Container, _Mapping]] = ..., linux_resources: _Optional[_Union[_types_pb2.LinuxResources, _Mapping]] = ...) -> None: ...

class AdaptationServiceUpdateContainerResponse(_message.Message):
    __slots__ = ("update", "evict", "linux_resources")
    UPDATE_FIELD_NUMBER: _ClassVar[int]
    EVICT_FIELD_NUMBER: _ClassVar[int]
    LINUX_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    update: _containers.RepeatedCompositeFieldContainer[_types_pb2.ContainerUpdate]
    evict: _containers.RepeatedCompositeFieldContainer[_types_pb2.ContainerEviction]
    linux_resources: _types_pb2.LinuxResources
    def __init__(self, update: _Optional[_Iterable[_Union[_types_pb2.ContainerUpdate, _Mapping]]] = ..., evict: _Optional[_Iterable[_Union[_types_pb2.ContainerEviction, _Mapping]]] = ..., linux_resources: _Optional[_Union[_types_pb2.LinuxResources, _Mapping]] = ...) -> None: ...

class AdaptationServicePostUpdateContainerRequest(_message.Message):
    __slots__ = ("pod", "container")
    POD_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    pod: _types_pb2.PodSandbox
    container: _types_pb2.Container
    def __init__(self, pod: _Optional[_Union[_types_pb2.PodSandbox, _Mapping]] = ..., container: _Optional[_Union[_types_pb2.Container, _Mapping]] = ...) -> None: ...

class AdaptationServicePostUpdateContainerResponse(_message.Message):
    __slots__ = ("plugin_errors",)
    PLUGIN_ERRORS_FIELD_NUMBER: _ClassVar[int]
    plugin_errors: _containers.RepeatedCompositeFieldContainer[PluginError]
    def __init__(self, plugin_errors: _Optional[_Iterable[_Union[PluginError, _Mapping]]] = ...) -> None: ...

class AdaptationServiceStopContainerRequest(_message.Message):
    __slots__ = ("pod", "container")
    POD_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    pod: _types_pb2.PodSandbox
    container: _types_pb2.Container
    def __init__(self, pod: _Optional[_Union[_types_pb2.PodSandbox, _Mapping]] = ..., container: _Optional[_Union[_types_pb2.Container, _Mapping]] = ...) -> None: ...

class AdaptationServiceStopContainerResponse(_message.Message):
    __slots__ = ("update", "evict", "plugin_errors")
    UPDATE_FIELD_NUMBER: _ClassVar[int]
    EVICT_FIELD_NUMBER: _ClassVar[int]
    PLUGIN_ERRORS_FIELD_NUMBER: _ClassVar[int]
    update: _containers.RepeatedCompositeFieldContainer[_types_pb2.ContainerUpdate]
    evict: _containers.RepeatedCompositeFieldContainer[_types_pb2.ContainerEviction]
    plugin_errors: _containers.RepeatedCompositeFieldContainer[PluginError]
    def __init__(self, update: _Optional[_Iterable[_Union[_types_pb2.ContainerUpdate, _Mapping]]] = ..., evict: _Optional[_Iterable[_Union[_types_pb2.ContainerEviction, _Mapping]]] = ..., plugin_errors: _Optional[_Iterable[_Union[PluginError, _Mapping]]] = ...) -> None: ...

class AdaptationServiceRemoveContainerRequest(_message.Message):
    __slots__ = ("pod", "container")
    POD_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    pod: _types_pb2.PodSandbox
    container: _types_pb2.Container
    def __init__(self, pod: _Optional[_Union[_types_pb2.PodSandbox, _Mapping]] = ..., container: _Optional[_Union[_types_pb2.Container, _Mapping]] = ...) -> None: ...

class AdaptationServiceRemoveContainerResponse(_message.Message):
    __slots__ = ("plugin_errors",)
    PLUGIN_ERRORS_FIELD_NUMBER: _ClassVar[int]
    plugin_errors: _containers.RepeatedCompositeFieldContainer[PluginError]
    def __init__(self, plugin_errors: _Optional[_Iterable[_Union[PluginError, _Mapping]]] = ...) -> None: ...

class AttachRequest(_message.Message):
    __slots__ = ("hello", "snapshot", "update_result")
    HELLO_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    UPDATE_RESULT_FIELD_NUMBER: _ClassVar[int]
    hello: AttachHello
    snapshot: StateSnapshot
    update_result: UpdateResult
    def __init__(self, hello: _Optional[_Union[AttachHello, _Mapping]] = ..., snapshot: _Optional[_Union[StateSnapshot, _Mapping]] = ..., update_result: _Optional[_Union[UpdateResult, _Mapping]] = ...) -> None: ...

class AttachHello(_message.Message):
    __slots__ = ("runtime_name", "runtime_version", "node_name", "max_message_size")
    RUNTIME_NAME_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_VERSION_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    MAX_MESSAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    runtime_name: str
    runtime_version: str
    node_name: str
    max_message_size: int
    def __init__(self, runtime_name: _Optional[str] = ..., runtime_version: _Optional[str] = ..., node_name: _Optional[str] = ..., max_message_size: _Optional[int] = ...) -> None: ...

class StateSnapshot(_message.Message):
    __slots__ = ("request_id", "pods", "containers", "more")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    PODS_FIELD_NUMBER: _ClassVar[int]
    CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    MORE_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    pods: _containers.RepeatedCompositeFieldContainer[_types_pb2.PodSandbox]
    containers: _containers.RepeatedCompositeFieldContainer[_types_pb2.Container]
    more: bool
    def __init__(self, request_id: _Optional[int] = ..., pods: _Optional[_Iterable[_Union[_types_pb2.PodSandbox, _Mapping]]] = ..., containers: _Optional[_Iterable[_Union[_types_pb2.Container, _Mapping]]] = ..., more: _Optional[bool] = ...) -> None: ...

class UpdateResult(_message.Message):
    __slots__ = ("request_id", "failed", "failed_evictions", "error")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    FAILED_EVICTIONS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    failed: _containers.RepeatedCompositeFieldContainer[_types_pb2.ContainerUpdate]
    failed_evictions: _containers.RepeatedCompositeFieldContainer[_types_pb2.ContainerEviction]
    error: str
    def __init__(self, request_id: _Optional[int] = ..., failed: _Optional[_Iterable[_Union[_types_pb2.ContainerUpdate, _Mapping]]] = ..., failed_evictions: _Optional[_Iterable[_Union[_types_pb2.ContainerEviction, _Mapping]]] = ..., error: _Optional[str] = ...) -> None: ...

class AttachResponse(_message.Message):
    __slots__ = ("attached", "snapshot_request", "apply_updates")
    ATTACHED_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_REQUEST_FIELD_NUMBER: _ClassVar[int]
    APPLY_UPDATES_FIELD_NUMBER: _ClassVar[int]
    attached: Attached
    snapshot_request: SnapshotRequest
    apply_updates: ApplyUpdates
    def __init__(self, attached: _Optional[_Union[Attached, _Mapping]] = ..., snapshot_request: _Optional[_Union[SnapshotRequest, _Mapping]] = ..., apply_updates: _Optional[_Union[ApplyUpdates, _Mapping]] = ...) -> None: ...

class Attached(_message.Message):
    __slots__ = ("server_version", "node_name")
    SERVER_VERSION_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    server_version: str
    node_name: str
    def __init__(self, server_version: _Optional[str] = ..., node_name: _Optional[str] = ...) -> None: ...

class SnapshotRequest(_message.Message):
    __slots__ = ("request_id",)
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    def __init__(self, request_id: _Optional[int] = ...) -> None: ...

class ApplyUpdates(_message.Message):
    __slots__ = ("request_id", "update", "evict", "plugin")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    UPDATE_FIELD_NUMBER: _ClassVar[int]
    EVICT_FIELD_NUMBER: _ClassVar[int]
    PLUGIN_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    update: _containers.RepeatedCompositeFieldContainer[_types_pb2.ContainerUpdate]
    evict: _containers.RepeatedCompositeFieldContainer[_types_pb2.ContainerEviction]
    plugin: str
    def __init__(self, request_id: _Optional[int] = ..., update: _Optional[_Iterable[_Union[_types_pb2.ContainerUpdate, _Mapping]]] = ..., evict: _Optional[_Iterable[_Union[_types_pb2.ContainerEviction, _Mapping]]] = ..., plugin: _Optional[str] = ...) -> None: ...
