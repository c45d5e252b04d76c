"""Selectors, status and resync end to end: the SDK against a real nrid."""

import asyncio

import pytest

import nri_grpc
from harness import WAIT, Plugins, Runtime, calls, pod, wait_for
from nri_grpc import api
from nri_grpc.gen.nri.v1beta1 import adaptation_service_pb2 as ad
from nri_grpc.gen.nri.v1beta1 import admin_service_pb2 as adm


def sel_tuples(sels):
    return [(list(s.namespaces), s.pod_labels, list(s.container_names), list(s.runtime_handlers)) for s in sels]


def test_selectors_filter_events_and_are_shown(nrid):
    async def scenario():
        ps = Plugins(nrid)
        rt = Runtime(nrid)
        sels = [
            nri_grpc.selector(namespaces="prod"),
            nri_grpc.selector(namespaces="staging", pod_labels="app=web,!canary"),
        ]
        try:
            p = await ps.start_registered("10", "sel", events=("RunPodSandbox",), selectors=sels)
            await ps.start_registered("20", "all", events=("RunPodSandbox",))
            assert sel_tuples(p.registered.selectors) == sel_tuples(sels)
            infos = {i.plugin.name: i for i in await rt.list_plugins()}
            assert sel_tuples(infos["sel"].selectors) == sel_tuples(sels)
            assert list(infos["all"].selectors) == []

            pods = [
                pod("p-default"),
                pod("p-prod", namespace="prod"),
                pod("p-web", namespace="staging", labels={"app": "web"}),
                pod("p-canary", namespace="staging", labels={"app": "web", "canary": "1"}),
            ]
            for x in pods:
                await rt.adapt.RunPodSandbox(ad.AdaptationServiceRunPodSandboxRequest(pod=x), timeout=WAIT)
            got = [r.pod.id for r in ps.recorders["10-sel"].requests.get("RunPodSandbox", [])]
            assert got == ["p-prod", "p-web"]
            assert len(ps.recorders["20-all"].requests["RunPodSandbox"]) == 4
            info = {i.plugin.name: i for i in await rt.list_plugins()}["sel"]
            assert info.counters.filtered == 2
        finally:
            await ps.stop_all()
            await rt.close()

    asyncio.run(scenario())


def test_an_invalid_label_selector_is_refused_for_good(nrid):
    async def scenario():
        ps = Plugins(nrid)
        ps.start("10", "badsel", events=("RunPodSandbox",), selectors=[nri_grpc.selector(pod_labels="app in (a,")])
        with pytest.raises(nri_grpc.RegistrationRefused) as e:
            await asyncio.wait_for(ps.tasks["10-badsel"], WAIT)
        assert e.value.reason == "REGISTRATION_REFUSAL_INVALID_SELECTORS"
        assert "pod_labels" in e.value.message

    asyncio.run(scenario())


def test_status_is_shown_and_kept_across_an_nrid_restart(nrid):
    async def scenario():
        ps = Plugins(nrid)
        rt = Runtime(nrid)

        async def status():
            info = (await rt.list_plugins())[0]
            return info.status, info.status_reason

        try:
            p = await ps.start_registered(
                "10", "st", events=("RunPodSandbox",), status=api.PLUGIN_STATUS_NOT_READY, status_reason="warming up"
            )
            assert await status() == (api.PLUGIN_STATUS_NOT_READY, "warming up")
            await p.set_status(api.PLUGIN_STATUS_READY, "warm")
            assert await status() == (api.PLUGIN_STATUS_READY, "warm")
            await p.set_status("DEGRADED", "backend slow")
            assert await status() == (api.PLUGIN_STATUS_DEGRADED, "backend slow")
            await p.set_status(api.PLUGIN_STATUS_NOT_READY, "backend down")
            assert await status() == (api.PLUGIN_STATUS_NOT_READY, "backend down")

            # nrid restarts: the plugin registers again, NOT_READY still.
            first = p.registered.instance_id
            await rt.close()
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(None, nrid.stop)
            await wait_for(lambda: p.registered is None, "the registration to end")
            await loop.run_in_executor(None, nrid.start)
            reg = await p.wait_registered(WAIT)
            assert reg.instance_id != first
            rt = Runtime(nrid)
            assert await status() == (api.PLUGIN_STATUS_NOT_READY, "backend down")
        finally:
            await ps.stop_all()
            await rt.close()

    asyncio.run(scenario())


def test_status_set_during_the_first_synchronize_reaches_nrid(nrid):
    async def scenario():
        ps = Plugins(nrid)
        rt = Runtime(nrid)

        seen = []

        async def ready(req, ctx):
            # Before Registered: sent at once (nrid takes it from Configure
            # on), and again once registered.
            await ctx.plugin.set_status(api.PLUGIN_STATUS_READY, "cache loaded")
            seen.extend((i.state, i.status, i.status_reason) for i in await rt.list_plugins())

        try:
            await ps.start_registered(
                "10", "warm", events=("RunPodSandbox",), behave={"Synchronize": ready}, status=api.PLUGIN_STATUS_NOT_READY
            )

            async def shown():
                info = (await rt.list_plugins())[0]
                return (info.status, info.status_reason) == (api.PLUGIN_STATUS_READY, "cache loaded")

            # In effect while the plugin was still synchronizing.
            assert seen == [(adm.PLUGIN_STATE_SYNCHRONIZING, api.PLUGIN_STATUS_READY, "cache loaded")]
            deadline = asyncio.get_running_loop().time() + WAIT
            while not await shown():
                assert asyncio.get_running_loop().time() < deadline, "the status never reached nrid"
                await asyncio.sleep(0.01)
        finally:
            await ps.stop_all()
            await rt.close()

    asyncio.run(scenario())


@pytest.mark.parametrize("with_resync", [True, False])
def test_request_resync_brings_a_synchronize_with_the_epoch(nrid, with_resync):
    async def scenario():
        ps = Plugins(nrid)
        rt = Runtime(nrid)
        try:
            await rt.attach(pods=[pod("p0")])
            p = await ps.start_registered("10", "rs", events=("RunPodSandbox",), with_resync=with_resync)
            epoch = await p.request_resync("lost my cache")
            assert epoch >= 2
            method = "Resync" if with_resync else "Synchronize"
            rec = ps.recorders["10-rs"]
            req = await wait_for(
                lambda: next((r for r in rec.requests.get(method, []) if r.epoch == epoch), None), "the requested resync"
            )
            assert req.reason == api.SYNC_REASON_PLUGIN_REQUESTED
            assert [x.id for x in req.pods] == ["p0"]
            info = (await rt.list_plugins())[0]
            assert info.counters.requested_resyncs == 1
        finally:
            await ps.stop_all()
            await rt.close()

    asyncio.run(scenario())
