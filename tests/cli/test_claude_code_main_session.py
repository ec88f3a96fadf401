"""A plain `runtime hook install` gates the main session of a person's own Claude Code (the real CLI).

The session's role is `session`: it writes and commits inside the project, and never pushes, writes
outside the project or into `.claude/`. Each call is made by the real CLI against the fake model
server, with project settings that allow Bash and Write (so nothing but the hook stands in the way),
and the host is checked afterwards. The reasons it hears speak to a person's session (no orchestrator).
"""

from __future__ import annotations

import subprocess

import pytest

from tests.cli import test_claude_code_fail_closed as fail_closed
from tests.cli.test_claude_code_fail_closed import SYSTEM_PATH, VENV_BIN
from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.claude_cli import run_claude

pytestmark = pytest.mark.real_client
installed = fail_closed.installed  # the fixture: the hook as `runtime hook install` writes it


def _git(cwd, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def test_the_main_session_is_gated_by_the_session_role(installed, tmp_path):
    project, settings = installed
    _git(project, "config", "user.name", "t")
    _git(project, "config", "user.email", "t@t")
    _git(project, "commit", "-q", "--allow-empty", "-m", "base")
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    _git(project, "remote", "add", "origin", str(remote))
    outside = tmp_path / "outside.txt"
    turns = [
        [{"name": "Write", "input": {"file_path": str(project / "notes.md"), "content": "notes\n"}}],
        [{"name": "Bash", "input": {"command": "git add notes.md && git commit -q -m notes"}}],
        [{"name": "Bash", "input": {"command": "git push origin HEAD"}}],
        [{"name": "Write", "input": {"file_path": str(outside), "content": "x\n"}}],
        [{"name": "Write", "input": {"file_path": str(project / ".claude/settings.local.json"), "content": "{}"}}],
        "Done.",
    ]
    with FakeAnthropicServer(turns) as server:
        run = run_claude("Follow the scripted steps.", project, settings, server.url, tools=["Bash", "Write"],
                         env={"PATH": f"{VENV_BIN}:{SYSTEM_PATH}"}, timeout=120)
        assert run.returncode == 0, run.describe()
        ids = [i[0] for i in server.scripted_tool_use_ids()[:5]]
        results = [server.tool_result_for(i) for i in ids]
    write, commit, push, out, control = results
    assert not write.get("is_error") and (project / "notes.md").read_text() == "notes\n", write
    assert commit.get("is_error") is not True, commit
    assert _git(project, "log", "-1", "--format=%s") == "notes"  # the person's session commits
    for result, words in ((push, "`git push` is never allowed here"), (out, "outside the worktree"),
                          (control, "which this session never changes")):
        assert result.get("is_error") is True and words in str(result.get("content")), result
        assert "orchestrator" not in str(result.get("content"))
    assert _git(remote, "branch", "--list") == ""  # nothing pushed
    assert not outside.exists() and not (project / ".claude/settings.local.json").exists()
    assert [d["tool_name"] for d in run.permission_denials] == ["Bash", "Write", "Write"], run.describe()
