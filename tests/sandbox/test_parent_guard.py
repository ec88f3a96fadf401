"""The sandbox's start is tied to the orchestrator's life: no window in which its death leaves a sandbox running."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from tests.conftest import require
from tests.spawn.conftest import marker, no_survivors, processes_with

# A stand-in orchestrator: computes the guard, forks, and dies at the moment the test picks.
PARENT = """
import os, sys, time
from runtime.sandbox.launch import parent_guard
guard = parent_guard()
assert guard, "setpriv is missing"
child_delay, parent_life, command = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]
if os.fork() == 0:
    time.sleep(child_delay)  # a slow start: the orchestrator may be gone before the command runs
    os.execvp(guard[0], guard + command)
time.sleep(parent_life)
os._exit(0)
"""


def _orchestrator(child_delay: float, parent_life: float, *command: str) -> None:
    subprocess.run([sys.executable, "-c", PARENT, str(child_delay), str(parent_life), *command], check=True, timeout=30)


def test_an_orchestrator_dead_before_the_start_starts_nothing(tmp_path):
    require(subprocess.run(["which", "setpriv"], capture_output=True).returncode == 0, "setpriv is not installed")
    mark = tmp_path / "started"
    _orchestrator(0.5, 0.0, "/bin/sh", "-c", f"touch {mark}")
    time.sleep(1.5)
    assert not mark.exists()


def test_an_orchestrator_dying_after_the_start_takes_the_command_with_it():
    require(subprocess.run(["which", "setpriv"], capture_output=True).returncode == 0, "setpriv is not installed")
    n = marker()
    _orchestrator(0.0, 0.8, "sleep", n)
    no_survivors(f"sleep {n}", timeout=5)


def test_a_live_orchestrator_runs_the_command(tmp_path):
    require(subprocess.run(["which", "setpriv"], capture_output=True).returncode == 0, "setpriv is not installed")
    mark = tmp_path / "started"
    _orchestrator(0.0, 1.5, "/bin/sh", "-c", f"touch {mark}")
    assert mark.exists() and not processes_with(str(mark))


def _sandbox(tmp_path):
    """A sandbox spec over a fresh worktree (granted), and the worktree."""
    from runtime.sandbox.bwrap import SandboxSpec, bwrap_path
    from runtime.sandbox.env import agent_env

    require(bwrap_path() is not None, "bubblewrap is not installed")
    worktree, home = tmp_path / "wt", tmp_path / "home"
    worktree.mkdir()
    home.mkdir()
    spec = SandboxSpec(worktree=worktree, home=home, writable=[worktree], env=agent_env(home, {}))
    spec.grant()
    return spec, worktree


def test_a_sandbox_whose_orchestrator_is_gone_runs_nothing(tmp_path):
    """The inner side: bubblewrap set up, but the orchestrator's end of the pipe already closed."""
    spec, worktree = _sandbox(tmp_path)
    for orchestrator_alive in (True, False):
        mark = worktree / f"started-{orchestrator_alive}"
        read_end, write_end = os.pipe()
        if not orchestrator_alive:
            os.close(write_end)
        proc = subprocess.run([*spec.args(alive_fd=read_end), "/bin/sh", "-c", f"touch {mark}"], pass_fds=(read_end,),
                              capture_output=True, text=True, timeout=30)
        os.close(read_end)
        if orchestrator_alive:
            os.close(write_end)
            assert proc.returncode == 0 and mark.exists(), proc.stderr
        else:
            assert proc.returncode == 125 and not mark.exists()
            assert "the orchestrator died before the sandbox started" in proc.stderr


def test_a_sandbox_outliving_its_orchestrator_is_killed_from_inside(tmp_path):
    """bubblewrap's init arms its parent-death signal only after the command has started: if the
    orchestrator dies in between, init lives on. The watcher inside kills the command when the
    orchestrator's end of the pipe closes, even though bubblewrap itself (here: kept alive by the
    test, as that unarmed init would be) never dies."""
    spec, worktree = _sandbox(tmp_path)
    n = marker()
    read_end, write_end = os.pipe()
    proc = subprocess.Popen([*spec.args(alive_fd=read_end), "/bin/sh", "-c", f"sleep {n}; sleep {n}"],
                            pass_fds=(read_end,), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    os.close(read_end)
    try:
        deadline = time.monotonic() + 30
        while not any(p.info["cmdline"] == ["sleep", n] for p in processes_with(f"sleep {n}")):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        time.sleep(0.3)
        assert proc.poll() is None  # a live orchestrator: the watcher leaves the command alone
        os.close(write_end)
        write_end = -1
        out, err = proc.communicate(timeout=10)  # the command's pipes close: nothing inside holds them
        assert proc.returncode != 0
    finally:
        if write_end != -1:
            os.close(write_end)
        proc.kill()
    no_survivors(f"sleep {n}", timeout=5)
