"""The README's first steps on the installed wheel: `runtime --version`, `runtime init`, `runtime hook
install` and a first scripted spawn, for `uv tool install`, `pipx install` and a project-local install."""

from __future__ import annotations

import json
import subprocess
import tomllib

from tests.conftest import REPO
from tests.dist.conftest import PROJECT, Install
from tests.support import have_bwrap, user_git, user_repo

VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]

SCRIPT = '''[[turn]]
tool_calls = [{ name = "Bash", input = { command = "git push origin HEAD" } }]

[[turn]]
tool_calls = [{ name = "Edit", input = { file_path = "src/calc.py", old_string = "(len(xs) + 1)", new_string = "len(xs)" } }]

[[turn]]
content = """Summary: mean divided by one too many; it now divides by len(xs).
Files changed: src/calc.py
"""
'''


def _probe(install: Install, code: str) -> str:
    proc = subprocess.run([str(install.python), "-c", code], capture_output=True, text=True, timeout=60, cwd="/")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_the_installed_runtime_runs_from_its_install_without_a_model_sdk(installed, tmp_path):
    proc = installed.run("--version", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"runtime {VERSION}"
    where = _probe(installed, "import runtime; print(runtime.__file__)")
    assert where.startswith(str(installed.python.parent.parent)) and not where.startswith(str(REPO)), where
    assert _probe(installed, "import importlib.util as u; print([m for m in ('litellm', 'openai', 'mcp') if u.find_spec(m)])") == "[]"


def _hook_call(project, tool: str, tool_input: dict, agent_type: str | None = "edit-local") -> str:
    """A call as Claude Code hands it to the hook: a subagent's names the role it runs as, the main session's none."""
    call = {"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": tool_input,
            "cwd": str(project), "tool_use_id": "toolu_1"}
    return json.dumps({**call, "agent_type": agent_type} if agent_type else call)


def _as_claude_code_runs_it(installed: Install, project, command: str, call: str) -> subprocess.CompletedProcess:
    """Claude Code runs a hook's command through a shell, in the project, with CLAUDE_PROJECT_DIR set."""
    return subprocess.run(["sh", "-c", command], cwd=project, input=call, capture_output=True, text=True, timeout=60,
                          env=installed.environ(CLAUDE_PROJECT_DIR=str(project)))


def test_init_hook_install_and_a_first_spawn(installed, project, tmp_path):
    have_bwrap()
    own_venv = sorted(str(p.relative_to(project)) for p in (project / ".venv").rglob("*")) if installed.project else []

    init = installed.run("init", cwd=project)
    assert init.returncode == 0, init.stderr
    assert "wrote .agent-runtime/roles/project.toml" in init.stdout.splitlines()
    template = tomllib.loads((project / ".agent-runtime/tasks/example.toml").read_text())
    assert template["task"]["role"] == "project"
    assert template["verification"] == {"test-command": "python3 -m unittest discover -s tests -v", "check-commands": []}

    hook = installed.run("hook", "install", "--json", cwd=project)
    assert hook.returncode == 0, hook.stderr
    report = json.loads(hook.stdout)
    on_path = installed.project is None  # the tools put `runtime` on PATH; a project-local install does not
    assert report["portable"] is on_path
    assert report["settings"] == (".claude/settings.json" if on_path else ".claude/settings.local.json")
    command = report["command"]
    assert command.split()[:2] == ["runtime" if on_path else str(installed.runtime), "check"]
    settings = json.loads((project / report["settings"]).read_text())
    assert [h["command"] for e in settings["hooks"]["PreToolUse"] for h in e["hooks"]] == [command]
    assert settings["sandbox"] == report["sandbox"] and report["sandbox"]["enabled"] is True  # Claude Code's own, too
    push = _as_claude_code_runs_it(installed, project, command, _hook_call(project, "Bash", {"command": "git push"}))
    assert push.returncode == 2, push.stdout + push.stderr
    assert json.loads(push.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    main_push = _as_claude_code_runs_it(installed, project, command,
                                        _hook_call(project, "Bash", {"command": "git push"}, agent_type=None))
    assert main_push.returncode == 2, main_push.stdout + main_push.stderr  # the person's own session too
    read = _as_claude_code_runs_it(installed, project, command,
                                   _hook_call(project, "Read", {"file_path": str(project / "src/calc.py")}))
    assert read.returncode == 0, read.stderr

    # The first spawn: the template copied with a goal, an agent id and the scripted model.
    (project / ".agent-runtime/scripts").mkdir()
    (project / ".agent-runtime/scripts/fix-mean.toml").write_text(SCRIPT)
    task = project / ".agent-runtime/tasks/fix-mean.toml"
    task.write_text((project / ".agent-runtime/tasks/example.toml").read_text()
                    .replace('role = "project"', 'role = "project"\nagent-id = "fix-mean"')
                    .replace("Say in one line what the change is.", "Fix mean, which divides by one too many.")
                    .replace('backend = "claude-code"', 'backend = "builtin"\nmodel = "scripted/fix-mean"\n'
                             'script = "../scripts/fix-mean.toml"  #'))
    lint = installed.run("lint", cwd=project)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    state = tmp_path / "state"
    spawn = installed.run("spawn", str(task), cwd=project, RUNTIME_STATE_DIR=str(state))
    assert spawn.returncode == 0, spawn.stdout[-3000:] + spawn.stderr[-3000:]
    assert spawn.stdout.splitlines()[0].split() == ["ok", "agent", "fix-mean", "(project)"]
    assert user_git(project, "show", "agent/fix-mean:src/calc.py") == "def mean(xs):\n    return sum(xs) / len(xs)"
    assert (project / "src/calc.py").read_text().endswith("(len(xs) + 1)\n")  # the checkout is the person's
    audit = installed.run("audit", "show", "--kind", "gate", "--json", cwd=project, RUNTIME_STATE_DIR=str(state))
    records = [json.loads(line)["data"] for line in audit.stdout.splitlines()]
    decisions = [(r["input"].get("command") or r["input"].get("file_path"), r["decision"]) for r in records]
    assert decisions == [("git push origin HEAD", "deny"), ("src/calc.py", "allow")]

    if installed.project is not None:
        # The project's own venv is as it was, and git sees nothing of the runtime's.
        assert sorted(str(p.relative_to(project)) for p in (project / ".venv").rglob("*")) == own_venv
        untracked = user_git(project, "status", "--porcelain", "--untracked-files=all").splitlines()
        assert not [line for line in untracked if "/venv/" in line or ".venv" in line], untracked


def test_a_real_model_without_the_models_extra_is_one_line_and_nothing_is_made(uv_tool, tmp_path):
    project = user_repo(tmp_path, PROJECT)
    task = tmp_path / "task.toml"
    task.write_text('[task]\nrole = "edit-local"\nagent-id = "real-model"\ngoal = "Fix mean."\n\n'
                    '[scope]\nfiles-whitelist = ["src/**"]\n\n[verification]\n'
                    'test-command = "python3 -m unittest discover -s tests -v"\ncheck-commands = []\n\n'
                    '[agent]\nbackend = "builtin"\nmodel = "openai/gpt-4.1"\n\n[body]\ntext = "Fix mean."\n')
    state = tmp_path / "state"
    spawn = uv_tool.run("spawn", str(task), cwd=project, RUNTIME_STATE_DIR=str(state), OPENAI_API_KEY="sk-test")
    assert spawn.returncode == 1 and spawn.stdout == ""
    assert spawn.stderr.splitlines() == [
        f"error: {task}: [agent] model: `openai/gpt-4.1` (a model called through litellm) needs the `models` extra, "
        "which this installation lacks: pip install 'agent-role-runtime[models]' (for a uv tool: uv tool install "
        "'agent-role-runtime[models]')"]
    assert not state.exists()
    assert user_git(project, "branch", "--format=%(refname:short)") == "trunk"


def test_the_ci_checks_pass_on_a_wheel_install(uv_tool, tmp_path):
    """docs/CI.md's checks, on the shipped catalog the wheel carries."""
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for args in (["lint"], ["doc-roles", "--check"], ["migrate", "--check"], ["schema", "--check"]):
        proc = uv_tool.run(*args, cwd=repo, timeout=120)
        assert proc.returncode == 0, (args, proc.stdout[-2000:], proc.stderr[-2000:])
