"""hook install merges idempotently; export writes one subagent per spawnable role."""

import json
import os
import shlex
from pathlib import Path

from tests.conftest import REPO, RUNTIME, run_cli

ON_PATH = {"PATH": f"{Path(RUNTIME).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
OFF_PATH = {"PATH": "/usr/bin:/bin"}


def test_install_merges_into_existing_settings_and_is_idempotent(tmp_path):
    settings = tmp_path / ".claude/settings.json"
    settings.parent.mkdir()
    mine = {"model": "x", "permissions": {"allow": ["Read"]},
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "my-linter"}]}],
                      "PostToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "log"}]}]}}
    settings.write_text(json.dumps(mine))
    first = run_cli("hook", "install", "--catalog", str(REPO), cwd=tmp_path, env=ON_PATH)
    assert first.returncode == 0
    data = json.loads(settings.read_text())
    assert data["model"] == "x" and data["permissions"] == mine["permissions"]
    assert data["hooks"]["PostToolUse"] == mine["hooks"]["PostToolUse"]
    pre = data["hooks"]["PreToolUse"]
    assert pre[0] == mine["hooks"]["PreToolUse"][0] and len(pre) == 2
    ours = pre[1]
    assert ours["matcher"] == "*"
    # `runtime` by name and no catalog path (the shipped one): the committed file works on every clone
    words = shlex.split(ours["hooks"][0]["command"])
    assert words == ["runtime", "check", "--on-allow", "defer", "--main-session", "defer"]
    text = settings.read_text()
    again = run_cli("hook", "install", "--catalog", str(REPO), cwd=tmp_path, env=ON_PATH)
    assert again.returncode == 0 and "already installed" in again.stdout and settings.read_text() == text
    role = run_cli("hook", "install", "--catalog", str(REPO), "--role", "explorer", cwd=tmp_path, env=ON_PATH)
    assert role.returncode == 0
    pre = json.loads(settings.read_text())["hooks"]["PreToolUse"]
    assert len(pre) == 2 and shlex.split(pre[1]["hooks"][0]["command"])[-2:] == ["--role", "explorer"]


def test_machine_paths_go_to_the_local_settings_and_a_project_catalog_is_relative(tmp_path, catalog_copy):
    off = run_cli("hook", "install", "--catalog", str(REPO), cwd=tmp_path, env=OFF_PATH)
    assert off.returncode == 0 and "settings.local.json" in off.stdout
    assert not (tmp_path / ".claude/settings.json").exists()
    local = json.loads((tmp_path / ".claude/settings.local.json").read_text())
    assert shlex.split(local["hooks"]["PreToolUse"][0]["hooks"][0]["command"])[0] == os.path.realpath(RUNTIME)
    # A catalog inside the project is named through $CLAUDE_PROJECT_DIR, which Claude Code sets.
    inside = run_cli("hook", "install", "--catalog", str(catalog_copy), cwd=catalog_copy.parent, env=ON_PATH)
    assert inside.returncode == 0, inside.stderr
    command = json.loads((catalog_copy.parent / ".claude/settings.json").read_text())["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    assert command == 'runtime check --catalog "$CLAUDE_PROJECT_DIR"/catalog --on-allow defer --main-session defer'
    import subprocess
    call = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"},
                       "cwd": str(catalog_copy.parent), "agent_type": "read-only"})
    proc = subprocess.run(command, shell=True, input=call, capture_output=True, text=True,
                          env={**os.environ, **ON_PATH, "CLAUDE_PROJECT_DIR": str(catalog_copy.parent)})
    assert proc.returncode == 2 and "not available to role `read-only`" in proc.stderr


def test_installed_command_really_gates(tmp_path):
    run_cli("hook", "install", "--catalog", str(REPO), "--role", "explorer", "--command", RUNTIME, cwd=tmp_path, env=ON_PATH)
    command = json.loads((tmp_path / ".claude/settings.json").read_text())["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    import subprocess
    call = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "git log"}, "cwd": str(tmp_path)})
    proc = subprocess.run(command, shell=True, input=call, capture_output=True, text=True, env={**os.environ, **ON_PATH})
    assert proc.returncode == 2 and "agents never run git" in proc.stderr


def test_install_refuses_invalid_settings_and_git_ops(tmp_path):
    settings = tmp_path / ".claude/settings.json"
    settings.parent.mkdir()
    settings.write_text('{"model": "x",\n  oops}')
    proc = run_cli("hook", "install", "--catalog", str(REPO), cwd=tmp_path, env=ON_PATH)
    assert proc.returncode == 1 and proc.stderr.startswith(f"error: {settings.relative_to(tmp_path)}:2: invalid JSON")
    assert settings.read_text() == '{"model": "x",\n  oops}'
    proc = run_cli("hook", "install", "--catalog", str(REPO), "--role", "git-ops", cwd=tmp_path)
    assert proc.returncode == 1 and "not spawnable" in proc.stderr


def test_export_writes_one_agent_per_spawnable_role(tmp_path):
    proc = run_cli("export", "claude-agents", "--catalog", str(REPO), cwd=tmp_path)
    assert proc.returncode == 0
    files = sorted(p.name for p in (tmp_path / ".claude/agents").iterdir())
    assert files == ["edit-local.md", "edit-shared.md", "explorer.md", "read-only.md"]
    text = (tmp_path / ".claude/agents/explorer.md").read_text()
    front, body = text.split("---\n")[1], text.split("---\n", 2)[2]
    assert "name: explorer\n" in front and "tools: Read, Glob, Grep, Bash\n" in front
    assert body.startswith("# No git") and "## Your task's scope" in body


TASK = """[task]
role = "edit-local"
agent-id = "ag-docs"
goal = "Document the parser."

[scope]
files-whitelist = ["docs/**"]

[verification]
test-command = "pytest -q"
check-commands = ["true"]

[body]
text = "Write docs/parser.md."
"""


def test_an_edit_role_exported_with_a_task_can_write_its_scope_and_nothing_else(tmp_path):
    """Without a task an edit role's subagent could write nothing; with one, its scope and no more."""
    import subprocess

    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks/docs.toml").write_text(TASK)
    exported = run_cli("export", "claude-agents", "--catalog", str(REPO), "--task", "tasks/docs.toml", cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    assert "hook install --task tasks/docs.toml" in exported.stdout
    agent = (tmp_path / ".claude/agents/edit-local.md").read_text()
    assert "docs/**" in agent and "Document the parser." in agent
    installed = run_cli("hook", "install", "--catalog", str(REPO), "--task", "tasks/docs.toml", cwd=tmp_path, env=ON_PATH)
    assert installed.returncode == 0, installed.stderr
    command = json.loads((tmp_path / ".claude/settings.json").read_text())["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    assert command == 'runtime check --task "$CLAUDE_PROJECT_DIR"/tasks/docs.toml --on-allow defer --main-session defer'

    def call(agent_type, path):
        hook = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Write", "cwd": str(tmp_path),
                           "tool_input": {"file_path": path, "content": "x"}, "agent_type": agent_type})
        return subprocess.run(command, shell=True, input=hook, capture_output=True, text=True,
                              env={**os.environ, **ON_PATH, "CLAUDE_PROJECT_DIR": str(tmp_path)})

    inside = call("edit-local", "docs/parser.md")
    assert inside.returncode == 0 and inside.stdout == "", inside.stderr  # allowed: left to Claude Code's own rules
    outside = call("edit-local", "src/parser.py")
    assert outside.returncode == 2 and "outside your write scope" in outside.stderr
    other = call("edit-shared", "docs/parser.md")  # another role's subagent does not borrow the task's scope
    assert other.returncode == 2
