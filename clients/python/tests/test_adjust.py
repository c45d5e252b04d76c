"""The adjustment builders and event helpers, without a server."""

import pytest

import nri_grpc
from nri_grpc import Adjustment, Update, api, evict, is_marked_for_removal, mark_for_removal


def test_removal_markers():
    assert mark_for_removal("FOO") == "-FOO"
    assert is_marked_for_removal("-FOO") == ("FOO", True)
    assert is_marked_for_removal("FOO") == ("FOO", False)
    a = (
        Adjustment()
        .remove_annotation("a")
        .remove_mount("/data")
        .remove_env("E")
        .remove_device("/dev/x")
        .remove_namespace("network")
        .remove_linux_sysctl("net.ipv4.ip_forward")
        .remove_linux_net_device("eth1")
        .remove_linux_rdt()
        .update_args(["sh", "-c", "true"])
    ).proto
    assert dict(a.annotations) == {"-a": ""}
    assert [m.destination for m in a.mounts] == ["-/data"]
    assert [(kv.key, kv.value) for kv in a.env] == [("-E", "")]
    assert [d.path for d in a.linux.devices] == ["-/dev/x"]
    assert [n.type for n in a.linux.namespaces] == ["-network"]
    assert dict(a.linux.sysctl) == {"-net.ipv4.ip_forward": ""}
    assert list(a.linux.net_devices) == ["-eth1"]
    assert a.linux.rdt.remove
    assert list(a.args) == ["", "sh", "-c", "true"]


def test_wrappers_are_set_even_to_zero():
    a = Adjustment().set_linux_memory_limit(0).set_linux_cpu_shares(0).set_linux_oom_score_adj(0).proto
    assert a.linux.resources.memory.HasField("limit") and a.linux.resources.memory.limit.value == 0
    assert a.linux.resources.cpu.HasField("shares")
    assert a.linux.HasField("oom_score_adj")
    assert not a.linux.resources.memory.HasField("swap")


def test_update_and_response():
    u = Update("c1").set_linux_cpuset_cpus("0-3").set_linux_pid_limits(100).set_ignore_failure()
    rsp = Adjustment().add_env("A", "1").response(update=[u], evict=[evict("c2", "why")])
    assert rsp.update[0].container_id == "c1" and rsp.update[0].ignore_failure
    assert rsp.update[0].linux.resources.cpu.cpus == "0-3"
    assert rsp.update[0].linux.resources.pids.limit == 100
    assert (rsp.evict[0].container_id, rsp.evict[0].reason) == ("c2", "why")


def test_events_and_names():
    assert nri_grpc.event_mask(api.EVENT_RUN_POD_SANDBOX, api.EVENT_VALIDATE_CONTAINER_ADJUSTMENT) == 0x2001
    assert nri_grpc.mask_events(0x9) == [api.EVENT_RUN_POD_SANDBOX, api.EVENT_CREATE_CONTAINER]
    assert nri_grpc.parse_events(["all"]) == nri_grpc.events.ALL_EVENTS
    assert nri_grpc.parse_events(["CreateContainer,stop_container"]) == 0x208
    with pytest.raises(ValueError):
        nri_grpc.parse_events(["nope"])
    assert nri_grpc.parse_name("10-foo") == ("10", "foo")
    assert nri_grpc.parse_name("1-foo") is None
    with pytest.raises(ValueError):
        nri_grpc.check_name("a b")
