import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from nri_grpc.gen.nri.v1beta1 import plugin_service_pb2 as _plugin_service_pb2
from nri_grpc.gen.nri.v1beta1 import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PluginKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PLUGIN_KIND_UNSPECIFIED: _ClassVar[PluginKind]
    PLUGIN_KIND_REMOTE: _ClassVar[PluginKind]
    PLUGIN_KIND_LAUNCHED: _ClassVar[PluginKind]
    PLUGIN_KIND_IN_PROCESS: _ClassVar[PluginKind]
    PLUGIN_KIND_CLASSIC: _ClassVar[PluginKind]
    PLUGIN_KIND_WASM: _ClassVar[PluginKind]

class PluginState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PLUGIN_STATE_UNSPECIFIED: _ClassVar[PluginState]
    PLUGIN_STATE_CONFIGURING: _ClassVar[PluginState]
    PLUGIN_STATE_SYNCHRONIZING: _ClassVar[PluginState]
    PLUGIN_STATE_READY: _ClassVar[PluginState]
    PLUGIN_STATE_CLOSING: _ClassVar[PluginState]

class NotReadyPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    NOT_READY_POLICY_UNSPECIFIED: _ClassVar[NotReadyPolicy]
    NOT_READY_POLICY_WAIT: _ClassVar[NotReadyPolicy]
    NOT_READY_POLICY_FAIL: _ClassVar[NotReadyPolicy]
    NOT_READY_POLICY_SKIP: _ClassVar[NotReadyPolicy]

class CallOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CALL_OUTCOME_UNSPECIFIED: _ClassVar[CallOutcome]
    CALL_OUTCOME_OK: _ClassVar[CallOutcome]
    CALL_OUTCOME_VETO: _ClassVar[CallOutcome]
    CALL_OUTCOME_TIMEOUT: _ClassVar[CallOutcome]
    CALL_OUTCOME_UNAVAILABLE: _ClassVar[CallOutcome]
    CALL_OUTCOME_REFUSED: _ClassVar[CallOutcome]
    CALL_OUTCOME_ERROR: _ClassVar[CallOutcome]
    CALL_OUTCOME_SKIPPED: _ClassVar[CallOutcome]
    CALL_OUTCOME_NOT_EVALUATED: _ClassVar[CallOutcome]

class DispatchOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DISPATCH_OUTCOME_UNSPECIFIED: _ClassVar[DispatchOutcome]
    DISPATCH_OUTCOME_OK: _ClassVar[DispatchOutcome]
    DISPATCH_OUTCOME_VETOED: _ClassVar[DispatchOutcome]
    DISPATCH_OUTCOME_CONFLICT: _ClassVar[DispatchOutcome]
    DISPATCH_OUTCOME_REJECTED: _ClassVar[DispatchOutcome]
    DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE: _ClassVar[DispatchOutcome]
    DISPATCH_OUTCOME_ERROR: _ClassVar[DispatchOutcome]
PLUGIN_KIND_UNSPECIFIED: PluginKind
PLUGIN_KIND_REMOTE: PluginKind
PLUGIN_KIND_LAUNCHED: PluginKind
PLUGIN_KIND_IN_PROCESS: PluginKind
PLUGIN_KIND_CLASSIC: PluginKind
PLUGIN_KIND_WASM: PluginKind
PLUGIN_STATE_UNSPECIFIED: PluginState
PLUGIN_STATE_CONFIGURING: PluginState
PLUGIN_STATE_SYNCHRONIZING: PluginState
PLUGIN_STATE_READY: PluginState
PLUGIN_STATE_CLOSING: PluginState
NOT_READY_POLICY_UNSPECIFIED: NotReadyPolicy
NOT_READY_POLICY_WAIT: NotReadyPolicy
NOT_READY_POLICY_FAIL: NotReadyPolicy
NOT_READY_POLICY_SKIP: NotReadyPolicy
CALL_OUTCOME_UNSPECIFIED: CallOutcome
CALL_OUTCOME_OK: CallOutcome
CALL_OUTCOME_VETO: CallOutcome
CALL_OUTCOME_TIMEOUT: CallOutcome
CALL_OUTCOME_UNAVAILABLE: CallOutcome
CALL_OUTCOME_REFUSED: CallOutcome
CALL_OUTCOME_ERROR: CallOutcome
CALL_OUTCOME_SKIPPED: CallOutcome
CALL_OUTCOME_NOT_EVALUATED: CallOutcome
DISPATCH_OUTCOME_UNSPECIFIED: DispatchOutcome
DISPATCH_OUTCOME_OK: DispatchOutcome
DISPATCH_OUTCOME_VETOED: DispatchOutcome
DISPATCH_OUTCOME_CONFLICT: DispatchOutcome
DISPATCH_OUTCOME_REJECTED: DispatchOutcome
DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE: DispatchOutcome
DISPATCH_OUTCOME_ERROR: DispatchOutcome

class PluginCounters(_message.Message):
    __slots__ = ("calls", "vetoes", "timeouts", "unavailable", "refused", "errors", "filtered", "not_ready_skips", "requested_resyncs")
    CALLS_FIELD_NUMBER: _ClassVar[int]
    VETOES_FIELD_NUMBER: _ClassVar[int]
    TIMEOUTS_FIELD_NUMBER: _ClassVar[int]
    UNAVAILABLE_FIELD_NUMBER: _ClassVar[int]
    REFUSED_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    FILTERED_FIELD_NUMBER: _ClassVar[int]
    NOT_READY_SKIPS_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_RESYNCS_FIELD_NUMBER: _ClassVar[int]
    calls: int
    vetoes: int
    timeouts: int
    unavailable: int
    refused: int
    errors: int
    filtered: int
    not_ready_skips: int
    requested_resyncs: int
    def __init__(self, calls: _Optional[int] = ..., vetoes: _Optional[int] = ..., timeouts: _Optional[int] = ..., unavailable: _Optional[int] = ..., refused: _Optional[int] = ..., errors: _Optional[int] = ..., filtered: _Optional[int] = ..., not_ready_skips: _Optional[int] = ..., requested_resyncs: _Optional[int] = ...) -> None: ...

class PluginInfo(_message.Message):
    __slots__ = ("plugin", "instance_id", "identity", "kind", "endpoint", "events", "capabilities", "failure_policy", "timeouts", "state", "registered_at", "last_error", "counters", "nri_version", "plugin_version", "selectors", "status", "status_reason", "status_since", "not_ready_policy")
    PLUGIN_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    FAILURE_POLICY_FIELD_NUMBER: _ClassVar[int]
    TIMEOUTS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    REGISTERED_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    COUNTERS_FIELD_NUMBER: _ClassVar[int]
    NRI_VERSION_FIELD_NUMBER: _ClassVar[int]
    PLUGIN_VERSION_FIELD_NUMBER: _ClassVar[int]
    SELECTORS_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    STATUS_REASON_FIELD_NUMBER: _ClassVar[int]
    STATUS_SINCE_FIELD_NUMBER: _ClassVar[int]
    NOT_READY_POLICY_FIELD_NUMBER: _ClassVar[int]
    plugin: _types_pb2.PluginInstance
    instance_id: str
    identity: str
    kind: PluginKind
    endpoint: str
    events: _containers.RepeatedScalarFieldContainer[_types_pb2.Event]
    capabilities: _plugin_service_pb2.Capabilities
    failure_policy: _types_pb2.FailurePolicy
    timeouts: _plugin_service_pb2.Timeouts
    state: PluginState
    registered_at: _timestamp_pb2.Timestamp
    last_error: str
    counters: PluginCounters
    nri_version: str
    plugin_version: str
    selectors: _containers.RepeatedCompositeFieldContainer[_types_pb2.EventSelector]
    status: _types_pb2.PluginStatus
    status_reason: str
    status_since: _timestamp_pb2.Timestamp
    not_ready_policy: NotReadyPolicy
    def __init__(self, plugin: _Optional[_Union[_types_pb2.PluginInstance, _Mapping]] = ..., instance_id: _Optional[str] = ..., identity: _Optional[str] = ..., kind: _Optional[_Union[PluginKind, str]] = ..., endpoint: _Optional[str] = ..., events: _Optional[_Iterable[_Union[_types_pb2.Event, str]]] = ..., capabilities: _Optional[_Union[_plugin_service_pb2.Capabilities, _Mapping]] = ..., failure_policy: _Optional[_Union[_types_pb2.FailurePolicy, _Mapping]] = ..., timeouts: _Optional[_Union[_plugin_service_pb2.Timeouts, _Mapping]] = ..., state: _Optional[_Union[PluginState, str]] = ..., registered_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_error: _Optional[str] = ..., counters: _Optional[_Union[PluginCounters, _Mapping]] = ..., nri_version: _Optional[str] = ..., plugin_version: _Optional[str] = ..., selectors: _Optional[_Iterable[_Union[_types_pb2.EventSelector, _Mapping]]] = ..., status: _Optional[_Union[_types_pb2.PluginStatus, str]] = ..., status_reason: _Optional[str] = ..., status_since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., not_ready_policy: _Optional[_Union[NotReadyPolicy, str]] = ...) -> None: ...

class ListPluginsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListPluginsResponse(_message.Message):
    __slots__ = ("plugins",)
    PLUGINS_FIELD_NUMBER: _ClassVar[int]
    plugins: _containers.RepeatedCompositeFieldContainer[PluginInfo]
    def __init__(self, plugins: _Optional[_Iterable[_Union[PluginInfo, _Mapping]]] = ...) -> None: ...

class GetStateRequest(_message.Message):
    __slots__ = ("pod_id",)
    POD_ID_FIELD_NUMBER: _ClassVar[int]
    pod_id: str
    def __init__(self, pod_id: _Optional[str] = ...) -> None: ...

class GetStateResponse(_message.Message):
    __slots__ = ("pods", "containers")
    PODS_FIELD_NUMBER: _ClassVar[int]
    CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    pods: _containers.RepeatedCompositeFieldContainer[_types_pb2.PodSandbox]
    containers: _containers.RepeatedCompositeFieldContainer[_types_pb2.Container]
    def __init__(self, pods: _Optional[_Iterable[_Union[_types_pb2.PodSandbox, _Mapping]]] = ..., containers: _Optional[_Iterable[_Union[_types_pb2.Container, _Mapping]]] = ...) -> None: ...

class Deprecation(_message.Message):
    __slots__ = ("plugin", "kind", "event", "details", "first_seen", "count")
    PLUGIN_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEEN_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    plugin: _types_pb2.PluginInstance
    kind: str
    event: _types_pb2.Event
    details: str
    first_seen: _timestamp_pb2.Timestamp
    count: int
    def __init__(self, plugin: _Optional[_Union[_types_pb2.PluginInstance, _Mapping]] = ..., kind: _Optional[str] = ..., event: _Optional[_Union[_types_pb2.Event, str]] = ..., details: _Optional[str] = ..., first_seen: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., count: _Optional[int] = ...) -> None: ...

class ListDeprecationsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListDeprecationsResponse(_message.Message):
    __slots__ = ("deprecations",)
    DEPRECATIONS_FIELD_NUMBER: _ClassVar[int]
    deprecations: _containers.RepeatedCompositeFieldContainer[Deprecation]
    def __init__(self, deprecations: _Optional[_Iterable[_Union[Deprecation, _Mapping]]] = ...) -> None: ...

class FieldChange(_message.Message):
    __slots__ = ("container_id", "field", "key", "value", "removed")
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    FIELD_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    REMOVED_FIELD_NUMBER: _ClassVar[int]
    container_id: str
    field: _types_pb2.Field
    key: str
    value: str
    removed: bool
    def __init__(self, container_id: _Optional[str] = ..., field: _Optional[_Union[_types_pb2.Field, str]] = ..., key: _Optional[str] = ..., value: _Optional[str] = ..., removed: _Optional[bool] = ...) -> None: ...

class PluginCall(_message.Message):
    __slots__ = ("plugin", "instance_id", "duration", "outcome", "failed_open", "error", "changes")
    PLUGIN_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    FAILED_OPEN_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    plugin: _types_pb2.PluginInstance
    instance_id: str
    duration: _duration_pb2.Duration
    outcome: CallOutcome
    failed_open: bool
    error: str
    changes: _containers.RepeatedCompositeFieldContainer[FieldChange]
    def __init__(self, plugin: _Optional[_Union[_types_pb2.PluginInstance, _Mapping]] = ..., instance_id: _Optional[str] = ..., duration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., outcome: _Optional[_Union[CallOutcome, str]] = ..., failed_open: _Optional[bool] = ..., error: _Optional[str] = ..., changes: _Optional[_Iterable[_Union[FieldChange, _Mapping]]] = ...) -> None: ...

class DispatchRecord(_message.Message):
    __slots__ = ("sequence", "event", "pod_id", "pod_name", "container_id", "container_name", "start_time", "duration", "outcome", "error", "calls", "dry_run", "trace_id")
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    POD_ID_FIELD_NUMBER: _ClassVar[int]
    POD_NAME_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_NAME_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    event: _types_pb2.Event
    pod_id: str
    pod_name: str
    container_id: str
    container_name: str
    start_time: _timestamp_pb2.Timestamp
    duration: _duration_pb2.Duration
    outcome: DispatchOutcome
    error: str
    calls: _containers.RepeatedCompositeFieldContainer[PluginCall]
    dry_run: bool
    trace_id: str
    def __init__(self, sequence: _Optional[int] = ..., event: _Optional[_Union[_types_pb2.Event, str]] = ..., pod_id: _Optional[str] = ..., pod_name: _Optional[str] = ..., container_id: _Optional[str] = ..., container_name: _Optional[str] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., duration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., outcome: _Optional[_Union[DispatchOutcome, str]] = ..., error: _Optional[str] = ..., calls: _Optional[_Iterable[_Union[PluginCall, _Mapping]]] = ..., dry_run: _Optional[bool] = ..., trace_id: _Optional[str] = ...) -> None: ...

class WatchEventsRequest(_message.Message):
    __slots__ = ("events", "plugin", "pod_id")
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    PLUGIN_FIELD_NUMBER: _ClassVar[int]
    POD_ID_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedScalarFieldContainer[_types_pb2.Event]
    plugin: str
    pod_id: str
    def __init__(self, events: _Optional[_Iterable[_Union[_types_pb2.Event, str]]] = ..., plugin: _Optional[str] = ..., pod_id: _Optional[str] = ...) -> None: ...

class WatchEventsResponse(_message.Message):
    __slots__ = ("record",)
    RECORD_FIELD_NUMBER: _ClassVar[int]
    record: DispatchRecord
    def __init__(self, record: _Optional[_Union[DispatchRecord, _Mapping]] = ...) -> None: ...

class DryRunRequest(_message.Message):
    __slots__ = ("event", "pod", "container", "linux_resources")
    EVENT_FIELD_NUMBER: _ClassVar[int]
    POD_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    LINUX_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    event: _types_pb2.Event
    pod: _types_pb2.PodSandbox
    container: _types_pb2.Container
    linux_resources: _types_pb2.LinuxResources
    def __init__(self, event: _Optional[_Union[_types_pb2.Event, str]] = ..., pod: _Optional[_Union[_types_pb2.PodSandbox, _Mapping]] = ..., container: _Optional[_Union[_types_pb2.Container, _Mapping]] = ..., linux_resources: _Optional[_Union[_types_pb2.LinuxResources, _Mapping]] = ...) -> None: ...

class DryRunResponse(_message.Message):
    __slots__ = ("adjust", "update", "evict", "linux_resources", "error", "not_evaluated", "record")
    ADJUST_FIELD_NUMBER: _ClassVar[int]
    UPDATE_FIELD_NUMBER: _ClassVar[int]
    EVICT_FIELD_NUMBER: _ClassVar[int]
    LINUX_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    NOT_EVALUATED_FIELD_NUMBER: _ClassVar[int]
    RECORD_FIELD_NUMBER: _ClassVar[int]
    adjust: _types_pb2.ContainerAdjustment
    update: _containers.RepeatedCompositeFieldContainer[_types_pb2.ContainerUpdate]
    evict: _containers.RepeatedCompositeFieldContainer[_types_pb2.ContainerEviction]
    linux_resources: _types_pb2.LinuxResources
    error: str
    not_evaluated: _containers.RepeatedCompositeFieldContainer[_types_pb2.PluginInstance]
    record: DispatchRecord
    def __init__(self, adjust: _Optional[_Union[_types_pb2.ContainerAdjustment, _Mapping]] = ..., update: _Optional[_Iterable[_Union[_types_pb2.ContainerUpdate, _Mapping]]] = ..., evict: _Optional[_Iterable[_Union[_types_pb2.ContainerEviction, _Mapping]]] = ..., linux_resources: _Optional[_Union[_types_pb2.LinuxResources, _Mapping]] = ..., error: _Optional[str] = ..., not_evaluated: _Optional[_Iterable[_Union[_types_pb2.PluginInstance, _Mapping]]] = ..., record: _Optional[_Union[DispatchRecord, _Mapping]] = ...) -> None: ...
