"""Fixtures for end-to-end tests of `runtime spawn`: a real git repository, real bubblewrap, the real CLI.

Each test gets a fresh repository (the spawn demo's small Python project, on a
branch called `trunk` so nothing may assume `main`), a private state folder
(`RUNTIME_STATE_DIR`) and a `Spawner` that writes task manifests and
scripted-model scripts into tmp and runs `runtime spawn --json` as a
subprocess, the way users run it, returning the parsed outcome.

Agents are the builtin backend driven by the scripted model (offline,
deterministic), or the command backend running `/bin/sh -c ...` where a test
needs a process that misbehaves. Command agents run inside the sandbox, where
the orchestrator's /tmp is a private tmpfs: they can see only their worktree,
their home and the run folder, so their programs are given inline.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest
import tomlkit

from tests.conftest import REPO, RUNTIME
from tests.support import git, have_bwrap, processes_with

PROJECT = REPO / "manifests" / "examples" / "spawn-demo" / "project"
BASE_BRANCH = "trunk"
PY = sys.executable

BUGGY = "(len(values) + 1)"
FIXED = "len(values)"
REPORT = "Summary: calc.mean divided by len(values) + 1; it now divides by len(values).\nFiles changed: src/calc/__init__.py\n"

# Scripted-model turns (a list of tool calls, or a final content string).
FIX_TURN = [{"name": "Edit", "input": {"file_path": "src/calc/__init__.py", "old_string": BUGGY, "new_string": FIXED}}]
TEST_TURN = [{"name": "Bash", "input": {"command": "pytest -q tests"}}]

# Command-agent snippets (POSIX sh, run inside the sandbox with the worktree as cwd).
SH_FIX = "sed -i 's/(len(values) + 1)/len(values)/' src/calc/__init__.py"
SH_REPORT = ("printf 'Summary: fixed mean\\nFiles changed: src/calc/__init__.py\\n' > \"$RUNTIME_REPORT_FILE\"")


def marker() -> str:
    """A unique number for `sleep <n>`, so a test can find (or miss) exactly its own processes."""
    return str(100_000 + secrets.randbelow(800_000))


def no_survivors(text: str, timeout: float = 3.0) -> None:
    """Every process whose command line holds `text` is gone (killing any survivor, then failing)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not processes_with(text):
            return
        time.sleep(0.05)
    left = processes_with(text)
    seen = [_described(p) for p in left]  # before the kill: what a flaky failure needs to be understood
    for proc in left:
        try:
            proc.kill()
        except psutil.Error:
            pass
    raise AssertionError("processes survived the run:\n" + "\n".join(seen))


def _described(proc: psutil.Process) -> str:
    """A survivor, its parents up to pid 1 and its cgroups: who kept it alive, and whether its run's
    cgroup (which the next spawn clears) still holds it."""
    try:
        chain = [f"{a.pid} {a.name()}" for a in proc.parents()]
        groups = Path(f"/proc/{proc.pid}/cgroup").read_text().split()
        return (f"pid {proc.pid} ({proc.status()}, {' '.join(proc.info['cmdline'] or [])[:200]}); "
                f"parents {' < '.join(chain)}; cgroups {groups}")
    except (psutil.Error, OSError) as exc:
        return f"pid {proc.pid}: gone while described ({exc})"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@dataclass
class SpawnResult:
    proc: subprocess.CompletedProcess
    outcome: dict[str, Any] | None

    @property
    def code(self) -> int:
        return self.proc.returncode

    @property
    def stderr(self) -> str:
        return self.proc.stderr

    @property
    def label(self) -> str | None:
        return None if self.outcome is None else self.outcome["label"]

    def describe(self) -> str:
        return f"exit {self.code}\nstdout:\n{self.proc.stdout[-6000:]}\nstderr:\n{self.proc.stderr[-4000:]}"


@dataclass
class Spawner:
    tmp: Path
    repo: Path
    state: Path
    base: str  # the first commit of trunk
    env: dict[str, str] = field(default_factory=dict)

    # -- git ---------------------------------------------------------------------------------
    def git(self, *args: str, check: bool = True) -> str:
        return git(self.repo, *args, check=check)

    def sha(self, rev: str) -> str | None:
        out = subprocess.run(["git", "-C", str(self.repo), "rev-parse", "-q", "--verify", f"{rev}^{{commit}}"],
                             capture_output=True, text=True)
        return out.stdout.strip() or None

    def message(self, rev: str) -> str:
        return self.git("log", "-1", "--format=%B", rev)

    def commits(self, rev_range: str) -> list[str]:
        out = self.git("rev-list", rev_range)
        return out.split() if out else []

    def show(self, rev: str, path: str) -> str | None:
        proc = subprocess.run(["git", "-C", str(self.repo), "show", f"{rev}:{path}"], capture_output=True, text=True)
        return proc.stdout if proc.returncode == 0 else None

    def files_at(self, rev: str) -> list[str]:
        return self.git("ls-tree", "-r", "--name-only", rev).splitlines()

    # -- files -------------------------------------------------------------------------------
    def worktree(self, agent_id: str) -> Path:
        return self.state / "worktrees" / agent_id

    def run_dir(self, agent_id: str) -> Path:
        return self.state / "runs" / agent_id

    def state_json(self, agent_id: str) -> dict[str, Any]:
        return json.loads((self.run_dir(agent_id) / "state.json").read_text())

    def write_script(self, turns: list, name: str = "script.toml") -> Path:
        doc = {"turn": [{"content": t} if isinstance(t, str) else {"tool_calls": t} for t in turns]}
        path = self.tmp / name
        path.write_text(tomlkit.dumps(doc))
        return path

    def task(self, *, agent_id: str, name: str | None = None, role: str = "edit-local",
             goal: str = "Fix calc.mean, which divides by one too many.",
             scope: dict | None = None, verification: dict | None = None, output: dict | None = None,
             agent: dict | None = None, limits: dict | None = None, script: list | None = None,
             command: str | list[str] | None = None, body: str = "calc.mean returns a wrong average. Fix it.",
             no_agent: bool = False) -> Path:
        """Write a task manifest (and its script) into tmp; defaults are the spawn demo's."""
        doc: dict[str, Any] = {"task": {"role": role, "agent-id": agent_id, "parent-agent": "orchestrator", "goal": goal}}
        doc["scope"] = scope if scope is not None else {"files-whitelist": ["src/calc/**", "tests/**"]}
        doc["verification"] = verification if verification is not None else {
            "test-command": "pytest -q tests", "test-count-min": 4,
            "check-commands": ["python3 -m tabnanny src"]}
        doc["output"] = output if output is not None else {"report-fields-required": ["summary", "files-changed"]}
        for key in ("scope", "verification", "output"):
            if not doc[key]:
                del doc[key]
        name = name or agent_id
        if not no_agent:
            section: dict[str, Any] = {}
            if command is not None:
                section = {"backend": "command", "command": ["/bin/sh", "-c", command] if isinstance(command, str) else command}
            else:
                script_path = self.write_script(script if script is not None else [FIX_TURN, TEST_TURN, REPORT],
                                                name=f"{name}.script.toml")
                section = {"backend": "builtin", "model": "scripted/test", "script": script_path.name}
            section["retries"] = 0
            section.update(agent or {})
            if not str(section.get("model", "scripted/")).startswith("scripted/"):
                section.pop("script", None)  # a real litellm model (the fake OpenAI server)
            section["limits"] = {"timeout-s": 60, "max-turns": 20, **(limits or {})}
            doc["agent"] = section
        doc["body"] = {"text": body}
        path = self.tmp / f"{name}.task.toml"
        path.write_text(tomlkit.dumps(doc))
        return path

    # -- the CLI -----------------------------------------------------------------------------
    def full_env(self, env: dict[str, str] | None = None) -> dict[str, str]:
        return {**os.environ, "RUNTIME_STATE_DIR": str(self.state), **self.env, **(env or {})}

    def argv(self, task: Path, *flags: str) -> list[str]:
        return [RUNTIME, "spawn", "--json", "--catalog", str(REPO), *flags, str(task)]

    def spawn(self, task: Path, *flags: str, env: dict[str, str] | None = None, timeout: float = 150) -> SpawnResult:
        proc = subprocess.run(self.argv(task, *flags), cwd=self.repo, capture_output=True, text=True,
                              env=self.full_env(env), timeout=timeout)
        return SpawnResult(proc, _parse(proc.stdout))

    def start(self, task: Path, *flags: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        """`runtime spawn` in the background, in its own session (so a test may kill it alone)."""
        return subprocess.Popen(self.argv(task, *flags), cwd=self.repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=self.full_env(env), start_new_session=True)

    def cli(self, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run([RUNTIME, *args], cwd=cwd or self.repo, capture_output=True, text=True,
                              env=self.full_env(env), timeout=timeout)

    def status(self) -> list[dict[str, Any]]:
        proc = self.cli("status", "--json")
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    def audit(self, *, kind: str | None = None, agent: str | None = None) -> list[dict[str, Any]]:
        args = ["audit", "show", "--json"] + (["--kind", kind] if kind else []) + (["--agent", agent] if agent else [])
        proc = self.cli(*args)
        assert proc.returncode == 0, proc.stderr
        return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]

    def audit_intact(self) -> None:
        proc = self.cli("audit", "verify")
        assert proc.returncode == 0 and "chain intact" in proc.stdout, proc.stdout + proc.stderr

    def audit_text(self) -> str:
        path = self.state / "audit.jsonl"
        return path.read_text() if path.exists() else ""


def _parse(stdout: str) -> dict[str, Any] | None:
    try:
        data = json.loads(stdout)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def make_repo(root: Path) -> tuple[Path, str]:
    repo = root / "repo"
    shutil.copytree(PROJECT, repo, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    (repo / "README.md").write_text("# calc\n\nA tiny calculator.\n")
    (repo / "docs").mkdir()
    (repo / "docs" / "notes.md").write_text("Notes that no agent of these tests may touch.\n")
    git(root, "init", "-q", "-b", BASE_BRANCH, str(repo))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a calculator with a bug")
    return repo, git(repo, "rev-parse", "HEAD")


@pytest.fixture
def spawner(tmp_path, monkeypatch) -> Spawner:
    have_bwrap()
    repo, base = make_repo(tmp_path)
    state = tmp_path / "state"
    monkeypatch.setenv("RUNTIME_STATE_DIR", str(state))
    return Spawner(tmp_path, repo, state, base)

