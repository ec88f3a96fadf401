"""Claude Code subagents, each gated by its own role, inside one real CLI session.

The hook is installed the way `runtime hook install` does without `--role`:
`runtime check --catalog REPO --main-session defer`. The main session is then
left to Claude Code's own permissions (`--permission-mode dontAsk` plus one
allow rule, for `Agent`), and every subagent call is judged by the role named
by the `agent_type` Claude Code puts in the hook input.

How the role agents reach the CLI (Claude Code 2.1.330, verified): the harness
passes `--setting-sources user`, and with it a project `.claude/agents/` in the
worktree is NOT loaded; user-level `~/.claude/agents/` still is. So the test
exports the roles into `.claude/agents/` of a private HOME and hands that HOME
to the CLI. The `--agents JSON` flag is loaded too; the second test uses it to
define a `read-only` agent broader than its role.

Evidence that the hook judged each call by role: the reasons fed back to the
model; the same `ls ..` denied in the main session (our hook defers, and
`dontAsk` refuses it: it reads outside the working directory) but run by
`explorer` (only our hook's allow can have run it); and a second, neutral
PreToolUse hook that records every hook input (it prints nothing, so it decides
nothing). Note that `dontAsk` is not "deny all": Claude Code 2.1.330 runs
commands it deems read-only inside the working directory (`ls`, `cat FILE`,
`git status`, `python3 --version`, ...) with no allow rule, so `ls` running
proves nothing by itself.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO, RUNTIME, require, run_cli
from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.claude_cli import missing_cli_reason, run_claude

pytestmark = pytest.mark.real_client

GATE = shlex.join([RUNTIME, "check", "--catalog", str(REPO), "--main-session", "defer"])


def spawn(subagent_type: str) -> dict:
    """A main-loop turn that starts a subagent in the foreground (a fixed request order)."""
    return {"name": "Agent", "input": {"description": f"Run {subagent_type}", "prompt": "Follow the scripted steps.",
                                       "subagent_type": subagent_type, "run_in_background": False}}


def bash(command: str) -> dict:
    return {"name": "Bash", "input": {"command": command}}


def settings_with(hook_log: Path) -> dict:
    recorder = f"{{ cat; echo; }} >> {shlex.quote(str(hook_log))}"
    return {
        # Our hook defers for the main session. (2.1.330 needed this rule to spawn under dontAsk; 2.1.332 starts
        # Agent without it: the rule is kept, as it costs nothing and holds on either.)
        "permissions": {"allow": ["Agent"]},
        "hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
            {"type": "command", "command": GATE, "timeout": 30},
            {"type": "command", "command": recorder, "timeout": 30},
        ]}]},
    }


def hook_inputs(hook_log: Path) -> list[dict]:
    return [json.loads(line) for line in hook_log.read_text().splitlines() if line.strip()]


@pytest.fixture
def worktree(tmp_path):
    reason = missing_cli_reason()
    require(reason is None, reason or "")
    root = tmp_path / "worktree"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "README.md").write_text("original\n")
    return root


def assert_result(server: FakeAnthropicServer, tool_id: str, *, error: bool, words: str = "") -> dict:
    result = server.tool_result_for(tool_id)
    assert result is not None, f"no tool_result for {tool_id}"
    assert bool(result.get("is_error")) is error, result
    assert words in json.dumps(result.get("content")), (words, result)
    return result


def test_each_subagent_is_gated_by_its_own_role_in_one_session(worktree, tmp_path):
    home = tmp_path / "home"
    proc = run_cli("export", "claude-agents", "--catalog", str(REPO), "--out", str(home / ".claude/agents"))
    assert proc.returncode == 0, proc.stderr
    hook_log = tmp_path / "hook-inputs.jsonl"
    turns = [
        [bash("ls ..")],                               # 0 main: hook defers, dontAsk denies
        [bash("touch created-by-main.txt")],          # 1 main: hook defers, dontAsk denies
        [spawn("explorer")],                           # 2 main
        [bash("ls")],                                  # 3 explorer: allowed by role explorer
        [bash("ls ..")],                               # 4 explorer: allowed by role explorer only
        [bash("touch created-by-explorer.txt")],       # 5 explorer: denied, the role is read-only
        "explorer finished",                           # 6 explorer
        [spawn("read-only")],                          # 7 main
        [bash("ls")],                                  # 8 read-only: Bash is not even offered
        [{"name": "Read", "input": {"file_path": str(worktree / "README.md")}}],  # 9 read-only
        "read-only finished",                          # 10 read-only
        [spawn("general-purpose")],                    # 11 main
        [bash("ls")],                                  # 12 general-purpose: not a role, denied
        "general-purpose finished",                    # 13 general-purpose
        "All done.",                                   # 14 main
    ]
    with FakeAnthropicServer(turns) as server:
        run = run_claude("Follow the scripted steps.", worktree, settings_with(hook_log), server.url,
                         tools=["Agent", "Bash", "Read"], env={"HOME": str(home)}, timeout=180)
    assert run.returncode == 0 and run.result is not None, run.describe()
    # Every request took exactly its scripted turn, in order: no fallback answers, no extras.
    assert [r.turn_index for r in server.agent_requests()] == list(range(len(turns))), run.describe()
    ids = [ids[0] if ids else None for ids in server.scripted_tool_use_ids()]
    (main_up, main_touch, spawn_explorer, explorer_ls, explorer_up, explorer_touch, _, spawn_read_only, read_only_ls,
     read_only_read, _, spawn_general, general_ls, _, _) = ids

    # The definitions were loaded from the private HOME: explorer was offered Bash, read-only not.
    offered = {r.turn_index: {t["name"] for t in r.body["tools"]} for r in server.agent_requests()}
    assert "Bash" in offered[3] and "Agent" not in offered[3], offered
    assert "Bash" not in offered[8] and "Read" in offered[8], offered
    assert (run.result.get("subagent_stats") or {}).get("by_type") == {
        "explorer": 1, "read-only": 1, "general-purpose": 1}, run.describe()

    # Disk effects: nothing was created, by the main session or by a subagent.
    assert not (worktree / "created-by-explorer.txt").exists()
    assert not (worktree / "created-by-main.txt").exists()

    # The main session: Agent allowed by Claude Code's own rule, Bash denied by dontAsk (not by us).
    for tool_id in (spawn_explorer, spawn_read_only, spawn_general):
        assert_result(server, tool_id, error=False, words="Subagent")
    for tool_id in (main_up, main_touch):
        assert_result(server, tool_id, error=True, words="don't ask mode")

    # explorer: `ls` ran, and so did `ls ..`, which Claude Code alone refused in the main session ...
    assert_result(server, explorer_ls, error=False, words="README.md")
    assert_result(server, explorer_up, error=False, words="worktree")
    # ... and `touch` was denied by the explorer role.
    assert_result(server, explorer_touch, error=True, words="this role is read-only: `touch` changes files")
    # read-only: its definition (`tools:` from the role) does not offer Bash, so the CLI refuses
    # before any hook runs; Read is offered and allowed.
    assert_result(server, read_only_ls, error=True, words="No such tool available: Bash")
    assert_result(server, read_only_read, error=False, words="original")
    # Claude Code's built-in general-purpose subagent has no role: denied, saying so.
    assert_result(server, general_ls, error=True, words="built-in `general-purpose` subagent has no role here")

    denied = {d["tool_use_id"] for d in run.permission_denials}
    assert denied == {main_up, main_touch, explorer_touch, general_ls}, run.describe()

    # What the hooks were given: subagent calls carry agent_type (the role) and agent_id.
    seen = hook_inputs(hook_log)
    assert [(h["tool_name"], h.get("agent_type")) for h in seen] == [
        ("Bash", None), ("Bash", None), ("Agent", None),
        ("Bash", "explorer"), ("Bash", "explorer"), ("Bash", "explorer"),
        ("Agent", None), ("Read", "read-only"),
        ("Agent", None), ("Bash", "general-purpose"),
    ], seen
    agent_ids = [h.get("agent_id") for h in seen if h.get("agent_type")]
    assert all(agent_ids) and len(set(agent_ids)) == 3, agent_ids


def test_a_definition_broader_than_its_role_does_not_widen_it(worktree, tmp_path):
    # A `read-only` agent that offers every tool (no `tools` list), given by --agents: the CLI
    # lets Bash and Write through to the hook, and the hook still holds the role's tool set.
    agents = {"read-only": {"description": "Reads code; deliberately defined with every tool.",
                            "prompt": "Follow the scripted steps."}}
    hook_log = tmp_path / "hook-inputs.jsonl"
    turns = [
        [spawn("read-only")],
        [bash("ls")],
        [{"name": "Write", "input": {"file_path": str(worktree / "created-by-read-only.txt"), "content": "x\n"}}],
        [{"name": "Agent", "input": {"description": "Nest", "prompt": "Write files.", "subagent_type": "edit-local",
                                     "run_in_background": False}}],
        "read-only finished",
        "All done.",
    ]
    with FakeAnthropicServer(turns) as server:
        run = run_claude("Follow the scripted steps.", worktree, settings_with(hook_log), server.url,
                         tools=["Agent", "Bash", "Read", "Write"], extra_args=["--agents", json.dumps(agents)],
                         timeout=180)
    assert run.returncode == 0 and run.result is not None, run.describe()
    assert [r.turn_index for r in server.agent_requests()] == list(range(len(turns))), run.describe()
    ids = [ids[0] if ids else None for ids in server.scripted_tool_use_ids()]
    spawn_id, ls_id, write_id, nest_id, _, _ = ids

    offered = {r.turn_index: {t["name"] for t in r.body["tools"]} for r in server.agent_requests()}
    assert {"Bash", "Write", "Agent"} <= offered[1], offered  # the definition really offered them

    assert_result(server, spawn_id, error=False, words="Subagent")
    assert_result(server, ls_id, error=True, words="`Bash` is not available to role `read-only`")
    assert_result(server, write_id, error=True, words="`Write` is not available to role `read-only`")
    assert not (worktree / "created-by-read-only.txt").exists()
    # Delegating to a broader role is no way out either: the nested spawn never starts.
    assert_result(server, nest_id, error=True, words="`Agent` is not available to role `read-only`")
    assert (run.result.get("subagent_stats") or {}).get("by_type") == {"read-only": 1}, run.describe()
    denied = {d["tool_use_id"] for d in run.permission_denials}
    assert denied == {ls_id, write_id, nest_id}, run.describe()

    seen = [(h["tool_name"], h.get("agent_type")) for h in hook_inputs(hook_log)]
    assert seen == [("Agent", None), ("Bash", "read-only"), ("Write", "read-only"), ("Agent", "read-only")], seen
