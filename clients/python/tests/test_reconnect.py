"""Registering again as soon as nrid is back, however long it was away."""

import asyncio
import logging
import os

import pytest
from harness import WAIT, Plugins, wait_for

#: A backoff no test waits out: a plugin that registers again within WAIT
#: did not sleep it.
HOURLY = (3600.0, 3600.0)


class Records(logging.Handler):
    """The messages of a logger's records."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())

    def find(self, *parts: str, since: int = 0) -> str:
        """The first message from index since on that contains every part."""
        return next((m for m in self.messages[since:] if all(p in m for p in parts)), "")


def logger(name: str) -> tuple[logging.Logger, Records]:
    log = logging.getLogger("nri_grpc.test." + name)
    log.setLevel(logging.DEBUG)
    rec = Records()
    log.addHandler(rec)
    return log, rec


def test_registers_again_as_soon_as_a_killed_nrid_is_back(nrid):
    """nrid is killed (its socket file stays, refusing connections) and
    started again on the same socket, three times: the plugin polls the
    socket instead of sleeping its (hour-long) backoff and is back within
    the test's bound."""

    async def scenario():
        ps = Plugins(nrid)
        log, rec = logger("back")
        try:
            p = await ps.start_registered("10", "back", backoff=HOURLY, logger=log, events=("RunPodSandbox",))
            loop = asyncio.get_running_loop()
            for _ in range(3):
                first, since = p.registered.instance_id, len(rec.messages)
                await loop.run_in_executor(None, nrid.kill)
                await wait_for(lambda: p.registered is None, "the registration to end")
                # Right after a kill, the listening socket may outlive the
                # broken connection for a moment: the quick first retry
                # then fails, and the plugin waits.
                await wait_for(lambda: rec.find("when nrid accepts connections", since=since), "the plugin to wait for nrid")
                assert os.path.exists(nrid.sock)
                await loop.run_in_executor(None, nrid.start)
                reg = await p.wait_registered(WAIT)
                assert reg.instance_id != first
        finally:
            await ps.stop_all()

    asyncio.run(scenario())


def test_registers_when_nrid_appears_and_stops_while_waiting(nrid):
    """A plugin started while nrid is down waits for it without backoff and
    registers when it listens; stop ends run while it waits."""

    async def scenario():
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, nrid.kill)
        ps = Plugins(nrid)
        log, rec = logger("early")
        try:
            p = ps.start("10", "early", backoff=HOURLY, logger=log, events=("RunPodSandbox",))
            await wait_for(lambda: rec.find("failed", "retrying when nrid accepts connections"), "the first failure")
            await loop.run_in_executor(None, nrid.start)
            await p.wait_registered(WAIT)
            since = len(rec.messages)
            await loop.run_in_executor(None, nrid.kill)
            await wait_for(lambda: p.registered is None, "the registration to end")
            await wait_for(lambda: rec.find("when nrid accepts connections", since=since), "the plugin to wait for nrid")
            p.stop()
            assert (await asyncio.wait_for(ps.tasks["10-early"], WAIT)).name == "STOPPED"
        finally:
            await ps.stop_all()

    asyncio.run(scenario())


@pytest.mark.nrid_config("[server]\nregister_rate = 0.001\nregister_burst = 1\n")
def test_a_refusal_by_a_serving_nrid_is_retried_after_the_backoff(nrid):
    """nrid's rate limit refuses the second registration of the identity
    (RESOURCE_EXHAUSTED): nrid serves, so the plugin backs off instead of
    retrying as soon as the socket accepts connections."""

    async def scenario():
        ps = Plugins(nrid)
        log, rec = logger("limited")
        try:
            await ps.start_registered("10", "first", events=("RunPodSandbox",))
            ps.start("11", "limited", backoff=HOURLY, logger=log, events=("RunPodSandbox",))
            msg = await wait_for(lambda: rec.find("RESOURCE_EXHAUSTED", "retrying in"), "the refusal")
            delay = float(msg.split("retrying in ")[1].split("s")[0])
            assert delay >= 1800, msg
        finally:
            await ps.stop_all()

    asyncio.run(scenario())
