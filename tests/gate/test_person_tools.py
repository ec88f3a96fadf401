"""The harness's tools of a person's own session (kinds.PERSON_TOOLS, kinds.SUBAGENT_TOOLS): shown by the
`session` role, each under a rule; never by a spawned agent's role."""

from pathlib import Path

import pytest

from runtime.errors import ManifestError
from runtime.gate.decision import ALLOW, DENY
from runtime.gate.engine import decide
from runtime.gate.policy import Policy
from runtime.manifests.catalog import Catalog
from runtime.manifests.kinds import BUILTIN_SUBAGENTS, PERSON_TOOLS, SUBAGENT_TOOLS
from runtime.manifests.role import load_role
from runtime.policy.compile import compile_policy
from tests.conftest import REPO

# What each tool's input looks like in real sessions.
CALLS = {
    "AskUserQuestion": {"questions": [{"question": "Which database?", "header": "Database", "multiSelect": False,
                                       "options": [{"label": "Postgres", "description": "the server"},
                                                   {"label": "SQLite", "description": "a file"}]}]},
    "EnterPlanMode": {},
    "ExitPlanMode": {"plan": "1. fix the parser\n2. add a test", "allowedPrompts": [{"tool": "Bash", "prompt": "run tests"}]},
    "Skill": {"skill": "commit", "args": "-m fix"},
}


@pytest.fixture
def session(tmp_path) -> Policy:
    root = tmp_path / "repo"
    root.mkdir()
    catalog = Catalog(REPO)
    return Policy(compile_policy(load_role(catalog, "session"), None, root, catalog, audience="session"))


def test_every_person_tool_has_a_real_call_here():
    assert set(CALLS) == set(PERSON_TOOLS)


@pytest.mark.parametrize("tool", sorted(CALLS))
def test_the_session_role_allows_the_person_s_tools_with_their_reason(session, tool):
    d = decide(session, tool, CALLS[tool], session.root)
    assert d.verdict == ALLOW and d.rule == "person-tools", d
    assert d.reason and "person" in d.reason or "skill" in d.reason or "plan" in d.reason


@pytest.mark.parametrize("tool", sorted(CALLS))
def test_a_field_a_person_tool_does_not_take_is_denied(session, tool):
    d = decide(session, tool, {**CALLS[tool], "file_path": "/etc/passwd"}, session.root)
    assert d.verdict == DENY and "(file_path)" in d.reason


def test_a_skill_without_a_name_is_denied(session):
    assert decide(session, "Skill", {"args": "x"}, session.root).verdict == DENY


@pytest.mark.parametrize("tool", sorted(SUBAGENT_TOOLS))
@pytest.mark.parametrize("kind,role", [("Explore", "explorer"), ("Plan", "read-only"), ("explorer", "explorer"),
                                       ("edit-local", "edit-local")])
def test_a_subagent_whose_type_is_a_role_starts_and_is_gated_by_it(session, tool, kind, role):
    d = decide(session, tool, {"description": "look", "prompt": "find the parser", "subagent_type": kind,
                               "run_in_background": False}, session.root)
    assert d.verdict == ALLOW and d.rule == "subagents", d
    assert f"`{kind}`" in d.reason and (kind == role or f"as role `{role}`" in d.reason)
    assert session.subagents[kind] == role


@pytest.mark.parametrize("kind", ["general-purpose", "claude", "claude-code-guide", "git-ops", "session",
                                  "my-plugin:reviewer"])
def test_a_subagent_no_role_holds_starts_held_to_the_session_s_own_rules(session, kind):
    """A type no spawnable role names (Claude Code's others, the person's, a plugin's, a role no agent may take)
    starts: the hook holds each of its calls to the session's rules (`runtime check` maps it so)."""
    d = decide(session, "Agent", {"description": "x", "prompt": "y", "subagent_type": kind}, session.root)
    assert d.verdict == ALLOW and d.rule == "subagents", d
    assert "gated by the rules of this session (role `session`)" in d.reason
    assert kind not in session.subagents


def test_a_subagent_without_a_type_is_refused_naming_the_ones_that_start(session):
    d = decide(session, "Agent", {"description": "x", "prompt": "y"}, session.root)
    assert d.verdict == DENY and d.rule == "subagents"
    assert "start one of these instead: `Explore` (as explorer), `Plan` (as read-only)" in d.reason
    assert "once `runtime export claude-agents` has written the roles as subagents: `edit-local`" in d.reason


def test_an_agent_s_role_refuses_a_subagent_no_role_holds(catalog_copy: Path):
    """Outside a person's session (a role's own policy, audience agent), a type no role holds is still refused."""
    cat = Catalog(catalog_copy)
    role = load_role(cat, "session")
    agent = Policy(compile_policy(role, None, catalog_copy, cat))
    d = decide(agent, "Agent", {"description": "x", "prompt": "y", "subagent_type": "general-purpose"}, agent.root)
    assert d.verdict == DENY and "Claude Code's own catch-all subagent" in d.reason


def test_a_subagent_in_a_worktree_of_its_own_is_refused_saying_why(session):
    d = decide(session, "Agent", {"description": "x", "prompt": "y", "subagent_type": "Explore", "isolation": "worktree",
                                  "effort": "low"}, session.root)
    assert d.verdict == DENY and "start it without `isolation`" in d.reason


def test_the_session_s_subagents_are_the_spawnable_roles_and_the_builtins_mapped_to_them(session):
    catalog = Catalog(REPO)
    spawnable = {n for n in catalog.role_names() if load_role(catalog, n).spawnable}
    mapped = {k: v for k, v in BUILTIN_SUBAGENTS.items() if v is not None}
    assert session.subagents == {**{n: n for n in spawnable}, **mapped}


def test_a_spawned_agent_s_role_never_shows_them(catalog_copy: Path):
    (catalog_copy / "roles/asks.toml").write_text('''[role]
name = "asks"
display-name = "d"
description = "d"
use-cases = ["u"]

[capabilities]
extends = "explorer"

[tools]
shown = ["Read", "AskUserQuestion"]
''')
    with pytest.raises(ManifestError) as caught:
        load_role(Catalog(catalog_copy), "asks")
    assert "`AskUserQuestion` is a tool of a person's own session" in caught.value.message
    assert caught.value.line == 11


@pytest.mark.parametrize("role", ["read-only", "explorer", "edit-local"])
@pytest.mark.parametrize("tool", sorted({*PERSON_TOOLS, *SUBAGENT_TOOLS}))
def test_spawned_agents_roles_deny_them(policy_for, worktree, role, tool):
    d = decide(policy_for(role), tool, CALLS.get(tool, {"description": "x", "prompt": "y", "subagent_type": "explorer"}),
               str(worktree))
    assert d.verdict == DENY and d.rule == "tools"
