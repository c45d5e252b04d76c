"""Registration: Configure, Synchronize, Registered, the endpoint, instance ids."""

import asyncio
import os
import stat

import grpc
import pytest

import nri_grpc
from harness import WAIT, Plugins, Runtime, calls, ctr, pod, wait_for
from nri_grpc import api
from nri_grpc.gen.nri.v1beta1 import plugin_service_pb2_grpc as ps_grpc


def test_registers_and_reports_the_registration(nrid):
    async def scenario():
        ps = Plugins(nrid)
        try:
            p = await ps.start_registered("10", "reg", events=("CreateContainer", "StopContainer"), plugin_version="1.2.3")
            reg = p.registered
            assert reg.instance_id and reg.instance_id == p.instance_id
            assert reg.identity == f"uid:{os.geteuid()}"
            assert reg.events == nri_grpc.event_mask(api.EVENT_CREATE_CONTAINER, api.EVENT_STOP_CONTAINER)
            # Configure came first, with the same instance id, then one page of
            # (empty) state at epoch 1.
            assert calls(ps.log) == ["10-reg:Configure", "10-reg:Synchronize"]
            cfg = ps.recorders["10-reg"].requests["Configure"][0]
            assert cfg.instance_id == reg.instance_id
            assert cfg.request_timeout > 0
            sync = ps.recorders["10-reg"].requests["Synchronize"][0]
            assert sync.epoch == 1 and sync.reason in (api.SYNC_REASON_REGISTRATION, api.SYNC_REASON_UNSPECIFIED)
            # The endpoint is the default NN-name.sock, owner-only.
            path = os.path.join(nrid.plugins, "10-reg.sock")
            assert p.endpoint == "unix://" + path
            st = os.lstat(path)
            assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
            assert p.server_uid == os.geteuid()
            rt = Runtime(nrid)
            infos = await rt.list_plugins()
            assert [(i.plugin.index, i.plugin.name, i.instance_id, i.plugin_version) for i in infos] == [
                ("10", "reg", reg.instance_id, "1.2.3")
            ]
            await rt.close()
        finally:
            await ps.stop_all()
        # Stopping removes the endpoint and unregisters.
        assert not os.path.exists(os.path.join(nrid.plugins, "10-reg.sock"))

    asyncio.run(scenario())


def test_refuses_calls_for_another_instance(nrid):
    async def scenario():
        ps = Plugins(nrid)
        try:
            p = await ps.start_registered("10", "inst", events=("RunPodSandbox",))
            async with grpc.aio.insecure_channel(p.endpoint) as ch:
                stub = ps_grpc.PluginServiceStub(ch)
                req = api.RunPodSandboxRequest(pod=pod())
                # Wrong instance: UNAVAILABLE, the handler is not called.
                with pytest.raises(grpc.aio.AioRpcError) as e:
                    await stub.RunPodSandbox(req, metadata=(("nri-instance-id", "stale"),), timeout=WAIT)
                assert e.value.code() == grpc.StatusCode.UNAVAILABLE
                with pytest.raises(grpc.aio.AioRpcError) as e:
                    await stub.RunPodSandbox(req, timeout=WAIT)
                assert e.value.code() == grpc.StatusCode.UNAVAILABLE
                # Configure without a pending registration: UNAVAILABLE.
                with pytest.raises(grpc.aio.AioRpcError) as e:
                    await stub.Configure(api.ConfigureRequest(instance_id="x"), timeout=WAIT)
                assert e.value.code() == grpc.StatusCode.UNAVAILABLE
                # The current instance id gets through.
                await stub.RunPodSandbox(req, metadata=(("nri-instance-id", p.instance_id),), timeout=WAIT)
            assert calls(ps.log, "RunPodSandbox") == ["10-inst:RunPodSandbox"]
            assert p.instance_id == p.registered.instance_id
        finally:
            await ps.stop_all()

    asyncio.run(scenario())


def test_a_refusal_retrying_cannot_fix_ends_run(nrid):
    async def scenario():
        # Invalid names and indices are caught by the SDK already.
        with pytest.raises(ValueError):
            nri_grpc.Plugin(type("H", (), {"run_pod_sandbox": lambda s, r, c: None})(), name="x", index="7")
        with pytest.raises(ValueError):
            nri_grpc.Plugin(type("H", (), {})(), name="x", index="10")
        # An endpoint outside the plugin socket directory: refused
        # (INVALID_ENDPOINT), run raises instead of retrying.
        ps = Plugins(nrid)
        outside = os.path.join(nrid.dir, "elsewhere.sock")
        p = ps.start("10", "bad", events=("RunPodSandbox",), endpoint=outside)
        with pytest.raises(nri_grpc.RegistrationRefused) as e:
            await asyncio.wait_for(ps.tasks["10-bad"], WAIT)
        assert e.value.reason == "REGISTRATION_REFUSAL_INVALID_ENDPOINT"
        # PROTOCOL.md section 12 says INVALID_ARGUMENT; nrid answers
        # PERMISSION_DENIED for an endpoint outside the directory. The SDK
        # branches on the ErrorInfo reason, so either stops it.
        assert e.value.code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.PERMISSION_DENIED)
        assert not os.path.exists(outside)
        assert p.registered is None

    asyncio.run(scenario())
