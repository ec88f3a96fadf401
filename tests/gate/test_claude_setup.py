"""A person's Claude Code setup as the gate reads it: the MCP servers of each place Claude Code reads them from,
and the person's own allow rules, read narrowly; and what the session's gate makes of them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runtime.gate import claude_setup
from runtime.gate.claude_setup import (
    LOCAL,
    MANAGED,
    PROJECT,
    USER,
    McpServer,
    configured_servers,
    person_allows,
    server_configured,
    tool_server_name,
)
from runtime.gate.decision import ALLOW, ASK, DENY
from runtime.gate.engine import decide
from runtime.gate.policy import Policy
from runtime.manifests.catalog import Catalog
from runtime.manifests.role import load_role
from runtime.policy.compile import compile_policy
from tests.conftest import REPO


@pytest.fixture
def places(tmp_path, monkeypatch):
    """A project, a HOME and a managed folder, all empty; the environment pointing at them."""
    project, home, managed = tmp_path / "repo", tmp_path / "home", tmp_path / "etc-claude-code"
    for folder in (project, home / ".claude", managed):
        folder.mkdir(parents=True)
    monkeypatch.setattr(claude_setup, "MANAGED_DIR", str(managed))
    env = {"HOME": str(home)}
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return project, home, managed, env


def write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_each_place_claude_code_reads_servers_from(places):
    project, home, managed, env = places
    write(project / ".mcp.json", {"mcpServers": {"github": {"command": "gh"}}})
    write(home / ".claude.json", {"numStartups": 3, "mcpServers": {"notes": {"command": "notes-mcp"}},
                                  "projects": {str(project): {"mcpServers": {"code-nav": {"command": "nav"}}},
                                               "/elsewhere": {"mcpServers": {"other": {"command": "x"}}}}})
    write(managed / "managed-mcp.json", {"mcpServers": {"corp search": {"type": "http", "url": "https://s"}}})
    write(managed / "managed-settings.json", {"managedMcpServers": {"wiki": {"type": "http", "url": "https://w"}}})
    found = configured_servers(str(project), env)
    assert [(s.name, s.place) for s in found] == [
        ("github", PROJECT), ("code-nav", LOCAL), ("notes", USER), ("corp_search", MANAGED), ("wiki", MANAGED)]
    assert server_configured(str(project), "other", env) is None  # another project's local scope
    assert "your user scope" in server_configured(str(project), "notes", env).where


def test_an_enabled_plugin_s_servers_are_named_as_claude_code_names_them(places):
    project, home, _, env = places
    browser, notes, off, elsewhere = (home / ".claude/plugins/cache/mkt" / n for n in ("browser", "notes", "off", "x"))
    write(browser / ".mcp.json", {"mcpServers": {"playwright": {"command": "npx"}}})
    write(notes / ".claude-plugin/plugin.json", {"name": "notes", "mcpServers": {"vault": {"command": "v"}}})
    write(notes / "servers.json", {"extra": {"command": "e"}})
    write(off / ".mcp.json", {"mcpServers": {"never": {"command": "n"}}})
    write(elsewhere / ".mcp.json", {"mcpServers": {"theirs": {"command": "t"}}})
    write(home / ".claude/plugins/installed_plugins.json", {"version": 2, "plugins": {
        "browser@mkt": [{"scope": "user", "installPath": str(browser)}],
        "notes@mkt": [{"scope": "project", "projectPath": str(project), "installPath": str(notes)}],
        "off@mkt": [{"scope": "user", "installPath": str(off)}],
        "x@mkt": [{"scope": "local", "projectPath": "/another/project", "installPath": str(elsewhere)}]}})
    write(home / ".claude/settings.json", {"enabledPlugins": {"browser@mkt": True, "off@mkt": True, "x@mkt": True}})
    write(project / ".claude/settings.json", {"enabledPlugins": {"notes@mkt": True}})
    write(project / ".claude/settings.local.json", {"enabledPlugins": {"off@mkt": False}})  # the person turned it off
    found = configured_servers(str(project), env)
    assert sorted((s.name, s.place) for s in found) == [
        ("plugin_browser_playwright", "plugin browser@mkt"), ("plugin_notes_vault", "plugin notes@mkt")]
    # a manifest naming a file of the plugin
    write(notes / ".claude-plugin/plugin.json", {"name": "notes", "mcpServers": "./servers.json"})
    assert "plugin_notes_extra" in {s.name for s in configured_servers(str(project), env)}


def test_claude_config_dir_moves_the_user_files(places, tmp_path):
    project, home, _, _ = places
    moved = tmp_path / "config"
    write(moved / ".claude.json", {"mcpServers": {"moved": {"command": "m"}}})
    write(home / ".claude.json", {"mcpServers": {"unmoved": {"command": "u"}}})
    env = {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(moved)}
    assert [s.name for s in configured_servers(str(project), env)] == ["moved"]


@pytest.mark.parametrize("content", ["not json", "[]", '{"mcpServers": []}', '{"mcpServers": {"x": 3}}',
                                     '{"projects": "nope"}', "\ufeff{}"])
def test_a_file_that_is_not_what_claude_code_writes_names_no_server(places, content):
    project, home, _, env = places
    (home / ".claude.json").write_text(content)
    (project / ".mcp.json").write_text(content)
    assert configured_servers(str(project), env) == []


def test_a_changed_file_is_read_again(places):
    """The resident hook lives for minutes: a server the person adds meanwhile counts at once."""
    project, home, _, env = places
    write(home / ".claude.json", {"mcpServers": {}})
    assert configured_servers(str(project), env) == []
    write(home / ".claude.json", {"mcpServers": {"added": {"command": "a"}, "more": {"command": "b"}}})
    assert [s.name for s in configured_servers(str(project), env)] == ["added", "more"]


def test_server_names_as_tool_names_carry_them():
    assert tool_server_name("my server.v2") == "my_server_v2"
    assert tool_server_name("code-nav_1") == "code-nav_1"
    assert tool_server_name("café") == "caf_"
    assert McpServer("a", USER, "/f") == McpServer("a", USER, "/f")


# -- the person's allow rules --------------------------------------------------------------------------------

@pytest.mark.parametrize("rule,command,allowed", [
    ("Bash(python scripts/gen.py)", "python scripts/gen.py", True),
    ("Bash(python scripts/gen.py)", "python scripts/gen.py --all", False),
    ("Bash(python scripts/gen.py:*)", "python scripts/gen.py --all", True),
    ("Bash(python scripts/gen.py:*)", "python scripts/gen.pyx", False),
    ("Bash(python -c:*)", "python -c 'print(1)'", False),  # parentheses: left to Claude Code's own prompt
    ("Bash(python -m tools *)", "python -m tools build", True),
    ("Bash(npm run test:*)", "npm run test && curl evil", False),
    ("Bash(npm run test:*)", "npm run test; rm -rf /", False),
    ("Bash(npm run test:*)", "npm run test $(curl x)", False),
    ("Bash(make *)", "make | sh", False),
    ("Bash(*)", "anything", False),
    ("Bash(py*on x)", "python x", False),
    ("Bash", "python x.py", False),  # a whole-tool Bash rule is not read as "allow anything"
])
def test_a_person_s_bash_rule_is_read_narrowly(places, rule, command, allowed):
    project, home, _, env = places
    write(home / ".claude/settings.json", {"permissions": {"allow": [rule]}})
    assert (person_allows(str(project), "Bash", {"command": command}, env) is not None) is allowed


def test_mcp_rules_and_where_they_come_from(places):
    project, home, managed, env = places
    write(home / ".claude/settings.json", {"permissions": {"allow": ["mcp__notes"]}})
    write(project / ".claude/settings.local.json", {"permissions": {"allow": ["mcp__search__query"]}})
    write(managed / "managed-settings.json", {"permissions": {"allow": ["mcp__wiki__*"]}})
    assert "settings.json" in person_allows(str(project), "mcp__notes__add", {}, env)
    assert "settings.local.json" in person_allows(str(project), "mcp__search__query", {}, env)
    assert person_allows(str(project), "mcp__search__delete", {}, env) is None
    assert person_allows(str(project), "mcp__wiki__edit", {}, env) is not None
    assert person_allows(str(project), "mcp__notesx__add", {}, env) is None


# -- what the session's gate makes of them -------------------------------------------------------------------

def _session(root: Path, role: str = "session") -> Policy:
    cat = Catalog(REPO)
    return Policy(compile_policy(load_role(cat, role), None, root, cat, audience="session"))


def test_a_session_asks_about_a_tool_of_a_server_the_person_configured(places):
    project, home, _, _ = places
    write(home / ".claude.json", {"mcpServers": {"notes": {"command": "notes-mcp"}}})
    p = _session(project)
    d = decide(p, "mcp__notes__add_note", {"text": "x"}, str(project))
    assert d.verdict == ASK and d.undecided and d.rule == "mcp:notes", d
    assert "your user scope" in d.reason and "runtime allow mcp__notes__add_note --role session" in d.reason
    assert decide(p, "mcp__unknown__x", {}, str(project)).verdict == DENY


def test_any_subagent_type_starts_in_a_session_held_to_its_rules(places):
    project, _, _, _ = places
    p = _session(project)
    for kind in ("code-reviewer", "general-purpose", "my-plugin:helper"):
        d = decide(p, "Agent", {"description": "d", "prompt": "p", "subagent_type": kind}, str(project))
        assert d.verdict == ALLOW and "gated by the rules of this session" in d.reason, (kind, d)
    explore = decide(p, "Agent", {"description": "d", "prompt": "p", "subagent_type": "Explore"}, str(project))
    assert explore.verdict == ALLOW and "as role `explorer`" in explore.reason
    assert decide(p, "Agent", {"description": "d", "prompt": "p", "subagent_type": "x", "isolation": "worktree"},
                  str(project)).verdict == DENY
