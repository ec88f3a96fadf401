"""Off Linux there is no OS sandbox: the preflight says so in one line, before anything is made, and
the drop-in gate still judges calls. The platform is faked (sys.platform) in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from runtime.sandbox import launch
from runtime.sandbox.bwrap import SandboxUnavailable
from tests.conftest import REPO
from tests.support import user_git, user_repo

# Libraries that load a platform's backend when imported (psutil; sysconfig's data file, named after
# the platform) load this machine's first: what is faked is the platform the runtime itself reads.
AS_MACOS = ("import sys, sysconfig, psutil, anyio, asyncio, subprocess; sysconfig.get_config_vars()\n"
            "sys.platform = 'darwin'\n"
            "from runtime.cli.main import main; sys.exit(main(sys.argv[1:]))")


def as_macos(*args: str, cwd, input: str | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", AS_MACOS, *args], cwd=cwd, input=input, capture_output=True,
                          text=True, timeout=120, env=env)


@pytest.mark.parametrize("platform", ["darwin", "win32", "freebsd14"])
def test_the_preflight_off_linux_is_one_line_and_asks_nothing_else(monkeypatch, platform):
    monkeypatch.setattr(sys, "platform", platform)

    def never(*_a, **_k):
        raise AssertionError("looked for bubblewrap off Linux")

    monkeypatch.setattr(launch, "bwrap_path", never)
    with pytest.raises(SandboxUnavailable) as info:
        launch.preflight()
    message = str(info.value)
    assert "\n" not in message
    assert f"Linux only (WSL2 included), not on {platform}" in message and "--no-os-sandbox" in message


def test_a_spawn_off_linux_stops_before_it_makes_anything(tmp_path):
    repo = user_repo(tmp_path, {"src/calc.py": "x = 1\n"})
    state = tmp_path / "state"
    task = REPO / "manifests/examples/spawn-demo/task.toml"
    env = {**os.environ, "RUNTIME_STATE_DIR": str(state)}
    proc = as_macos("spawn", "--catalog", str(REPO), str(task), cwd=repo, env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr.splitlines() == [
        "error: the OS sandbox runs on Linux only (WSL2 included), not on darwin: pass --no-os-sandbox to run the "
        "agent under the gate alone, in its strict mode"]
    assert proc.stdout == ""
    assert not state.exists()
    assert user_git(repo, "branch", "--format=%(refname:short)") == "trunk"
    assert user_git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1


def _call(tool: str, tool_input: dict, cwd) -> str:
    return json.dumps({"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": tool_input,
                       "cwd": str(cwd), "tool_use_id": "toolu_1"})


def test_the_drop_in_gate_works_off_linux(tmp_path):
    repo = user_repo(tmp_path, {"src/calc.py": "x = 1\n"})
    denied = as_macos("check", "--role", "edit-local", cwd=repo, input=_call("Bash", {"command": "git push"}, repo))
    assert denied.returncode == 2, denied.stderr
    assert json.loads(denied.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "[policy::no-git-ops]" in denied.stderr
    allowed = as_macos("check", "--role", "edit-local", cwd=repo,
                       input=_call("Read", {"file_path": str(repo / "src/calc.py")}, repo))
    assert allowed.returncode == 0, allowed.stderr
    assert json.loads(allowed.stdout)["hookSpecificOutput"]["permissionDecision"] == "allow"
