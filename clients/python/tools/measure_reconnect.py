#!/usr/bin/env python3
"""Measures how long a plugin takes to register again after nrid restarts.

Starts nrid and a plugin program (any SDK; it is given its name, index,
endpoint and nrid's address by the NRI_GRPC_* environment), then, ROUNDS
times: kills nrid (SIGKILL: its socket file stays), keeps it down DOWN
seconds, starts it again on the same socket, and takes from nrid's own log
the time between "serving" and "plugin registered". Prints every latency and
the median and maximum. A measurement, not a test: nothing is asserted.

    measure_reconnect.py --nrid .tmp/clients/nrid -- python3 my_plugin.py
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

TIME = re.compile(r"^time=(\S+)")


def stamp(line: str) -> float:
    m = TIME.match(line)
    if not m:
        raise ValueError(f"no time in {line!r}")
    return datetime.datetime.fromisoformat(m.group(1).replace("Z", "+00:00")).timestamp()


def wait_line(path: str, since: int, needle: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(path, "rb") as f:
            f.seek(since)
            for line in f.read().decode(errors="replace").splitlines():
                if needle in line:
                    return line
        time.sleep(0.01)
    raise SystemExit(f"no {needle!r} in nrid's log {path} within {timeout}s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nrid", required=True, help="the nrid binary")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--down", type=float, default=3.0, help="seconds nrid stays down")
    ap.add_argument("plugin", nargs=argparse.REMAINDER, help="-- the plugin command")
    a = ap.parse_args()
    cmd = a.plugin[1:] if a.plugin[:1] == ["--"] else a.plugin
    if not cmd:
        ap.error("no plugin command")
    d = tempfile.mkdtemp(prefix="nri-m-", dir="/tmp")
    os.chmod(d, 0o755)
    sock, plugins, log = os.path.join(d, "nrid.sock"), os.path.join(d, "plugins"), os.path.join(d, "nrid.log")
    args = [os.path.abspath(a.nrid), "--socket", sock, "--plugin-socket-dir", plugins]
    nrid = plug = None

    def start() -> tuple[subprocess.Popen, int]:
        since = os.path.getsize(log) if os.path.exists(log) else 0
        with open(log, "ab") as f:
            p = subprocess.Popen(args, stdout=f, stderr=f, stdin=subprocess.DEVNULL)
        return p, since

    try:
        nrid, since = start()
        wait_line(log, since, "msg=serving")
        env = dict(os.environ)
        env.update(
            NRI_GRPC_SERVER_ADDRESS="unix://" + sock,
            NRI_GRPC_PLUGIN_NAME="measured",
            NRI_GRPC_PLUGIN_IDX="10",
            NRI_GRPC_PLUGIN_ENDPOINT=os.path.join(plugins, "10-measured.sock"),
        )
        plug = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_line(log, since, "msg=\"plugin registered\"")
        lat = []
        for _ in range(a.rounds):
            nrid.kill()
            nrid.wait()
            time.sleep(a.down)
            nrid, since = start()
            serving = stamp(wait_line(log, since, "msg=serving"))
            registered = stamp(wait_line(log, since, "msg=\"plugin registered\""))
            lat.append((registered - serving) * 1000)
            print(f"{lat[-1]:.0f} ms", flush=True)
        print(f"n={len(lat)} median={statistics.median(lat):.0f} ms max={max(lat):.0f} ms")
    finally:
        for p in (plug, nrid):
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
        shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
