"""Helpers the spawn and orchestration suites share: real git, real processes."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import psutil

from tests.conftest import require


def have_bwrap() -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap (bwrap) is not installed")


def git(cwd: Path, *args: str, check: bool = True) -> str:
    proc = subprocess.run(
        ["git", "-C", str(cwd), "-c", "user.name=test", "-c", "user.email=test@localhost",
         "-c", "commit.gpgSign=false", "-c", "core.hooksPath=/dev/null", *args],
        capture_output=True, text=True, env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1"},
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
    return proc.stdout.strip()


def processes_with(text: str) -> list[psutil.Process]:
    out = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            if proc.info["status"] != psutil.STATUS_ZOMBIE and text in " ".join(proc.info["cmdline"] or []):
                out.append(proc)
        except psutil.Error:
            pass
    return out


def wait_for(predicate, timeout: float, step: float = 0.05, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def kill_group(proc: subprocess.Popen) -> None:
    """Clean up a background command a test started (its own session, so only its own processes)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)
