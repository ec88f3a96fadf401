"""The repository as a Claude Code plugin, installed with the real CLI's own commands, gates a real session.

In a throwaway HOME, `claude plugin marketplace add` takes the repository as a local marketplace and
`claude plugin install agent-runtime@agent-runtime` installs the plugin. Then `claude -p` runs against
the fake model server with settings that allow Bash and Write outright (`permissions.allow`, as a
person's might), so the plugin's hook is the only thing that can stop a call:

- with `runtime` on PATH, the main session's `git push`, a write outside the project and a write to
  `.claude/` are denied, each with the reason `runtime explain --role session` gives for that call
  (not a usage error: the hook judges the main session as the `session` role), and none happened on
  the host; a write inside the project runs (the hook is not denying everything);
- without `runtime` on PATH, every call is blocked (exit 127 and `onFailure: block`) and nothing ran;
- each of the plugin's commands runs its `runtime` verb, and the model is handed what it printed.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO, RUNTIME, require, run_cli
from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.claude_cli import find_cli, missing_cli_reason, run_claude

pytestmark = pytest.mark.real_client

PLUGIN = "agent-runtime@agent-runtime"
SYSTEM_PATH = "/usr/bin:/bin"
WITH_RUNTIME = f"{Path(RUNTIME).parent}:{SYSTEM_PATH}"
ALLOW_ALL = {"permissions": {"allow": ["Bash", "Write"]}}
HOOK = json.loads((REPO / "plugin/hooks/hooks.json").read_text())["hooks"]["PreToolUse"][0]["hooks"][0]["command"]


def _claude(home: Path, *args: str):
    """One `claude plugin ...` command, its JSON result parsed (`list` prints a document, the others one line)."""
    cli = find_cli()
    assert cli is not None
    env = {"HOME": str(home), "PATH": SYSTEM_PATH, "LANG": "C.UTF-8", "DISABLE_TELEMETRY": "1",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
           # Nothing here needs the network: a request anywhere but loopback meets a closed port.
           "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9", "NO_PROXY": "127.0.0.1,localhost"}
    proc = subprocess.run([str(cli), *args, "--json"], capture_output=True, text=True, env=env, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, f"{args}: {proc.stdout}\n{proc.stderr}"
    try:
        return json.loads(proc.stdout)
    except ValueError:
        return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture
def home(tmp_path) -> Path:
    """A HOME whose Claude Code has the plugin installed from the repository, with the CLI's own commands."""
    reason = missing_cli_reason()
    require(reason is None, reason or "")
    home = tmp_path / "home"
    home.mkdir()
    added = _claude(home, "plugin", "marketplace", "add", str(REPO))
    assert added["outcome"] == "ok" and added["marketplace"] == "agent-runtime", added
    installed = _claude(home, "plugin", "install", PLUGIN)
    assert installed["outcome"] == "ok" and installed["pluginId"] == PLUGIN, installed
    [listed] = [p for p in _claude(home, "plugin", "list") if p["id"] == PLUGIN]
    assert listed["enabled"] is True and listed["scope"] == "user", listed
    return home


@pytest.fixture
def project(tmp_path) -> Path:
    """A git repository with one commit and a bare remote to push to."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    project = tmp_path / "project"
    project.mkdir()
    git = ["git", "-C", str(project), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(project)], check=True)
    (project / "README.md").write_text("a project\n")
    subprocess.run([*git, "add", "README.md"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "start"], check=True)
    subprocess.run([*git, "remote", "add", "origin", str(remote)], check=True)
    return project


def _session(home: Path, project: Path, turns: list, path: str, prompt: str = "Follow the scripted steps."):
    with FakeAnthropicServer(turns) as server:
        run = run_claude(prompt, project, ALLOW_ALL, server.url, tools=["Bash", "Write"],
                         env={"HOME": str(home), "PATH": path}, timeout=180)
    assert run.returncode == 0 and run.result is not None, run.describe()
    return run, server


def _explain(project: Path, subject: str, tool: str = "Bash") -> str:
    """The reason the gate gives the main session for this call, asked outside Claude Code."""
    proc = run_cli("explain", "--role", "session", "--tool", tool, "--root", str(project), "--json", subject, cwd=project)
    answer = json.loads(proc.stdout)
    assert proc.returncode == 2 and answer["decision"] == "deny", proc.stdout
    return answer["reason"]


def _remote_refs(project: Path) -> str:
    return subprocess.run(["git", "--git-dir", str(project.parent / "remote.git"), "for-each-ref"],
                          capture_output=True, text=True, check=True).stdout


def test_the_installed_plugin_denies_what_the_session_role_refuses(home, project, tmp_path):
    outside = tmp_path / "outside.txt"
    control = project / ".claude/settings.json"
    push = "git push origin main"
    turns = [
        [{"name": "Bash", "input": {"command": push}}],
        [{"name": "Write", "input": {"file_path": str(outside), "content": "out of the repository\n"}}],
        [{"name": "Write", "input": {"file_path": str(control), "content": '{"disableAllHooks": true}\n'}}],
        [{"name": "Write", "input": {"file_path": str(project / "notes.txt"), "content": "in the repository\n"}}],
        "Done.",
    ]
    run, server = _session(home, project, turns, WITH_RUNTIME)
    (push_id,), (outside_id,), (control_id,), (notes_id,), () = server.scripted_tool_use_ids()
    expected = {push_id: _explain(project, push), outside_id: _explain(project, str(outside), "Write"),
                control_id: _explain(project, str(control), "Write")}
    assert {d["tool_use_id"] for d in run.permission_denials} == set(expected), run.describe()
    for tool_id, reason in expected.items():
        result = server.tool_result_for(tool_id)
        assert result is not None and result.get("is_error") is True, run.describe()
        text = str(result["content"])
        # The gate's own answer (the settings hold no hook: this is the plugin's).
        assert text.startswith("PreToolUse:") and reason in text, text
        assert "orchestrator" not in text, text  # a person's own session has none
    # Nothing of it happened on the host; the allowed write did.
    assert _remote_refs(project) == "" and not outside.exists() and not (project / ".claude").exists()
    assert (project / "notes.txt").read_text() == "in the repository\n"
    assert not server.tool_result_for(notes_id).get("is_error"), run.describe()


def test_without_runtime_on_path_every_call_is_blocked(home, project):
    marker = project / "marker"
    turns = [
        [{"name": "Bash", "input": {"command": f"touch {shlex.quote(str(marker))}"}}],
        [{"name": "Write", "input": {"file_path": str(project / "notes.txt"), "content": "in the repository\n"}}],
        "Done.",
    ]
    run, server = _session(home, project, turns, SYSTEM_PATH)
    (bash_id,), (write_id,), () = server.scripted_tool_use_ids()
    assert {d["tool_use_id"] for d in run.permission_denials} == {bash_id, write_id}, run.describe()
    for tool_id in (bash_id, write_id):
        result = server.tool_result_for(tool_id)
        assert result is not None and result.get("is_error") is True, run.describe()
        text = str(result["content"])
        assert 'failed; blocking because onFailure is "block"' in text and "runtime: not found" in text, text
        assert f"[{HOOK}]" in text, text  # the plugin's hook: the settings hold none
    assert not marker.exists() and not (project / "notes.txt").exists()


def _command(home: Path, project: Path, line: str) -> str:
    """Run a slash command of the plugin; the text the model was handed."""
    run, server = _session(home, project, ["Done."], WITH_RUNTIME, prompt=line)
    requests = server.agent_requests()
    assert requests, run.describe()
    return "\n".join(block.get("text", "") for message in requests[0].body["messages"] if message["role"] == "user"
                     for block in message["content"] if isinstance(block, dict))


def test_explain_hands_the_model_the_gate_answer(home, project):
    said = _command(home, project, "/agent-runtime:runtime-explain git push origin main")
    asked = run_cli("explain", "--role", "session", "git push origin main", cwd=project)
    assert asked.returncode == 2 and asked.stdout.startswith("deny by tools::bash-allowlist"), asked.stdout
    assert asked.stdout.strip() in said, said


def test_status_hands_the_model_the_runs(home, project):
    said = _command(home, project, "/agent-runtime:runtime-status")
    assert "no runs in " in said, said


def test_init_writes_the_project_catalog(home, project):
    said = _command(home, project, "/agent-runtime:runtime-init")
    assert (project / ".agent-runtime/roles/project.toml").is_file()
    assert "wrote .agent-runtime/roles/project.toml" in said, said


def _validate(home: Path, folder: Path) -> dict:
    cli = find_cli()
    assert cli is not None
    proc = subprocess.run([str(cli), "plugin", "validate", str(folder), "--json"], capture_output=True, text=True,
                          env={**os.environ, "HOME": str(home)}, timeout=120, stdin=subprocess.DEVNULL)
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report["success"] is True and report["manifest"]["errors"] == [], proc.stdout
    return report


def test_the_cli_validates_the_marketplace_and_the_plugin(home):
    marketplace = _validate(home, REPO)
    assert marketplace["manifest"]["type"] == "marketplace", marketplace
    plugin = _validate(home, REPO / "plugin")
    assert plugin["manifest"]["type"] == "plugin", plugin
    assert plugin["provides"]["hooks"] == [{"event": "PreToolUse", "matcher": "*", "type": "command", "command": HOOK}]
    assert sorted(plugin["provides"]["commands"]) == [f"agent-runtime:runtime-{v}" for v in ("explain", "init", "status")]
