"""The hook `runtime hook install` writes fails closed in the real Claude Code CLI.

Claude Code runs a tool call whose hook cannot start, crashes or times out, unless the hook carries
`"onFailure": "block"`. Each test installs the hook with the real `runtime hook install` into a
project whose settings allow Bash and Write (as a teammate's might: with the hook gone, nothing but
the hook stands between the model and those calls), breaks the hook one way, and has the fake model
ask for a Bash command that creates a marker file in the project (the sandbox the install also sets
refuses one outside) and a Write outside the project:

- `runtime` missing from PATH (the venv not activated: exit 127);
- the command crashing: exit 1 (a stale `runtime` earlier on PATH), or a Python traceback (the real
  `runtime` importing a broken package);
- the command hanging past the hook's timeout (2 s here, to keep the test short).

With the settings as installed, neither call runs and both come back blocked. The control runs the
very same settings with `onFailure` taken out: both calls run, so the test can see a hook failing
open and the blocked runs are not blocked by something else.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO, RUNTIME, require, run_cli
from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.claude_cli import cli_version, find_cli, missing_cli_reason, run_claude

pytestmark = pytest.mark.real_client

SYSTEM_PATH = "/usr/bin:/bin"
VENV_BIN = str(Path(RUNTIME).parent)
HANG_TIMEOUT_S = 2


def _shim(folder: Path, body: str) -> str:
    """A folder holding a `runtime` that does ``body`` instead of gating, for the front of PATH."""
    folder.mkdir()
    (folder / "runtime").write_text(f"#!/bin/sh\n{body}\n")
    (folder / "runtime").chmod(0o755)
    return str(folder)


def _broken_package(folder: Path) -> str:
    """A folder whose `runtime` package fails to import: the real `runtime` then dies in a traceback."""
    (folder / "runtime").mkdir(parents=True)
    (folder / "runtime/__init__.py").write_text("raise ImportError('a broken install of the runtime')\n")
    return str(folder)


def _failure(kind: str, tmp: Path) -> dict[str, str]:
    """The CLI's environment for each way the installed hook fails."""
    if kind == "not-on-path":
        assert shutil.which("runtime", path=SYSTEM_PATH) is None
        return {"PATH": SYSTEM_PATH}
    if kind == "exit-1":
        return {"PATH": f"{_shim(tmp / 'shim', 'echo a stale runtime >&2; exit 1')}:{VENV_BIN}:{SYSTEM_PATH}"}
    if kind == "traceback":
        return {"PATH": f"{VENV_BIN}:{SYSTEM_PATH}", "PYTHONPATH": _broken_package(tmp / "broken")}
    assert kind == "hang"
    return {"PATH": f"{_shim(tmp / 'shim', 'exec sleep 60')}:{VENV_BIN}:{SYSTEM_PATH}"}


@pytest.fixture
def installed(tmp_path):
    """A project with the hook as `runtime hook install` wrote it, over settings that allow Bash and Write."""
    reason = missing_cli_reason()
    require(reason is None, reason or "")
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    settings = project / ".claude/settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"permissions": {"allow": ["Bash", "Write"]}}))
    cli = find_cli()
    assert cli is not None
    proc = run_cli("hook", "install", "--catalog", str(REPO), "--json", cwd=project,
                   env={"PATH": f"{VENV_BIN}:{SYSTEM_PATH}", "RUNTIME_CLAUDE_BIN": str(cli)})
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["settings"] == ".claude/settings.json" and out["portable"], out  # `runtime` by name
    assert (cli_version(cli) or "").startswith(out["claude_version"] + " "), out  # the version it checked
    data = json.loads(settings.read_text())
    assert data["permissions"] == {"allow": ["Bash", "Write"]}
    [entry] = data["hooks"]["PreToolUse"]
    [hook] = entry["hooks"]
    assert hook["onFailure"] == "block" and shlex.split(hook["command"])[:2] == ["runtime", "check"], hook
    return project, data


def _run(project: Path, settings: dict, env: dict[str, str]):
    outside = project.parent / "outside.txt"
    marker = project / "marker"  # inside: the sandbox the install also sets keeps commands from writing elsewhere
    turns = [
        [{"name": "Bash", "input": {"command": f"touch {shlex.quote(str(marker))}"}}],
        [{"name": "Write", "input": {"file_path": str(outside), "content": "written outside the project\n"}}],
        "Done.",
    ]
    with FakeAnthropicServer(turns) as server:
        run = run_claude("Follow the scripted steps.", project, settings, server.url, tools=["Bash", "Write"],
                         env=env, timeout=120)
    assert run.returncode == 0 and run.result is not None, run.describe()
    (bash_id,), (write_id,), () = server.scripted_tool_use_ids()
    results = {tool_id: server.tool_result_for(tool_id) for tool_id in (bash_id, write_id)}
    assert all(results.values()), run.describe()
    return run, results, marker, outside


FAILURES = ["not-on-path", "exit-1", "traceback", "hang"]


@pytest.mark.parametrize("kind", FAILURES)
def test_a_hook_that_fails_blocks_the_call(installed, tmp_path, kind):
    project, settings = installed
    if kind == "hang":
        settings["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"] = HANG_TIMEOUT_S
    run, results, marker, outside = _run(project, settings, _failure(kind, tmp_path))
    assert not marker.exists() and not outside.exists(), run.describe()
    assert {d["tool_use_id"] for d in run.permission_denials} == set(results), run.describe()
    # Reported blocked, for the failure it was: what the hook said, or its timeout.
    failed = "timed out" if kind == "hang" else "failed"
    said = {"not-on-path": "runtime: not found", "exit-1": "a stale runtime",
            "traceback": "ImportError: a broken install of the runtime", "hang": ""}[kind]
    for result in results.values():
        text = str(result.get("content"))
        assert result.get("is_error") is True, result
        assert text.startswith("PreToolUse:") and f'{failed}; blocking because onFailure is "block"' in text, text
        assert said in text, text


@pytest.mark.parametrize("kind", FAILURES)
def test_without_on_failure_the_same_calls_run(installed, tmp_path, kind):
    """The control: the failure is real, and only `onFailure` stands between it and the calls."""
    project, settings = installed
    hook = settings["hooks"]["PreToolUse"][0]["hooks"][0]
    del hook["onFailure"]
    if kind == "hang":
        hook["timeout"] = HANG_TIMEOUT_S
    run, results, marker, outside = _run(project, settings, _failure(kind, tmp_path))
    assert marker.exists() and outside.read_text() == "written outside the project\n", run.describe()
    assert run.permission_denials == [], run.describe()
    assert not any(result.get("is_error") for result in results.values()), results


def test_a_working_hook_still_decides(installed, tmp_path):
    """With `runtime` on PATH the installed hook answers itself, and gates the main session as `session`:
    the command inside the project runs (left to Claude Code's own rules, which allow it here), the write
    outside the project is denied with the gate's reason, and no hook error comes back."""
    project, settings = installed
    run, results, marker, outside = _run(project, settings, {"PATH": f"{VENV_BIN}:{SYSTEM_PATH}"})
    assert marker.exists() and not outside.exists(), run.describe()
    assert [d["tool_name"] for d in run.permission_denials] == ["Write"], run.describe()
    denied = [r for r in results.values() if r.get("is_error")]
    assert len(denied) == 1 and "outside the worktree" in str(denied[0].get("content")), results
