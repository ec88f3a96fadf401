"""Helpers several suites share: real git, real processes."""

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


def user_git(cwd: Path, *args: str) -> str:
    """Plain git, as a user would run it (hooks and config in force, no GIT_* of the test runner)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    out = subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True, env=env)
    return out.stdout.strip()


def user_repo(parent: Path, files: dict[str, str]) -> Path:
    """``parent/repo``: a repository on ``trunk`` with ``files`` in one commit, made with ``user_git``."""
    root = parent / "repo"
    user_git(parent, "init", "-q", "-b", "trunk", str(root))
    user_git(root, "config", "user.name", "Test User")
    user_git(root, "config", "user.email", "test@example.com")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    user_git(root, "add", "-A")
    user_git(root, "commit", "-qm", "initial")
    return root


def processes_with(text: str) -> list[psutil.Process]:
    out = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            if proc.info["status"] != psutil.STATUS_ZOMBIE and text in " ".join(proc.info["cmdline"] or []):
                out.append(proc)
        except psutil.Error:
            pass
    return out


def running(*argv: str) -> list[psutil.Process]:
    """Live processes whose command line is exactly ``argv`` (the agent's own `sleep N`, say, and not the
    sandbox's or the cgroup's launchers, whose command lines quote the whole agent command before it runs)."""
    want = list(argv)
    out = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            if proc.info["status"] != psutil.STATUS_ZOMBIE and proc.info["cmdline"] == want:
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
