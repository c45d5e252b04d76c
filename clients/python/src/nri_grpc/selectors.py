"""Event selectors and plugin status: building and checking them.

A plugin registers with event selectors (``Plugin(selectors=[...])``) to
receive only the events, and the Synchronize state, of the pods and
containers at least one selector matches; with a status
(``Plugin(status=..., status_reason=...)``, then ``Plugin.set_status``) to
tell nrid whether it can handle its events. docs/PROTOCOL.md has the rules;
the bounds below are the protocol's, checked here so that a mistake fails
when the plugin is built instead of as a refused registration.
"""

from __future__ import annotations

from typing import Iterable, Optional, Union

from .gen.nri.v1beta1 import types_pb2 as t

#: At most this many selectors per registration.
MAX_SELECTORS = 16
#: At most this many entries in each list of a selector.
MAX_SELECTOR_ENTRIES = 64
#: At most this many bytes per list entry (namespace, pattern, handler).
MAX_SELECTOR_ENTRY_BYTES = 253
#: At most this many bytes of a pod label selector.
MAX_POD_LABELS_BYTES = 4096
#: At most this many bytes of a status or resync reason.
MAX_REASON_BYTES = 1024

_Strings = Union[str, Iterable[str], None]

#: Accepted status names (with or without the PLUGIN_STATUS_ prefix).
_STATUS_NAMES = {
    "READY": t.PLUGIN_STATUS_READY,
    "NOT_READY": t.PLUGIN_STATUS_NOT_READY,
    "DEGRADED": t.PLUGIN_STATUS_DEGRADED,
}


def _strings(v: _Strings) -> list[str]:
    if v is None:
        return []
    if isinstance(v, str):
        return [v]
    return list(v)


def selector(
    namespaces: _Strings = None,
    pod_labels: str = "",
    container_names: _Strings = None,
    runtime_handlers: _Strings = None,
) -> t.EventSelector:
    """Builds an EventSelector; each list argument takes one string or an
    iterable of strings. Every argument given must match (AND); a list
    matches when any of its entries does (OR)::

        nri_grpc.selector(namespaces=["prod", "staging"], pod_labels="app=web,!canary")
        nri_grpc.selector(container_names="db-*")

    ``pod_labels`` is a Kubernetes label selector ("app=web,tier in
    (a,b),!canary"); ``container_names`` are patterns where "*" matches any
    run of characters and "?" one character; ``runtime_handlers`` are
    matched exactly ("" is the runtime's default handler). nrid checks the
    label selector's syntax: a bad one refuses the registration
    (REGISTRATION_REFUSAL_INVALID_SELECTORS).

    Raises ValueError when a bound of the protocol is exceeded.
    """
    lists = {
        "namespaces": _strings(namespaces),
        "container_names": _strings(container_names),
        "runtime_handlers": _strings(runtime_handlers),
    }
    # protobuf refuses strings that are not UTF-8 without naming the field.
    for name, entries in lists.items():
        for j, e in enumerate(entries):
            _check_utf8(f"selectors[0].{name}[{j}]", e)
    _check_utf8("selectors[0].pod_labels", pod_labels)
    sel = t.EventSelector(pod_labels=pod_labels, **lists)
    check_selectors([sel])
    return sel


def _check_utf8(what: str, s: str) -> int:
    if not isinstance(s, str):
        raise ValueError(f"{what} must be a str, not {type(s).__name__}")
    try:
        return len(s.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValueError(f"{what} is not valid UTF-8") from None


def check_selectors(selectors: Iterable[t.EventSelector]) -> list[t.EventSelector]:
    """Returns the selectors as a list after checking the protocol's bounds:
    at most 16 selectors, at most 64 entries of at most 253 bytes per list,
    a label selector of at most 4096 bytes, all UTF-8. Raises ValueError
    naming the selector, the field and the rule."""
    out = list(selectors)
    if len(out) > MAX_SELECTORS:
        raise ValueError(f"selectors: {len(out)} selectors, at most {MAX_SELECTORS} are allowed")
    for i, sel in enumerate(out):
        if not isinstance(sel, t.EventSelector):
            raise ValueError(f"selectors[{i}]: {type(sel).__name__} is not an EventSelector (use nri_grpc.selector)")
        for name in ("namespaces", "container_names", "runtime_handlers"):
            entries = getattr(sel, name)
            if len(entries) > MAX_SELECTOR_ENTRIES:
                raise ValueError(f"selectors[{i}].{name}: {len(entries)} entries, at most {MAX_SELECTOR_ENTRIES} are allowed")
            for j, e in enumerate(entries):
                n = _check_utf8(f"selectors[{i}].{name}[{j}]", e)
                if n > MAX_SELECTOR_ENTRY_BYTES:
                    raise ValueError(f"selectors[{i}].{name}[{j}]: {n} bytes, at most {MAX_SELECTOR_ENTRY_BYTES} are allowed")
        n = _check_utf8(f"selectors[{i}].pod_labels", sel.pod_labels)
        if n > MAX_POD_LABELS_BYTES:
            raise ValueError(f"selectors[{i}].pod_labels: {n} bytes, at most {MAX_POD_LABELS_BYTES} are allowed")
    return out


def check_status(status: Union[int, str, None]) -> int:
    """Returns the PluginStatus value of status: api.PLUGIN_STATUS_READY,
    NOT_READY or DEGRADED, or their names ("NOT_READY",
    "PLUGIN_STATUS_NOT_READY"); None and UNSPECIFIED mean READY. Raises
    ValueError for anything else."""
    if status is None:
        return t.PLUGIN_STATUS_READY
    if isinstance(status, str):
        name = status.upper()
        name = name[len("PLUGIN_STATUS_") :] if name.startswith("PLUGIN_STATUS_") else name
        if name not in _STATUS_NAMES:
            raise ValueError(f"status {status[:32]!r} is not one of READY, NOT_READY, DEGRADED")
        return _STATUS_NAMES[name]
    if isinstance(status, bool) or not isinstance(status, int):
        raise ValueError(f"status must be a PluginStatus value, not {type(status).__name__}")
    if status == t.PLUGIN_STATUS_UNSPECIFIED:
        return t.PLUGIN_STATUS_READY
    if status not in _STATUS_NAMES.values():
        raise ValueError(f"status {status} is not a PluginStatus (READY, NOT_READY, DEGRADED)")
    return status


def check_reason(what: str, reason: Optional[str]) -> str:
    """Returns reason ("" for None) after checking it is UTF-8 and at most
    1024 bytes. Raises ValueError naming what."""
    reason = reason or ""
    if not isinstance(reason, str):
        raise ValueError(f"{what} must be a str, not {type(reason).__name__}")
    n = _check_utf8(what, reason)
    if n > MAX_REASON_BYTES:
        raise ValueError(f"{what}: {n} bytes, at most {MAX_REASON_BYTES} are allowed")
    return reason


def status_name(status: int) -> str:
    """"READY", "NOT_READY" or "DEGRADED" (UNSPECIFIED is READY)."""
    status = check_status(status)
    return next(k for k, v in _STATUS_NAMES.items() if v == status)
