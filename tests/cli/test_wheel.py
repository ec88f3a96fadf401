"""The CI example of docs/CI.md on the runtime installed from its wheel, not from this checkout."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

from tests.conftest import REPO


def test_the_ci_checks_pass_on_a_wheel_install(tmp_path):
    out = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(REPO)],
                   check=True, capture_output=True, timeout=600)
    wheel = next(out.glob("agent_role_runtime-*.whl"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(subprocess.run([str(venv / "bin/python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               check=True, capture_output=True, text=True).stdout.strip())
    # The dependencies from this environment, the runtime itself only from the wheel.
    (site / "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin/python"), "install", "--quiet",
                    "--no-deps", str(wheel)], check=True, capture_output=True, timeout=600)
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    runtime = str(venv / "bin/runtime")
    where = subprocess.run([str(venv / "bin/python"), "-c", "import runtime; print(runtime.__file__)"], cwd=repo,
                           capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(site)), where  # not this checkout
    for args in (["lint"], ["doc-roles", "--check"], ["migrate", "--check"], ["schema", "--check"], ["--version"]):
        proc = subprocess.run([runtime, *args], cwd=repo, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, (args, proc.stdout[-2000:], proc.stderr[-2000:])
