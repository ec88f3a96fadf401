"""`runtime hook install` writes Claude Code's sandbox settings for the role, merged with the person's own.

What the CLI then does with them is `tests/cli/test_claude_code_sandbox.py`'s (the real CLI, refusals seen from
the host); here: which folders, denies and domains each role gets, what the install keeps and says, and
that bad settings are refused with nothing written.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from runtime.manifests.catalog import Catalog
from runtime.tooling.claude_sandbox import GIT_RUNS, role_sandbox, strict_reason
from tests.conftest import REPO, RUNTIME, run_cli

ON_PATH = {"PATH": f"{Path(RUNTIME).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
CONTROL = ["./.gitmodules", "./.claude", "./.mcp.json", "./.agent-runtime"]

TASK = """[task]
role = "edit-local"
agent-id = "ag-docs"
goal = "Document the parser."

[scope]
files-whitelist = [{globs}]
files-denylist = ["docs/api/generated.md", "docs/**/*.tmp"]

[verification]
test-command = "pytest -q"
check-commands = ["true"]

[body]
text = "Write the docs."
"""


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for name in ("README.md", "setup.py", "src/app.py", "docs/index.md", "docs/api/parser.md", "tests/test_app.py"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x\n")
    (root / "tasks").mkdir()
    return root


def _install(root: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return run_cli("hook", "install", "--catalog", str(REPO), *args, cwd=root, env={**ON_PATH, **(env or {})})


def _sandbox(root: Path, name: str = ".claude/settings.json") -> dict:
    return json.loads((root / name).read_text())["sandbox"]


def test_a_plain_install_sets_the_session_roles_sandbox(project):
    proc = _install(project)
    assert proc.returncode == 0, proc.stderr
    assert _sandbox(project) == {
        "enabled": True, "failIfUnavailable": True, "allowUnsandboxedCommands": False,
        # The session commits with git: .git stays writable but for what makes git run code.
        "filesystem": {"allowWrite": ["."], "denyWrite": [f"./.git/{p}" for p in GIT_RUNS] + CONTROL},
        "network": {"allowedDomains": []},
    }
    lines = proc.stdout.splitlines()
    assert ("Claude Code's sandbox set for role `session`: Bash writes anywhere in the repository but its control "
            "files, network to no domain; a call asking to leave the sandbox is refused") in lines, proc.stdout
    assert strict_reason(os.geteuid() == 0) in lines, proc.stdout


def test_a_task_scope_becomes_its_folders_with_everything_else_read_only(project):
    (project / "tasks/docs.toml").write_text(TASK.format(globs='"docs/api/**", "src/app.py"'))
    proc = _install(project, "--role", "edit-local", "--task", "tasks/docs.toml", "--json")
    assert proc.returncode == 0, proc.stderr
    box = json.loads(proc.stdout)["sandbox"]
    assert box == _sandbox(project)
    assert box["filesystem"]["allowWrite"] == ["./docs/api", "./src/app.py"]
    # No git rule: .git read-only whole. Then the denylist's plain path (its pattern has no form here), and
    # every existing entry outside the scope in the folders leading to it; the scope's own entries are not.
    assert box["filesystem"]["denyWrite"] == ["./.git", *CONTROL, "./docs/api/generated.md", "./README.md",
                                              "./setup.py", "./tasks", "./tests", "./docs/index.md"]


def test_a_symlink_never_becomes_a_writable_folder(project, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "sub").mkdir(parents=True)
    (project / "link").symlink_to(elsewhere)
    (project / "tasks/t.toml").write_text(TASK.format(globs='"link/sub/**", "src/**"'))
    proc = _install(project, "--role", "edit-local", "--task", "tasks/t.toml")
    assert proc.returncode == 0, proc.stderr
    fs = _sandbox(project)["filesystem"]
    assert fs["allowWrite"] == ["./src"] and "./link" in fs["denyWrite"]


def test_a_role_without_a_write_scope_keeps_every_existing_file(project):
    proc = _install(project, "--role", "explorer")
    assert proc.returncode == 0, proc.stderr
    fs = _sandbox(project)["filesystem"]
    assert fs["allowWrite"] == []
    assert fs["denyWrite"] == ["./.git", *CONTROL, "./README.md", "./docs", "./setup.py", "./src", "./tasks", "./tests"]
    assert "Bash writes no existing file of the repository (6 existing files and folders" in proc.stdout, proc.stdout


def test_the_roles_domains_are_the_network(project, catalog_copy):
    role = catalog_copy / "roles/read-only.toml"
    role.write_text(role.read_text() + '\n[params."net::egress-allowlist"]\ndomains = ["docs.python.org", "*.pypi.org"]\n')
    block = role_sandbox(Catalog(catalog_copy), "read-only", None, project, project / ".claude/settings.json")
    assert block.domains == ("docs.python.org", "*.pypi.org")
    assert block.settings()["network"] == {"allowedDomains": ["docs.python.org", "*.pypi.org"]}
    assert "network to docs.python.org, *.pypi.org" in block.summary()


def test_the_persons_own_sandbox_keys_are_kept_and_named(project):
    settings = project / ".claude/settings.json"
    settings.parent.mkdir()
    mine = {"model": "x", "sandbox": {"enabled": False, "excludedCommands": ["docker *"], "autoAllowBashIfSandboxed": True,
                                      "filesystem": {"denyRead": ["~/.ssh"], "allowWrite": ["/opt/cache"]},
                                      "network": {"allowedDomains": ["github.com"], "deniedDomains": ["evil.example"]}}}
    settings.write_text(json.dumps(mine))
    proc = _install(project)
    assert proc.returncode == 0, proc.stderr
    box = _sandbox(project)
    assert box["excludedCommands"] == ["docker *"] and box["autoAllowBashIfSandboxed"] is True
    assert box["filesystem"]["denyRead"] == ["~/.ssh"] and box["network"]["deniedDomains"] == ["evil.example"]
    # The keys the role decides are the role's.
    assert box["enabled"] is True and box["filesystem"]["allowWrite"] == ["."] and box["network"]["allowedDomains"] == []
    assert json.loads(settings.read_text())["model"] == "x"
    [kept] = [line for line in proc.stdout.splitlines() if line.startswith("kept the sandbox settings")]
    assert ("autoAllowBashIfSandboxed, excludedCommands, filesystem.denyRead, network.deniedDomains" in kept
            and "widen" in kept), kept
    text = settings.read_text()
    again = _install(project)
    assert again.returncode == 0 and "already installed" in again.stdout and settings.read_text() == text


@pytest.mark.parametrize("bad", [{"sandbox": ["on"]}, {"sandbox": {"network": "none"}},
                                 {"sandbox": {"filesystem": [".", "src"]}}])
def test_a_sandbox_that_is_not_an_object_is_refused_with_nothing_written(project, bad):
    settings = project / ".claude/settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(bad))
    proc = _install(project)
    assert proc.returncode == 1 and proc.stdout == "", proc.stdout
    [line] = proc.stderr.splitlines()
    assert "sandbox" in line and "fix it by hand" in line, line
    assert json.loads(settings.read_text()) == bad


def test_paths_are_relative_in_the_projects_files_and_absolute_elsewhere(project, tmp_path):
    off = _install(project, env={"PATH": "/usr/bin:/bin"})  # the command names this machine: the local file
    assert off.returncode == 0 and _sandbox(project, ".claude/settings.local.json")["filesystem"]["allowWrite"] == ["."]
    other = tmp_path / "other.json"
    proc = _install(project, "--settings", str(other))
    assert proc.returncode == 0, proc.stderr
    fs = json.loads(other.read_text())["sandbox"]["filesystem"]
    real = os.path.realpath(project)
    assert fs["allowWrite"] == [real] and f"{real}/.claude" in fs["denyWrite"]


def test_a_machine_without_bubblewrap_or_socat_is_told_the_cli_will_not_start(project):
    venv_only = {"PATH": str(Path(RUNTIME).parent)}
    assert shutil.which("bwrap", path=venv_only["PATH"]) is None and shutil.which("socat", path=venv_only["PATH"]) is None
    proc = _install(project, "--json", env=venv_only)
    assert proc.returncode == 0, proc.stderr
    notes = json.loads(proc.stdout)["notes"]
    assert any(n.startswith("bubblewrap and socat not found: Claude Code refuses to start here") for n in notes), notes
    assert _sandbox(project)["failIfUnavailable"] is True  # still written: the file is for every clone


def test_the_gate_stays_strict_and_says_why_for_the_user_it_runs_as(project):
    out = json.loads(_install(project, "--json").stdout)
    assert out["gate_mode"] == "strict" and out["strict_because"] == strict_reason(os.geteuid() == 0)
    assert "runs commands as host root" in strict_reason(True) and "kernel.core_pattern" in strict_reason(True)
    assert "cannot tell whether Claude Code sandboxes a given call" in strict_reason(False)


def test_a_sessions_toolchain_is_kept_read_only_and_its_policy_compiles(project):
    """A repository's toolchain (its venv) is no part of a person's session scope: the gate and the sandbox keep
    it, and the session's other calls are judged (a policy refused for it would deny every call)."""
    (project / "tools/venv/bin").mkdir(parents=True)
    (project / ".agent-runtime").mkdir()
    (project / ".agent-runtime/toolchain.toml").write_text('[toolchain]\nfolders = ["tools/venv"]\n')
    proc = run_cli("hook", "install", "--json", cwd=project, env=ON_PATH)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert "./tools/venv" in out["sandbox"]["filesystem"]["denyWrite"]

    def judge(tool: str, tool_input: dict) -> subprocess.CompletedProcess:
        call = {"hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": tool_input, "cwd": str(project)}
        return subprocess.run(out["command"], shell=True, input=json.dumps(call), capture_output=True, text=True,
                              env={**os.environ, **ON_PATH, "CLAUDE_PROJECT_DIR": str(project)}, timeout=60)

    assert judge("Read", {"file_path": str(project / "src/app.py")}).returncode == 0
    assert judge("Write", {"file_path": str(project / "src/new.py"), "content": "x"}).returncode == 0
    planted = judge("Write", {"file_path": str(project / "tools/venv/bin/pytest"), "content": "#!/bin/sh\n"})
    assert planted.returncode == 2 and "denylist (tools/venv)" in planted.stderr, planted.stderr
