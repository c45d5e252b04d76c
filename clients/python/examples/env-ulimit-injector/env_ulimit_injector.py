#!/usr/bin/env python3
"""env-ulimit-injector: sets environment variables and ulimits of containers
as pod annotations ask. An example plugin of the nri-grpc Python SDK.

Annotations (the most specific wins: ``KEY/container.<container name>``,
then ``KEY/pod``, then ``KEY``), values in JSON:

  env.noderesource.dev      {"NAME": "value", "-DROP": ""}   a "-NAME" key removes NAME
  ulimits.noderesource.dev  [{"type": "RLIMIT_NOFILE", "soft": 1024, "hard": 4096}]

A malformed annotation vetoes the container (INVALID_ARGUMENT). The drop-in
configuration (ConfigureRequest.config, for a plugin nrid launches) may hold
JSON defaults: {"env": {"NAME": "value"}}, applied to every container before
the annotations.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any, Optional

import grpc

import nri_grpc
from nri_grpc import Adjustment, StatusError, api

ENV_KEY = "env.noderesource.dev"
ULIMITS_KEY = "ulimits.noderesource.dev"
RLIMITS = {
    "AS", "CORE", "CPU", "DATA", "FSIZE", "LOCKS", "MEMLOCK", "MSGQUEUE",
    "NICE", "NOFILE", "NPROC", "RSS", "RTPRIO", "RTTIME", "SIGPENDING", "STACK",
}

log = logging.getLogger("env-ulimit-injector")


def effective_annotation(annotations: dict, key: str, container: str) -> Optional[str]:
    """The value of key for container: container-scoped, then pod-wide."""
    for k in (f"{key}/container.{container}", f"{key}/pod", key):
        if k in annotations:
            return annotations[k]
    return None


def parse_env(value: str) -> dict[str, str]:
    env = json.loads(value)
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise ValueError("must be a JSON object of strings")
    return env


def parse_ulimits(value: str) -> list[tuple[str, int, int]]:
    items = json.loads(value)
    if not isinstance(items, list):
        raise ValueError("must be a JSON list")
    out = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            raise ValueError(f"{item!r}: needs a type")
        typ = item["type"].upper().removeprefix("RLIMIT_")
        if typ not in RLIMITS:
            raise ValueError(f"unknown ulimit type {item['type']!r}")
        soft, hard = item.get("soft", 0), item.get("hard", 0)
        if not (isinstance(soft, int) and isinstance(hard, int)) or soft < 0 or hard < 0:
            raise ValueError(f"{item['type']}: soft and hard must be non-negative integers")
        if soft > hard:
            raise ValueError(f"{item['type']}: soft limit {soft} is above the hard limit {hard}")
        out.append(("RLIMIT_" + typ, hard, soft))
    return out


class Injector:
    def __init__(self) -> None:
        self.defaults: dict[str, str] = {}

    def configure(self, req: api.ConfigureRequest, ctx: nri_grpc.CallContext) -> None:
        if req.config.strip():
            self.defaults = parse_env(json.dumps(json.loads(req.config).get("env", {})))
        log.info("configured by %s %s on node %s; defaults %s", req.runtime_name, req.runtime_version, req.node_name, self.defaults)

    async def create_container(self, req: api.CreateContainerRequest, ctx: nri_grpc.CallContext) -> Any:
        name = req.container.name
        adjust = Adjustment()
        try:
            env = dict(self.defaults)
            value = effective_annotation(dict(req.pod.annotations), ENV_KEY, name)
            if value is not None:
                env.update(parse_env(value))
            for key, val in env.items():
                if key.startswith("-"):
                    adjust.remove_env(key[1:])
                else:
                    adjust.add_env(key, val)
            value = effective_annotation(dict(req.pod.annotations), ULIMITS_KEY, name)
            if value is not None:
                for typ, hard, soft in parse_ulimits(value):
                    adjust.add_rlimit(typ, hard, soft)
        except ValueError as e:  # json.JSONDecodeError is a ValueError
            raise StatusError(grpc.StatusCode.INVALID_ARGUMENT, f"container {name}: {e}") from None
        log.info("container %s/%s: %d env, %d ulimits", req.pod.name, name, len(adjust.proto.env), len(adjust.proto.rlimits))
        return adjust.response()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--name", default="env-ulimit-injector", help="plugin name (env NRI_GRPC_PLUGIN_NAME wins)")
    ap.add_argument("--idx", default="30", help="two-digit plugin index (env NRI_GRPC_PLUGIN_IDX wins)")
    ap.add_argument("--server", help="nrid's socket (default /var/run/nri/nri-grpc.sock)")
    ap.add_argument("--endpoint", help="socket to serve on (default /var/run/nri/plugins/NN-name.sock)")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    plugin = nri_grpc.Plugin(
        Injector(), name=args.name, index=args.idx, server_address=args.server, endpoint=args.endpoint, plugin_version="0.1.0"
    )
    try:
        nri_grpc.run(plugin)
    except nri_grpc.RegistrationRefused as e:
        log.error("%s", e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
