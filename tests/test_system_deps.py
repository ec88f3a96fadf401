"""scripts/system-deps.sh, which `make test` and .ci/run call first: on a machine whose PATH lacks some
of what the suite needs, root installs exactly those with apt-get, anyone else gets one line naming
them (and a failure under CI). Run with stand-ins for the programs, apt-get recording what it is asked."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

SCRIPT = REPO / "scripts/system-deps.sh"
PRESENT = ["git", "make", "npm", "bwrap", "setpriv", "ssh-keygen", "strace", "ip", "cargo", "go", "chromium", "chromedriver"]  # socat left out


def _machine(tmp_path: Path, uid: int) -> tuple[Path, Path]:
    bin_dir, log = tmp_path / "bin", tmp_path / "apt.log"
    bin_dir.mkdir()

    def stub(name: str, body: str) -> None:
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)

    for name in PRESENT:
        stub(name, "exit 0")
    stub("id", f"echo {uid}")
    stub("ldconfig", "echo '\tlibseccomp.so.2 (libc6,x86-64) => /lib/libseccomp.so.2'")
    stub("apt-get", f'echo "$@" >> {log}')
    for real in ("grep",):
        os.symlink(shutil.which(real), bin_dir / real)
    return bin_dir, log


def _run(bin_dir: Path, ci: bool) -> subprocess.CompletedProcess:
    env = {"PATH": str(bin_dir), "HOME": str(bin_dir.parent), **({"CI": "1"} if ci else {})}
    return subprocess.run([shutil.which("bash"), str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)


def test_root_installs_exactly_what_is_missing(tmp_path):
    bin_dir, log = _machine(tmp_path, 0)
    proc = _run(bin_dir, ci=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "installing what the tests need: socat (apt-get)\n"
    assert log.read_text().splitlines() == ["update -qq", "install -y -qq socat"]


def test_nothing_missing_installs_nothing_and_says_nothing(tmp_path):
    bin_dir, log = _machine(tmp_path, 0)
    (bin_dir / "socat").symlink_to(bin_dir / "git")
    proc = _run(bin_dir, ci=True)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "") and not log.exists()


@pytest.mark.parametrize("ci", [False, True])
def test_anyone_else_gets_one_line_and_ci_fails(tmp_path, ci):
    bin_dir, log = _machine(tmp_path, 1000)
    (bin_dir / "strace").unlink()
    proc = _run(bin_dir, ci=ci)
    assert proc.returncode == (1 if ci else 0)
    assert proc.stderr.splitlines() == ["the tests need system packages that are missing: socat strace "
                                        "(Debian, Ubuntu: sudo apt-get install socat strace)"]
    assert not log.exists()
