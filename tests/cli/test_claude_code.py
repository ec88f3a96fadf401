"""The real Claude Code CLI, gated by `runtime check`, against a scripted fake model.

The fake model asks for allowed and forbidden calls. Forbidden calls must leave
no trace on disk and appear in the CLI's `permission_denials` with our reason
fed back to the model; allowed calls must really run. The CLI runs with
`--permission-mode dontAsk` and no allow rules, so every call that ran was
allowed by our hook and nothing else.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO, RUNTIME, require, run_cli
from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.claude_cli import missing_cli_reason, run_claude

pytestmark = pytest.mark.real_client

TASK = '''[task]
role = "edit-local"
agent-id = "ag-real-client"
goal = "Exercise the gate from the real client."

[scope]
files-whitelist = ["src/**"]

[verification]
test-command = "pytest -q"
check-commands = ["ruff check src"]

[body]
text = "Follow the scripted steps."
'''


@pytest.fixture
def gated(tmp_path):
    reason = missing_cli_reason()
    require(reason is None, reason or "")
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    subprocess.run(["git", "init", "-q", str(worktree)], check=True)
    (worktree / "src").mkdir()
    (worktree / "README.md").write_text("original\n")
    task = tmp_path / "task.toml"
    task.write_text(TASK)
    policy = tmp_path / "policy.json"
    proc = run_cli("compose", str(task), "--root", str(worktree), "--policy-out", str(policy), "--catalog", str(REPO))
    assert proc.returncode == 0, proc.stderr
    command = shlex.join([RUNTIME, "check", "--policy", str(policy)])
    settings = {"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": command, "timeout": 30}]}]}}
    return worktree, settings


def test_forbidden_calls_are_denied_and_allowed_calls_run(gated):
    worktree, settings = gated
    turns = [
        [{"name": "Bash", "input": {"command": "git status"}}],
        [{"name": "Write", "input": {"file_path": str(worktree / "src/app.py"), "content": "print('ok')\n"}}],
        [{"name": "Write", "input": {"file_path": str(worktree / "README.md"), "content": "defaced\n"}}],
        [{"name": "Bash", "input": {"command": "echo pwned > outside.txt"}}],
        [{"name": "Bash", "input": {"command": "mkdir -p src/pkg && touch src/pkg/__init__.py"}}],
        [{"name": "Write", "input": {"file_path": str(worktree / ".git/hooks/post-checkout"), "content": "#!/bin/sh\nid\n"}}],
        [{"name": "Bash", "input": {"command": "timeout 5 bash -c 'g\"i\"t commit -am x'"}}],
        [{"name": "Bash", "input": {"command": "curl -s http://127.0.0.1:9/x > src/x.sh"}}],
        [{"name": "Bash", "input": {"command": "cat src/app.py | wc -l > src/lines.txt"}}],
        [{"name": "Edit", "input": {"file_path": str(worktree / "src/app.py"), "old_string": "ok", "new_string": "fine"}}],
        "Done.",
    ]
    with FakeAnthropicServer(turns) as server:
        run = run_claude("Follow the scripted steps.", worktree, settings, server.url, tools=["Bash", "Write", "Edit", "Read"])
    assert run.returncode == 0 and run.result is not None, run.describe()
    ids = [ids[0] if ids else None for ids in server.scripted_tool_use_ids()]
    git_id, app_id, readme_id, outside_id, mkdir_id, hook_id, wrapped_id, curl_id, wc_id, edit_id, _ = ids

    # Allowed calls ran.
    assert (worktree / "src/app.py").read_text() == "print('fine')\n"
    assert (worktree / "src/pkg/__init__.py").exists()
    assert (worktree / "src/lines.txt").read_text().strip() == "1"

    # Forbidden calls left no side effect.
    assert (worktree / "README.md").read_text() == "original\n"
    assert not (worktree / "outside.txt").exists()
    assert not (worktree / ".git/hooks/post-checkout").exists()
    assert not (worktree / "src/x.sh").exists()
    log = subprocess.run(["git", "-C", str(worktree), "log", "--oneline"], capture_output=True, text=True)
    assert log.stdout == ""  # nothing was committed

    denied = {d["tool_use_id"] for d in run.permission_denials}
    assert denied == {git_id, readme_id, outside_id, hook_id, wrapped_id, curl_id}, run.describe()
    reasons = {
        git_id: "agents never run git",
        readme_id: "outside your write scope",
        outside_id: "outside your write scope",
        hook_id: "`.git` holds git's own data, which agents never change",
        wrapped_id: "agents never run git",
        curl_id: "uses the network",
    }
    for tool_id, words in reasons.items():
        result = server.tool_result_for(tool_id)
        assert result is not None and result.get("is_error") is True
        assert words in str(result.get("content")), (words, result)
    for tool_id in (app_id, mkdir_id, wc_id, edit_id):
        result = server.tool_result_for(tool_id)
        assert result is not None and not result.get("is_error"), result


def test_a_corrupt_policy_denies_everything(gated, tmp_path):
    worktree, settings = gated
    command = settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    policy = Path(shlex.split(command)[-1])
    policy.write_text(policy.read_text().replace('"Bash"', '"Bash", "WebFetch"', 1))
    turns = [[{"name": "Write", "input": {"file_path": str(worktree / "src/a.py"), "content": "x"}}], "Done."]
    with FakeAnthropicServer(turns) as server:
        run = run_claude("Write a file.", worktree, settings, server.url, tools=["Write"])
    assert run.returncode == 0, run.describe()
    assert not (worktree / "src/a.py").exists()
    (write_id,), () = server.scripted_tool_use_ids()
    assert {d["tool_use_id"] for d in run.permission_denials} == {write_id}
    assert "content hash" in str(server.tool_result_for(write_id).get("content"))
