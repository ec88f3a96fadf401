"""`runtime allow 'COMMAND' [--role R]`: a refused call's reason leads to the rule, and the rule to the call allowed.

Real processes throughout: the hook (`runtime check`) as `runtime hook install` writes it for a person's session,
`runtime allow` run as the reason spells it, and `runtime explain`, against a real git repository.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_cli, snapshot

ALLOW_COMMAND = re.compile(r"`(runtime allow '[^']*' --role [a-z-]+)`")


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "Makefile").write_text("test:\n\ttrue\nlint:\n\ttrue\n")
    (root / "GNUmakefile").write_text("test:\n\ttrue\n")  # what make reads first: lint is no target of it
    return root.resolve()


def session_hook(repo: Path, command: str, **extra) -> tuple[int, dict]:
    call = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": command},
            "cwd": str(repo), **extra}
    proc = run_cli("check", "--on-allow", "defer", "--main-session", "session", input=json.dumps(call),
                   env={"CLAUDE_PROJECT_DIR": str(repo), "RUNTIME_CACHE_DIR": str(repo.parent / "cache")})
    answer = json.loads(proc.stdout)["hookSpecificOutput"] if proc.stdout.strip() else {}
    return proc.returncode, answer


def test_the_reason_of_an_ask_leads_to_the_rule_and_the_call_is_allowed_next_time(repo):
    code, answer = session_hook(repo, "make lint")
    assert code == 0 and answer["permissionDecision"] == "ask", answer
    found = ALLOW_COMMAND.search(answer["permissionDecisionReason"])
    assert found and found.group(1) == "runtime allow 'make lint' --role session", answer
    proc = run_cli(*shlex.split(found.group(1))[1:], cwd=repo)
    assert proc.returncode == 0, proc.stderr
    role = repo / ".agent-runtime/roles/session.toml"
    assert f"+++ {role}" in proc.stdout and '+program = "make"' in proc.stdout and '+subcommands = ["lint"]' in proc.stdout
    assert "the gate now allows it" in proc.stdout
    text = role.read_text()
    assert 'extends = "session"' in text and "for-sessions = true" in text and "spawnable = false" in text
    code, answer = session_hook(repo, "make lint")
    assert code == 0 and answer == {}  # allowed: deferred to Claude Code's own rules, as every allowed call
    # The rule adds to the shipped session role; it takes nothing away.
    code, answer = session_hook(repo, "git push origin main")
    assert code == 2 and answer["permissionDecision"] == "deny" and "never allowed" in answer["permissionDecisionReason"]
    code, answer = session_hook(repo, "make install")
    assert answer["permissionDecision"] == "ask"
    code, answer = session_hook(repo, "touch x", agent_type="Explore")  # Explore still gated as explorer
    assert code == 2 and "read-only" in answer["permissionDecisionReason"]
    assert run_cli("lint", cwd=repo).returncode == 0
    again = run_cli("allow", "make lint", "--role", "session", cwd=repo)
    assert again.returncode == 0 and again.stdout.startswith("role `session` already allows it") and role.read_text() == text
    code, answer = session_hook(repo, "make test")  # the repository's own target, beside the rule added
    assert code == 0 and answer == {}


def test_the_project_role_is_made_on_first_use_and_restates_the_rules_it_replaces(repo):
    proc = run_cli("allow", "cargo fmt", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    text = (repo / ".agent-runtime/roles/project.toml").read_text()
    assert 'extends = "edit-local"' in text
    # edit-local's cargo rules, restated before the new one: a role's rules for a program replace its parent's.
    assert text.index('grammar = "cargo"\nsubcommands = ["check"') < text.index('subcommands = ["fmt"]')
    for command in ("cargo fmt", "cargo test", "pytest -q"):
        explained = run_cli("explain", "--role", "project", command, cwd=repo)
        assert explained.returncode == 0 and explained.stdout.startswith("allow"), (command, explained.stdout)
    assert run_cli("explain", "--role", "project", "cargo fmt --all", cwd=repo).returncode == 3  # only what was given
    second = run_cli("allow", "npm run dev", "--json", cwd=repo)
    doc = json.loads(second.stdout)
    assert second.returncode == 0 and doc["written"] and doc["rules"][0]["program"] == "npm"
    assert doc["rules"][0]["subcommands"] == ["run dev"]
    assert (repo / ".agent-runtime/roles/project.toml").read_text().count("program = \"cargo\"") == 3  # not again


@pytest.mark.parametrize("command,role,why", [
    ("git push origin main", "session", "a rule forbids it"),
    ("python -c 'print(1)'", "session", "runs a script or code given to it"),
    ("./scripts/run.sh", "project", "by its path"),
    ("for f in $(ls); do echo $f; done", "project", "the gate cannot read all of what it runs"),
    ("echo x > .git/config", "session", "a rule forbids it"),
    ("make lint", "nobody", "unknown role `nobody`"),
    ("make lint", "Bad_Name", "role name"),
])
def test_what_no_rule_may_allow_is_refused_and_nothing_is_written(repo, command, role, why):
    before = snapshot(repo)
    proc = run_cli("allow", command, "--role", role, cwd=repo)
    assert proc.returncode == 1 and proc.stderr.startswith("runtime allow: ") and why in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert snapshot(repo) == before


def test_a_dry_run_shows_the_change_and_writes_nothing(repo):
    before = snapshot(repo)
    proc = run_cli("allow", "make lint", "--role", "session", "--dry-run", cwd=repo)
    assert proc.returncode == 0 and '+subcommands = ["lint"]' in proc.stdout and "would add 1 rule" in proc.stdout
    assert snapshot(repo) == before


def _mcp_hook(repo: Path, tool: str, home: Path, **extra) -> tuple[int, dict]:
    call = {"hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": {"q": "x"}, "cwd": str(repo), **extra}
    proc = run_cli("check", "--on-allow", "defer", "--main-session", "session", input=json.dumps(call),
                   env={"CLAUDE_PROJECT_DIR": str(repo), "RUNTIME_CACHE_DIR": str(repo.parent / "cache"),
                        "HOME": str(home)})
    answer = json.loads(proc.stdout)["hookSpecificOutput"] if proc.stdout.strip() else {}
    return proc.returncode, answer


def test_an_mcp_tool_the_gate_asks_about_gets_its_rule_per_tool_or_per_server(repo, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".claude.json").write_text(json.dumps({"mcpServers": {"notes": {"command": "n"}, "wiki": {"command": "w"}}}))
    code, answer = _mcp_hook(repo, "mcp__notes__search", home)
    assert code == 0 and answer["permissionDecision"] == "ask", answer
    assert "`runtime allow mcp__notes__search --role session`" in answer["permissionDecisionReason"]
    proc = run_cli("allow", "mcp__notes__search", "--role", "session", cwd=repo, env={"HOME": str(home)})
    assert proc.returncode == 0 and "the gate now allows it" in proc.stdout, proc.stderr
    assert '+[[params."tools::mcp-allowlist".servers]]' in proc.stdout and '+tools = ["search"]' in proc.stdout
    assert _mcp_hook(repo, "mcp__notes__search", home) == (0, {})  # allowed: deferred to Claude Code
    assert _mcp_hook(repo, "mcp__notes__delete", home)[1]["permissionDecision"] == "ask"  # its other tools: asked
    proc = run_cli("allow", "mcp__wiki__*", "--role", "session", cwd=repo, env={"HOME": str(home)})
    assert proc.returncode == 0, proc.stderr
    text = (repo / ".agent-runtime/roles/session.toml").read_text()
    assert text.count('[[params."tools::mcp-allowlist".servers]]') == 2 and 'tools = ["*"]' in text
    assert _mcp_hook(repo, "mcp__wiki__edit", home) == (0, {})
    assert _mcp_hook(repo, "mcp__notes__search", home) == (0, {})  # the first rule kept
    # The person's own Claude Code rule: the gate's ask is deferred to it; a deny stays a deny.
    (home / ".claude").mkdir()
    (home / ".claude/settings.json").write_text(json.dumps({"permissions": {"allow": ["mcp__notes", "mcp__ghost"]}}))
    assert _mcp_hook(repo, "mcp__notes__delete", home) == (0, {})
    code, answer = _mcp_hook(repo, "mcp__ghost__x", home)
    assert code == 2 and "not one you or the repository configure" in answer["permissionDecisionReason"]


@pytest.mark.parametrize("tool", ["mcp__notes", "mcp__no tes__x", "mcp__notes__a b", "mcp__notes__a*"])
def test_what_is_no_mcp_tool_s_name_is_refused(repo, tool):
    before = snapshot(repo)
    proc = run_cli("allow", tool, "--role", "session", cwd=repo)
    assert proc.returncode == 1 and "not an MCP tool's name" in proc.stderr, proc.stderr
    assert snapshot(repo) == before
