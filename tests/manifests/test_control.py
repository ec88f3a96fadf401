"""Control files: found at any depth and in any case, and the exemptions a task may be given."""

from __future__ import annotations

import pytest

from runtime.manifests.control import CONTROL, NEVER_EXEMPT, control_name, exempted


@pytest.mark.parametrize("path,name", [
    (".git", ".git"),
    (".git/config", ".git"),
    ("sub/.git/HEAD", ".git"),
    ("vendor/lib/.GIT", ".git"),
    (".git.", ".git"),
    (".git. . ", ".git"),
    (".gitmodules", ".gitmodules"),
    ("deep/.GitModules", ".gitmodules"),
    (".claude/settings.json", ".claude"),
    ("pkg/.Claude/agents/x.md", ".claude"),
    (".mcp.json", ".mcp.json"),
    ("a/.MCP.JSON", ".mcp.json"),
    (".agent-runtime/roles/r.toml", ".agent-runtime"),
    ("/abs/project/.agent-runtime", ".agent-runtime"),
])
def test_control_name_finds_the_control_component(path, name):
    assert control_name(path) == name


@pytest.mark.parametrize("path", [
    "", "src/app.py", ".gitignore", ".github/workflows/ci.yml", ".gitattributes", ".git-blame-ignore-revs",
    "docs/.git-notes", ".claude-plugin/plugin.json", ".mcp.json.bak", "mcp.json", ".agent-runtime-old/x", "git/.x",
    "a.git/b", "src/my.claude/x",
])
def test_control_name_leaves_other_paths_alone(path):
    assert control_name(path) is None


def test_every_control_name_is_described_and_git_is_never_exempt():
    assert all(isinstance(v, str) and v for v in CONTROL.values())
    assert NEVER_EXEMPT == {".git"} and NEVER_EXEMPT <= set(CONTROL)


@pytest.mark.parametrize("resolved,exempt,expected", [
    ("/w/.claude", ("/w/.claude",), True),
    ("/w/.claude/settings.json", ("/w/.claude",), True),
    ("/w/.claude-other/x", ("/w/.claude",), False),
    ("/w/.claudex", ("/w/.claude",), False),
    ("/w", ("/w/.claude",), False),
    ("/w/.mcp.json", ("/w/.claude", "/w/.mcp.json"), True),
    ("/w/.mcp.json", (), False),
])
def test_exempted_means_the_path_or_inside_it(resolved, exempt, expected):
    assert exempted(resolved, exempt) is expected
