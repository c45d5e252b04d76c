"""Events: order, subscriptions, adjustments, updates, vetoes and validation."""

import asyncio

import grpc
import pytest

import nri_grpc
from harness import WAIT, Plugins, Runtime, calls, ctr, error_info, pod
from nri_grpc import Adjustment, StatusError, Update, api, evict
from nri_grpc.gen.nri.v1beta1 import adaptation_service_pb2 as ad

POD_EVENTS = ("RunPodSandbox", "StopPodSandbox", "RemovePodSandbox", "UpdatePodSandbox", "PostUpdatePodSandbox")
CTR_EVENTS = (
    "CreateContainer",
    "PostCreateContainer",
    "StartContainer",
    "PostStartContainer",
    "UpdateContainer",
    "PostUpdateContainer",
    "StopContainer",
    "RemoveContainer",
)


async def lifecycle(rt: Runtime, p, c) -> None:
    """Drives a whole pod and container lifecycle through AdaptationService."""
    a = rt.adapt
    await a.RunPodSandbox(ad.AdaptationServiceRunPodSandboxRequest(pod=p), timeout=WAIT)
    await a.CreateContainer(ad.AdaptationServiceCreateContainerRequest(pod=p, container=c), timeout=WAIT)
    await a.PostCreateContainer(ad.AdaptationServicePostCreateContainerRequest(pod=p, container=c), timeout=WAIT)
    await a.StartContainer(ad.AdaptationServiceStartContainerRequest(pod=p, container=c), timeout=WAIT)
    await a.PostStartContainer(ad.AdaptationServicePostStartContainerRequest(pod=p, container=c), timeout=WAIT)
    await a.UpdatePodSandbox(ad.AdaptationServiceUpdatePodSandboxRequest(pod=p), timeout=WAIT)
    await a.PostUpdatePodSandbox(ad.AdaptationServicePostUpdatePodSandboxRequest(pod=p), timeout=WAIT)
    await a.UpdateContainer(
        ad.AdaptationServiceUpdateContainerRequest(pod=p, container=c, linux_resources=api.LinuxResources()),
        timeout=WAIT,
    )
    await a.PostUpdateContainer(ad.AdaptationServicePostUpdateContainerRequest(pod=p, container=c), timeout=WAIT)
    await a.StopContainer(ad.AdaptationServiceStopContainerRequest(pod=p, container=c), timeout=WAIT)
    await a.RemoveContainer(ad.AdaptationServiceRemoveContainerRequest(pod=p, container=c), timeout=WAIT)
    await a.StopPodSandbox(ad.AdaptationServiceStopPodSandboxRequest(pod=p), timeout=WAIT)
    await a.RemovePodSandbox(ad.AdaptationServiceRemovePodSandboxRequest(pod=p), timeout=WAIT)


ORDER = [
    "RunPodSandbox",
    "CreateContainer",
    "PostCreateContainer",
    "StartContainer",
    "PostStartContainer",
    "UpdatePodSandbox",
    "PostUpdatePodSandbox",
    "UpdateContainer",
    "PostUpdateContainer",
    "StopContainer",
    "RemoveContainer",
    "StopPodSandbox",
    "RemovePodSandbox",
]


def test_events_in_order_across_plugins_and_subscriptions(nrid):
    async def scenario():
        ps = Plugins(nrid)
        rt = Runtime(nrid)
        try:
            # Started in reverse order: dispatch order is by index, then name.
            await ps.start_registered("20", "b", events=POD_EVENTS + CTR_EVENTS)
            await ps.start_registered("10", "a", events=POD_EVENTS + CTR_EVENTS)
            await ps.start_registered("10", "only-start", events=("StartContainer",))
            del ps.log[:]
            await lifecycle(rt, pod(), ctr())
            want = []
            for m in ORDER:
                want += [f"10-a:{m}"]
                if m == "StartContainer":
                    want += ["10-only-start:StartContainer"]
                want += [f"20-b:{m}"]
            assert ps.log == want
            # Requests carry what the runtime sent.
            req = ps.recorders["10-a"].requests["CreateContainer"][0]
            assert req.pod.id == "pod0" and req.container.id == "ctr0"
        finally:
            await ps.stop_all()
            await rt.close()

    asyncio.run(scenario())


def test_adjustments_merge_with_removal_markers(nrid):
    async def scenario():
        ps = Plugins(nrid)
        rt = Runtime(nrid)

        def first(req, ctx):
            return (
                Adjustment()
                .add_env("FROM_A", "1")
                .add_env("SHARED", "a")
                .add_annotation("a.example/set", "yes")
                .remove_annotation("runtime.example/drop")
                .add_rlimit("RLIMIT_NOFILE", 1024, 512)
                .set_linux_memory_limit(1 << 30)
                .response()
            )

        def second(req, ctx):
            # Sees the first plugin's changes; overrides SHARED with the
            # remove-then-add idiom and removes FROM_A.
            env = list(req.container.env)
            assert "SHARED=a" in env and "FROM_A=1" in env, env
            return Adjustment().remove_env("SHARED").add_env("SHARED", "b").remove_env("FROM_A").response()

        try:
            await ps.start_registered("10", "first", events=("CreateContainer",), behave={"CreateContainer": first})
            await ps.start_registered("20", "second", events=("CreateContainer",), behave={"CreateContainer": second})
            c = ctr(env=["KEEP=1"], annotations={"runtime.example/drop": "x"})
            rsp = await rt.adapt.CreateContainer(
                ad.AdaptationServiceCreateContainerRequest(pod=pod(), container=c), timeout=WAIT
            )
            env = {kv.key: kv.value for kv in rsp.adjust.env}
            assert env == {"SHARED": "b", "-FROM_A": ""}
            assert dict(rsp.adjust.annotations) == {"a.example/set": "yes", "-runtime.example/drop": ""}
            assert [(r.type, r.hard, r.soft) for r in rsp.adjust.rlimits] == [("RLIMIT_NOFILE", 1024, 512)]
            assert rsp.adjust.linux.resources.memory.limit.value == 1 << 30
        finally:
            await ps.stop_all()
            await rt.close()

    asyncio.run(scenario())


def test_conflicting_adjustments_fail_the_creation(nrid):
    async def scenario():
        ps = Plugins(nrid)
        rt = Runtime(nrid)
        set_env = {"CreateContainer": lambda req, ctx: Adjustment().add_env("X", "1").response()}
        try:
            await ps.start_registered("10", "a", events=("CreateContainer",), behave=set_env)
            await ps.start_registered("20", "b", events=("CreateContainer",), behave=set_env)
            with pytest.raises(grpc.aio.AioRpcError) as e:
                await rt.adapt.CreateContainer(
                    ad.AdaptationServiceCreateContainerRequest(pod=pod(), container=ctr()), timeout=WAIT
                )
            assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
            reason, md = error_info(e.value)
            assert reason == "DISPATCH_OUTCOME_CONFLICT"
            assert set(md["plugins"].split(",")) == {"10-a", "20-b"}
        finally:
            await ps.stop_all()
            await rt.close()

    asyncio.run(scenario())


def test_veto_stops_delivery_and_notification_errors_are_recorded(nrid):
    async def scenario():
        ps = Plugins(nrid)
        rt = Runtime(nrid)

        def veto(req, ctx):
            raise StatusError(grpc.StatusCode.INVALID_ARGUMENT, "annotation foo: not a number")

        def boom(req, ctx):
            raise RuntimeError("disk full")

        try:
            await ps.start_registered(
                "10", "veto", events=("CreateContainer", "PostStartContainer", "StartContainer"),
                behave={"CreateContainer": veto, "PostStartContainer": boom, "StartContainer": boom},
            )
            await ps.start_registered("20", "later", events=("CreateContainer", "PostStartContainer", "StartContainer"))
            p, c = pod(), ctr()
            # A StatusError passes its code through: a veto.
            with pytest.raises(grpc.aio.AioRpcError) as e:
                await rt.adapt.CreateContainer(ad.AdaptationServiceCreateContainerRequest(pod=p, container=c), timeout=WAIT)
            assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "annotation foo: not a number" in e.value.details()
            assert error_info(e.value) == ("DISPATCH_OUTCOME_VETOED", {"plugins": "10-veto"})
            # Any other exception is a FAILED_PRECONDITION veto.
            with pytest.raises(grpc.aio.AioRpcError) as e:
                await rt.adapt.StartContainer(ad.AdaptationServiceStartContainerRequest(pod=p, container=c), timeout=WAIT)
            assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
            assert "disk full" in e.value.details()
            # Later plugins were not called for the vetoed events...
            assert calls(ps.log, "CreateContainer", "StartContainer") == ["10-veto:CreateContainer", "10-veto:StartContainer"]
            # ...but a notification's error is recorded and delivery goes on.
            rsp = await rt.adapt.PostStartContainer(
                ad.AdaptationServicePostStartContainerRequest(pod=p, container=c), timeout=WAIT
            )
            assert [(e.plugin.index, e.plugin.name, e.code) for e in rsp.plugin_errors] == [
                ("10", "veto", grpc.StatusCode.FAILED_PRECONDITION.value[0])
            ]
            assert calls(ps.log, "PostStartContainer") == ["10-veto:PostStartContainer", "20-later:PostStartContainer"]
        finally:
            await ps.stop_all()
            await rt.close()

    asyncio.run(scenario())


def test_validator_sees_merged_adjustment_and_rejects(nrid):
    async def scenario():
        ps = Plugins(nrid)
        rt = Runtime(nrid)

        def validate(req, ctx):
            owners = req.owners.owners[req.container.id]
            env_owner = owners.compound[api.FIELD_ENV].owners.get("FORBIDDEN", "")
            if env_owner:
                raise ValueError(f"FORBIDDEN set by {env_owner}")
            return None

        def adjust(req, ctx):
            key = req.container.annotations.get("env", "OK")
            return Adjustment().add_env(key, "1").response()

        try:
            await ps.start_registered("10", "adj", events=("CreateContainer",), behave={"CreateContainer": adjust})
            await ps.start_registered(
                "90", "val", events=("ValidateContainerAdjustment",), behave={"ValidateContainerAdjustment": validate}
            )
            ok = await rt.adapt.CreateContainer(
                ad.AdaptationServiceCreateContainerRequest(pod=pod(), container=ctr("c1")), timeout=WAIT
            )
            assert [kv.key for kv in ok.adjust.env] == ["OK"]
            vreq = ps.recorders["90-val"].requests["ValidateContainerAdjustment"][0]
            assert [kv.key for kv in vreq.adjust.env] == ["OK"]
            assert {(p.index, p.name) for p in vreq.plugins} == {("10", "adj"), ("90", "val")}
            with pytest.raises(grpc.aio.AioRpcError) as e:
                await rt.adapt.CreateContainer(
                    ad.AdaptationServiceCreateContainerRequest(
                        pod=pod(), container=ctr("c2", annotations={"env": "FORBIDDEN"})
                    ),
                    timeout=WAIT,
                )
            assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
            assert "FORBIDDEN set by 10-adj" in e.value.details()
            assert error_info(e.value)[0] == "DISPATCH_OUTCOME_REJECTED"
        finally:
            await ps.stop_all()
            await rt.close()

    asyncio.run(scenario())


def test_updates_and_evictions(nrid):
    async def scenario():
        ps = Plugins(nrid)
        rt = Runtime(nrid)
        p = pod()
        other = ctr("other")
        try:
            await rt.attach([p], [other])
            plugin = await ps.start_registered(
                "10",
                "upd",
                events=("UpdateContainer", "StopContainer"),
                behave={
                    # Alter the target's update and update another container.
                    "UpdateContainer": lambda req, ctx: api.UpdateContainerResponse(
                        update=[
                            Update(req.container.id).set_linux_cpu_shares(512).proto,
                            Update("other").set_linux_memory_limit(1 << 20).set_ignore_failure().proto,
                        ]
                    ),
                    "StopContainer": lambda req, ctx: api.StopContainerResponse(
                        update=[Update("other").set_linux_cpuset_cpus("0-1").proto], evict=[evict("other", "make room")]
                    ),
                },
            )
            c = ctr("target")
            rsp = await rt.adapt.UpdateContainer(
                ad.AdaptationServiceUpdateContainerRequest(pod=p, container=c, linux_resources=api.LinuxResources()),
                timeout=WAIT,
            )
            assert rsp.linux_resources.cpu.shares.value == 512
            assert [(u.container_id, u.linux.resources.memory.limit.value, u.ignore_failure) for u in rsp.update] == [
                ("other", 1 << 20, True)
            ]
            rsp = await rt.adapt.StopContainer(ad.AdaptationServiceStopContainerRequest(pod=p, container=c), timeout=WAIT)
            assert [u.container_id for u in rsp.update] == ["other"]
            assert [(e.container_id, e.reason) for e in rsp.evict] == [("other", "make room")]

            # Unsolicited updates reach the attached runtime; what it could
            # not apply comes back with an OK status.
            failed, failed_ev = await plugin.update_containers([Update("other").set_linux_cpu_quota(5000)], [])
            assert list(failed) == [] and list(failed_ev) == []
            assert rt.applied[-1].plugin == "10-upd"
            assert rt.applied[-1].update[0].linux.resources.cpu.quota.value == 5000
            rt.fail_updates = True
            failed, failed_ev = await plugin.update_containers(
                [Update("other").set_linux_cpu_quota(6000)], [evict("other", "bye")]
            )
            assert [u.container_id for u in failed] == ["other"]
            assert [e.container_id for e in failed_ev] == ["other"]
        finally:
            await ps.stop_all()
            await rt.close()
        with pytest.raises(nri_grpc.NotRegistered):
            await plugin.update_containers([Update("other")])

    asyncio.run(scenario())
