"""A project catalog (`runtime init`) extends the shipped one: it adds, it does not replace."""

import json
import subprocess

from tests.conftest import run_cli

TASK = """[task]
role = "project"
agent-id = "ag-proj"
goal = "Fix the parser."

[scope]
files-whitelist = ["src/**"]

[verification]
test-command = "uv run --no-sync pytest -q"
check-commands = ["true"]

[body]
text = "x"
"""


def test_a_project_catalog_adds_a_role_and_a_rule_to_the_shipped_catalog(tmp_path):
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "src").mkdir()
    init = run_cli("init", cwd=repo)
    assert init.returncode == 0, init.stderr
    role = repo / ".agent-runtime/roles/project.toml"
    text = role.read_text()
    role.write_text(text.replace("# [[params", "[[params").replace('# program = "tox"', 'program = "tox"')
                    .replace('# subcommands = ["-e py311"]', 'subcommands = ["-e py311"]')
                    .replace('# positionals = []', 'positionals = []'))
    (repo / "task.toml").write_text(TASK)
    assert run_cli("lint", "task.toml", cwd=repo).returncode == 0
    roles = json.loads(run_cli("roles", "--json", cwd=repo).stdout)
    assert {"project", "edit-local", "explorer"} <= {r["name"] for r in roles}

    def explain(command):
        return run_cli("explain", "--task", "task.toml", command, cwd=repo)

    assert explain("tox -e py311").returncode == 0                # the project's rule
    assert explain("pytest -q src").returncode == 0               # edit-local's rules are still there
    assert explain("tox -e py311 --installpkg x").returncode == 3  # only the declared form: the rest is asked
    assert explain("uv run --no-sync pytest -p evil").returncode == 3  # judged as pytest, through its grammar
    # The hook reads the same layers, and the project's catalog files are protected like the shipped ones.
    call = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": str(repo),
            "tool_input": {"command": "tox -e py311"}}
    env = {"RUNTIME_CACHE_DIR": str(tmp_path / "cache")}
    hook = run_cli("check", "--catalog", str(repo / ".agent-runtime"), "--role", "project", "--task", str(repo / "task.toml"),
                   "--root", str(repo), input=json.dumps(call), env=env)
    assert hook.returncode == 0, hook.stderr
    call["tool_name"], call["tool_input"] = "Write", {"file_path": str(role), "content": "x"}
    hook = run_cli("check", "--catalog", str(repo / ".agent-runtime"), "--role", "project", "--task", str(repo / "task.toml"),
                   "--root", str(repo), input=json.dumps(call), env=env)
    assert hook.returncode == 2
    again = run_cli("init", cwd=repo)
    assert again.returncode == 1 and "exists already; nothing was written" in again.stderr


def test_init_declares_the_toolchain_it_finds(tmp_path):
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / ".venv").mkdir()
    (repo / ".venv/pyvenv.cfg").write_text("home = /usr/bin\n")
    (repo / "uv.lock").write_text("version = 1\n")
    (repo / "node_modules/.bin").mkdir(parents=True)
    (repo / "Makefile").write_text("VAR := 1\ntest: build\n\tpytest\nlint:\n\truff check\ndeploy:\n\t./ship\n")
    assert run_cli("init", cwd=repo).returncode == 0
    text = (repo / ".agent-runtime/toolchain.toml").read_text()
    assert 'presets = ["uv", "node"]' in text
    assert '# make-targets = ["test", "lint"]' in text  # offered, not enabled; deploy is not offered
    (repo / "task.toml").write_text(TASK)
    assert run_cli("lint", "task.toml", cwd=repo).returncode == 0
    explain = run_cli("explain", "--task", "task.toml", ".venv/bin/pytest -q", cwd=repo)
    assert explain.returncode == 0, explain.stdout + explain.stderr


def test_init_without_a_toolchain_writes_one_that_declares_nothing(tmp_path):
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    assert run_cli("init", cwd=repo).returncode == 0
    assert "presets = []" in (repo / ".agent-runtime/toolchain.toml").read_text()
    (repo / "task.toml").write_text(TASK)
    explain = run_cli("explain", "--task", "task.toml", ".venv/bin/pytest -q", cwd=repo)
    assert explain.returncode == 3 and "no toolchain folder is declared" in explain.stdout + explain.stderr
