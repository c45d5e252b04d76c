"""A plugin program for the failure tests: it adjusts containers, vetoes
those annotated "test.nri/veto", and hangs on "test.nri/hang" (until nrid's
deadline cancels the call). Usage: failing.py SERVER_SOCKET SOCKET_DIR IDX NAME [fail]"""

import asyncio
import logging
import sys

import grpc

import nri_grpc
from nri_grpc import Adjustment, StatusError, api


class Failing:
    async def create_container(self, req, ctx):
        if "test.nri/veto" in req.container.annotations:
            raise StatusError(grpc.StatusCode.PERMISSION_DENIED, "containers annotated test.nri/veto are not allowed")
        if "test.nri/hang" in req.container.annotations:
            await asyncio.sleep(3600)
        return Adjustment().add_env("FAILING_PLUGIN", "was-here").response()

    async def start_container(self, req, ctx):
        return None


def main() -> int:
    server, socket_dir, idx, name = sys.argv[1:5]
    policy = api.FailurePolicy(fail_request=len(sys.argv) > 5 and sys.argv[5] == "fail")
    logging.basicConfig(level=logging.DEBUG, format="plugin %(levelname)s %(message)s")
    p = nri_grpc.Plugin(
        Failing(),
        name=name,
        index=idx,
        server_address=server,
        socket_dir=socket_dir,
        failure_policy=policy,
        backoff=(0.05, 0.5),
    )
    nri_grpc.run(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
