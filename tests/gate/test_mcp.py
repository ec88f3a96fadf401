"""MCP tools (`mcp__<server>__<tool>`) under `tools::mcp-allowlist`: allowed or asked by rules naming server and
tool, their path and URL fields checked as the file and web tools check theirs; the servers the repository
configures asked in a person's session, never allowed silently; anything else refused with the rule that
would allow it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runtime.errors import ManifestError
from runtime.gate.decision import ALLOW, ASK, DENY
from runtime.gate.engine import decide
from runtime.gate.policy import Policy
from runtime.manifests.catalog import Catalog
from runtime.manifests.params import check_value
from runtime.manifests.role import load_role
from runtime.policy.compile import compile_policy
from tests.conftest import REPO


def policy(root: Path, role: str = "session", rules: list[dict] | None = None, catalog: Path = REPO) -> Policy:
    cat = Catalog(catalog)
    resolved = load_role(cat, role)
    if rules is not None:
        resolved.params.setdefault("tools::mcp-allowlist", {})["servers"] = check_value("mcp-rules", rules)
    return Policy(compile_policy(resolved, None, root, cat, audience="session" if role == "session" else "agent"))


@pytest.fixture
def root(tmp_path) -> Path:
    found = tmp_path / "repo"
    found.mkdir()
    return found


def test_a_rule_allows_its_server_s_tools_and_no_other(root):
    p = policy(root, "edit-local", [{"server": "github", "tools": ["get_*", "list_issues"]}])
    d = decide(p, "mcp__github__get_issue", {"owner": "o", "repo": "r", "issue_number": 1}, str(root))
    assert d.verdict == ALLOW and d.atom == "tools::mcp-allowlist" and d.rule == "mcp:github", d
    assert decide(p, "mcp__github__list_issues", {}, str(root)).verdict == ALLOW
    refused = decide(p, "mcp__github__create_pull_request", {"title": "x"}, str(root))
    assert refused.verdict == DENY and refused.rule == "mcp"
    assert 'server = "github"' in refused.reason and 'tools = ["create_pull_request"]' in refused.reason
    assert ".agent-runtime/roles/project.toml" in refused.reason
    assert decide(p, "mcp__slack__post", {}, str(root)).verdict == DENY


def test_ask_leaves_each_call_to_a_person(root):
    p = policy(root, "edit-local", [{"server": "github", "tools": ["*"], "ask": True}])
    d = decide(p, "mcp__github__merge_pull_request", {"pull_number": 3}, str(root))
    assert d.verdict == ASK and "a person decides each call" in d.reason


def test_fields_naming_paths_are_checked_as_the_file_tools_check_theirs(root):
    p = policy(root, "edit-local", [{"server": "fs", "tools": ["*"], "reads": ["source"], "writes": ["path"]}])
    assert decide(p, "mcp__fs__write", {"path": str(root / "src/a.py"), "content": "x"}, str(root)).verdict == DENY  # no scope
    scoped = policy(root, "session", [{"server": "fs", "tools": ["*"], "reads": ["source"], "writes": ["path"]}])
    assert decide(scoped, "mcp__fs__write", {"path": str(root / "src/a.py"), "content": "x"}, str(root)).verdict == ALLOW
    for bad in ("/etc/hosts", str(root / ".git/hooks/pre-commit"), "~/.bashrc"):
        d = decide(scoped, "mcp__fs__write", {"path": bad, "content": "x"}, str(root))
        assert d.verdict == DENY, (bad, d)
    assert decide(scoped, "mcp__fs__copy", {"source": "/etc/passwd"}, str(root)).verdict == ALLOW  # reads are unscoped
    assert decide(scoped, "mcp__fs__copy", {"source": ""}, str(root)).verdict == DENY


def test_fields_naming_urls_reach_only_the_role_s_domains(root):
    p = policy(root, "session", [{"server": "web", "tools": ["fetch"], "urls": ["url"]}])
    d = decide(p, "mcp__web__fetch", {"url": "https://example.com/"}, str(root))
    assert d.verdict == DENY and "`url` refused" in d.reason


def test_a_person_s_session_is_asked_for_the_servers_the_repository_configures(root, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no servers of the person's own
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": {"github": {"command": "gh"}, "bad__name": {}}}))
    p = policy(root)
    d = decide(p, "mcp__github__get_issue", {"issue_number": 1}, str(root))
    assert d.verdict == ASK and d.rule == "mcp:github" and d.undecided, d
    assert "the repository's .mcp.json" in d.reason and "`runtime allow mcp__github__get_issue --role session`" in d.reason
    other = decide(p, "mcp__slack__post", {"text": "x"}, str(root))
    assert other.verdict == DENY and "not one you or the repository configure" in other.reason
    assert ".mcp.json" in other.reason and "~/.claude.json" in other.reason
    # an agent's role never takes the configured servers by itself
    assert decide(policy(root, "edit-local"), "mcp__github__get_issue", {}, str(root)).verdict == DENY


def test_configured_servers_a_rule_names_keep_their_rule(root, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": {"github": {}, "docs": {}}}))
    p = policy(root, "session", [{"server": "github", "tools": ["get_*"]}])
    assert decide(p, "mcp__github__get_issue", {}, str(root)).verdict == ALLOW
    assert decide(p, "mcp__github__delete_repo", {}, str(root)).verdict == ASK  # configured: asked, not allowed
    assert decide(p, "mcp__docs__search", {}, str(root)).verdict == ASK


@pytest.mark.parametrize("rule,words", [
    ({"server": "git__hub", "tools": ["*"]}, "not an MCP server's name"),
    ({"server": "github", "tools": []}, "at least one tool"),
    ({"server": "github", "tools": ["get issue"]}, "not an MCP tool's name"),
    ({"server": "github", "tools": ["*"], "writes": ["a.b"]}, "not an input field's name"),
    ({"server": "github", "tools": ["*"], "runs": True}, "unknown key"),
])
def test_a_rule_that_is_not_one_is_refused_saying_why(rule, words):
    with pytest.raises(ValueError, match="rule 1") as caught:
        check_value("mcp-rules", [rule])
    assert words in str(caught.value)


def test_a_project_role_may_name_rules_and_lint_reads_them(catalog_copy):
    (catalog_copy / "roles/mcp.toml").write_text('''[role]
name = "mcp"
display-name = "d"
description = "d"
use-cases = ["u"]

[capabilities]
extends = "explorer"

[[params."tools::mcp-allowlist".servers]]
server = "github"
tools = ["get_*"]
reads = ["path"]
''')
    role = load_role(Catalog(catalog_copy), "mcp")
    assert role.params["tools::mcp-allowlist"]["servers"][0].server == "github"
    (catalog_copy / "roles/mcp.toml").write_text((catalog_copy / "roles/mcp.toml").read_text().replace(
        'tools = ["get_*"]', "tools = []"))
    with pytest.raises(ManifestError):
        load_role(Catalog(catalog_copy), "mcp")
