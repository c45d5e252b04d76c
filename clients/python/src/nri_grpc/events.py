"""Events, subscription masks and the names of their handlers."""

from __future__ import annotations

from typing import Iterable

from .gen.nri.v1beta1 import types_pb2

#: Every event, validation included (the mask a plugin answering 0 gets).
ALL_EVENTS = 0x3FFF

#: PluginService method name of each event (Event enum number -> method).
_METHODS = {
    types_pb2.EVENT_RUN_POD_SANDBOX: "RunPodSandbox",
    types_pb2.EVENT_STOP_POD_SANDBOX: "StopPodSandbox",
    types_pb2.EVENT_REMOVE_POD_SANDBOX: "RemovePodSandbox",
    types_pb2.EVENT_CREATE_CONTAINER: "CreateContainer",
    types_pb2.EVENT_POST_CREATE_CONTAINER: "PostCreateContainer",
    types_pb2.EVENT_START_CONTAINER: "StartContainer",
    types_pb2.EVENT_POST_START_CONTAINER: "PostStartContainer",
    types_pb2.EVENT_UPDATE_CONTAINER: "UpdateContainer",
    types_pb2.EVENT_POST_UPDATE_CONTAINER: "PostUpdateContainer",
    types_pb2.EVENT_STOP_CONTAINER: "StopContainer",
    types_pb2.EVENT_REMOVE_CONTAINER: "RemoveContainer",
    types_pb2.EVENT_UPDATE_POD_SANDBOX: "UpdatePodSandbox",
    types_pb2.EVENT_POST_UPDATE_POD_SANDBOX: "PostUpdatePodSandbox",
    types_pb2.EVENT_VALIDATE_CONTAINER_ADJUSTMENT: "ValidateContainerAdjustment",
}


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")


#: Handler method name of each event: the snake_case PluginService method,
#: for example ``create_container`` for EVENT_CREATE_CONTAINER.
HANDLER_NAMES = {e: _snake(m) for e, m in _METHODS.items()}

#: Event of each PluginService method name ("CreateContainer").
EVENT_OF_METHOD = {m: e for e, m in _METHODS.items()}


def event_mask(*events: int) -> int:
    """Returns the subscription mask of events: bit ``1 << (e - 1)`` per event."""
    mask = 0
    for e in events:
        if e in _METHODS:
            mask |= 1 << (e - 1)
    return mask


def mask_events(mask: int) -> list[int]:
    """Lists the events of a subscription mask, in enum order."""
    return [e for e in sorted(_METHODS) if mask & (1 << (e - 1))]


def event_name(event: int) -> str:
    """Returns the PluginService method name of an event ("CreateContainer")."""
    return _METHODS.get(event, f"Event({event})")


def event_names(mask: int) -> list[str]:
    """Returns the method names of the events of a mask, for logs."""
    return [event_name(e) for e in mask_events(mask)]


def parse_events(names: Iterable[str]) -> int:
    """Parses event names into a mask.

    Names match the method name or the handler name without regard to case
    ("CreateContainer", "create_container"); "all" is every event.
    """
    mask = 0
    lookup = {}
    for e, m in _METHODS.items():
        lookup[m.lower()] = e
        lookup[HANDLER_NAMES[e].replace("_", "")] = e
    for raw in names:
        for name in raw.split(","):
            key = name.strip().lower().replace("_", "")
            if not key:
                continue
            if key == "all":
                mask |= ALL_EVENTS
            elif key in lookup:
                mask |= event_mask(lookup[key])
            else:
                raise ValueError(f"unknown event {name.strip()!r}")
    return mask
