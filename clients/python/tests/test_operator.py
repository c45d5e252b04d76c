"""What an operator sees of a plugin: grpcurl lists, describes and
health-checks it on its socket (reflection and health, as the Go SDK serves
them), and nrid shows the SDK version from the package metadata."""

import asyncio
import importlib.metadata
import json
import os
import re
import shutil
from typing import Optional

import grpc
import pytest
from google.protobuf import descriptor_pb2
from grpc_reflection.v1alpha import reflection_pb2 as rpb
from grpc_reflection.v1alpha import reflection_pb2_grpc as rpb_grpc

import nri_grpc
from harness import ROOT, WAIT, Plugins, Runtime, wait_for
from nri_grpc.gen.nri.v1beta1 import plugin_service_pb2 as ps


def grpcurl_binary() -> str:
    """$GRPCURL (make python-test sets it to .tmp/bin/grpcurl), else
    .tmp/bin/grpcurl or grpcurl on PATH; skips the test when none exists.
    A $GRPCURL that does not exist fails instead: make built it."""
    path = os.environ.get("GRPCURL")
    if path:
        assert os.access(path, os.X_OK), f"GRPCURL={path} is not an executable"
        return path
    for p in (os.path.join(ROOT, ".tmp", "bin", "grpcurl"), shutil.which("grpcurl")):
        if p and os.access(p, os.X_OK):
            return p
    pytest.skip("grpcurl not found: run `make grpcurl` (make python-test builds it) or set GRPCURL")


async def grpcurl(plugin: nri_grpc.Plugin, *args: str, data: Optional[dict] = None) -> str:
    """Runs grpcurl against the plugin's socket (as an operator would), with
    the request data as JSON, and returns its output; fails on a non-zero
    exit. Runs as a subprocess while the plugin serves on this event loop."""
    sock = plugin.endpoint[len("unix://") :]
    flags = ["-d", json.dumps(data)] if data is not None else []
    proc = await asyncio.create_subprocess_exec(
        grpcurl_binary(),
        "-plaintext",
        "-max-time",
        str(int(WAIT)),
        *flags,
        "-unix",
        sock,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), WAIT + 5)
    assert proc.returncode == 0, f"grpcurl {' '.join(args)}: exit {proc.returncode}: {err.decode()}"
    return out.decode()


def comment_above(proto: str, line: str) -> str:
    """The last comment line above `line` in proto/nri/v1beta1/<proto>."""
    with open(os.path.join(ROOT, "proto", "nri", "v1beta1", proto)) as f:
        lines = f.read().splitlines()
    i = next(n for n, text in enumerate(lines) if text.strip().startswith(line))
    assert lines[i - 1].strip().startswith("//"), f"no comment above {line!r} in {proto}"
    return lines[i - 1].strip()


def test_grpcurl_lists_plugin_health_and_reflection(nrid):
    async def scenario():
        ps_ = Plugins(nrid)
        try:
            p = await ps_.start_registered("10", "list", events=("RunPodSandbox",))
            services = (await grpcurl(p, "list")).split()
            assert sorted(services) == [
                "grpc.health.v1.Health",
                "grpc.reflection.v1.ServerReflection",
                "grpc.reflection.v1alpha.ServerReflection",
                "nri.v1beta1.PluginService",
            ]
            methods = (await grpcurl(p, "list", "nri.v1beta1.PluginService")).split()
            want = ["nri.v1beta1.PluginService." + m.name for m in ps.DESCRIPTOR.services_by_name["PluginService"].methods]
            assert sorted(methods) == sorted(want)
        finally:
            await ps_.stop_all()

    asyncio.run(scenario())


def test_grpcurl_describes_plugin_service_with_comments(nrid):
    async def scenario():
        ps_ = Plugins(nrid)
        try:
            p = await ps_.start_registered("10", "describe", events=("RunPodSandbox",))
            out = await grpcurl(p, "describe", "nri.v1beta1.PluginService")
            assert "nri.v1beta1.PluginService is a service:" in out
            assert "service PluginService {" in out
            # The comments come from the descriptor set with source info
            # (the generated code has none).
            assert comment_above("plugin_service.proto", "service PluginService {") in out
            assert comment_above("plugin_service.proto", "rpc Configure(") in out
            assert re.search(r"rpc Configure \( \.nri\.v1beta1\.ConfigureRequest \) returns \( \.nri\.v1beta1\.ConfigureResponse \)", out)
            # A message in an imported file resolves too (types.proto).
            out = await grpcurl(p, "describe", "nri.v1beta1.PodSandbox")
            assert "message PodSandbox {" in out
            assert comment_above("types.proto", "message PodSandbox {") in out
            out = await grpcurl(p, "describe", "grpc.health.v1.Health")
            assert "rpc Check ( .grpc.health.v1.HealthCheckRequest )" in out
        finally:
            await ps_.stop_all()

    asyncio.run(scenario())


def test_reflection_v1alpha_and_unknown_symbols(nrid):
    """grpcurl speaks v1; older clients v1alpha: the same answers. An unknown
    symbol is a NOT_FOUND error response, and the stream goes on."""

    async def scenario():
        ps_ = Plugins(nrid)
        try:
            p = await ps_.start_registered("10", "alpha", events=("RunPodSandbox",))
            async with grpc.aio.insecure_channel(p.endpoint) as ch:
                call = rpb_grpc.ServerReflectionStub(ch).ServerReflectionInfo(timeout=WAIT)
                await call.write(rpb.ServerReflectionRequest(list_services=""))
                rsp = await call.read()
                assert "nri.v1beta1.PluginService" in [s.name for s in rsp.list_services_response.service]
                await call.write(rpb.ServerReflectionRequest(file_containing_symbol="nri.v1beta1.NoSuchThing"))
                rsp = await call.read()
                assert rsp.error_response.error_code == grpc.StatusCode.NOT_FOUND.value[0]
                await call.write(rpb.ServerReflectionRequest(file_containing_symbol="nri.v1beta1.PluginService.Configure"))
                rsp = await call.read()
                names = [
                    descriptor_pb2.FileDescriptorProto.FromString(b).name
                    for b in rsp.file_descriptor_response.file_descriptor_proto
                ]
                # The file first, then its imports.
                assert names[0] == "nri/v1beta1/plugin_service.proto"
                assert "nri/v1beta1/types.proto" in names
                await call.done_writing()
                assert await call.read() is grpc.aio.EOF
        finally:
            await ps_.stop_all()

    asyncio.run(scenario())


def test_grpcurl_health_check_follows_the_registration(nrid):
    async def scenario():
        ps_ = Plugins(nrid)
        try:
            p = await ps_.start_registered("10", "health", events=("RunPodSandbox",))
            for service in ("", "nri.v1beta1.PluginService"):
                out = await grpcurl(p, "grpc.health.v1.Health/Check", data={"service": service})
                assert json.loads(out) == {"status": "SERVING"}, (service, out)
            # nrid stops: the registration ends, and health says so by the
            # time the plugin reports it unregistered.
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(None, nrid.stop)
            await wait_for(lambda: p.registered is None, "the plugin to notice nrid stopped")
            out = await grpcurl(p, "grpc.health.v1.Health/Check")
            assert json.loads(out) == {"status": "NOT_SERVING"}
            # And SERVING again once registered with the new nrid.
            await loop.run_in_executor(None, nrid.start)
            await p.wait_registered(WAIT)
            out = await grpcurl(p, "grpc.health.v1.Health/Check")
            assert json.loads(out) == {"status": "SERVING"}
        finally:
            await ps_.stop_all()

    asyncio.run(scenario())


def test_registers_the_sdk_version_from_the_package_metadata(nrid):
    """The version is written once (nri_grpc/_version.py): the installed
    package's metadata, nri_grpc.__version__ and what nrid shows agree, and
    the protocol named is the generated code's proto package."""
    meta = importlib.metadata.version("nri-grpc")
    assert nri_grpc.__version__ == meta
    assert "nri." + nri_grpc.PROTOCOL == ps.DESCRIPTOR.package
    assert nri_grpc.NRI_VERSION == f"python-sdk {nri_grpc.PROTOCOL} nri-grpc/{meta}"

    async def scenario():
        ps_ = Plugins(nrid)
        rt = Runtime(nrid)
        try:
            await ps_.start_registered("10", "ver", events=("RunPodSandbox",), plugin_version="2.3.4")
            infos = await rt.list_plugins()
            assert [(i.nri_version, i.plugin_version) for i in infos] == [(f"python-sdk v1beta1 nri-grpc/{meta}", "2.3.4")]
        finally:
            await rt.close()
            await ps_.stop_all()

    asyncio.run(scenario())
