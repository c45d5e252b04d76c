"""A plugin that errors and then dies, under each failure policy."""

import asyncio
import signal

import grpc
import pytest

from harness import WAIT, Runtime, ctr, error_info, pod, spawn_plugin, wait_for
from nri_grpc.gen.nri.v1beta1 import adaptation_service_pb2 as ad


async def registered(rt: Runtime, full: str, other_than: str = "") -> str:
    """Waits until full is registered (with another instance id than
    other_than) and returns its instance id."""
    while True:
        for info in await rt.list_plugins():
            if f"{info.plugin.index}-{info.plugin.name}" == full and info.instance_id != other_than:
                return info.instance_id
        await asyncio.sleep(0.02)


async def unregistered(rt: Runtime) -> None:
    """Waits until no plugin is registered."""
    while await rt.list_plugins():
        await asyncio.sleep(0.02)


async def create(rt: Runtime, cid: str, **annotations: str):
    return await rt.adapt.CreateContainer(
        ad.AdaptationServiceCreateContainerRequest(pod=pod(), container=ctr(cid, annotations=annotations)), timeout=WAIT
    )


@pytest.mark.nrid_config(
    """
[[plugin]]
name = "30-failing"
required = true
"""
)
def test_required_plugin_vetoes_then_is_killed(nrid):
    async def scenario():
        rt = Runtime(nrid)
        proc = spawn_plugin("plugins/failing.py", nrid.sock, nrid.plugins, "30", "failing", "fail")
        try:
            await asyncio.wait_for(registered(rt, "30-failing"), WAIT)
            info = [i for i in await rt.list_plugins()][0]
            assert info.failure_policy.fail_request
            # Its verdict: the plugin's own code, reason VETOED.
            with pytest.raises(grpc.aio.AioRpcError) as e:
                await create(rt, "c1", **{"test.nri/veto": ""})
            assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED
            assert error_info(e.value) == ("DISPATCH_OUTCOME_VETOED", {"plugins": "30-failing"})
            ok = await create(rt, "c2")
            assert [(kv.key, kv.value) for kv in ok.adjust.env] == [("FAILING_PLUGIN", "was-here")]

            proc.send_signal(signal.SIGKILL)
            proc.wait(WAIT)
            # Killed: a required plugin's absence fails every creating event
            # with REQUIRED_UNAVAILABLE...
            with pytest.raises(grpc.aio.AioRpcError) as e:
                await create(rt, "c3")
            assert e.value.code() == grpc.StatusCode.UNAVAILABLE
            assert error_info(e.value) == ("DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE", {"plugins": "30-failing"})
            # ...once nrid noticed the lost connection it unregisters the plugin...
            await asyncio.wait_for(unregistered(rt), WAIT)
            with pytest.raises(grpc.aio.AioRpcError) as e:
                await rt.adapt.RunPodSandbox(ad.AdaptationServiceRunPodSandboxRequest(pod=pod("p2")), timeout=WAIT)
            assert error_info(e.value)[0] == "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE"
            # ...while notification events go on.
            await rt.adapt.PostStartContainer(
                ad.AdaptationServicePostStartContainerRequest(pod=pod(), container=ctr("c2")), timeout=WAIT
            )
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            await rt.close()

    asyncio.run(scenario())


@pytest.mark.nrid_config(
    """
[server]
request_timeout = "1s"
"""
)
def test_ignored_plugin_times_out_is_evicted_re_registers_then_is_killed(nrid):
    async def scenario():
        rt = Runtime(nrid)
        proc = spawn_plugin("plugins/failing.py", nrid.sock, nrid.plugins, "30", "failing")
        try:
            first = await asyncio.wait_for(registered(rt, "30-failing"), WAIT)
            # A verdict is a veto under any failure policy.
            with pytest.raises(grpc.aio.AioRpcError) as e:
                await create(rt, "c1", **{"test.nri/veto": ""})
            assert error_info(e.value)[0] == "DISPATCH_OUTCOME_VETOED"
            # A timeout is an availability failure: ignored (the creation
            # goes on without the plugin's adjustment), and the plugin is
            # disconnected (keep_connected is false)...
            rsp = await create(rt, "c2", **{"test.nri/hang": ""})
            assert list(rsp.adjust.env) == []
            # ...after which the SDK registers again, as a new instance.
            second = await asyncio.wait_for(registered(rt, "30-failing", other_than=first), WAIT)
            assert second != first
            ok = await create(rt, "c3")
            assert [kv.key for kv in ok.adjust.env] == ["FAILING_PLUGIN"]

            proc.send_signal(signal.SIGKILL)
            proc.wait(WAIT)
            # Killed: skipped, the creation succeeds without it.
            rsp = await create(rt, "c4")
            assert list(rsp.adjust.env) == []
            await asyncio.wait_for(unregistered(rt), WAIT)
            rsp = await create(rt, "c5")
            assert list(rsp.adjust.env) == []
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            await rt.close()

    asyncio.run(scenario())
