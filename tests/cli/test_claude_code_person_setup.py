"""A person's own Claude Code setup under the hook `runtime hook install` writes (the real CLI, a fake model).

The MCP servers a person configured where Claude Code keeps them for a person (user and local scope in
`~/.claude.json`, a plugin installed with `claude plugin install`) are governed, not refused: each call is
asked of the person (here nobody answers: the CLI refuses it and the server is never called) until a rule
(`runtime allow mcp__SERVER__TOOL`) or the person's own Claude Code allow rule decides; then the CLI calls the
real server. A subagent the person defined starts, and each of its
calls is held to the session's own rules: its denied `git push` is refused by the hook.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli import test_claude_code_fail_closed as fail_closed
from tests.cli.test_claude_code_fail_closed import SYSTEM_PATH, VENV_BIN
from tests.cli.test_claude_code_person_tools import FAKE_MCP, TOOLS, bash, recorded, result, spawn, with_recorder
from tests.conftest import run_cli
from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.claude_cli import find_cli, run_claude

pytestmark = pytest.mark.real_client
installed = fail_closed.installed


def _server(tmp_path: Path) -> dict:
    script = tmp_path / "fake_mcp.py"
    script.write_text(FAKE_MCP)
    return {"type": "stdio", "command": sys.executable, "args": [str(script)]}


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    return home


def _run(project: Path, settings: dict, home: Path, turns: list):
    """The CLI as a person starts it: every settings source (the project's file holds the hook as installed,
    and the recorder), their HOME."""
    (project / ".claude/settings.json").write_text(json.dumps(settings))
    env = {"PATH": f"{VENV_BIN}:{SYSTEM_PATH}"}
    with FakeAnthropicServer(turns) as server:
        run = run_claude("Follow the scripted steps.", project, None, server.url, tools=TOOLS, env=env,
                         timeout=180, home=home)
    assert run.returncode == 0 and run.result is not None, run.describe()
    return server, run


def test_user_and_local_scope_servers_are_asked_then_run_under_a_rule_or_the_person_s_own(installed, tmp_path):
    project, settings = installed
    home = _home(tmp_path)
    server = _server(tmp_path)
    (home / ".claude.json").write_text(json.dumps({
        "mcpServers": {"notes": server},                                   # user scope
        "projects": {str(project): {"mcpServers": {"nav": server}}},       # local scope: this project only
    }))
    log = with_recorder(settings, tmp_path)
    # (a server nobody configured is no tool the CLI offers: the unit tests hold the gate's refusal of one)
    turns = [[{"name": "mcp__notes__echo", "input": {"text": "a"}}], [{"name": "mcp__nav__echo", "input": {"text": "b"}}],
             "Done."]
    fake, _ = _run(project, settings, home, turns)
    assert {"mcp__notes__echo", "mcp__nav__echo"} <= set(fake.offered_tools()), fake.offered_tools()
    (notes, ), (nav, ), () = fake.scripted_tool_use_ids()
    seen = recorded(log)
    assert [(h["input"]["tool_name"], h["decision"]) for h in seen] == [
        ("mcp__notes__echo", "ask"), ("mcp__nav__echo", "ask")], seen
    assert "your user scope" in seen[0]["reason"] and "your local scope for this project" in seen[1]["reason"]
    assert "runtime allow mcp__notes__echo --role session" in seen[0]["reason"]
    for asked in (notes, nav):
        assert "ECHO:" not in result(fake, asked, error=True)  # nobody answered: the server was never called

    # A rule for the user-scope server; the person's own Claude Code rule for the local one: both run. (The CLI
    # runs under dontAsk here, so its own rule must allow the first too: our hook's verbose answer tells them
    # apart, an allow by the rule against an ask the installed hook deferred to the person's rule.)
    allowed = run_cli("allow", "mcp__notes__echo", "--role", "session", cwd=project)
    assert allowed.returncode == 0 and "the gate now allows it" in allowed.stdout, (allowed.stdout, allowed.stderr)
    rules = (project / ".agent-runtime/roles/session.toml").read_text()
    assert '[[params."tools::mcp-allowlist".servers]]\nserver = "notes"\ntools = ["echo"]' in rules, rules
    (home / ".claude/settings.json").write_text(json.dumps({"permissions": {"allow": ["mcp__nav", "mcp__notes__echo"]}}))
    fake, _ = _run(project, settings, home, turns[:2] + ["Done."])
    (notes, ), (nav, ), () = fake.scripted_tool_use_ids()
    assert "ECHO:a" in result(fake, notes, error=False)
    assert "ECHO:b" in result(fake, nav, error=False)
    last = recorded(log)[-2:]
    assert [(h["decision"], h["exit"], h["stdout"]) for h in last] == [("allow", 0, ""), ("ask", 0, "")], last
    # the second is still the gate's ask, and the installed hook deferred it to the person's own rule


def test_a_plugin_s_server_is_asked_under_the_name_claude_code_gives_it(installed, tmp_path):
    project, settings = installed
    home = _home(tmp_path)
    market = tmp_path / "market"
    plugin = market / "plugins/browser"
    (market / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin").mkdir(parents=True)
    (market / ".claude-plugin/marketplace.json").write_text(json.dumps({
        "name": "team-tools", "owner": {"name": "team"},
        "plugins": [{"name": "browser", "source": "./plugins/browser", "description": "pages"}]}))
    (plugin / ".claude-plugin/plugin.json").write_text(json.dumps({"name": "browser", "version": "1.0.0",
                                                                    "description": "pages"}))
    (plugin / ".mcp.json").write_text(json.dumps({"mcpServers": {"pages": _server(tmp_path)}}))
    cli = find_cli()
    assert cli is not None
    env = {"HOME": str(home), "PATH": SYSTEM_PATH, "DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    for argv in (["plugin", "marketplace", "add", str(market)], ["plugin", "install", "browser@team-tools"]):
        done = subprocess.run([str(cli), *argv], env=env, capture_output=True, text=True, timeout=120, cwd=project)
        assert done.returncode == 0, (argv, done.stdout, done.stderr)
    tool = "mcp__plugin_browser_pages__echo"
    settings["permissions"]["allow"].append(tool)
    log = with_recorder(settings, tmp_path)
    fake, _ = _run(project, settings, home, [[{"name": tool, "input": {"text": "p"}}], "Done."])
    assert tool in fake.offered_tools(), fake.offered_tools()
    ((asked,), ()) = fake.scripted_tool_use_ids()
    [seen] = recorded(log)
    assert seen["decision"] == "ask" and "the plugin `browser@team-tools`" in seen["reason"], seen
    assert "ECHO:" not in result(fake, asked, error=True)


def test_a_person_s_own_subagent_starts_held_to_the_session_s_rules(installed, tmp_path):
    project, settings = installed
    home = _home(tmp_path)
    agents = home / ".claude/agents"
    agents.mkdir()
    (home / ".claude/settings.json").write_text(json.dumps({"permissions": {"allow": ["Bash"]}}))  # the CLI's own
    (agents / "release-helper.md").write_text("---\nname: release-helper\ndescription: Prepares a release.\n"
                                              "tools: Bash\n---\nFollow the scripted steps.\n")
    log = with_recorder(settings, tmp_path)
    turns = [
        [spawn("release-helper")],                 # 0 main: allowed, held to the session's rules
        [bash("touch made-by-helper.txt")],        # 1 helper: the session allows it
        [bash("git push origin HEAD")],            # 2 helper: the session never pushes
        "helper finished",                         # 3 helper
        "All done.",                               # 4 main
    ]
    fake, run = _run(project, settings, home, turns)
    start, touch, push = (ids[0] for ids in fake.scripted_tool_use_ids()[:3])
    seen = recorded(log)
    assert [(h["input"]["tool_name"], h["input"].get("agent_type"), h["decision"], h["exit"]) for h in seen] == [
        ("Agent", None, "allow", 0), ("Bash", "release-helper", "allow", 0), ("Bash", "release-helper", "deny", 2),
    ], seen
    assert "gated by the rules of this session (role `session`)" in seen[0]["reason"]
    assert run.result["subagent_stats"]["by_type"] == {"release-helper": 1}, run.describe()
    result(fake, touch, error=False)
    assert (project / "made-by-helper.txt").exists()
    refused = result(fake, push, error=True)
    assert refused.startswith("PreToolUse:Bash hook error:") and "push" in refused, refused
    assert [(d["tool_use_id"], d["tool_name"]) for d in run.permission_denials] == [(push, "Bash")], run.describe()
