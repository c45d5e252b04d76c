"""`nrictl new --lang python` (cmd/nrictl/templates/python): the generated
project's tests pass with this SDK, the plugin against a real nrid among
them."""

import os
import subprocess
import sys
import tempfile

from harness import ROOT


def nrictl_binary() -> str:
    """The nrictl binary: $NRICTL (make python-test builds it), else built here."""
    path = os.environ.get("NRICTL")
    if path:
        return path
    out = os.path.join(tempfile.gettempdir(), f"nri-pytest-nrictl-{os.getuid()}")
    subprocess.run(["go", "build", "-o", out, "./cmd/nrictl"], cwd=ROOT, check=True)
    return out


def test_new_python(nrid_bin, tmp_path):
    d = tmp_path / "hello"
    subprocess.run(
        [nrictl_binary(), "new", "--lang", "python", "--name", "hello", "--index", "10", "--sdk", ROOT, str(d)],
        check=True,
    )
    assert f"nri-grpc @ file://{ROOT}/clients/python" in (d / "pyproject.toml").read_text()
    # The venv has this SDK installed (editable): the generated module and
    # its tests run with it, as after `pip install -e '.[test]'`.
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider"],
        cwd=d,
        env={**os.environ, "NRID": nrid_bin},
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 passed" in r.stdout and "skipped" not in r.stdout, r.stdout
