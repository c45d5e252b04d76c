"""Selectors, status and resync: what the SDK sends, against a small fake
RuntimeService that records every request and its metadata (end-to-end
tests against nrid are in test_selectors_e2e.py)."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile

import grpc
import pytest

import nri_grpc
from harness import WAIT, wait_for
from nri_grpc import api
from nri_grpc.gen.nri.v1beta1 import runtime_service_pb2 as rs
from nri_grpc.gen.nri.v1beta1 import runtime_service_pb2_grpc as rs_grpc


class FakeRuntime(rs_grpc.RuntimeServiceServicer):
    """RuntimeService that registers every plugin at once (no Configure,
    no Synchronize: the SDK takes the instance id of Registered), records
    requests with their nri-instance-id, and ends a registration when told."""

    def __init__(self) -> None:
        self.registrations: list[rs.RegisterPluginRequest] = []
        self.statuses: list[tuple[str, int, str]] = []
        self.resyncs: list[tuple[str, str]] = []
        self.release = asyncio.Event()
        self.release.set()
        self._end: dict[str, asyncio.Event] = {}

    def end(self, instance: str) -> None:
        self._end[instance].set()

    async def RegisterPlugin(self, request, context):  # noqa: N802
        self.registrations.append(request)
        inst = f"inst-{len(self.registrations)}"
        self._end[inst] = asyncio.Event()
        await self.release.wait()
        yield rs.RegisterPluginResponse(
            registered=rs.Registered(instance_id=inst, events=0x3FFF, selectors=request.selectors)
        )
        await self._end[inst].wait()

    async def SetPluginStatus(self, request, context):  # noqa: N802
        md = dict(context.invocation_metadata())
        self.statuses.append((md.get("nri-instance-id", ""), request.status, request.reason))
        return rs.SetPluginStatusResponse()

    async def RequestResync(self, request, context):  # noqa: N802
        md = dict(context.invocation_metadata())
        self.resyncs.append((md.get("nri-instance-id", ""), request.reason))
        return rs.RequestResyncResponse(epoch=6 + len(self.resyncs))


class Handlers:
    async def create_container(self, req, ctx):
        return None


class Fixture:
    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="nri-", dir="/tmp")
        self.sock = os.path.join(self.dir, "rt.sock")
        self.fake = FakeRuntime()
        self.server: grpc.aio.Server | None = None

    async def start(self) -> None:
        self.server = grpc.aio.server()
        rs_grpc.add_RuntimeServiceServicer_to_server(self.fake, self.server)
        self.server.add_insecure_port("unix:" + self.sock)
        await self.server.start()

    def plugin(self, **kw) -> nri_grpc.Plugin:
        return nri_grpc.Plugin(
            Handlers(),
            name="st",
            index="10",
            server_address=self.sock,
            socket_dir=os.path.join(self.dir, "plugins"),
            backoff=(0.05, 0.5),
            **kw,
        )

    async def close(self) -> None:
        if self.server is not None:
            await self.server.stop(0)
        shutil.rmtree(self.dir, ignore_errors=True)


def run(scenario):
    async def main():
        f = Fixture()
        await f.start()
        try:
            await scenario(f)
        finally:
            await f.close()

    asyncio.run(main())


SELECTORS = [
    nri_grpc.selector(namespaces=["prod", "staging"], pod_labels="app=web,!canary"),
    nri_grpc.selector(container_names="db-*", runtime_handlers=["", "kata"]),
]


def test_registration_carries_selectors_and_status_and_reports_go_to_the_instance():
    async def scenario(f: Fixture):
        p = f.plugin(selectors=SELECTORS, status=api.PLUGIN_STATUS_NOT_READY, status_reason="warming up")
        task = asyncio.ensure_future(p.run())
        try:
            reg = await p.wait_registered(WAIT)
            req = f.fake.registrations[0]
            assert list(req.selectors) == SELECTORS
            assert req.selectors[1].runtime_handlers == ["", "kata"]
            assert (req.status, req.status_reason) == (api.PLUGIN_STATUS_NOT_READY, "warming up")
            assert list(reg.selectors) == SELECTORS and p.selectors == tuple(SELECTORS)

            await p.set_status(api.PLUGIN_STATUS_READY, "warm")
            assert await p.request_resync("cache lost") == 7
            await p.set_status("DEGRADED", "db slow")
            await p.set_status("PLUGIN_STATUS_NOT_READY", "db down")
            assert f.fake.statuses == [
                ("inst-1", api.PLUGIN_STATUS_READY, "warm"),
                ("inst-1", api.PLUGIN_STATUS_DEGRADED, "db slow"),
                ("inst-1", api.PLUGIN_STATUS_NOT_READY, "db down"),
            ]
            assert f.fake.resyncs == [("inst-1", "cache lost")]
            assert p.status == (api.PLUGIN_STATUS_NOT_READY, "db down")

            # nrid ends the registration (a restart): the plugin registers
            # again with the last status it reported, and its selectors.
            f.fake.end("inst-1")
            reg = await wait_for(lambda: p.registered if p.registered and p.registered.instance_id == "inst-2" else None,
                                 "the second registration")
            req = f.fake.registrations[1]
            assert (req.status, req.status_reason) == (api.PLUGIN_STATUS_NOT_READY, "db down")
            assert list(req.selectors) == SELECTORS
            assert await p.request_resync() == 8
            assert f.fake.resyncs[-1] == ("inst-2", "")
            assert len(f.fake.statuses) == 3  # nothing to catch up: the request carried it
        finally:
            p.stop()
            await asyncio.wait_for(task, WAIT)

    run(scenario)


def test_a_status_set_while_registering_is_sent_once_registered():
    async def scenario(f: Fixture):
        f.fake.release.clear()  # hold Registered back
        p = f.plugin()
        task = asyncio.ensure_future(p.run())
        try:
            await wait_for(lambda: f.fake.registrations, "the registration request")
            assert f.fake.registrations[0].status == api.PLUGIN_STATUS_READY
            # Registering (nrid has not answered): no error, sent once registered.
            await p.set_status(api.PLUGIN_STATUS_NOT_READY, "lost my backend")
            assert f.fake.statuses == []
            f.fake.release.set()
            await p.wait_registered(WAIT)
            await wait_for(lambda: f.fake.statuses, "the status sent after registering")
            assert f.fake.statuses == [("inst-1", api.PLUGIN_STATUS_NOT_READY, "lost my backend")]
        finally:
            p.stop()
            await asyncio.wait_for(task, WAIT)

    run(scenario)


def test_not_registered_and_invalid_input():
    async def scenario(f: Fixture):
        p = f.plugin()
        assert p.status == (api.PLUGIN_STATUS_READY, "")
        with pytest.raises(nri_grpc.NotRegistered):
            await p.request_resync("x")
        with pytest.raises(nri_grpc.NotRegistered, match="DEGRADED is sent with the next registration"):
            await p.set_status(api.PLUGIN_STATUS_DEGRADED, "half")
        # kept for the next registration
        assert p.status == (api.PLUGIN_STATUS_DEGRADED, "half")
        for bad in (9, -1, "BUSY", True, 1.0):
            with pytest.raises(ValueError, match="status"):
                await p.set_status(bad)
        with pytest.raises(ValueError, match="reason: 1025 bytes, at most 1024"):
            await p.set_status(api.PLUGIN_STATUS_READY, "x" * 1025)
        with pytest.raises(ValueError, match="not valid UTF-8"):
            await p.request_resync("\udcff")
        assert p.status == (api.PLUGIN_STATUS_DEGRADED, "half")  # refused input changes nothing
        assert f.fake.statuses == [] and f.fake.resyncs == []
        # UNSPECIFIED is READY.
        assert f.plugin(status=api.PLUGIN_STATUS_UNSPECIFIED).status == (api.PLUGIN_STATUS_READY, "")
        with pytest.raises(ValueError, match="status_reason"):
            f.plugin(status_reason="é" * 513)

    run(scenario)


def test_selector_bounds():
    assert nri_grpc.selector(namespaces="a").namespaces == ["a"]
    assert nri_grpc.selector().namespaces == []
    with pytest.raises(ValueError, match=r"selectors: 17 selectors, at most 16"):
        nri_grpc.check_selectors([api.EventSelector()] * 17)
    with pytest.raises(ValueError, match=r"selectors\[0\].namespaces: 65 entries, at most 64"):
        nri_grpc.selector(namespaces=[str(i) for i in range(65)])
    with pytest.raises(ValueError, match=r"selectors\[0\].container_names\[1\]: 254 bytes, at most 253"):
        nri_grpc.selector(container_names=["ok", "x" * 254])
    with pytest.raises(ValueError, match=r"selectors\[0\].pod_labels: 4097 bytes, at most 4096"):
        nri_grpc.selector(pod_labels="a" * 4097)
    with pytest.raises(ValueError, match=r"runtime_handlers\[0\] is not valid UTF-8"):
        nri_grpc.selector(runtime_handlers="\ud800")
    with pytest.raises(ValueError, match="is not an EventSelector"):
        nri_grpc.check_selectors([{"namespaces": ["a"]}])
    assert len(nri_grpc.check_selectors([api.EventSelector()] * 16)) == 16
    with pytest.raises(ValueError, match="17 selectors"):
        nri_grpc.Plugin(Handlers(), name="x", index="10", selectors=[api.EventSelector()] * 17)
