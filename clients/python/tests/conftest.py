import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from harness import Nrid, nrid_binary  # noqa: E402


@pytest.fixture(scope="session")
def nrid_bin():
    return nrid_binary()


@pytest.fixture
def nrid(nrid_bin, request):
    """A started nrid with the default configuration (the test runs as root,
    the socket owner, who may do everything); a test marked
    ``@pytest.mark.nrid_config("...")`` gets that TOML instead."""
    marker = request.node.get_closest_marker("nrid_config")
    n = Nrid(nrid_bin, marker.args[0] if marker else "")
    try:
        yield n.start()
    finally:
        failed = getattr(request.node, "rep_call", None)
        if failed is not None and failed.failed:
            sys.stderr.write("nrid log:\n" + n.log())
        n.cleanup()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


def pytest_configure(config):
    config.addinivalue_line("markers", "nrid_config(toml): start nrid with this configuration")
