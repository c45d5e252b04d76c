"""Test harness: a real nrid process, a runtime driving it through
AdaptationService, and a recording plugin.

Nothing here sleeps to wait: waits poll a condition (or a log) and fail after
a generous bound (WAIT seconds).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import grpc
from google.rpc import error_details_pb2, status_pb2

import nri_grpc
from nri_grpc import api
from nri_grpc.gen.nri.v1beta1 import (
    adaptation_service_pb2 as ad,
    adaptation_service_pb2_grpc as ad_grpc,
    admin_service_pb2 as adm,
    admin_service_pb2_grpc as adm_grpc,
)

#: Bound of every wait, in seconds. Generous: the machine is shared.
WAIT = 30.0

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def nrid_binary() -> str:
    """The nrid binary: $NRID (make python-test builds it), else built here."""
    path = os.environ.get("NRID")
    if path:
        return path
    out = os.path.join(tempfile.gettempdir(), f"nri-pytest-nrid-{os.getuid()}")
    subprocess.run(["go", "build", "-o", out, "./cmd/nrid"], cwd=ROOT, check=True)
    return out


class Nrid:
    """A running nrid in a short temporary directory (socket paths are
    limited to 107 bytes)."""

    def __init__(self, binary: str, config: str = "", dir: Optional[str] = None) -> None:
        self.binary = binary
        self.config = config
        self.dir = dir or tempfile.mkdtemp(prefix="nri-", dir="/tmp")
        os.chmod(self.dir, 0o755)
        self.sock = os.path.join(self.dir, "nrid.sock")
        self.plugins = os.path.join(self.dir, "plugins")
        self.log_path = os.path.join(self.dir, "nrid.log")
        self.proc: Optional[subprocess.Popen] = None
        self._log_offset = 0

    def start(self) -> "Nrid":
        args = [self.binary, "--socket", self.sock, "--plugin-socket-dir", self.plugins, "--log-level", "debug"]
        if self.config:
            path = os.path.join(self.dir, "nrid.toml")
            with open(path, "w") as f:
                f.write(self.config)
            args += ["--config", path]
        self._log_offset = os.path.getsize(self.log_path) if os.path.exists(self.log_path) else 0
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        self.wait_log(r"msg=serving", since=self._log_offset)
        return self

    def log(self, since: int = 0) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(since)
                return f.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    def wait_log(self, pattern: str, since: int = 0) -> re.Match:
        rx = re.compile(pattern)
        deadline = time.monotonic() + WAIT
        while True:
            m = rx.search(self.log(since))
            if m:
                return m
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"nrid exited with {self.proc.returncode} before logging {pattern!r}:\n{self.log()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {pattern!r} in nrid's log:\n{self.log()}")
            time.sleep(0.02)

    def stop(self) -> None:
        """Stops nrid gracefully (SIGTERM) and waits for it."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(WAIT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError(f"nrid did not stop on SIGTERM:\n{self.log()}")
        self.proc = None

    def kill(self) -> None:
        """Kills nrid (SIGKILL) and waits for it: no Shutdown, connections
        break, and the socket file stays behind, refusing connections."""
        if self.proc is None:
            return
        self.proc.kill()
        self.proc.wait()
        self.proc = None

    def cleanup(self) -> None:
        try:
            if self.proc is not None:
                self.proc.kill()
                self.proc.wait()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


def error_info(err: grpc.aio.AioRpcError) -> tuple[str, dict]:
    """The nri.v1beta1 ErrorInfo reason and metadata of an error status."""
    for key, value in err.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            for d in status_pb2.Status.FromString(value).details:
                info = error_details_pb2.ErrorInfo()
                if d.Unpack(info) and info.domain == "nri.v1beta1":
                    return info.reason, dict(info.metadata)
    return "", {}


class Runtime:
    """The runtime's side: AdaptationService calls and an Attach stream."""

    def __init__(self, nrid: Nrid) -> None:
        self.channel = grpc.aio.insecure_channel("unix://" + nrid.sock)
        self.adapt = ad_grpc.AdaptationServiceStub(self.channel)
        self.admin = adm_grpc.AdminServiceStub(self.channel)
        self._attach: Optional[Any] = None
        self._attach_task: Optional[asyncio.Task] = None
        self.applied: list[ad.ApplyUpdates] = []
        self.applied_event = asyncio.Event()
        #: What the runtime reports failed for every ApplyUpdates.
        self.fail_updates = False

    async def close(self) -> None:
        await self.detach()
        await self.channel.close()

    async def attach(self, pods: list = (), containers: list = (), name: str = "test-runtime") -> None:
        """Attaches as the runtime with this state and answers the server's
        snapshot requests and updates until detach. Returns once nrid holds
        the state (its cached pods and containers are these), so plugins
        registering afterwards see it."""
        deadline = asyncio.get_running_loop().time() + WAIT
        while True:
            try:
                await self._attach_once(pods, containers, name)
                break
            except grpc.aio.AioRpcError as e:
                # nrid may not have noticed a previous detach yet.
                if e.code() != grpc.StatusCode.ALREADY_EXISTS or asyncio.get_running_loop().time() > deadline:
                    raise
                await asyncio.sleep(0.01)
        want = (sorted(p.id for p in pods), sorted(c.id for c in containers))

        async def state():
            got_p, got_c = [], []
            async for page in self.admin.GetState(adm.GetStateRequest(), timeout=WAIT):
                got_p += [p.id for p in page.pods]
                got_c += [c.id for c in page.containers]
            return (sorted(got_p), sorted(got_c)) == want

        while not await state():
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError("timed out waiting for nrid to take the runtime's state")
            await asyncio.sleep(0.01)

    async def _attach_once(self, pods, containers, name) -> None:
        q: asyncio.Queue = asyncio.Queue()
        q.put_nowait(ad.AttachRequest(hello=ad.AttachHello(runtime_name=name, runtime_version="1.0")))

        async def requests():
            while True:
                m = await q.get()
                if m is None:
                    return
                yield m

        call = self.adapt.Attach(requests())
        first = await asyncio.wait_for(call.read(), WAIT)
        assert first.HasField("attached"), first
        state = (list(pods), list(containers))

        async def serve():
            while True:
                m = await call.read()
                if m is grpc.aio.EOF:
                    return
                if m.HasField("snapshot_request"):
                    q.put_nowait(
                        ad.AttachRequest(
                            snapshot=ad.StateSnapshot(
                                request_id=m.snapshot_request.request_id, pods=state[0], containers=state[1]
                            )
                        )
                    )
                elif m.HasField("apply_updates"):
                    self.applied.append(m.apply_updates)
                    self.applied_event.set()
                    res = ad.UpdateResult(request_id=m.apply_updates.request_id)
                    if self.fail_updates:
                        res.failed.extend(m.apply_updates.update)
                        res.failed_evictions.extend(m.apply_updates.evict)
                    q.put_nowait(ad.AttachRequest(update_result=res))

        self._attach = (call, q)
        self._attach_task = asyncio.ensure_future(serve())

    async def detach(self) -> None:
        if self._attach is None:
            return
        call, q = self._attach
        q.put_nowait(None)
        call.cancel()
        if self._attach_task is not None:
            try:
                await self._attach_task
            except (asyncio.CancelledError, grpc.aio.AioRpcError):
                pass
        self._attach = None
        self._attach_task = None

    async def list_plugins(self) -> list:
        return list((await self.admin.ListPlugins(adm.ListPluginsRequest(), timeout=WAIT)).plugins)


def pod(pid: str = "pod0", **kw: Any) -> api.PodSandbox:
    kw.setdefault("name", pid + "-name")
    kw.setdefault("namespace", "default")
    return api.PodSandbox(id=pid, uid=pid + "-uid", **kw)


def ctr(cid: str = "ctr0", pid: str = "pod0", **kw: Any) -> api.Container:
    kw.setdefault("name", cid + "-name")
    return api.Container(id=cid, pod_sandbox_id=pid, **kw)


async def wait_for(cond: Callable[[], Any], what: str, timeout: float = WAIT) -> Any:
    """Polls cond until it returns a true value."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        v = cond()
        if v:
            return v
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


@dataclass
class Recorder:
    """A plugin's handlers that record every call, in order, as "NN-name:Method"
    into a shared log. ``events`` chooses which handlers exist; ``behave``
    maps a method to a function (req, ctx) returning the response or raising."""

    full_name: str
    log: list
    events: tuple = ()
    behave: dict = field(default_factory=dict)
    requests: dict = field(default_factory=dict)


def make_handlers(rec: Recorder, with_sync: bool = True, with_resync: bool = False) -> Any:
    """Builds a handlers object with exactly the handlers rec.events names."""
    attrs: dict[str, Any] = {}

    def handler(method: str) -> Callable:
        async def h(self, req, ctx):
            rec.log.append(f"{rec.full_name}:{method}")
            rec.requests.setdefault(method, []).append(req)
            fn = rec.behave.get(method)
            if fn is None:
                return None
            return await nri_grpc.plugin._maybe_await(fn(req, ctx))

        return h

    for method in rec.events:
        attrs[nri_grpc.events.HANDLER_NAMES[nri_grpc.events.EVENT_OF_METHOD[method]]] = handler(method)
    attrs["configure"] = handler("Configure")
    if with_sync:
        attrs["synchronize"] = handler("Synchronize")
    if with_resync:
        attrs["resync"] = handler("Resync")
    attrs["shutdown"] = handler("Shutdown")
    return type("Handlers", (), attrs)()


class Plugins:
    """In-process SDK plugins of one test, run as tasks on the test's loop."""

    def __init__(self, nrid: Nrid) -> None:
        self.nrid = nrid
        self.log: list[str] = []
        self.tasks: dict[str, asyncio.Task] = {}
        self.plugins: dict[str, nri_grpc.Plugin] = {}
        self.recorders: dict[str, Recorder] = {}

    def start(
        self,
        idx: str,
        name: str,
        events: tuple = (),
        behave: Optional[dict] = None,
        endpoint: Optional[str] = None,
        with_resync: bool = False,
        key: Optional[str] = None,
        **opts: Any,
    ) -> nri_grpc.Plugin:
        full = f"{idx}-{name}"
        rec = Recorder(full, self.log, tuple(events), behave or {})
        p = nri_grpc.Plugin(
            make_handlers(rec, with_resync=with_resync),
            name=name,
            index=idx,
            server_address=self.nrid.sock,
            socket_dir=self.nrid.plugins,
            endpoint=endpoint,
            backoff=opts.pop("backoff", (0.05, 0.5)),
            **opts,
        )
        key = key or full
        self.plugins[key] = p
        self.recorders[key] = rec
        self.tasks[key] = asyncio.ensure_future(p.run())
        return p

    async def start_registered(self, *args: Any, **kw: Any) -> nri_grpc.Plugin:
        p = self.start(*args, **kw)
        task = self.tasks[kw.get("key") or f"{args[0]}-{args[1]}"]
        waiter = asyncio.ensure_future(p.wait_registered())
        done, _ = await asyncio.wait({waiter, task}, timeout=WAIT, return_when=asyncio.FIRST_COMPLETED)
        if waiter not in done:
            waiter.cancel()
            if task in done:
                task.result()
            raise AssertionError(f"plugin {p.full_name} did not register:\n{self.nrid.log()}")
        return p

    async def stop_all(self) -> None:
        for p in self.plugins.values():
            p.stop()
        for t in self.tasks.values():
            try:
                await asyncio.wait_for(t, WAIT)
            except Exception:
                pass


def calls(log: list, *methods: str) -> list:
    """The entries of log whose method is one of methods (all without)."""
    if not methods:
        return list(log)
    return [e for e in log if e.split(":", 1)[1] in methods]


def spawn_plugin(script: str, *args: str, env: Optional[dict] = None) -> subprocess.Popen:
    """Starts a plugin program (a separate process) with the venv's python."""
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.Popen(
        [sys.executable, os.path.join(os.path.dirname(__file__), script), *args],
        env=e,
        stdin=subprocess.DEVNULL,
    )
