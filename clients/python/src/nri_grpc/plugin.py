"""The plugin runtime: serving PluginService, registering, staying registered."""

from __future__ import annotations

import asyncio
import enum
import inspect
import logging
import os
import random
import socket
import stat
import struct
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Iterable, Mapping, Optional, Sequence

import grpc
from google.protobuf import duration_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from . import reflection
from ._version import PROTOCOL, __version__
from .errors import NotRegistered, RegistrationRefused, StatusError
from .events import EVENT_OF_METHOD, HANDLER_NAMES, event_mask, event_name, event_names
from .selectors import check_reason, check_selectors, check_status, status_name
from .gen.nri.v1beta1 import plugin_service_pb2 as ps
from .gen.nri.v1beta1 import plugin_service_pb2_grpc as ps_grpc
from .gen.nri.v1beta1 import runtime_service_pb2 as rs
from .gen.nri.v1beta1 import runtime_service_pb2_grpc as rs_grpc
from .gen.nri.v1beta1 import types_pb2 as t

#: nrid's default socket, as a gRPC target.
DEFAULT_SERVER_ADDRESS = "unix:///var/run/nri/nri-grpc.sock"
#: Directory of the default plugin endpoint (NN-name.sock): nrid's default
#: plugin socket directory.
DEFAULT_SOCKET_DIR = "/var/run/nri/plugins"

#: Set by nrid for the plugins it launches (docs/PROTOCOL.md section 14).
#: When set they take precedence over the constructor's arguments: the
#: launcher's assignment is binding.
ENV_PLUGIN_NAME = "NRI_GRPC_PLUGIN_NAME"
ENV_PLUGIN_IDX = "NRI_GRPC_PLUGIN_IDX"
ENV_SERVER_ADDRESS = "NRI_GRPC_SERVER_ADDRESS"
ENV_PLUGIN_ENDPOINT = "NRI_GRPC_PLUGIN_ENDPOINT"

#: Call metadata key of the instance id a call is addressed to.
METADATA_INSTANCE_ID = "nri-instance-id"

#: What the SDK registers as RegisterPluginRequest.nri_version (shown by
#: ``nrictl plugins``): "python-sdk v1beta1 nri-grpc/0.1.0", the form of the
#: Go and Rust SDKs.
NRI_VERSION = f"python-sdk {PROTOCOL} nri-grpc/{__version__}"

_ERROR_DOMAIN = "nri.v1beta1"
_DEFAULT_MAX_MESSAGE_SIZE = 4 << 20
# No bandwidth-delay-product probing: on NRI's small one-at-a-time calls over
# a unix socket it only adds a PING and its answer to every message; instead
# a fixed 4 MiB window, as nrid's, so a Synchronize page fits one window
# (docs/PROTOCOL.md §16, item 13).
_TRANSPORT_OPTIONS = [("grpc.http2.bdp_probe", 0), ("grpc.http2.lookahead_bytes", 4 << 20)]
_MAX_SOCKET_PATH = 107
#: Bound of the first delay after a registration ended while nrid still
#: accepts connections (an eviction, a graceful stop not done yet), seconds.
_FIRST_RETRY = 0.05
#: How often a plugin tries to connect to an absent nrid, seconds.
_POLL_INTERVAL = 0.05
_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.+-")
_PLUGIN_SERVICE = "nri.v1beta1.PluginService"

#: Refusals that retrying cannot fix (docs/PROTOCOL.md section 12).
_FATAL_REFUSALS = {
    "REGISTRATION_REFUSAL_INVALID_NAME",
    "REGISTRATION_REFUSAL_INVALID_INDEX",
    "REGISTRATION_REFUSAL_INVALID_ENDPOINT",
    "REGISTRATION_REFUSAL_INVALID_EVENTS",
    "REGISTRATION_REFUSAL_INVALID_CAPABILITIES",
    "REGISTRATION_REFUSAL_NOT_PERMITTED",
    "REGISTRATION_REFUSAL_PEER_MISMATCH",
    "REGISTRATION_REFUSAL_INVALID_SELECTORS",
}
_FATAL_CODES = {
    grpc.StatusCode.UNAUTHENTICATED,
    grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.UNIMPLEMENTED,
}


class RunResult(enum.Enum):
    """Why Plugin.run returned."""

    #: Plugin.stop was called.
    STOPPED = "stopped"
    #: A newer instance of the plugin took over (Shutdown kind
    #: SHUTDOWN_KIND_REPLACED); the plugin does not register again. A process
    #: usually exits with status 0 then.
    REPLACED = "replaced"


@dataclass
class Timeouts:
    """Call timeouts a plugin asks for, in seconds. None leaves the server's
    default. The server caps them by policy; the effective values are in
    ``Plugin.registered.timeouts``."""

    #: Default timeout of one call.
    request: Optional[float] = None
    #: Budget of a whole synchronization (every page).
    synchronize: Optional[float] = None
    #: Per-event overrides (Event enum number -> seconds).
    events: Mapping[int, float] = field(default_factory=dict)


@dataclass
class CallContext:
    """What a handler knows about the call it handles."""

    #: The instance id the call is addressed to (the current one).
    instance_id: str
    #: The node nrid runs on (``nri-node-name``).
    node_name: str
    #: The container runtime behind nrid (``nri-runtime-name``).
    runtime_name: str
    #: All call metadata, lower-case keys.
    metadata: Mapping[str, str]
    #: The plugin, for example to call ``update_containers`` after replying.
    plugin: "Plugin"
    _grpc: Any = None

    def time_remaining(self) -> Optional[float]:
        """Seconds left until the call's deadline (nrid sets one on every call),
        or None without a deadline. Stop working when it runs out: the answer
        would come too late."""
        if self._grpc is None:
            return None
        return self._grpc.time_remaining()


def check_name(name: str) -> None:
    """Raises ValueError unless name is a valid plugin name: non-empty,
    characters from ``[a-zA-Z0-9_.+-]``."""
    if not name:
        raise ValueError("plugin name is empty")
    bad = [c for c in name if c not in _NAME_CHARS]
    if bad:
        raise ValueError(f"plugin name {name!r} contains {bad[0]!r}; allowed are [a-zA-Z0-9_.+-]")


def check_index(idx: str) -> None:
    """Raises ValueError unless idx is exactly two ASCII digits."""
    if len(idx) != 2 or not all("0" <= c <= "9" for c in idx):
        raise ValueError(f"plugin index {idx!r} must be exactly two ASCII digits")


def parse_name(s: str) -> Optional[tuple[str, str]]:
    """Splits a "NN-name" plugin file name into (index, name), or None."""
    if len(s) < 4 or s[2] != "-":
        return None
    try:
        check_index(s[:2])
        check_name(s[3:])
    except ValueError:
        return None
    return s[:2], s[3:]


def socket_path(target: str) -> str:
    """Returns the socket path of a "unix:///abs", "unix:abs" or "/abs" target."""
    path = target
    if path.startswith("unix://"):
        path = path[len("unix://") :]
    elif path.startswith("unix:"):
        path = path[len("unix:") :]
    if not os.path.isabs(path):
        raise ValueError(f"{target!r} is not an absolute unix socket path (TCP is not supported by this SDK)")
    return os.path.normpath(path)


def peer_uid(path: str) -> Optional[int]:
    """Returns the uid of the process listening on the unix socket path
    (SO_PEERCRED of a connection to it), or None if it cannot be learned."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(2)
            s.connect(path)
            cred = s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            _, uid, _ = struct.unpack("3i", cred)
            return uid
    except OSError:
        return None


def _reachable(path: str) -> bool:
    """Whether a process listens on the unix socket path: a connect, closed
    at once, without any gRPC traffic. A refused connection or a missing
    socket file means nrid is away."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.setblocking(False)
            s.connect(path)
    except BlockingIOError:
        return True  # it listens; its backlog is full
    except OSError:
        return False
    return True


def _call_status(err: grpc.aio.AioRpcError) -> tuple[str, str]:
    """Returns the ErrorInfo reason and field of an nri-grpc error status."""
    for key, value in err.trailing_metadata() or ():
        if key != "grpc-status-details-bin":
            continue
        st = status_pb2.Status.FromString(value)
        for detail in st.details:
            info = error_details_pb2.ErrorInfo()
            if detail.Is(info.DESCRIPTOR) and detail.Unpack(info) and info.domain == _ERROR_DOMAIN:
                return info.reason, info.metadata.get("field", "")
    return "", ""


def _retryable(err: Optional[grpc.aio.AioRpcError]) -> tuple[bool, bool]:
    """Whether to register again after err, and whether with the longest backoff."""
    if err is None:
        return True, False
    reason, _ = _call_status(err)
    if reason in _FATAL_REFUSALS:
        return False, False
    if reason == "REGISTRATION_REFUSAL_IDENTITY_MISMATCH":
        return True, True
    if not reason and err.code() in _FATAL_CODES:
        return False, False
    return True, False


class _Backoff:
    """Exponential backoff with jitter: each delay is drawn from [d/2, d],
    where d doubles from first up to limit."""

    def __init__(self, first: float, limit: float) -> None:
        self.first, self.limit, self.cur = first, limit, 0.0

    def next(self) -> float:
        self.cur = self.first if self.cur == 0 else min(2 * self.cur, self.limit)
        return random.uniform(self.cur / 2, self.cur)

    def reset(self) -> None:
        self.cur = 0.0


def _to_status(exc: BaseException) -> tuple[grpc.StatusCode, str]:
    """The status a handler's exception becomes (see StatusError)."""
    if isinstance(exc, StatusError):
        return exc.code, exc.message
    if isinstance(exc, grpc.aio.AioRpcError):
        return exc.code(), exc.details() or ""
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return grpc.StatusCode.DEADLINE_EXCEEDED, str(exc) or "timed out"
    if isinstance(exc, asyncio.CancelledError):
        return grpc.StatusCode.CANCELLED, "cancelled"
    return grpc.StatusCode.FAILED_PRECONDITION, str(exc) or type(exc).__name__


async def _maybe_await(v: Any) -> Any:
    if inspect.isawaitable(v):
        return await v
    return v


@dataclass
class _Session:
    channel: grpc.aio.Channel
    instance: str = ""
    #: The status generation the RegisterPluginRequest carried.
    status_gen: int = 0


@dataclass
class _SyncPages:
    instance: str
    epoch: int
    pods: list = field(default_factory=list)
    containers: list = field(default_factory=list)


@dataclass
class _SessionResult:
    registered: bool = False
    shutdown: Optional[ps.ShutdownRequest] = None
    err: Optional[grpc.aio.AioRpcError] = None


class Plugin:
    """An NRI plugin: serves PluginService on its unix socket, registers with
    nrid and stays registered until stopped.

    ``handlers`` is any object with methods named after the events it
    handles, in snake_case: ``create_container(req, ctx)``,
    ``stop_container(req, ctx)``, ``validate_container_adjustment(req, ctx)``
    (see ``nri_grpc.events.HANDLER_NAMES``), and optionally
    ``configure(req, ctx)``, ``synchronize(req, ctx)``, ``resync(req, ctx)``
    and ``shutdown(req, ctx)``. Each gets the request, typed, and a
    CallContext, and returns the response (or None for an empty one).
    Handlers may be coroutine functions (``async def``) or plain functions; a
    plain function runs on the event loop, so it must not block. The event
    subscription is derived from the handlers present.

    Name and index come, in this order, from NRI_GRPC_PLUGIN_NAME and
    NRI_GRPC_PLUGIN_IDX, from ``name`` and ``index``, or from the program's
    file name when it is "NN-name". The server address and the endpoint
    likewise from NRI_GRPC_SERVER_ADDRESS and NRI_GRPC_PLUGIN_ENDPOINT first.

    Options:
      server_address: nrid's socket ("unix:///path" or a path; default
        /var/run/nri/nri-grpc.sock).
      endpoint: the socket to serve on (default NN-name.sock in socket_dir).
      socket_dir: the directory of the default endpoint: nrid's plugin socket
        directory (default /var/run/nri/plugins).
      socket_mode: mode of the endpoint socket (default 0o600; see
        Authentication below).
      max_concurrent_calls, max_message_size, dry_run, resync: the
        capabilities to declare (resync is also declared by a ``resync``
        handler).
      timeouts: the call timeouts to ask for (Timeouts).
      failure_policy: the FailurePolicy to ask for (a Configure handler may
        override it per registration).
      plugin_version: shown by AdminService.
      selectors: EventSelectors (``nri_grpc.selector(...)`` or
        ``api.EventSelector``): receive only the events and state of the
        pods and containers one of them matches (default: everything).
        Sent with every registration; ``registered.selectors`` is what nrid
        put in effect.
      status, status_reason: the status to register with (default READY;
        NOT_READY for a plugin that must warm up first, then
        ``set_status``). After ``set_status`` every later registration
        (nrid restarted) carries the last status reported.
      logger: a logging.Logger (default: logging.getLogger("nri_grpc")).
      backoff: (first, limit) of the re-registration backoff in seconds
        (default 0.1 to 10), while nrid serves and refuses; while nrid is
        away, the plugin registers as soon as its socket accepts connections.
      update_timeout: default deadline of update_containers, set_status
        and request_resync, seconds.

    Authentication: grpcio does not show a server the peer credentials of
    its callers, so this SDK cannot check the caller's uid the way the Go SDK
    does. Instead the endpoint is created with mode 0600 (socket_mode) and
    owned by the plugin's uid, without a window where it is more open: only
    processes of the plugin's own uid and root can connect. nrid runs as root
    (or must run as the plugin's uid: its endpoint policy requires the
    listening process to have the registrant's uid, and it dials the socket
    itself), so nrid gets through and other users do not.
    """

    def __init__(
        self,
        handlers: Any,
        *,
        name: Optional[str] = None,
        index: Optional[str] = None,
        server_address: Optional[str] = None,
        endpoint: Optional[str] = None,
        socket_dir: str = DEFAULT_SOCKET_DIR,
        socket_mode: int = 0o600,
        max_concurrent_calls: int = 0,
        max_message_size: int = 0,
        dry_run: bool = False,
        resync: bool = False,
        timeouts: Optional[Timeouts] = None,
        failure_policy: Optional[t.FailurePolicy] = None,
        plugin_version: str = "",
        selectors: Iterable[t.EventSelector] = (),
        status: Any = None,
        status_reason: str = "",
        logger: Optional[logging.Logger] = None,
        backoff: tuple[float, float] = (0.1, 10.0),
        update_timeout: float = 10.0,
    ) -> None:
        name = os.environ.get(ENV_PLUGIN_NAME) or name
        index = os.environ.get(ENV_PLUGIN_IDX) or index
        server_address = os.environ.get(ENV_SERVER_ADDRESS) or server_address or DEFAULT_SERVER_ADDRESS
        endpoint = os.environ.get(ENV_PLUGIN_ENDPOINT) or endpoint
        if not name or not index:
            parsed = parse_name(os.path.basename(sys.argv[0] if sys.argv else ""))
            if parsed:
                index = index or parsed[0]
                name = name or parsed[1]
        try:
            check_name(name or "")
        except ValueError as e:
            raise ValueError(f"{e} (pass name= or set {ENV_PLUGIN_NAME})") from None
        try:
            check_index(index or "")
        except ValueError as e:
            raise ValueError(f"{e} (pass index= or set {ENV_PLUGIN_IDX})") from None
        assert name and index
        if max_message_size and max_message_size < 64 << 10:
            raise ValueError(f"max_message_size {max_message_size} is below 65536 bytes")
        first, limit = backoff
        if first <= 0 or limit < first:
            raise ValueError(f"invalid backoff bounds {backoff}")

        self._impl = handlers
        self.name = name
        self.index = index
        #: The plugin's full name, "NN-name".
        self.full_name = f"{index}-{name}"
        self._log = _Log(logger or logging.getLogger("nri_grpc"), {"plugin": self.full_name})

        self._handlers: dict[str, Callable[..., Any]] = {}
        mask = 0
        for ev, hname in HANDLER_NAMES.items():
            fn = getattr(handlers, hname, None)
            if callable(fn):
                self._handlers[hname] = fn
                mask |= event_mask(ev)
        for hname in ("configure", "synchronize", "resync", "shutdown"):
            fn = getattr(handlers, hname, None)
            if callable(fn):
                self._handlers[hname] = fn
        if mask == 0:
            raise ValueError(
                f"{type(handlers).__name__} has no event handler; define at least one of "
                + ", ".join(sorted(HANDLER_NAMES.values()))
            )
        #: The event subscription derived from the handlers.
        self.events = mask

        self.server_address = server_address
        self._server_path = socket_path(server_address)
        self._endpoint_path = socket_path(endpoint or os.path.join(socket_dir, self.full_name + ".sock"))
        if len(self._endpoint_path.encode()) > _MAX_SOCKET_PATH:
            raise ValueError(f"endpoint {self._endpoint_path!r} is longer than the {_MAX_SOCKET_PATH} bytes of a unix socket path")
        #: The gRPC target the plugin serves on and registers.
        self.endpoint = "unix://" + self._endpoint_path
        self._socket_mode = socket_mode

        self.capabilities = ps.Capabilities(
            max_concurrent_calls=max_concurrent_calls,
            dry_run=dry_run,
            max_message_size=max_message_size,
            resync=resync or "resync" in self._handlers,
        )
        self._timeouts: Optional[ps.Timeouts] = None
        if timeouts is not None:
            pt = ps.Timeouts()
            for secs, target in ((timeouts.request, "request"), (timeouts.synchronize, "synchronize")):
                if secs is not None:
                    if secs < 0:
                        raise ValueError(f"negative {target} timeout")
                    getattr(pt, target).CopyFrom(_duration(secs))
            for ev in sorted(timeouts.events):
                secs = timeouts.events[ev]
                if event_mask(ev) == 0 or secs <= 0:
                    raise ValueError(f"invalid timeout {secs} for event {ev}")
                pt.events.add(event=ev, timeout=_duration(secs))
            self._timeouts = pt
        self._failure_policy = failure_policy
        self._plugin_version = plugin_version
        self._selectors = tuple(check_selectors(selectors))
        # The status registrations carry: the constructor's, then the last
        # one set_status was given. _status_gen counts changes, so that a
        # change made while a registration was pending is sent after it.
        self._status = (check_status(status), check_reason("status_reason", status_reason))
        self._status_gen = 0
        self._status_lock: Optional[asyncio.Lock] = None
        # A RegisterPlugin call is under way and not answered yet.
        self._registering = False
        # Background tasks (status catch-ups), referenced until done.
        self._tasks: set[asyncio.Task] = set()
        self._backoff = (first, limit)
        self._update_timeout = update_timeout

        self._running = False
        self._stop_event: Optional[asyncio.Event] = None
        self._pending: Optional[_Session] = None
        self._current: Optional[_Session] = None
        self._instance = ""
        self._registered: Optional[rs.Registered] = None
        self._changed: Optional[asyncio.Event] = None
        self._shutdown: Optional[ps.ShutdownRequest] = None
        self._sync: Optional[_SyncPages] = None
        self._health: Optional[Any] = None
        #: The uid of the process behind nrid's socket, once learned.
        self.server_uid: Optional[int] = None
        #: True once a newer instance took over.
        self.replaced = False

    # ------------------------------------------------------------------ API

    @property
    def registered(self) -> Optional[rs.Registered]:
        """The server's answer to the current registration, or None."""
        return self._registered

    @property
    def instance_id(self) -> str:
        """The current instance id ("" when none)."""
        return self._instance

    @property
    def selectors(self) -> tuple[t.EventSelector, ...]:
        """The selectors the plugin registers with (empty: everything). The
        ones in effect are ``registered.selectors``."""
        return self._selectors

    @property
    def status(self) -> tuple[int, str]:
        """The status and reason the plugin reports: the last set_status,
        else the constructor's. Every registration carries it."""
        return self._status

    async def set_status(self, status: Any, reason: str = "", timeout: Optional[float] = None) -> None:
        """Reports the plugin's status to nrid: api.PLUGIN_STATUS_READY,
        NOT_READY or DEGRADED (or "READY", "NOT_READY", "DEGRADED"), with a
        reason for operators (UTF-8, at most 1024 bytes).

        The status holds until the next report, across registrations: when
        the plugin registers again (nrid restarted) it registers with the
        last status, so a NOT_READY plugin stays NOT_READY. What NOT_READY
        means for the plugin's events is nrid's policy (wait, fail or skip).

        While a registration is under way (in ``configure`` and the first
        ``synchronize``, which come before nrid's Registered) it never
        fails: once Configure named the instance the status is sent at once
        (nrid takes it from Configure on), and in any case again as soon as
        the plugin is registered.

        Raises ValueError for an invalid status or reason; NotRegistered
        while the plugin is not registered nor registering (the status is
        kept and sent with the next registration); grpc.aio.AioRpcError when
        nrid refuses the call (the status is kept all the same).
        """
        status = check_status(status)
        reason = check_reason("reason", reason)
        self._status = (status, reason)
        self._status_gen += 1
        s, inst = self._current, self._instance
        if s is None or not inst:
            if self._registering:
                # Sent once registered (_catch_up_status); at once too when
                # Configure named the instance.
                pending = self._pending
                if pending is not None and pending.instance:
                    try:
                        await self._send_status(pending, pending.instance, status, reason, timeout)
                    except grpc.aio.AioRpcError as e:
                        self._log.debug("status %s not sent yet: %s", status_name(status), e.details())
                return
            raise NotRegistered(
                f"plugin {self.full_name} is not registered; status {status_name(status)} is sent with the next registration"
            )
        await self._send_status(s, inst, status, reason, timeout)

    async def request_resync(self, reason: str = "", timeout: Optional[float] = None) -> int:
        """Asks nrid for the runtime's state again ("my view changed") and
        returns the epoch of the Synchronize that will carry it. The state
        arrives as a Synchronize with that epoch and reason
        SYNC_REASON_PLUGIN_REQUESTED, to the ``resync`` handler (or
        ``synchronize`` when there is none). Requests made while one is
        pending are merged into it (the same epoch comes back).

        nrid answers at once; the Synchronize follows, ordered with the
        plugin's events like any resynchronization. Raises ValueError for an
        invalid reason, NotRegistered while the plugin is not registered,
        grpc.aio.AioRpcError when nrid refuses.
        """
        reason = check_reason("reason", reason)
        s, inst = self._current, self._instance
        if s is None or not inst:
            raise NotRegistered(f"plugin {self.full_name} is not registered; nothing to resynchronize")
        rsp = await rs_grpc.RuntimeServiceStub(s.channel).RequestResync(
            rs.RequestResyncRequest(reason=reason),
            timeout=timeout if timeout is not None else self._update_timeout,
            metadata=((METADATA_INSTANCE_ID, inst),),
        )
        self._log.debug("resync requested (%s): epoch %d", reason, rsp.epoch)
        return rsp.epoch

    async def _send_status(self, s: _Session, inst: str, status: int, reason: str, timeout: Optional[float]) -> None:
        """SetPluginStatus on the session s, one call at a time (reports
        reach nrid in the order they were made)."""
        if self._status_lock is None:
            self._status_lock = asyncio.Lock()
        async with self._status_lock:
            await rs_grpc.RuntimeServiceStub(s.channel).SetPluginStatus(
                rs.SetPluginStatusRequest(status=status, reason=reason),
                timeout=timeout if timeout is not None else self._update_timeout,
                metadata=((METADATA_INSTANCE_ID, inst),),
            )
        self._log.info("status %s: %s", status_name(status), reason)

    async def _catch_up_status(self, s: _Session, inst: str) -> None:
        """Sends the status when it changed while registration s was pending
        (its request carried an older one)."""
        if self._status_gen == s.status_gen:
            return
        status, reason = self._status
        try:
            await self._send_status(s, inst, status, reason, None)
        except grpc.aio.AioRpcError as e:  # the session ended; the next one carries it
            self._log.debug("status %s not sent: %s", status_name(status), e.details())

    async def wait_registered(self, timeout: Optional[float] = None) -> rs.Registered:
        """Waits until the plugin is registered and returns the registration.
        Raises asyncio.TimeoutError after timeout seconds."""

        async def wait() -> rs.Registered:
            while True:
                if self._registered is not None:
                    return self._registered
                await self._changed_event().wait()

        return await asyncio.wait_for(wait(), timeout)

    def stop(self) -> None:
        """Makes run return: the registration is cancelled (nrid unregisters
        the plugin) and the endpoint closed. Safe to call from a signal
        handler on the event loop."""
        if self._stop_event is not None:
            self._stop_event.set()

    async def update_containers(
        self,
        updates: Iterable[t.ContainerUpdate | Any] = (),
        evictions: Iterable[t.ContainerEviction] = (),
        timeout: Optional[float] = None,
    ) -> tuple[Sequence[t.ContainerUpdate], Sequence[t.ContainerEviction]]:
        """Asks nrid for unsolicited updates and evictions of existing
        containers; returns those that could not be applied (failed updates,
        failed evictions).

        Never await it from a handler for a container of the pod whose event
        is being handled: the update waits for that event, which waits for the
        handler. Return the update in the handler's response instead, or send
        it after replying (asyncio.create_task). Raises NotRegistered while
        the plugin is not registered, grpc.aio.AioRpcError when nrid refuses.
        """
        s, inst = self._current, self._instance
        if s is None or not inst:
            raise NotRegistered(f"plugin {self.full_name} is not registered")
        req = rs.UpdateContainersRequest(
            update=[u.proto if hasattr(u, "proto") else u for u in updates],
            evict=list(evictions),
        )
        rsp = await rs_grpc.RuntimeServiceStub(s.channel).UpdateContainers(
            req,
            timeout=timeout if timeout is not None else self._update_timeout,
            metadata=((METADATA_INSTANCE_ID, inst),),
        )
        return rsp.failed, rsp.failed_evictions

    async def run(self) -> RunResult:
        """Serves the plugin, registers it and keeps it registered until stop
        is called (or the task is cancelled): when the registration ends (nrid
        stopped or restarted, the session broke, the plugin was evicted) it
        registers again: while nrid is away, as soon as its socket accepts
        connections again; while nrid serves, with exponential backoff and
        jitter.

        Returns RunResult.STOPPED after stop, RunResult.REPLACED when a newer
        instance took over. Raises RegistrationRefused when nrid refused the
        registration for a reason retrying cannot fix, OSError when the
        endpoint cannot be created. The endpoint is kept across registrations
        and removed when run returns.
        """
        if self._running:
            raise RuntimeError(f"plugin {self.full_name}: run is already running")
        self._running = True
        self._stop_event = asyncio.Event()
        server = await self._serve()
        try:
            return await self._loop()
        finally:
            self._end()
            try:
                await self._set_health(health_pb2.HealthCheckResponse.NOT_SERVING)
            except Exception:  # pragma: no cover - best effort
                pass
            await server.stop(0)
            self._remove_endpoint()
            self._running = False
            self._log.info("stopped")

    # ------------------------------------------------------------ internals

    def _changed_event(self) -> asyncio.Event:
        if self._changed is None:
            self._changed = asyncio.Event()
        return self._changed

    def _notify(self) -> None:
        ev = self._changed_event()
        self._changed = asyncio.Event()
        ev.set()

    def _end(self) -> None:
        self._instance = ""
        self._sync = None
        self._current = None
        if self._registered is not None:
            self._registered = None
            self._notify()

    async def _loop(self) -> RunResult:
        assert self._stop_event is not None
        bo = _Backoff(*self._backoff)
        failures = 0
        back = False  # nrid just came back
        while True:
            session = asyncio.ensure_future(self._session())
            stopper = asyncio.ensure_future(self._stop_event.wait())
            try:
                await asyncio.wait({session, stopper}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                if not session.done():
                    session.cancel()
                stopper.cancel()
            try:
                res = await session
            except asyncio.CancelledError:
                if self._stop_event.is_set():
                    return RunResult.STOPPED
                raise
            if self._stop_event.is_set():
                return RunResult.STOPPED
            if res.registered:
                bo.reset()
                failures = 0
            fresh, back = res.registered or back, False
            if res.shutdown is not None and res.shutdown.kind == ps.SHUTDOWN_KIND_REPLACED:
                self._log.info("replaced by a newer instance; not registering again")
                self.replaced = True
                return RunResult.REPLACED
            retry, long = _retryable(res.err)
            if not retry:
                assert res.err is not None
                reason, fld = _call_status(res.err)
                self._log.error("registration refused: %s: %s", res.err.code().name, res.err.details())
                raise RegistrationRefused(res.err.code(), res.err.details() or "", reason, fld)
            if not res.registered:
                failures += 1
            if not long and not _reachable(self._server_path):
                # nrid is away (stopped, crashed, restarting). The backoff
                # would still be growing when it is back: poll its socket
                # instead, and register as soon as it accepts connections.
                self._log_retry(res, failures, "when nrid accepts connections")
                if not await self._await_server():
                    return RunResult.STOPPED
                bo.reset()
                back = True
                continue
            # nrid serves: back off with jitter, so that a refused plugin does
            # not hammer it. The first retry after a registration ended, or
            # after nrid came back, comes quickly.
            delay = bo.next()
            if long:
                delay = self._backoff[1]
            elif fresh:
                first = min(_FIRST_RETRY, self._backoff[0])
                delay = random.uniform(first / 2, first)
            self._log_retry(res, failures, f"in {delay:.2f}s")
            try:
                await asyncio.wait_for(self._stop_event.wait(), delay)
                return RunResult.STOPPED
            except asyncio.TimeoutError:
                pass

    def _log_retry(self, res: _SessionResult, failures: int, when: str) -> None:
        """Logs how a registration ended and when the next one starts:
        failures after the first one at debug level."""
        detail = ""
        if res.err is not None:
            detail += f": {res.err.code().name}: {res.err.details()}"
        if res.shutdown is not None:
            detail += f" (shutdown {ps.ShutdownKind.Name(res.shutdown.kind)}: {res.shutdown.reason})"
        if res.registered:
            self._log.info("registration ended%s; registering again %s", detail, when)
        elif failures == 1:
            self._log.warning(
                "registration with %s failed%s; retrying %s (further failures are logged at debug level)",
                self.server_address,
                detail,
                when,
            )
        else:
            self._log.debug("registration failed%s; retrying %s", detail, when)

    async def _await_server(self) -> bool:
        """Waits until nrid accepts connections on its socket again, trying
        to connect every _POLL_INTERVAL (no gRPC traffic). False when stop
        was called meanwhile."""
        assert self._stop_event is not None
        while not _reachable(self._server_path):
            try:
                await asyncio.wait_for(self._stop_event.wait(), _POLL_INTERVAL)
                return False
            except asyncio.TimeoutError:
                pass
        return not self._stop_event.is_set()

    def _register_request(self, s: Optional[_Session] = None) -> rs.RegisterPluginRequest:
        status, reason = self._status
        if s is not None:
            s.status_gen = self._status_gen
        req = rs.RegisterPluginRequest(
            plugin_name=self.name,
            plugin_idx=self.index,
            nri_version=NRI_VERSION,
            endpoint=self.endpoint,
            capabilities=self.capabilities,
            plugin_version=self._plugin_version,
            selectors=self._selectors,
            status=status,
            status_reason=reason,
        )
        if self._timeouts is not None:
            req.timeouts.CopyFrom(self._timeouts)
        return req

    async def _session(self) -> _SessionResult:
        """One registration: RegisterPlugin, then reading the stream until it ends."""
        loop = asyncio.get_running_loop()
        uid = await loop.run_in_executor(None, peer_uid, self._server_path)
        if uid is not None and uid != self.server_uid:
            self.server_uid = uid
            if uid not in (0, os.geteuid()) and self._socket_mode & 0o077 == 0:
                self._log.warning(
                    "nrid runs as uid %d, neither root nor this plugin's uid %d: it cannot connect to the endpoint "
                    "(mode %o); give the socket a group nrid is in (socket_mode=0o660 and chgrp)",
                    uid,
                    os.geteuid(),
                    self._socket_mode,
                )
        channel = grpc.aio.insecure_channel(
            "unix://" + self._server_path,
            options=[
                ("grpc.max_receive_message_length", _DEFAULT_MAX_MESSAGE_SIZE),
                # A fresh connection per registration: a subchannel shared
                # with the previous session's channel would still be in its
                # reconnect backoff after nrid came back, and fail at once.
                ("grpc.use_local_subchannel_pool", 1),
                *_TRANSPORT_OPTIONS,
            ],
        )
        s = _Session(channel=channel)
        self._pending, self._shutdown, self._sync = s, None, None
        res = _SessionResult()
        call = None
        try:
            self._registering = True
            call = rs_grpc.RuntimeServiceStub(channel).RegisterPlugin(self._register_request(s))
            first = await call.read()
            self._pending = None
            if first is grpc.aio.EOF or not first.HasField("registered"):
                self._end()
                self._log.warning("the registration stream ended without Registered")
                return res
            reg = first.registered
            if reg.instance_id != s.instance:
                self._log.warning(
                    "Registered names another instance (%s) than Configure (%s)", reg.instance_id, s.instance
                )
                s.instance = reg.instance_id
                self._instance = s.instance
            # Health first: by the time `registered` is set (and
            # wait_registered returns), health says SERVING.
            res.registered = True
            await self._set_health(health_pb2.HealthCheckResponse.SERVING)
            self._current, self._registered = s, reg
            self._registering = False
            self._notify()
            if self._status_gen != s.status_gen:
                task = asyncio.ensure_future(self._catch_up_status(s, reg.instance_id))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            self._log.info(
                "registered: instance %s, server %s, runtime %s, identity %s, events %s, selectors %d, status %s",
                reg.instance_id,
                reg.server_version,
                reg.runtime_name,
                reg.identity,
                ",".join(event_names(reg.events)),
                len(reg.selectors),
                status_name(self._status[0]),
            )
            while True:
                msg = await call.read()
                if msg is grpc.aio.EOF:
                    break
        except grpc.aio.AioRpcError as e:
            res.err = e
        except Exception as e:  # a broken session: log it and register again
            self._log.warning("registration session failed: %s", e, exc_info=e)
        except asyncio.CancelledError:
            if call is not None:
                call.cancel()
            raise
        finally:
            self._pending = None
            self._registering = False
            # Health first: by the time `registered` is None (and
            # wait_registered's waiters wake), health says NOT_SERVING.
            if res.registered:
                try:
                    await self._set_health(health_pb2.HealthCheckResponse.NOT_SERVING)
                except Exception:  # pragma: no cover
                    pass
            self._end()
            res.shutdown = self._shutdown
            await channel.close()
        return res

    # ---------------------------------------------------------------- serve

    async def _serve(self) -> grpc.aio.Server:
        max_size = (self.capabilities.max_message_size or _DEFAULT_MAX_MESSAGE_SIZE) + (64 << 10)
        server = grpc.aio.server(
            options=[
                ("grpc.max_receive_message_length", max_size),
                ("grpc.max_send_message_length", max_size),
                ("grpc.so_reuseport", 0),
                *_TRANSPORT_OPTIONS,
            ]
        )
        ps_grpc.add_PluginServiceServicer_to_server(_Servicer(self), server)
        self._health = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self._health, server)
        # Reflection, with the proto comments: grpcurl lists, describes and
        # calls the plugin without a protoset.
        reflection.add_to_server(server, (_PLUGIN_SERVICE, health.SERVICE_NAME))
        await self._set_health(health_pb2.HealthCheckResponse.NOT_SERVING)
        self._bind(server)
        await server.start()
        self._log.info("serving on %s, events %s", self.endpoint, ",".join(event_names(self.events)))
        return server

    def _bind(self, server: grpc.aio.Server) -> None:
        """Binds the endpoint with its final mode, without a window where the
        socket is more open: bind in a fresh 0700 directory next to it, chmod,
        then rename into place."""
        path = self._endpoint_path
        d = os.path.dirname(path)
        os.makedirs(d, mode=0o755, exist_ok=True)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            pass
        else:
            if not stat.S_ISSOCK(st.st_mode):
                raise OSError(f"{path} exists and is not a socket")
            if peer_uid(path) is not None:
                raise OSError(f"{path} is in use by another process")
            os.unlink(path)
        tmp = tempfile.mkdtemp(prefix=".n", dir=d)
        try:
            tmp_path = os.path.join(tmp, "s")
            if server.add_insecure_port("unix:" + tmp_path) == 0:
                raise OSError(f"cannot listen on {tmp_path}")
            os.chmod(tmp_path, self._socket_mode)
            os.rename(tmp_path, path)
        finally:
            try:
                os.rmdir(tmp)
            except OSError:
                pass

    def _remove_endpoint(self) -> None:
        try:
            if stat.S_ISSOCK(os.lstat(self._endpoint_path).st_mode):
                os.unlink(self._endpoint_path)
        except OSError:
            pass

    async def _set_health(self, status: int) -> None:
        if self._health is not None:
            await self._health.set("", status)
            await self._health.set(_PLUGIN_SERVICE, status)

    # ------------------------------------------------------------- dispatch

    def _context(self, context: Any) -> CallContext:
        md = {k.lower(): v for k, v in (context.invocation_metadata() or ()) if isinstance(v, str)}
        return CallContext(
            instance_id=md.get(METADATA_INSTANCE_ID, ""),
            node_name=md.get("nri-node-name", ""),
            runtime_name=md.get("nri-runtime-name", ""),
            metadata=md,
            plugin=self,
            _grpc=context,
        )

    async def _check_instance(self, ctx: CallContext, context: Any) -> None:
        cur = self._instance
        if not cur:
            await context.abort(
                grpc.StatusCode.UNAVAILABLE,
                f"plugin {self.full_name} is not registered; the call names instance {ctx.instance_id!r}",
            )
        if ctx.instance_id != cur:
            await context.abort(
                grpc.StatusCode.UNAVAILABLE,
                f"plugin {self.full_name}: the call names instance {ctx.instance_id!r}, the current instance is {cur!r}",
            )

    async def _fail(self, context: Any, exc: BaseException, what: str) -> None:
        code, msg = _to_status(exc)
        if isinstance(exc, StatusError):
            self._log.debug("%s failed: %s", what, exc)
        else:
            self._log.warning("%s failed: %s", what, exc, exc_info=exc)
        await context.abort(code, msg)

    async def _configure(self, req: ps.ConfigureRequest, context: Any) -> ps.ConfigureResponse:
        ctx = self._context(context)
        inst = req.instance_id or ctx.instance_id
        if self._pending is None:
            await context.abort(
                grpc.StatusCode.UNAVAILABLE,
                f"plugin {self.full_name} has no registration pending; Configure for instance {inst!r} refused",
            )
        assert self._pending is not None
        self._pending.instance = inst
        self._instance = inst
        self._sync = None
        ctx.instance_id = inst
        self._log.debug(
            "configuring instance %s: runtime %s %s, node %s, server %s",
            inst,
            req.runtime_name,
            req.runtime_version,
            req.node_name,
            req.server_version,
        )
        events, policy = self.events, self._failure_policy
        h = self._handlers.get("configure")
        if h is not None:
            try:
                rsp = await _maybe_await(h(req, ctx))
            except Exception as e:
                await self._fail(context, e, "Configure")
                raise  # unreachable: abort raises
            if rsp is not None:
                if rsp.events:
                    extra = rsp.events & ~self.events
                    if extra:
                        await context.abort(
                            grpc.StatusCode.FAILED_PRECONDITION,
                            "Configure subscribed to events the plugin does not handle: " + ",".join(event_names(extra)),
                        )
                    events = rsp.events
                if rsp.HasField("failure_policy"):
                    policy = rsp.failure_policy
        out = ps.ConfigureResponse(events=events)
        if policy is not None:
            out.failure_policy.CopyFrom(policy)
        return out

    async def _synchronize(self, req: ps.SynchronizeRequest, context: Any) -> ps.SynchronizeResponse:
        ctx = self._context(context)
        await self._check_instance(ctx, context)
        epoch = max(req.epoch, 1)
        acc = self._sync
        if acc is None or acc.instance != self._instance or acc.epoch != epoch:
            acc = _SyncPages(instance=self._instance, epoch=epoch)
            self._sync = acc
        acc.pods.extend(req.pods)
        acc.containers.extend(req.containers)
        if req.more:
            return ps.SynchronizeResponse(more=True)
        self._sync = None
        full = ps.SynchronizeRequest(pods=acc.pods, containers=acc.containers, epoch=epoch, reason=req.reason)
        h = self._handlers.get("synchronize")
        if epoch > 1 and "resync" in self._handlers:
            h = self._handlers["resync"]
        self._log.debug(
            "synchronizing epoch %d (%s): %d pods, %d containers",
            epoch,
            ps.SyncReason.Name(req.reason),
            len(full.pods),
            len(full.containers),
        )
        if h is None:
            return ps.SynchronizeResponse()
        try:
            rsp = await _maybe_await(h(full, ctx))
        except Exception as e:
            await self._fail(context, e, f"Synchronize (epoch {epoch})")
            raise
        if rsp is None:
            return ps.SynchronizeResponse()
        rsp.more = False
        return rsp

    async def _shutdown_call(self, req: ps.ShutdownRequest, context: Any) -> ps.ShutdownResponse:
        ctx = self._context(context)
        await self._check_instance(ctx, context)
        self._shutdown = req
        self._log.info("shutdown: %s: %s", ps.ShutdownKind.Name(req.kind), req.reason)
        h = self._handlers.get("shutdown")
        if h is not None:
            try:
                await _maybe_await(h(req, ctx))
            except Exception as e:  # the answer does not matter
                self._log.warning("shutdown handler failed: %s", e, exc_info=e)
        return ps.ShutdownResponse()

    async def _event(self, method: str, rsp_type: Any, req: Any, context: Any) -> Any:
        ctx = self._context(context)
        await self._check_instance(ctx, context)
        event = EVENT_OF_METHOD[method]
        h = self._handlers.get(HANDLER_NAMES[event])
        if h is None:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, f"plugin {self.full_name} does not handle {method}")
        assert h is not None
        if event == t.EVENT_VALIDATE_CONTAINER_ADJUSTMENT:
            try:
                rsp = await _maybe_await(h(req, ctx))
            except Exception as e:
                reason = e.message if isinstance(e, StatusError) else (str(e) or type(e).__name__)
                self._log.debug("rejecting container adjustment of %s: %s", req.container.name, reason)
                return ps.ValidateContainerAdjustmentResponse(reject=True, reason=reason)
            return rsp if rsp is not None else rsp_type()
        try:
            rsp = await _maybe_await(h(req, ctx))
        except Exception as e:
            await self._fail(context, e, method)
            raise
        return rsp if rsp is not None else rsp_type()


class _Log(logging.LoggerAdapter):
    """Prefixes messages with the plugin's full name."""

    def process(self, msg: Any, kwargs: Any) -> tuple[Any, Any]:
        return f"{self.extra['plugin']}: {msg}", kwargs  # type: ignore[index]


def _duration(secs: float) -> duration_pb2.Duration:
    d = duration_pb2.Duration()
    d.FromNanoseconds(int(round(secs * 1e9)))
    return d


class _Servicer(ps_grpc.PluginServiceServicer):
    """PluginService on top of a Plugin's handlers."""

    def __init__(self, plugin: Plugin) -> None:
        self._p = plugin

    async def Configure(self, request, context):  # noqa: N802 - gRPC names
        return await self._p._configure(request, context)

    async def Synchronize(self, request, context):  # noqa: N802
        return await self._p._synchronize(request, context)

    async def Shutdown(self, request, context):  # noqa: N802
        return await self._p._shutdown_call(request, context)


def _event_method(method: str) -> Callable[..., Awaitable[Any]]:
    rsp_type = getattr(ps, method + "Response")

    async def handle(self: _Servicer, request: Any, context: Any) -> Any:
        return await self._p._event(method, rsp_type, request, context)

    handle.__name__ = method
    return handle


for _method in EVENT_OF_METHOD:
    setattr(_Servicer, _method, _event_method(_method))


def run(plugin: Plugin) -> RunResult:
    """Runs plugin.run in a new event loop until SIGINT or SIGTERM (which stop
    it gracefully) and returns its result: the ``main`` of a plugin program.
    Configures logging at INFO level if the program did not."""
    import signal

    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")

    async def main() -> RunResult:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, plugin.stop)
        return await plugin.run()

    return asyncio.run(main())
