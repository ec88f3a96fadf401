"""Fixtures for end-to-end tests of `runtime run`: real git, real bubblewrap, the real CLI, scripted agents.

Each test gets a fresh repository (the spawn demo's small Python project, on a
branch called `trunk`), a private state folder (`RUNTIME_STATE_DIR`) and an
`Orchestra` that writes a plan and its agents' scripts into tmp and runs
`runtime run --json` as a subprocess, the way users run it. A run gives back
its exit code, the parsed JSON event stream (one object per line) and the
Markdown run report the `run-end` event names.

Agents are the builtin backend driven by the scripted model (offline,
deterministic), or the command backend running `/bin/sh -c ...` inline (inside
the sandbox the orchestrator's /tmp is a private tmpfs).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import tomlkit

from tests.conftest import REPO, RUNTIME
from tests.spawn.conftest import spawner  # noqa: F401 - the spawn tests' fixture, for the executor's tests
from tests.support import git, have_bwrap

PROJECT = REPO / "manifests" / "examples" / "spawn-demo" / "project"
EXAMPLE_PLAN = REPO / "manifests" / "examples" / "plan" / "plan.toml"
BASE_BRANCH = "trunk"

BUGGY = "(len(values) + 1)"
FIXED = "len(values)"
FIX_TURN = [{"name": "Edit", "input": {"file_path": "src/calc/__init__.py", "old_string": BUGGY, "new_string": FIXED}}]
FIX_REPORT = "Summary: calc.mean now divides by len(values).\nFiles changed: src/calc/__init__.py\n"
DOC_TEXT = "# calc\n\n- `calc.mean(values)`: the arithmetic mean.\n"


def make_repo(root: Path, name: str = "repo") -> tuple[Path, str]:
    """A copy of the spawn demo's project, committed on `trunk`; returns (repo, base commit)."""
    repo = root / name
    shutil.copytree(PROJECT, repo, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    git(root, "init", "-q", "-b", BASE_BRANCH, str(repo))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a calculator with a bug")
    return repo, git(repo, "rev-parse", "HEAD")


# -- the run report -------------------------------------------------------------------------------

def report_rows(report: str) -> list[dict[str, str]]:
    """The rows of the report's subtask table, by column name."""
    lines = report.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("| round | seq | subtask |"))
    names = [c.strip() for c in lines[head].strip("|").split("|")]
    rows = []
    for line in lines[head + 2:]:
        if not line.startswith("|"):
            break
        rows.append(dict(zip(names, (c.strip() for c in line.strip("|").split("|")), strict=False)))
    return rows


def report_section(report: str, title: str) -> str:
    """The text of the `## title` section (up to the next `## `), or '' when there is none."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", report, re.M | re.S)
    return match.group(1) if match else ""


@dataclass
class RunResult:
    code: int
    stdout: str
    stderr: str
    events: list[dict[str, Any]]
    bad_lines: list[str]  # stdout lines that are not one JSON object
    report_path: Path | None
    report: str | None

    @property
    def run_id(self) -> str | None:
        for event in self.events:
            if "run" in event:
                return event["run"]
        return None

    @property
    def status(self) -> str | None:
        ends = self.of("run-end")
        return ends[-1]["status"] if ends else None

    def kinds(self) -> list[str]:
        return [e["event"] for e in self.events]

    def of(self, kind: str, **match: Any) -> list[dict[str, Any]]:
        return [e for e in self.events if e["event"] == kind and all(e.get(k) == v for k, v in match.items())]

    def label(self, subtask: str) -> str | None:
        ends = self.of("subtask-end", subtask=subtask)
        return ends[-1]["label"] if ends else None

    def rows(self) -> list[dict[str, str]]:
        assert self.report is not None, self.describe()
        return report_rows(self.report)

    def row(self, subtask: str, round: int | None = None) -> dict[str, str]:
        rows = [r for r in self.rows() if r["subtask"] == subtask and (round is None or r["round"] == str(round))]
        assert len(rows) == 1, (subtask, round, self.report)
        return rows[0]

    def describe(self) -> str:
        ends = [e for e in self.events if e["event"] not in ("progress",)]
        return (f"exit {self.code}\nevents (no progress):\n" + "\n".join(json.dumps(e)[:600] for e in ends)[-8000:]
                + f"\nbad stdout lines: {self.bad_lines[:5]}\nstderr:\n{self.stderr[-4000:]}"
                + f"\nreport:\n{(self.report or '')[:4000]}")


def parse_events(stdout: str) -> tuple[list[dict[str, Any]], list[str]]:
    events, bad = [], []
    for line in stdout.splitlines():
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError:
            bad.append(line)
            continue
        if isinstance(data, dict) and isinstance(data.get("event"), str):
            events.append(data)
        else:
            bad.append(line)
    return events, bad


def result_of(code: int, stdout: str, stderr: str) -> RunResult:
    events, bad = parse_events(stdout)
    path = None
    for event in events:
        if event["event"] == "run-end" and event.get("report"):
            path = Path(event["report"])
    report = path.read_text(encoding="utf-8") if path is not None and path.is_file() else None
    return RunResult(code, stdout, stderr, events, bad, path, report)


# -- the orchestra --------------------------------------------------------------------------------

@dataclass
class Orchestra:
    tmp: Path
    repo: Path
    state: Path
    base: str  # the first commit of trunk
    plans: Path  # where plans and scripts are written
    env: dict[str, str] = field(default_factory=dict)

    # -- writing plans -----------------------------------------------------------------------
    def script(self, name: str, turns: list, folder: Path | None = None) -> Path:
        """A scripted-model file: each turn a list of tool calls or a final content string."""
        doc = {"turn": [{"content": t} if isinstance(t, str) else {"tool_calls": t} for t in turns]}
        path = (folder or self.plans) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(tomlkit.dumps(doc), encoding="utf-8")
        return path

    def subtask(self, sid: str, sequence: int = 1, *, turns: list | None = None, command: str | None = None,
                whitelist: list[str] | None = None, role: str = "edit-local", goal: str | None = None,
                uses: list[str] = (), test_command: str | None = "pytest -q tests", test_count_min: int | None = None,
                check_commands: list[str] | None = ("true",), report_fields: list[str] | None = None,
                retries: int = 0, env: list[str] | None = None, limits: dict | None = None,
                body: str | None = None) -> dict[str, Any]:
        """An inline `[[subtask]]`: a scripted builtin agent (`turns`) or a command agent (`command`)."""
        sub: dict[str, Any] = {"id": sid, "sequence": sequence}
        if uses:
            sub["uses"] = list(uses)
        sub["task"] = {"role": role, "goal": goal or f"Subtask {sid}."}
        sub["scope"] = {"files-whitelist": whitelist if whitelist is not None else ["src/calc/__init__.py"]}
        verification: dict[str, Any] = {}
        if test_command:
            verification["test-command"] = test_command
        if test_count_min is not None:
            verification["test-count-min"] = test_count_min
        if check_commands:
            verification["check-commands"] = list(check_commands)
        if verification:
            sub["verification"] = verification
        if report_fields:
            sub["output"] = {"report-fields-required": report_fields}
        if command is not None:
            agent: dict[str, Any] = {"backend": "command", "command": ["/bin/sh", "-c", command]}
        else:
            script = self.script(f"{sid}.script.toml", turns if turns is not None else [FIX_TURN, FIX_REPORT])
            agent = {"backend": "builtin", "model": f"scripted/{sid}", "script": script.name}
        agent["retries"] = retries
        if env:
            agent["env"] = env
        agent["limits"] = {"timeout-s": 90, "max-turns": 20, **(limits or {})}
        sub["agent"] = agent
        sub["body"] = {"text": body or f"Do subtask {sid}."}
        return sub

    def plan(self, subtasks: list[dict[str, Any]], *, name: str = "plan.toml", goal: str = "Fix calc.mean.",
             criteria: list[str] | None = None, checks: list[str] | None = None, planner: list[str] | None = None,
             reviewer: list[str] | None = None, **keys: Any) -> Path:
        """Write a plan.toml; `planner`/`reviewer` are scripted turns (JSON strings) for those models.

        Extra keys go to `[plan]` with `_` written as `-` (`max_replans=0`)."""
        section: dict[str, Any] = {"goal": goal, "success-criteria": criteria or ["the tests pass"]}
        if checks is not None:
            section["checks"] = checks
        section["max-replans"] = 0
        section["concurrency"] = 2
        section.update({k.replace("_", "-"): v for k, v in keys.items()})
        if planner is not None:
            self.script(f"{Path(name).stem}.planner.toml", planner)
            section["planner"] = {"model": "scripted/planner", "script": f"{Path(name).stem}.planner.toml"}
        if reviewer is not None:
            self.script(f"{Path(name).stem}.reviewer.toml", reviewer)
            section["reviewer"] = {"model": "scripted/reviewer", "script": f"{Path(name).stem}.reviewer.toml"}
        path = self.plans / name
        path.write_text(tomlkit.dumps({"plan": section, "subtask": subtasks}), encoding="utf-8")
        return path

    # -- the CLI -----------------------------------------------------------------------------
    def full_env(self, env: dict[str, str] | None = None) -> dict[str, str]:
        return {**os.environ, "RUNTIME_STATE_DIR": str(self.state), **self.env, **(env or {})}

    def argv(self, *args: str | Path) -> list[str]:
        return [RUNTIME, "run", "--json", "--catalog", str(REPO), *map(str, args)]

    def run(self, *args: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None,
            timeout: float = 300) -> RunResult:
        """`runtime run --json ARGS` in the repository; the exit code, events and report."""
        proc = subprocess.run(self.argv(*args), cwd=cwd or self.repo, capture_output=True, text=True,
                              env=self.full_env(env), timeout=timeout)
        return result_of(proc.returncode, proc.stdout, proc.stderr)

    def start(self, *args: str | Path, env: dict[str, str] | None = None) -> subprocess.Popen:
        """`runtime run --json ARGS` in the background, in its own session (so a test may kill it alone)."""
        return subprocess.Popen(self.argv(*args), cwd=self.repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=self.full_env(env), start_new_session=True)

    # -- git ---------------------------------------------------------------------------------
    def git(self, *args: str, check: bool = True) -> str:
        return git(self.repo, *args, check=check)

    def sha(self, rev: str, repo: Path | None = None) -> str | None:
        out = subprocess.run(["git", "-C", str(repo or self.repo), "rev-parse", "-q", "--verify", f"{rev}^{{commit}}"],
                             capture_output=True, text=True)
        return out.stdout.strip() or None

    def branches(self) -> list[str]:
        return sorted(self.git("for-each-ref", "--format=%(refname:short)", "refs/heads").split())

    def first_parents(self, rev_range: str) -> list[str]:
        """Subjects of the first-parent history, oldest first."""
        out = self.git("log", "--first-parent", "--reverse", "--format=%s", rev_range)
        return out.splitlines() if out else []

    def show(self, rev: str, path: str) -> str | None:
        proc = subprocess.run(["git", "-C", str(self.repo), "show", f"{rev}:{path}"], capture_output=True, text=True)
        return proc.stdout if proc.returncode == 0 else None

    def parents(self, rev: str) -> list[str]:
        return self.git("rev-list", "--parents", "-n", "1", rev).split()[1:]

    # -- state -------------------------------------------------------------------------------
    def db(self) -> sqlite3.Connection | None:
        path = self.state / "orchestrator.sqlite"
        if not path.exists():
            return None
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        return conn

    def query(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        conn = self.db()
        if conn is None:
            return []
        try:
            return [dict(r) for r in conn.execute(sql, params)]
        finally:
            conn.close()

    def runs(self) -> list[dict[str, Any]]:
        return self.query("select * from runs order by created")

    def subtasks(self, run_id: str) -> dict[str, dict[str, Any]]:
        return {r["subtask_id"]: r for r in self.query("select * from subtasks where run_id = ?", run_id)}

    def merges(self, run_id: str) -> list[dict[str, Any]]:
        return self.query("select * from merges where run_id = ? order by created", run_id)

    def stored_events(self, run_id: str, kind: str | None = None) -> list[dict[str, Any]]:
        rows = self.query("select kind, data from events where run_id = ? order by id", run_id)
        return [{"event": r["kind"], **json.loads(r["data"])} for r in rows if kind is None or r["kind"] == kind]

    def agent_folders(self) -> list[str]:
        """The spawn state folders (one per agent id that was spawned)."""
        runs = self.state / "runs"
        return sorted(p.name for p in runs.iterdir() if p.is_dir() and "." in p.name) if runs.is_dir() else []

    def memory(self):
        from runtime.memory.reader import open_memory

        return open_memory(self.state / "memory.sqlite")

    def audit(self, kind: str | None = None) -> list[dict[str, Any]]:
        path = self.state / "audit.jsonl"
        if not path.exists():
            return []
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        return [r for r in records if kind is None or r.get("kind") == kind]


@pytest.fixture
def orchestra(tmp_path, monkeypatch) -> Orchestra:
    have_bwrap()
    repo, base = make_repo(tmp_path)
    state = tmp_path / "state"
    plans = tmp_path / "plans"
    plans.mkdir()
    monkeypatch.setenv("RUNTIME_STATE_DIR", str(state))
    return Orchestra(tmp_path, repo, state, base, plans)
