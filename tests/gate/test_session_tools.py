"""The harness's session tools (checklist, background output): shown by `[tools] session`, fields checked."""

import pytest

from runtime.gate.decision import ALLOW, DENY
from runtime.gate.engine import decide
from runtime.gate.policy import Policy
from runtime.manifests.catalog import Catalog
from runtime.manifests.kinds import SESSION_TOOLS, TOOLS
from runtime.manifests.role import load_role
from runtime.policy.compile import compile_policy
from runtime.tooling.doc_roles import render

# What each tool's input looks like in real sessions (Claude Code 2.x transcripts).
CALLS = {
    "TodoWrite": {"todos": [{"content": "Fix the parser", "status": "in_progress", "activeForm": "Fixing the parser"}]},
    "TodoRead": {},
    "TaskCreate": {"subject": "Fix the parser", "description": "off by one", "activeForm": "Fixing"},
    "TaskGet": {"taskId": "1"},
    "TaskList": {},
    "TaskUpdate": {"taskId": "1", "status": "completed"},
    "BashOutput": {"bash_id": "bash_1", "filter": "FAILED"},
    "TaskOutput": {"task_id": "b1", "block": True, "timeout": 30000},
    "KillShell": {"shell_id": "bash_1"},
    "KillBash": {"shell_id": "bash_1"},
    "TaskStop": {"task_id": "b1"},
    "ToolSearch": {"query": "select:TaskStop", "max_results": 1},
}


def test_every_session_tool_has_a_real_call_here():
    assert set(CALLS) == set(SESSION_TOOLS) and not set(SESSION_TOOLS) & set(TOOLS)


@pytest.mark.parametrize("role", ["read-only", "explorer", "edit-local"])
@pytest.mark.parametrize("tool", sorted(CALLS))
def test_the_shipped_roles_allow_the_session_tools(policy_for, worktree, role, tool):
    d = decide(policy_for(role), tool, CALLS[tool], str(worktree))
    assert d.verdict == ALLOW and d.rule == "session-tools", d


@pytest.mark.parametrize("tool", sorted(CALLS))
def test_a_field_the_gate_does_not_know_is_denied_and_named(policy_for, worktree, tool):
    d = decide(policy_for(), tool, {**CALLS[tool], "file_path": "/etc/passwd"}, str(worktree))
    assert d.verdict == DENY and "(file_path)" in d.reason
    assert "call it with only the fields it checks" in d.reason


@pytest.mark.parametrize("tool,tool_input", [
    ("Agent", {"prompt": "x", "description": "y", "subagent_type": "general-purpose"}),
    ("Task", {"prompt": "x", "description": "y", "subagent_type": "general-purpose"}),
    ("Skill", {"skill": "pdf"}),
    ("Workflow", {"name": "x"}),
    ("ScheduleWakeup", {"delay_seconds": 60}),
    ("Monitor", {"command": "tail -f log"}),
    ("CronCreate", {"cron": "* * * * *", "prompt": "x"}),
    ("LSP", {"operation": "hover"}),
    ("EnterWorktree", {"name": "x"}),
    ("DeferredToolPlaceholder", {}),
])
def test_tools_that_delegate_or_run_later_stay_denied(policy_for, worktree, tool, tool_input):
    d = decide(policy_for(), tool, tool_input, str(worktree))
    assert d.verdict == DENY and d.rule == "tools"
    assert "do the work yourself with the tools you may use" in d.reason and "TodoWrite" in d.reason


def _role(catalog_copy, name, extends, tools=""):
    (catalog_copy / f"roles/{name}.toml").write_text(f'''[role]
name = "{name}"
display-name = "d"
description = "d"
use-cases = ["u"]

[capabilities]
extends = "{extends}"
{tools}''')
    return load_role(Catalog(catalog_copy), name)


def test_session_is_inherited_and_a_role_may_turn_it_off(catalog_copy, tmp_path):
    catalog = Catalog(catalog_copy)
    assert load_role(catalog, "read-only").session and load_role(catalog, "edit-local").session
    inherits = _role(catalog_copy, "inherits", "explorer")
    assert inherits.session
    # a role that declares its own [tools] without `session` still inherits it
    shows = _role(catalog_copy, "shows", "explorer", '\n[tools]\nshown = ["Read", "Bash"]\n')
    assert shows.session and shows.tools == ("Read", "Bash")
    off = _role(catalog_copy, "quiet", "explorer", '\n[tools]\nshown = ["Read", "Bash"]\nsession = false\n')
    assert not off.session
    root = tmp_path / "wt"
    root.mkdir()
    policy = Policy(compile_policy(off, None, root, Catalog(catalog_copy)))
    assert policy.tools == {"Read", "Bash"}
    d = decide(policy, "TodoWrite", CALLS["TodoWrite"], str(root))
    assert d.verdict == DENY and d.rule == "tools"
    on = Policy(compile_policy(shows, None, root, Catalog(catalog_copy)))
    assert on.tools == {"Read", "Bash", *SESSION_TOOLS}
    assert decide(on, "TodoWrite", CALLS["TodoWrite"], str(root)).verdict == ALLOW


def test_a_role_that_is_not_a_boolean_is_refused(catalog_copy):
    from runtime.errors import ManifestError

    with pytest.raises(ManifestError, match=r"bad.toml:\d+"):
        _role(catalog_copy, "bad", "explorer", '\n[tools]\nshown = ["Read"]\nsession = "yes"\n')


def test_doc_roles_shows_which_roles_have_them(catalog_copy):
    text = render(Catalog(catalog_copy))
    row = next(line for line in text.splitlines() if line.startswith("| Session tools (TodoWrite") and "✓" in line)
    assert row.count("✓") == 5 and row.count("✗") == 1  # every spawnable role and the session role; git-ops shows none
