from nri_grpc.gen.nri.v1beta1 import plugin_service_pb2 as _plugin_service_pb2
from nri_grpc.gen.nri.v1beta1 import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RegistrationRefusal(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REGISTRATION_REFUSAL_UNSPECIFIED: _ClassVar[RegistrationRefusal]
    REGISTRATION_REFUSAL_INVALID_NAME: _ClassVar[RegistrationRefusal]
    REGISTRATION_REFUSAL_INVALID_INDEX: _ClassVar[RegistrationRefusal]
    REGISTRATION_REFUSAL_INVALID_ENDPOINT: _ClassVar[RegistrationRefusal]
    REGISTRATION_REFUSAL_NOT_PERMITTED: _ClassVar[RegistrationRefusal]
    REGISTRATION_REFUSAL_IDENTITY_MISMATCH: _ClassVar[RegistrationRefusal]
    REGISTRATION_REFUSAL_PEER_MISMATCH: _ClassVar[RegistrationRefusal]
    REGISTRATION_REFUSAL_INVALID_EVENTS: _ClassVar[RegistrationRefusal]
    REGISTRATION_REFUSAL_CONFIGURE_FAILED: _ClassVar[RegistrationRefusal]
    REGISTRATION_REFUSAL_SYNCHRONIZE_FAILED: _ClassVar[RegistrationRefusal]
    REGISTRATION_REFUSAL_SHUTTING_DOWN: _ClassVar[RegistrationRefusal]
    REGISTRATION_REFUSAL_INVALID_CAPABILITIES: _ClassVar[RegistrationRefusal]
    REGISTRATION_REFUSAL_INVALID_SELECTORS: _ClassVar[RegistrationRefusal]
REGISTRATION_REFUSAL_UNSPECIFIED: RegistrationRefusal
REGISTRATION_REFUSAL_INVALID_NAME: RegistrationRefusal
REGISTRATION_REFUSAL_INVALID_INDEX: RegistrationRefusal
REGISTRATION_REFUSAL_INVALID_ENDPOINT: RegistrationRefusal
REGISTRATION_REFUSAL_NOT_PERMITTED: RegistrationRefusal
REGISTRATION_REFUSAL_IDENTITY_MISMATCH: RegistrationRefusal
REGISTRATION_REFUSAL_PEER_MISMATCH: RegistrationRefusal
REGISTRATION_REFUSAL_INVALID_EVENTS: RegistrationRefusal
REGISTRATION_REFUSAL_CONFIGURE_FAILED: RegistrationRefusal
REGISTRATION_REFUSAL_SYNCHRONIZE_FAILED: RegistrationRefusal
REGISTRATION_REFUSAL_SHUTTING_DOWN: RegistrationRefusal
REGISTRATION_REFUSAL_INVALID_CAPABILITIES: RegistrationRefusal
REGISTRATION_REFUSAL_INVALID_SELECTORS: RegistrationRefusal

class RegisterPluginRequest(_message.Message):
    __slots__ = ("plugin_name", "plugin_idx", "nri_version", "endpoint", "capabilities", "timeouts", "plugin_version", "selectors", "status", "status_reason")
    PLUGIN_NAME_FIELD_NUMBER: _ClassVar[int]
    PLUGIN_IDX_FIELD_NUMBER: _ClassVar[int]
    NRI_VERSION_FIELD_NUMBER: _ClassVar[int]
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    TIMEOUTS_FIELD_NUMBER: _ClassVar[int]
    PLUGIN_VERSION_FIELD_NUMBER: _ClassVar[int]
    SELECTORS_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    STATUS_REASON_FIELD_NUMBER: _ClassVar[int]
    plugin_name: str
    plugin_idx: str
    nri_version: str
    endpoint: str
    capabilities: _plugin_service_pb2.Capabilities
    timeouts: _plugin_service_pb2.Timeouts
    plugin_version: str
    selectors: _containers.RepeatedCompositeFieldContainer[_types_pb2.EventSelector]
    status: _types_pb2.PluginStatus
    status_reason: str
    def __init__(self, plugin_name: _Optional[str] = ..., plugin_idx: _Optional[str] = ..., nri_version: _Optional[str] = ..., endpoint: _Optional[str] = ..., capabilities: _Optional[_Union[_plugin_service_pb2.Capabilities, _Mapping]] = ..., timeouts: _Optional[_Union[_plugin_service_pb2.Timeouts, _Mapping]] = ..., plugin_version: _Optional[str] = ..., selectors: _Optional[_Iterable[_Union[_types_pb2.EventSelector, _Mapping]]] = ..., status: _Optional[_Union[_types_pb2.PluginStatus, str]] = ..., status_reason: _Optional[str] = ...) -> None: ...

class SetPluginStatusRequest(_message.Message):
    __slots__ = ("status", "reason")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    status: _types_pb2.PluginStatus
    reason: str
    def __init__(self, status: _Optional[_Union[_types_pb2.PluginStatus, str]] = ..., reason: _Optional[str] = ...) -> None: ...

class SetPluginStatusResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RequestResyncRequest(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class RequestResyncResponse(_message.Message):
    __slots__ = ("epoch",)
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    epoch: int
    def __init__(self, epoch: _Optional[int] = ...) -> None: ...

class RegisterPluginResponse(_message.Message):
    __slots__ = ("registered",)
    REGISTERED_FIELD_NUMBER: _ClassVar[int]
    registered: Registered
    def __init__(self, registered: _Optional[_Union[Registered, _Mapping]] = ...) -> None: ...

class Registered(_message.Message):
    __slots__ = ("instance_id", "server_version", "capabilities", "node_name", "runtime_name", "runtime_version", "timeouts", "failure_policy", "identity", "events", "selectors")
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    SERVER_VERSION_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_NAME_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_VERSION_FIELD_NUMBER: _ClassVar[int]
    TIMEOUTS_FIELD_NUMBER: _ClassVar[int]
    FAILURE_POLICY_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    SELECTORS_FIELD_NUMBER: _ClassVar[int]
    instance_id: str
    server_version: str
    capabilities: _plugin_service_pb2.Capabilities
    node_name: str
    runtime_name: str
    runtime_version: str
    timeouts: _plugin_service_pb2.Timeouts
    failure_policy: _types_pb2.FailurePolicy
    identity: str
    events: int
    selectors: _containers.RepeatedCompositeFieldContainer[_types_pb2.EventSelector]
    def __init__(self, instance_id: _Optional[str] = ..., server_version: _Optional[str] = ..., capabilities: _Optional[_Union[_plugin_service_pb2.Capabilities, _Mapping]] = ..., node_name: _Optional[str] = ..., runtime_name: _Optional[str] = ..., runtime_version: _Optional[str] = ..., timeouts: _Optional[_Union[_plugin_service_pb2.Timeouts, _Mapping]] = ..., failure_policy: _Optional[_Union[_types_pb2.FailurePolicy, _Mapping]] = ..., identity: _Optional[str] = ..., events: _Optional[int] = ..., selectors: _Optional[_Iterable[_Union[_types_pb2.EventSelector, _Mapping]]] = ...) -> None: ...

class UpdateContainersRequest(_message.Message):
    __slots__ = ("update", "evict")
    UPDATE_FIELD_NUMBER: _ClassVar[int]
    EVICT_FIELD_NUMBER: _ClassVar[int]
    update: _containers.RepeatedCompositeFieldContainer[_types_pb2.ContainerUpdate]
    evict: _containers.RepeatedCompositeFieldContainer[_types_pb2.ContainerEviction]
    def __init__(self, update: _Optional[_Iterable[_Union[_types_pb2.ContainerUpdate, _Mapping]]] = ..., evict: _Optional[_Iterable[_Union[_types_pb2.ContainerEviction, _Mapping]]] = ...) -> None: ...

class UpdateContainersResponse(_message.Message):
    __slots__ = ("failed", "failed_evictions")
    FAILED_FIELD_NUMBER: _ClassVar[int]
    FAILED_EVICTIONS_FIELD_NUMBER: _ClassVar[int]
    failed: _containers.RepeatedCompositeFieldContainer[_types_pb2.ContainerUpdate]
    failed_evictions: _containers.RepeatedCompositeFieldContainer[_types_pb2.ContainerEviction]
    def __init__(self, failed: _Optional[_Iterable[_Union[_types_pb2.ContainerUpdate, _Mapping]]] = ..., failed_evictions: _Optional[_Iterable[_Union[_types_pb2.ContainerEviction, _Mapping]]] = ...) -> None: ...
