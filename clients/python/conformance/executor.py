"""The conformance executor of the Python SDK (docs/CONFORMANCE.md).

A plugin built with nri_grpc.Plugin that answers every call it receives with
the answer of the conformance harness's driver: the harness
(test/conformance, `make sdk-conformance`) runs its scenario catalog through
the SDK this way. It registers as NRI_CONFORMANCE_REGISTRATION says and
forwards every call to the PluginService at NRI_CONFORMANCE_DRIVER.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from typing import Any

import grpc
from google.protobuf import json_format

import nri_grpc
from nri_grpc.gen.nri.v1beta1 import plugin_service_pb2_grpc as ps_grpc
from nri_grpc.gen.nri.v1beta1 import runtime_service_pb2 as rs
from nri_grpc.events import HANDLER_NAMES, event_name

# How a forwarded call ends when its deadline passed: the client's own
# deadline, or the driver resetting the stream at the same moment.
_DEADLINE_CODES = (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED)

# PluginService calls are a few megabytes at most (the server's limit).
_MAX_MESSAGE = 16 << 20


class Forwarder:
    """Every handler of the SDK, each calling the same method of the driver."""

    def __init__(self, driver: str) -> None:
        self._driver = driver
        self._stub: Any = None

    def _d(self) -> Any:
        # The channel belongs to the running event loop: made on first use.
        if self._stub is None:
            ch = grpc.aio.insecure_channel(
                "unix:" + self._driver,
                options=[("grpc.max_receive_message_length", _MAX_MESSAGE), ("grpc.max_send_message_length", _MAX_MESSAGE)],
            )
            self._stub = ps_grpc.PluginServiceStub(ch)
        return self._stub

    async def forward(self, method: str, req: Any, ctx: nri_grpc.CallContext) -> Any:
        """Calls method on the driver within the call's remaining time, with
        its instance id; the driver's error becomes the same status."""
        left = ctx.time_remaining()
        loop = asyncio.get_running_loop()
        until = None
        if left is not None:
            # grpc-core sends a timeout rounded up to about two significant
            # digits (10 ms steps from 1 s, 100 ms from 10 s): without this
            # margin the driver's deadline would be later than the call's.
            left = max(left - left / 100 - 0.002, 0.001)
            until = loop.time() + left
        try:
            return await getattr(self._d(), method)(
                req,
                timeout=left,
                metadata=((nri_grpc.METADATA_INSTANCE_ID, ctx.instance_id),),
            )
        except grpc.aio.AioRpcError as e:
            if until is not None and loop.time() >= until and e.code() in _DEADLINE_CODES:
                # The driver did not answer in time: neither does the
                # executor. The incoming call ends at its own deadline (the
                # margin above), which cancels this handler.
                await asyncio.sleep((ctx.time_remaining() or 0) + 1)
            raise nri_grpc.StatusError(e.code(), e.details() or "") from None

    async def configure(self, req: Any, ctx: nri_grpc.CallContext) -> Any:
        # Configure's call names the new instance in its request.
        ctx.instance_id = req.instance_id or ctx.instance_id
        return await self.forward("Configure", req, ctx)

    async def synchronize(self, req: Any, ctx: nri_grpc.CallContext) -> Any:
        return await self.forward("Synchronize", req, ctx)

    async def shutdown(self, req: Any, ctx: nri_grpc.CallContext) -> None:
        await self.forward("Shutdown", req, ctx)


def _event_handler(method: str, name: str) -> Any:
    async def handle(self: Forwarder, req: Any, ctx: nri_grpc.CallContext) -> Any:
        return await self.forward(method, req, ctx)

    handle.__name__ = name
    return handle


for _event, _name in HANDLER_NAMES.items():
    setattr(Forwarder, _name, _event_handler(event_name(_event), _name))


async def _command(plugin: nri_grpc.Plugin, f: list[str]) -> str:
    # Once the SDK holds its registration: the harness sends a command after
    # the server answered, which the SDK may not have read yet.
    await plugin.wait_registered()
    if len(f) == 4 and f[1] == "set_status":
        await plugin.set_status(f[2], f[3])
        return ""
    if len(f) == 3 and f[1] == "request_resync":
        return str(await plugin.request_resync(f[2]))
    raise ValueError(f"unknown command {' '.join(f[1:])!r}")


def _commands(plugin: nri_grpc.Plugin, loop: asyncio.AbstractEventLoop) -> None:
    """Runs the harness's commands (docs/CONFORMANCE.md, "Commands"): one
    per line of standard input, each made through the SDK's own API and
    answered with one line on standard output."""

    def answer(ident: str, fut: Any) -> None:
        try:
            line = f"nri-conformance-reply\t{ident}\tok\t{fut.result()}\n"
        except Exception as e:  # noqa: BLE001 - every failure is the answer
            msg = str(e).replace("\n", " ")
            line = f"nri-conformance-reply\t{ident}\terror\t{msg}\n"
        sys.stdout.write(line)
        sys.stdout.flush()

    for raw in sys.stdin:
        f = raw.rstrip("\n").split("\t")
        fut = asyncio.run_coroutine_threadsafe(_command(plugin, f), loop)
        fut.add_done_callback(lambda fut, ident=f[0]: answer(ident, fut))


async def _run(plugin: nri_grpc.Plugin) -> None:
    # nri_grpc.run, with the command reader beside it.
    import signal
    import threading

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, plugin.stop)
    threading.Thread(target=_commands, args=(plugin, loop), daemon=True).start()
    await plugin.run()


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    logging.getLogger("nri_grpc").setLevel(logging.DEBUG)
    driver = os.environ.get("NRI_CONFORMANCE_DRIVER", "")
    if not driver:
        print("NRI_CONFORMANCE_DRIVER is not set", file=sys.stderr)
        return 2
    reg = rs.RegisterPluginRequest()
    json_format.Parse(os.environ.get("NRI_CONFORMANCE_REGISTRATION", "{}"), reg)
    caps = reg.capabilities
    timeouts = None
    if reg.HasField("timeouts"):
        tt = reg.timeouts
        timeouts = nri_grpc.Timeouts(
            request=tt.request.ToNanoseconds() / 1e9 if tt.HasField("request") else None,
            synchronize=tt.synchronize.ToNanoseconds() / 1e9 if tt.HasField("synchronize") else None,
            events={et.event: et.timeout.ToNanoseconds() / 1e9 for et in tt.events},
        )
    plugin = nri_grpc.Plugin(
        Forwarder(driver),
        name=reg.plugin_name,
        index=reg.plugin_idx,
        max_concurrent_calls=caps.max_concurrent_calls,
        max_message_size=caps.max_message_size,
        dry_run=caps.dry_run,
        resync=caps.resync,
        timeouts=timeouts,
        selectors=list(reg.selectors),
        status=reg.status,
        status_reason=reg.status_reason,
    )
    try:
        asyncio.run(_run(plugin))
    except nri_grpc.RegistrationRefused as e:
        logging.error("%s", e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
