"""Smoke test of the fake-model harness: the real Claude Code CLI, a stand-in PreToolUse hook.

Runs under ``--permission-mode dontAsk`` with no allow rules, so the touch and the Write can only
run because the hook answered "allow": that proves the hook is consulted for every call.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.claude_cli import missing_cli_reason, run_claude

pytestmark = pytest.mark.real_client

HOOK_REASON = "smoke hook: git is not allowed here"

# Logs each stdin JSON as one line, then blocks git (exit 2, reason on stderr) or allows.
STAND_IN_HOOK = f"""
import json, sys
raw = sys.stdin.read()
data = json.loads(raw)
with open(sys.argv[1], "a") as log:
    log.write(json.dumps(data) + "\\n")
if "git" in str(data.get("tool_input", {{}}).get("command", "")):
    print({HOOK_REASON!r}, file=sys.stderr)
    sys.exit(2)
print(json.dumps({{"hookSpecificOutput": {{"hookEventName": "PreToolUse",
      "permissionDecision": "allow", "permissionDecisionReason": "ok"}}}}))
"""


def require_cli() -> None:
    reason = missing_cli_reason()
    if reason is not None:
        if os.environ.get("CI"):  # CI installs the CLI (make test); its absence is a failure
            pytest.fail(f"CI needs the real Claude Code CLI: {reason}")
        pytest.skip(reason)


def test_real_cli_consults_hook_for_every_call(tmp_path: Path) -> None:
    require_cli()
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    hook, hook_log = tmp_path / "hook.py", tmp_path / "hook_stdin.jsonl"
    hook.write_text(STAND_IN_HOOK)
    command = " ".join(shlex.quote(str(p)) for p in (sys.executable, hook, hook_log))
    settings = {"hooks": {"PreToolUse": [
        {"matcher": "*", "hooks": [{"type": "command", "command": command, "timeout": 30}]}]}}
    written = worktree / "written.txt"
    turns = [
        [{"name": "Bash", "input": {"command": "git status"}}],
        [{"name": "Bash", "input": {"command": "touch allowed.txt"}}],
        [{"name": "Write", "input": {"file_path": str(written), "content": "hello\n"}}],
        "All done.",
    ]

    with FakeAnthropicServer(turns) as server:
        run = run_claude("Do the scripted steps.", worktree, settings, server.url,
                         tools=["Bash", "Write", "Read", "Edit"])

    assert run.returncode == 0 and run.result is not None, run.describe()
    assert run.result["is_error"] is False and run.result["result"] == "All done.", run.describe()
    assert server.turns_used() == len(turns)
    assert {"Bash", "Write", "Read", "Edit"} <= set(server.offered_tools())
    assert "Agent" not in server.offered_tools()  # --tools narrowed the surface
    # Nothing tried to reach another host (the proxy trap would have recorded a CONNECT).
    assert [r for r in server.side_requests() if r.method == "CONNECT"] == []

    (git_id,), (touch_id,), (write_id,), () = server.scripted_tool_use_ids()

    # The allowed calls ran.
    assert (worktree / "allowed.txt").exists(), run.describe()
    assert written.read_text() == "hello\n"
    assert not server.tool_result_for(touch_id).get("is_error")
    assert not server.tool_result_for(write_id).get("is_error")

    # The denied call is reported, and the very next request tells the model why.
    assert run.permission_denials == [
        {"tool_name": "Bash", "tool_use_id": git_id, "tool_input": {"command": "git status"}}]
    after_git = server.agent_requests()[1].body["messages"]
    results = [b for m in after_git if isinstance(m["content"], list) for b in m["content"]
               if b.get("type") == "tool_result" and b.get("tool_use_id") == git_id]
    assert len(results) == 1 and results[0]["is_error"] is True
    assert HOOK_REASON in results[0]["content"]

    # What the hook saw on stdin, once per call, in order.
    seen = [json.loads(line) for line in hook_log.read_text().splitlines()]
    assert [(s["tool_name"], s["tool_use_id"]) for s in seen] == [
        ("Bash", git_id), ("Bash", touch_id), ("Write", write_id)]
    for payload in seen:
        assert payload["hook_event_name"] == "PreToolUse"
        assert os.path.realpath(payload["cwd"]) == os.path.realpath(worktree)
        assert "agent_type" not in payload  # only subagents' calls carry agent_id/agent_type
    assert seen[0]["tool_input"] == {"command": "git status"}
    assert seen[2]["tool_input"] == {"file_path": str(written), "content": "hello\n"}
