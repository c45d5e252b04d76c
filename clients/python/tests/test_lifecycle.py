"""Shutdown, re-registration, handover, resync and paging."""

import asyncio
import os

import nri_grpc
from harness import WAIT, Plugins, Runtime, calls, ctr, pod, wait_for
from nri_grpc import RunResult, api
from nri_grpc.gen.nri.v1beta1 import adaptation_service_pb2 as ad


def test_shutdown_on_server_stop_then_registers_again_after_restart(nrid):
    async def scenario():
        ps = Plugins(nrid)
        try:
            p = await ps.start_registered("10", "again", events=("RunPodSandbox",))
            first = p.registered.instance_id
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(None, nrid.stop)
            # nrid said why before closing the registration.
            shutdowns = ps.recorders["10-again"].requests["Shutdown"]
            assert [s.kind for s in shutdowns] == [api.SHUTDOWN_KIND_SERVER_STOPPING]
            await wait_for(lambda: p.registered is None, "the registration to end")
            # The endpoint stays while the plugin retries with backoff.
            assert os.path.exists(os.path.join(nrid.plugins, "10-again.sock"))
            await loop.run_in_executor(None, nrid.start)
            reg = await p.wait_registered(WAIT)
            assert reg.instance_id != first
            assert calls(ps.log, "Configure") == ["10-again:Configure"] * 2
            # Events reach the new registration.
            rt = Runtime(nrid)
            await rt.adapt.RunPodSandbox(ad.AdaptationServiceRunPodSandboxRequest(pod=pod()), timeout=WAIT)
            assert calls(ps.log, "RunPodSandbox") == ["10-again:RunPodSandbox"]
            await rt.close()
        finally:
            await ps.stop_all()

    asyncio.run(scenario())


def test_a_newer_instance_replaces_the_old_one(nrid):
    async def scenario():
        ps = Plugins(nrid)
        rt = Runtime(nrid)
        try:
            old = await ps.start_registered("10", "up", events=("RunPodSandbox",), key="old")
            new = await ps.start_registered(
                "10", "up", events=("RunPodSandbox",), key="new", endpoint=os.path.join(nrid.plugins, "10-up-v2.sock")
            )
            # The old instance is told it was replaced, and run returns
            # instead of registering again.
            assert await asyncio.wait_for(ps.tasks["old"], WAIT) == RunResult.REPLACED
            assert old.replaced
            kinds = [s.kind for s in ps.recorders["old"].requests["Shutdown"]]
            assert kinds == [api.SHUTDOWN_KIND_REPLACED]
            assert new.registered is not None and not new.replaced
            await rt.adapt.RunPodSandbox(ad.AdaptationServiceRunPodSandboxRequest(pod=pod()), timeout=WAIT)
            assert calls(ps.log, "RunPodSandbox") == ["10-up:RunPodSandbox"]
            assert len(ps.recorders["new"].requests["RunPodSandbox"]) == 1
            infos = await rt.list_plugins()
            assert [i.instance_id for i in infos] == [new.instance_id]
        finally:
            await ps.stop_all()
            await rt.close()

    asyncio.run(scenario())


def test_resync_replaces_the_state_with_a_new_epoch(nrid):
    async def scenario():
        ps = Plugins(nrid)
        rt = Runtime(nrid)
        try:
            p = await ps.start_registered("10", "rs", events=("StopContainer",), with_resync=True)
            assert p.capabilities.resync and p.registered.capabilities.resync
            rec = ps.recorders["10-rs"]
            # The first attach of a runtime resynchronizes registered plugins.
            await rt.attach([pod("p1")], [ctr("c1", "p1"), ctr("c2", "p1")])
            await wait_for(lambda: rec.requests.get("Resync"), "the first resync")
            r1 = rec.requests["Resync"][0]
            assert r1.epoch == 2 and r1.reason == api.SYNC_REASON_RUNTIME_RESTARTED
            assert [c.id for c in r1.containers] == ["c1", "c2"] and [x.id for x in r1.pods] == ["p1"]
            # Attaching again (the runtime restarted) with another state: a
            # new epoch with the full new state.
            await rt.detach()
            await rt.attach([pod("p1"), pod("p2")], [ctr("c1", "p1"), ctr("c3", "p2")])
            await wait_for(lambda: len(rec.requests.get("Resync", [])) == 2, "the second resync")
            r2 = rec.requests["Resync"][1]
            assert r2.epoch == 3
            assert [c.id for c in r2.containers] == ["c1", "c3"]
            # Epoch 1 went to synchronize, later epochs to resync; no
            # synthesized events for a plugin that resyncs.
            assert calls(ps.log, "Synchronize", "Resync", "StopContainer") == [
                "10-rs:Synchronize",
                "10-rs:Resync",
                "10-rs:Resync",
            ]
        finally:
            await ps.stop_all()
            await rt.close()

    asyncio.run(scenario())


def test_without_resync_vanished_containers_arrive_as_events(nrid):
    async def scenario():
        ps = Plugins(nrid)
        rt = Runtime(nrid)
        try:
            await rt.attach([pod("p1")], [ctr("c1", "p1"), ctr("c2", "p1")])
            p = await ps.start_registered("10", "plain", events=("StopContainer", "RemoveContainer"))
            assert not p.capabilities.resync
            sync = ps.recorders["10-plain"].requests["Synchronize"][0]
            assert [c.id for c in sync.containers] == ["c1", "c2"]
            await rt.detach()
            await rt.attach([pod("p1")], [ctr("c1", "p1")])
            await wait_for(lambda: calls(ps.log, "RemoveContainer"), "the synthesized RemoveContainer")
            assert calls(ps.log, "StopContainer", "RemoveContainer", "Synchronize") == [
                "10-plain:Synchronize",
                "10-plain:StopContainer",
                "10-plain:RemoveContainer",
            ]
            assert ps.recorders["10-plain"].requests["StopContainer"][0].container.id == "c2"
        finally:
            await ps.stop_all()
            await rt.close()

    asyncio.run(scenario())


def test_paged_synchronize_reaches_the_handler_once(nrid):
    async def scenario():
        ps = Plugins(nrid)
        rt = Runtime(nrid)
        # About 2 KiB per container: 100 containers need several 64 KiB pages.
        pods = [pod("p1")]
        ctrs = [ctr(f"c{i:03d}", "p1", args=["x" * 2000]) for i in range(100)]
        try:
            await rt.attach(pods, ctrs)
            p = ps.start("10", "paged", events=("StopContainer",), max_message_size=64 << 10)
            pages = []
            inner = p._synchronize

            async def count(req, context):
                pages.append(req.more)
                return await inner(req, context)

            p._synchronize = count
            await p.wait_registered(WAIT)
            # nrid split the state into pages; the SDK answered more=true to
            # all but the last and called the handler once.
            assert len(pages) >= 2 and pages[-1] is False and all(pages[:-1])
            syncs = ps.recorders["10-paged"].requests["Synchronize"]
            assert len(syncs) == 1
            assert [c.id for c in syncs[0].containers] == [c.id for c in ctrs]
            assert not syncs[0].more
        finally:
            await ps.stop_all()
            await rt.close()

    asyncio.run(scenario())
