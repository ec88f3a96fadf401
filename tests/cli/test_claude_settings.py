"""hook install merges idempotently; export writes one subagent per spawnable role."""

import json
import os
import shlex
import shutil
from pathlib import Path

import pytest

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
    assert words == ["runtime", "check", "--on-allow", "defer", "--main-session", "session", "--resident"]
    text = settings.read_text()
    again = run_cli("hook", "install", "--catalog", str(REPO), cwd=tmp_path, env=ON_PATH)
    assert again.returncode == 0 and "already installed" in again.stdout and settings.read_text() == text
    role = run_cli("hook", "install", "--catalog", str(REPO), "--role", "explorer", cwd=tmp_path, env=ON_PATH)
    assert role.returncode == 0
    pre = json.loads(settings.read_text())["hooks"]["PreToolUse"]
    assert len(pre) == 2 and shlex.split(pre[1]["hooks"][0]["command"])[-3:] == ["--role", "explorer", "--resident"]


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
    assert command == 'runtime check --catalog "$CLAUDE_PROJECT_DIR"/catalog --on-allow defer --main-session session --resident'
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
    # A person's own session: no orchestrator in the reason.
    assert proc.returncode == 2 and "this role does not run git; ask the person" in proc.stderr, proc.stderr


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
    assert command == 'runtime check --task "$CLAUDE_PROJECT_DIR"/tasks/docs.toml --on-allow defer --main-session session --resident'

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


# -- failing closed: `onFailure: block`, and the CLI version that honours it ------------------------
def fake_cli(folder: Path, says: str) -> Path:
    """A `claude` that only answers `--version`: enough for the version check, which runs nothing else."""
    folder.mkdir(parents=True, exist_ok=True)
    cli = folder / "claude"
    cli.write_text(f"#!/bin/sh\necho {shlex.quote(says)}\n")
    cli.chmod(0o755)
    return cli


def our_hook(settings: Path) -> dict:
    [entry] = [e for e in json.loads(settings.read_text())["hooks"]["PreToolUse"]
               if "runtime" in e["hooks"][0]["command"]]
    [hook] = entry["hooks"]
    return hook


def test_every_hook_the_runtime_writes_blocks_a_call_it_cannot_answer(tmp_path):
    from runtime.spawn.backends.claude_code.settings import write_settings

    env = {**ON_PATH, "RUNTIME_CLAUDE_BIN": str(fake_cli(tmp_path / "bin", "2.1.332 (Claude Code)"))}
    for extra in ([], ["--role", "explorer"], ["--settings", "other.json"]):
        proc = run_cli("hook", "install", "--catalog", str(REPO), *extra, cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr
        settings = tmp_path / (extra[1] if extra[:1] == ["--settings"] else ".claude/settings.json")
        hook = our_hook(settings)
        assert {k: v for k, v in hook.items() if k != "command"} == {"type": "command", "timeout": 30, "onFailure": "block"}
    off = run_cli("hook", "install", "--catalog", str(REPO), cwd=tmp_path, env={**env, **OFF_PATH})
    assert off.returncode == 0 and our_hook(tmp_path / ".claude/settings.local.json")["onFailure"] == "block"
    # The claude-code backend's settings for a spawned agent.
    [[hook]] = [e["hooks"] for e in json.loads(write_settings(tmp_path).read_text())["hooks"]["PreToolUse"]]
    assert hook["onFailure"] == "block" and hook["timeout"] == 30 and "check --policy" in hook["command"]


def test_an_install_without_on_failure_is_upgraded_in_place(tmp_path):
    settings = tmp_path / ".claude/settings.json"
    settings.parent.mkdir()
    old = {"type": "command", "command": "runtime check --on-allow defer --main-session defer", "timeout": 30}
    mine = {"model": "x", "permissions": {"allow": ["Read"], "deny": ["WebFetch"]},
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "my-linter"}]},
                                     {"matcher": "*", "hooks": [old]},
                                     {"matcher": "Write", "hooks": [{"type": "command", "command": "fmt"}]}],
                      "Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]}}
    settings.write_text(json.dumps(mine))
    env = {**ON_PATH, "RUNTIME_CLAUDE_BIN": str(fake_cli(tmp_path / "bin", "2.1.332 (Claude Code)"))}
    proc = run_cli("hook", "install", "--catalog", str(REPO), cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "PreToolUse hook updated" in proc.stdout and "blocked (Claude Code 2.1.332)" in proc.stdout, proc.stdout
    data = json.loads(settings.read_text())
    pre = data["hooks"]["PreToolUse"]
    # where it stood, the main session now gated as `session`
    assert pre[1] == {"matcher": "*", "hooks": [{**old, "command": old["command"].replace("defer --main-session defer",
                                                 "defer --main-session session --resident"), "onFailure": "block"}]}
    assert pre[0] == mine["hooks"]["PreToolUse"][0] and pre[2] == mine["hooks"]["PreToolUse"][2]
    assert {k: v for k, v in data.items() if k not in ("hooks", "sandbox")} == {k: v for k, v in mine.items() if k != "hooks"}
    assert data["hooks"]["Stop"] == mine["hooks"]["Stop"] and data["sandbox"]["enabled"] is True
    text = settings.read_text()
    again = run_cli("hook", "install", "--catalog", str(REPO), cwd=tmp_path, env=env)
    assert again.returncode == 0 and "already installed" in again.stdout and settings.read_text() == text


@pytest.mark.parametrize(("says", "words"), [
    ("2.1.294 (Claude Code)", "is Claude Code 2.1.294, older than 2.1.295"),
    ("1.0.128 (Claude Code)", "is Claude Code 1.0.128, older than 2.1.295"),
    ("Claude Code", "not a version"),
    ("", "not a version"),
], ids=["one-below", "old-major", "no-number", "silent"])
def test_a_cli_that_would_ignore_on_failure_is_refused_with_nothing_written(tmp_path, monkeypatch, says, words):
    cli = fake_cli(tmp_path / "bin", says)
    monkeypatch.delenv("RUNTIME_CLAUDE_BIN", raising=False)
    on_path = {"PATH": f"{cli.parent}{os.pathsep}{ON_PATH['PATH']}"}  # found as `claude` on PATH, too
    for env in ({**ON_PATH, "RUNTIME_CLAUDE_BIN": str(cli)}, on_path):
        proc = run_cli("hook", "install", "--catalog", str(REPO), cwd=tmp_path, env=env)
        assert proc.returncode == 1 and proc.stdout == "", proc.stdout
        [line] = proc.stderr.splitlines()
        assert line.startswith(f"error: {cli}") and words in line, line
        assert not (tmp_path / ".claude").exists()
    # An existing file is left as it was, byte for byte.
    settings = tmp_path / ".claude/settings.json"
    settings.parent.mkdir()
    settings.write_text('{"model": "x"}')
    proc = run_cli("hook", "install", "--catalog", str(REPO), "--json", cwd=tmp_path, env=on_path)
    assert proc.returncode == 1 and proc.stdout == "" and settings.read_text() == '{"model": "x"}'


def test_json_reports_the_version_seen(tmp_path):
    cli = fake_cli(tmp_path / "bin", "2.1.295 (Claude Code)")  # the first that honours onFailure
    proc = run_cli("hook", "install", "--catalog", str(REPO), "--json", cwd=tmp_path,
                   env={**ON_PATH, "RUNTIME_CLAUDE_BIN": str(cli)})
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert (out["claude"], out["claude_version"], out["changed"]) == (str(cli), "2.1.295", True)
    assert not any("not checked" in note for note in out["notes"])


def test_without_a_cli_the_hook_is_installed_and_the_unchecked_version_said(tmp_path, monkeypatch):
    monkeypatch.delenv("RUNTIME_CLAUDE_BIN", raising=False)
    path = f"{Path(RUNTIME).parent}{os.pathsep}/usr/bin{os.pathsep}/bin"
    assert shutil.which("claude", path=path) is None
    proc = run_cli("hook", "install", "--catalog", str(REPO), cwd=tmp_path, env={"PATH": path})
    assert proc.returncode == 0, proc.stderr
    assert our_hook(tmp_path / ".claude/settings.json")["onFailure"] == "block"
    [note] = [line for line in proc.stdout.splitlines() if "not checked" in line]
    assert note.startswith("no Claude Code CLI found") and "before 2.1.295 ignores" in note, proc.stdout
    again = run_cli("hook", "install", "--catalog", str(REPO), "--json", cwd=tmp_path, env={"PATH": path})
    out = json.loads(again.stdout)
    assert out["claude"] is None and out["claude_version"] is None and note in out["notes"]


def test_a_named_cli_that_is_not_there_is_refused(tmp_path):
    proc = run_cli("hook", "install", "--catalog", str(REPO), cwd=tmp_path,
                   env={**ON_PATH, "RUNTIME_CLAUDE_BIN": str(tmp_path / "nope")})
    assert proc.returncode == 1 and "RUNTIME_CLAUDE_BIN" in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert not (tmp_path / ".claude").exists()


def test_the_pinned_cli_version_is_one_version_everywhere():
    from runtime.spawn.backends.claude_code.cli import FAIL_CLOSED_SINCE, PINNED_VERSION

    makefile = (REPO / "Makefile").read_text()
    assert f"CLAUDE_VERSION := {PINNED_VERSION}\n" in makefile
    assert f"Claude Code CLI {PINNED_VERSION}" in (REPO / "CONTRIBUTING.md").read_text()  # where `make test` is described
    assert tuple(map(int, PINNED_VERSION.split("."))) >= tuple(map(int, FAIL_CLOSED_SINCE.split(".")))
