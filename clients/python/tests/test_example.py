"""The example plugin (examples/env-ulimit-injector), started both ways: by
hand with flags, and launched by nrid with the NRI_GRPC_* environment and a
drop-in configuration."""

import asyncio
import json
import os
import signal
import stat
import subprocess
import sys

import grpc
import pytest

from harness import WAIT, Nrid, Runtime, ctr, error_info, pod
from nri_grpc.gen.nri.v1beta1 import adaptation_service_pb2 as ad

EXAMPLE = os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", "examples", "env-ulimit-injector", "env_ulimit_injector.py")
)


async def wait_registered(rt: Runtime, full: str) -> None:
    async def poll():
        while not any(f"{i.plugin.index}-{i.plugin.name}" == full for i in await rt.list_plugins()):
            await asyncio.sleep(0.02)

    await asyncio.wait_for(poll(), WAIT)


async def check_injection(rt: Runtime, defaults: dict) -> None:
    annotations = {
        "env.noderesource.dev/pod": json.dumps({"POD_WIDE": "1", "-HOME": ""}),
        "env.noderesource.dev/container.app": json.dumps({"APP_ONLY": "yes"}),
        "ulimits.noderesource.dev": json.dumps([{"type": "nofile", "soft": 1024, "hard": 4096}]),
    }
    p = pod(annotations=annotations)
    rsp = await rt.adapt.CreateContainer(
        ad.AdaptationServiceCreateContainerRequest(pod=p, container=ctr("c1", name="app")), timeout=WAIT
    )
    assert {kv.key: kv.value for kv in rsp.adjust.env} == {**defaults, "APP_ONLY": "yes"}
    assert [(r.type, r.soft, r.hard) for r in rsp.adjust.rlimits] == [("RLIMIT_NOFILE", 1024, 4096)]
    rsp = await rt.adapt.CreateContainer(
        ad.AdaptationServiceCreateContainerRequest(pod=p, container=ctr("c2", name="sidecar")), timeout=WAIT
    )
    assert {kv.key: kv.value for kv in rsp.adjust.env} == {**defaults, "POD_WIDE": "1", "-HOME": ""}
    bad = pod("p2", annotations={"ulimits.noderesource.dev": json.dumps([{"type": "nofile", "soft": 9, "hard": 1}])})
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await rt.adapt.CreateContainer(
            ad.AdaptationServiceCreateContainerRequest(pod=bad, container=ctr("c3", "p2")), timeout=WAIT
        )
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "soft limit 9 is above the hard limit 1" in e.value.details()
    assert error_info(e.value)[0] == "DISPATCH_OUTCOME_VETOED"


def test_example_started_by_hand(nrid):
    async def scenario():
        rt = Runtime(nrid)
        proc = subprocess.Popen(
            [sys.executable, EXAMPLE, "--server", "unix://" + nrid.sock,
             "--endpoint", os.path.join(nrid.plugins, "30-env-ulimit-injector.sock")],
            stdin=subprocess.DEVNULL,
        )
        try:
            await wait_registered(rt, "30-env-ulimit-injector")
            await check_injection(rt, {})
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(WAIT) == 0
            await rt.close()

    asyncio.run(scenario())


def test_example_launched_by_nrid(nrid_bin):
    n = Nrid(nrid_bin)
    launch = os.path.join(n.dir, "launch")
    conf = os.path.join(n.dir, "conf")
    os.makedirs(launch)
    os.makedirs(conf)
    exe = os.path.join(launch, "40-env-ulimit-injector")
    with open(exe, "w") as f:
        f.write(f"#!/bin/sh\nexec {sys.executable} {EXAMPLE} \"$@\"\n")
    os.chmod(exe, 0o755)
    with open(os.path.join(conf, "env-ulimit-injector.conf"), "w") as f:
        json.dump({"env": {"FROM_CONFIG": "on"}}, f)
    n.config = f'[launch]\nplugin_dir = "{launch}"\nconfig_dir = "{conf}"\n'
    try:
        n.start()

        async def scenario():
            rt = Runtime(n)
            try:
                # Launched as 40-env-ulimit-injector (the file name wins over
                # the --idx default), with the drop-in configuration.
                await wait_registered(rt, "40-env-ulimit-injector")
                await check_injection(rt, {"FROM_CONFIG": "on"})
            finally:
                await rt.close()

        asyncio.run(scenario())
        n.stop()
    except BaseException:
        sys.stderr.write("nrid log:\n" + n.log())
        raise
    finally:
        n.cleanup()
