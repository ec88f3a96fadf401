"""A person's own harness tools in a session gated by `runtime hook install` (the real CLI 2.1.332).

The hook is installed as `runtime hook install` writes it (`runtime check --on-allow defer --main-session
session`): the main session is judged by the `session` role, which shows the person's tools
(kinds.PERSON_TOOLS: AskUserQuestion, EnterPlanMode, ExitPlanMode, Skill) and starts subagents
(kinds.SUBAGENT_TOOLS) of every type: one a role names is gated by that role, any other by the session's rules. `--on-allow defer` means that an allow
prints nothing: Claude Code's own permissions then decide, so what happens to a call after our hook
allowed it is the CLI's own doing. Each test tells the two apart with a second, neutral PreToolUse hook
(`RECORDER`): it logs the hook input, what the installed command answered to it (exit code and stdout)
and, for the reason of an allow, what the same gate answers with `--on-allow allow`; it prints nothing,
so it decides nothing. Our hook's denials also reach the model as `PreToolUse:<tool> hook error: ...`.

What Claude Code 2.1.332 offers under `-p` (`--tools` names them, the CLI drops what it disables):
`Agent` (not `Task`: it is not offered as a tool of its own) and `Skill`; AskUserQuestion, EnterPlanMode
and ExitPlanMode are disabled in a print session ("No such tool available: ... disabled for this
session"; they never reach a hook) unless a permission prompt tool is set. They are offered with
`--permission-prompt-tool stdio`, the way an SDK host (an IDE extension) runs the CLI, which the second
test does; with stdin closed no host ever answers it.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from tests.cli import test_claude_code_fail_closed as fail_closed
from tests.cli.test_claude_code_fail_closed import SYSTEM_PATH, VENV_BIN
from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.claude_cli import run_claude

pytestmark = pytest.mark.real_client
installed = fail_closed.installed  # the fixture: the hook as `runtime hook install` writes it

# Asked of the CLI in both tests; what it offers differs (`offered_tools`).
TOOLS = ["Agent", "Task", "Bash", "Read", "Skill", "AskUserQuestion", "EnterPlanMode", "ExitPlanMode"]
PLAN_TOOLS = {"AskUserQuestion", "EnterPlanMode", "ExitPlanMode"}

# The neutral second hook: argv = LOG, the installed command. Runs that command on the same input
# (deterministic: the same policy, input and environment), then again with `--on-allow allow` for the
# reason of an allow; appends one JSON line; prints nothing, exits 0.
RECORDER = """
import json, shlex, subprocess, sys
log, command = sys.argv[1], sys.argv[2]
raw = sys.stdin.buffer.read()
argv = shlex.split(command)
assert argv[argv.index("--on-allow") + 1] == "defer", argv
def ask(argv):
    proc = subprocess.run(argv, input=raw, capture_output=True, timeout=25)
    return proc.returncode, proc.stdout.decode()
exit_code, stdout = ask(argv)
_, verbose = ask([a if a != "defer" else "allow" for a in argv])
decision = json.loads(verbose)["hookSpecificOutput"]
with open(log, "a") as out:
    out.write(json.dumps({"input": json.loads(raw), "exit": exit_code, "stdout": stdout,
                          "decision": decision["permissionDecision"],
                          "reason": decision["permissionDecisionReason"]}) + "\\n")
"""


def with_recorder(settings: dict, tmp_path: Path) -> Path:
    """Add the recording hook after the installed one; return the log it writes."""
    script, log = tmp_path / "recorder.py", tmp_path / "hooks.jsonl"
    script.write_text(RECORDER)
    [entry] = settings["hooks"]["PreToolUse"]
    [hook] = entry["hooks"]
    assert shlex.split(hook["command"])[:4] == ["runtime", "check", "--on-allow", "defer"], hook
    entry["hooks"].append({"type": "command", "timeout": 30,
                           "command": shlex.join([sys.executable, str(script), str(log), hook["command"]])})
    return log


def recorded(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def spawn(subagent_type: str) -> dict:
    """A main-loop turn that starts a subagent in the foreground (a fixed request order)."""
    return {"name": "Agent", "input": {"description": f"Run {subagent_type}", "prompt": "Follow the scripted steps.",
                                       "subagent_type": subagent_type, "run_in_background": False}}


def bash(command: str) -> dict:
    return {"name": "Bash", "input": {"command": command}}


def result(server: FakeAnthropicServer, tool_id: str, *, error: bool) -> str:
    block = server.tool_result_for(tool_id)
    assert block is not None, f"no tool_result for {tool_id}"
    assert bool(block.get("is_error")) is error, block
    content = block.get("content")
    return content if isinstance(content, str) else json.dumps(content)


def test_subagents_start_by_their_type_and_a_skill_loads(installed, tmp_path):
    project, settings = installed
    (project / "README.md").write_text("original\n")
    log = with_recorder(settings, tmp_path)
    home = tmp_path / "home"  # the person's own skill, where the CLI (`--setting-sources user`) finds it
    skill = home / ".claude/skills/release-notes/SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: release-notes\ndescription: Writes the release notes.\n---\n"
                     "List the merged changes under NOTES-FROM-THE-SKILL.\n")
    turns = [
        [bash("touch created-by-session.txt")],          # 0 main: `session` allows it
        [spawn("Explore")],                               # 1 main: allowed, as role explorer
        [bash("ls")],                                     # 2 Explore
        [bash("touch created-by-explore.txt")],          # 3 Explore: denied by explorer (read-only)
        "explore finished",                               # 4 Explore
        [spawn("general-purpose")],                       # 5 main: allowed, held to the session's rules
        [bash("git push origin HEAD")],                   # 6 general-purpose: the session never pushes
        "general-purpose finished",                       # 7 general-purpose
        [{"name": "Skill", "input": {"skill": "release-notes"}}],  # 8 main: allowed
        "All done.",                                      # 9 main
    ]
    with FakeAnthropicServer(turns) as server:
        run = run_claude("Follow the scripted steps.", project, settings, server.url, tools=TOOLS,
                         env={"PATH": f"{VENV_BIN}:{SYSTEM_PATH}", "HOME": str(home)}, timeout=180)
    assert run.returncode == 0 and run.result is not None, run.describe()
    assert [r.turn_index for r in server.agent_requests()] == list(range(len(turns))), run.describe()
    ids = [ids[0] if ids else None for ids in server.scripted_tool_use_ids()]
    session_touch, spawn_explore, explore_ls, explore_touch, _, spawn_general, general_push, _, load_skill, _ = ids

    # What a print session offers: Agent and Skill, not Task, and none of the plan-mode/question tools.
    offered = {r.turn_index: {t["name"] for t in r.body["tools"]} for r in server.agent_requests()}
    assert {"Agent", "Bash", "Read", "Skill"} <= offered[0] and not (PLAN_TOOLS | {"Task"}) & offered[0], offered
    assert "Bash" in offered[2] and "Agent" not in offered[2], offered  # the Explore subagent's own loop

    # Every call reached our hook, the subagent's with agent_type Explore; the installed command answered an
    # allow with nothing (exit 0: the CLI's own permissions decide) and a deny with exit 2.
    seen = recorded(log)
    assert [(h["input"]["tool_name"], h["input"].get("agent_type"), h["decision"], h["exit"]) for h in seen] == [
        ("Bash", None, "allow", 0), ("Agent", None, "allow", 0),
        ("Bash", "Explore", "allow", 0), ("Bash", "Explore", "deny", 2),
        ("Agent", None, "allow", 0), ("Bash", "general-purpose", "deny", 2), ("Skill", None, "allow", 0),
    ], seen
    assert all(h["stdout"] == "" for h in seen if h["exit"] == 0), seen
    assert all(json.loads(h["stdout"])["hookSpecificOutput"]["permissionDecision"] == "deny"
               for h in seen if h["exit"] == 2), seen
    reasons = {h["input"]["tool_use_id"]: h["reason"] for h in seen}

    # 1. Explore starts: our hook allowed it as role explorer, and the CLI ran it (no allow rule needed).
    assert reasons[spawn_explore] == ("subagent `Explore` (Claude Code's built-in type, as role `explorer`): "
                                      "every call it makes is gated by its role"), reasons
    assert "Subagent" in result(server, spawn_explore, error=False)
    assert run.result["subagent_stats"]["by_type"] == {"Explore": 1, "general-purpose": 1}, run.describe()
    # Its calls are judged as role explorer: `ls` runs; the `touch` the session itself may run is refused
    # with explorer's reason, before the CLI would have let it run (Bash is allowed in the settings).
    assert "README.md" in result(server, explore_ls, error=False)
    assert reasons[session_touch] == "every command is allowed (touch)"
    assert (project / "created-by-session.txt").exists()
    refused = result(server, explore_touch, error=True)
    assert refused.startswith("PreToolUse:Bash hook error: this role is read-only: `touch` changes files"), refused
    assert reasons[explore_touch] in refused
    assert not (project / "created-by-explore.txt").exists()

    # 2. general-purpose starts, held to the session's own rules: its push is refused by them.
    assert reasons[spawn_general] == ("subagent `general-purpose`: every call it makes is gated by the rules of "
                                      "this session (role `session`)"), reasons
    refused = result(server, general_push, error=True)
    assert refused.startswith("PreToolUse:Bash hook error:") and reasons[general_push] in refused, refused

    # The skill: allowed by our hook with its reason; the CLI (dontAsk, no allow rule) loads it.
    assert reasons[load_skill] == "a skill's instructions: every call they lead to is gated as its own"
    assert result(server, load_skill, error=False) == "Launching skill: release-notes"
    assert "NOTES-FROM-THE-SKILL" in json.dumps(server.agent_requests()[9].body["messages"])

    # The CLI reports exactly our two denials.
    assert [(d["tool_use_id"], d["tool_name"]) for d in run.permission_denials] == [
        (explore_touch, "Bash"), (general_push, "Bash")], run.describe()


def test_questions_and_plan_mode_pass_the_hook_and_the_cli_handles_them(installed, tmp_path):
    """With a permission prompt tool (an SDK host's `stdio`), the CLI offers the question and plan-mode tools.
    Our hook allows each; what follows is the CLI's: under dontAsk it refuses the question, it enters plan mode,
    and it hands ExitPlanMode (the plan's approval) to the host, whom nobody answers here."""
    project, settings = installed
    log = with_recorder(settings, tmp_path)
    question = {"questions": [{"question": "Which database?", "header": "Database", "multiSelect": False,
                               "options": [{"label": "Postgres", "description": "the server"},
                                           {"label": "SQLite", "description": "a file"}]}]}
    turns = [
        [{"name": "AskUserQuestion", "input": question}],
        [{"name": "EnterPlanMode", "input": {}}],
        [{"name": "ExitPlanMode", "input": {}}],  # 2.1.332's ExitPlanMode takes no plan (allowedPrompts only)
        "All done.",
    ]
    with FakeAnthropicServer(turns) as server:
        run = run_claude("Follow the scripted steps.", project, settings, server.url, tools=TOOLS,
                         extra_args=["--permission-prompt-tool", "stdio"],
                         env={"PATH": f"{VENV_BIN}:{SYSTEM_PATH}"}, timeout=120)
    assert run.returncode == 0 and run.result is not None, run.describe()
    assert [r.turn_index for r in server.agent_requests()] == list(range(len(turns))), run.describe()
    assert PLAN_TOOLS <= set(server.offered_tools()), server.offered_tools()
    (ask,), (enter,), (leave,), () = server.scripted_tool_use_ids()

    # Our hook allowed all three, each with its reason, and answered them with nothing (defer).
    seen = recorded(log)
    assert [(h["input"]["tool_name"], h["input"]["permission_mode"], h["decision"], h["exit"], h["stdout"])
            for h in seen] == [
        ("AskUserQuestion", "dontAsk", "allow", 0, ""),
        ("EnterPlanMode", "dontAsk", "allow", 0, ""),
        ("ExitPlanMode", "plan", "allow", 0, ""),  # plan mode was entered
    ], seen
    assert [h["reason"] for h in seen] == ["a question to the person: their answer is the result",
                                           "plan mode narrows the session to reading and planning",
                                           "the plan goes to the person, who approves it or not"], seen

    # Then the CLI: none of these results is our hook's (no `PreToolUse:` hook error).
    asked = result(server, ask, error=True)
    assert asked.startswith("Permission to use AskUserQuestion has been denied because Claude Code is running "
                            "in don't ask mode"), asked
    entered = result(server, enter, error=False)
    assert entered.startswith("Entered plan mode."), entered
    left = result(server, leave, error=True)
    assert left == "Tool permission request failed: AbortError: Stream closed", left
    assert not any("PreToolUse" in text for text in (asked, entered, left))
    assert [(d["tool_use_id"], d["tool_name"]) for d in run.permission_denials] == [
        (ask, "AskUserQuestion"), (leave, "ExitPlanMode")], run.describe()


def test_an_asked_call_s_reason_leads_to_runtime_allow_and_the_next_session_runs_it(installed, tmp_path):
    """A program no rule of `session` names is asked (the CLI, with nobody at its prompt in a print session,
    refuses it); the reason names the `runtime allow` that writes the rule; once run, the next session runs it."""
    from tests.conftest import run_cli

    project, settings = installed
    log = with_recorder(settings, tmp_path)
    turns = [[bash("nproc --all > cpus.txt")], "Done."]
    env = {"PATH": f"{VENV_BIN}:{SYSTEM_PATH}"}
    with FakeAnthropicServer(turns) as server:
        run = run_claude("Follow the scripted steps.", project, settings, server.url, tools=TOOLS, env=env,
                         timeout=120)
    assert run.returncode == 0 and run.result is not None, run.describe()
    ((asked,), ()) = server.scripted_tool_use_ids()
    [seen] = recorded(log)
    answer = json.loads(seen["stdout"])["hookSpecificOutput"]
    assert seen["exit"] == 0 and answer["permissionDecision"] == "ask", seen
    assert "`runtime allow 'nproc --all' --role session` writes the rule" in answer["permissionDecisionReason"]
    result(server, asked, error=True)  # nobody answered the CLI's prompt
    assert not (project / "cpus.txt").exists()

    allowed = run_cli("allow", "nproc --all", "--role", "session", cwd=project)
    assert allowed.returncode == 0 and "the gate now allows it" in allowed.stdout, allowed.stderr
    assert (project / ".agent-runtime/roles/session.toml").exists()
    with FakeAnthropicServer(turns) as server:
        run = run_claude("Follow the scripted steps.", project, settings, server.url, tools=TOOLS, env=env,
                         timeout=120)
    assert run.returncode == 0 and run.result is not None, run.describe()
    ((ran,), ()) = server.scripted_tool_use_ids()
    result(server, ran, error=False)
    seen = recorded(log)[-1]
    assert seen["exit"] == 0 and seen["stdout"] == "" and seen["decision"] == "allow", seen  # deferred to the CLI
    assert (project / "cpus.txt").read_text().strip().isdigit()


# A stdio MCP server with one tool (newline-delimited JSON-RPC, as the CLI speaks it).
FAKE_MCP = """
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method = msg.get("method")
    if method == "initialize":
        result = {"protocolVersion": msg["params"].get("protocolVersion", "2024-11-05"),
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "fake", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "echo", "description": "Echo the text back",
                             "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                                             "required": ["text"]}}]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "ECHO:" + msg["params"]["arguments"]["text"]}]}
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}}), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"""


def test_an_mcp_server_the_repository_configures_is_asked_and_runs_under_a_rule(installed, tmp_path):
    """The repository's `.mcp.json` names a server: its tool is asked of the person (here nobody answers the
    CLI's prompt); with a rule in the project catalog naming server and tool, the hook allows it and the CLI
    calls the real server."""
    project, settings = installed
    server_script = tmp_path / "fake_mcp.py"
    server_script.write_text(FAKE_MCP)
    config = {"mcpServers": {"fake": {"type": "stdio", "command": sys.executable, "args": [str(server_script)]}}}
    (project / ".mcp.json").write_text(json.dumps(config))
    settings["permissions"]["allow"].append("mcp__fake__echo")  # the CLI's own permission, after our hook
    log = with_recorder(settings, tmp_path)
    turns = [[{"name": "mcp__fake__echo", "input": {"text": "hi"}}], "Done."]
    env = {"PATH": f"{VENV_BIN}:{SYSTEM_PATH}"}
    mcp = ["--mcp-config", str(project / ".mcp.json"), "--strict-mcp-config"]
    with FakeAnthropicServer(turns) as server:
        run = run_claude("Follow the scripted steps.", project, settings, server.url, tools=TOOLS, env=env,
                         extra_args=mcp, timeout=120)
    assert run.returncode == 0 and run.result is not None, run.describe()
    assert "mcp__fake__echo" in server.offered_tools(), server.offered_tools()
    ((asked,), ()) = server.scripted_tool_use_ids()
    [seen] = recorded(log)
    assert seen["input"]["tool_name"] == "mcp__fake__echo" and seen["decision"] == "ask", seen
    assert "ECHO:" not in result(server, asked, error=True)  # nobody answered: the server was never called

    role = project / ".agent-runtime/roles/session.toml"
    role.parent.mkdir(parents=True)
    role.write_text('[role]\nname = "session"\ndisplay-name = "session"\ndescription = "x"\nuse-cases = ["x"]\n'
                    'spawnable = false\nfor-sessions = true\n\n[capabilities]\nextends = "session"\n\n'
                    '[[params."tools::mcp-allowlist".servers]]\nserver = "fake"\ntools = ["echo"]\n')
    with FakeAnthropicServer(turns) as server:
        run = run_claude("Follow the scripted steps.", project, settings, server.url, tools=TOOLS, env=env,
                         extra_args=mcp, timeout=120)
    assert run.returncode == 0 and run.result is not None, run.describe()
    ((ran,), ()) = server.scripted_tool_use_ids()
    assert "ECHO:hi" in result(server, ran, error=False)
    seen = recorded(log)[-1]
    assert seen["decision"] == "allow" and seen["exit"] == 0 and seen["stdout"] == "", seen
