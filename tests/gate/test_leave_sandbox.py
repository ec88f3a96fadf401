"""A call asking to run outside the sandbox (Claude Code's `dangerouslyDisableSandbox`) is refused in every mode,
by the pure gate and by the hook before any policy is chosen: also where the main session is left to Claude Code."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from runtime.gate.decision import ALLOW, DENY
from runtime.gate.engine import decide
from runtime.gate.hook import run_hook
from runtime.gate.policy import Policy
from runtime.policy.build import build_policy
from runtime.policy.document import SANDBOXED, STRICT
from tests.conftest import REPO, RUNTIME
from tests.gate.conftest import EDIT_SCOPE, TASK

SAYS = "commands run only inside the sandbox: run this one without `dangerouslyDisableSandbox`"
# Anything but false asks to leave: JavaScript reads the string "false" and 1 as true, and a null or a list is
# no answer the gate can trust.
ASKS = [True, "true", "false", 1, None, [], {"on": True}]


@pytest.fixture(params=[STRICT, SANDBOXED])
def policy(request, worktree, tmp_path) -> Policy:
    task = tmp_path / "task.toml"
    task.write_text(TASK.format(role="edit-local", scope=EDIT_SCOPE))
    return Policy(build_policy(REPO, None, task, worktree, mode=request.param), assume_sandbox=True)


def _call(worktree: Path, **extra) -> dict:
    return {"command": "ls src", **extra}


@pytest.mark.parametrize("value", ASKS, ids=repr)
def test_asking_to_leave_the_sandbox_is_denied_in_both_modes(policy, worktree, value):
    d = decide(policy, "Bash", _call(worktree, dangerouslyDisableSandbox=value), str(worktree))
    assert d.verdict == DENY and d.rule == "leave-sandbox" and d.reason.startswith(SAYS), d


def test_false_or_absent_is_judged_as_any_call(policy, worktree):
    for call in (_call(worktree), _call(worktree, dangerouslyDisableSandbox=False)):
        assert decide(policy, "Bash", call, str(worktree)).verdict == ALLOW


def test_the_hook_refuses_it_before_choosing_a_policy(worktree):
    """A selector that would defer (the main session left to Claude Code) or fail is never asked."""
    asked = []

    def select(data):
        asked.append(data)
        return None

    raw = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": str(worktree),
                      "tool_input": {"command": "ls", "dangerouslyDisableSandbox": True}}).encode()
    answer = run_hook(raw, select)
    assert answer.exit_code == 2 and SAYS in answer.stderr and asked == []
    out = json.loads(answer.stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny" and SAYS in out["permissionDecisionReason"]
    same = json.loads(raw)
    same["tool_input"]["dangerouslyDisableSandbox"] = False
    assert run_hook(json.dumps(same).encode(), select).exit_code == 0 and len(asked) == 1  # deferred


@pytest.mark.parametrize("args", [["--on-allow", "defer", "--main-session", "defer"],
                                  ["--on-allow", "defer", "--role", "explorer"]], ids=["deferred-main", "role"])
def test_the_installed_command_refuses_it(worktree, args):
    call = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": str(worktree),
            "tool_input": {"command": "ls", "dangerouslyDisableSandbox": True}}
    proc = subprocess.run([RUNTIME, "check", "--catalog", str(REPO), "--root", str(worktree), *args],
                          input=json.dumps(call), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and SAYS in proc.stderr, proc.stderr
