"""Without a terminal (a pipe, a CI log, a file), every command's output is plain and wide: no style
codes, and no line folded at rich's default 80 columns, whatever `COLUMNS` says or does not say.
`roles`, `status` and the spawn summary are tables and lines whose ids, paths and reasons a person or a
script copies whole.
"""

from __future__ import annotations

import os
import subprocess

from runtime.cli import spawn as spawn_cli
from runtime.spawn.outcome import Attempt, CheckRecord, Outcome
from runtime.spawn.state import RunRecord, StateDir
from tests.conftest import REPO, RUNTIME

LONG_ID = "ag-" + "a-rather-long-agent-id-that-names-its-task-in-full-" + "x" * 8


def _plain_env() -> dict[str, str]:
    env = dict(os.environ)
    for name in ("COLUMNS", "LINES", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        env.pop(name, None)
    return env


def _run(*args: str, cwd) -> str:
    proc = subprocess.run([RUNTIME, *args], cwd=cwd, capture_output=True, text=True, env=_plain_env(), timeout=120,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout + proc.stderr  # plain: no style codes
    return proc.stdout


def test_roles_is_one_line_per_role(tmp_path):
    out = _run("roles", "--catalog", str(REPO), cwd=tmp_path)
    (row,) = [line for line in out.splitlines() if "edit-local" in line and "explorer" in line]
    assert "Read, Glob, Grep, Write, Edit, MultiEdit, Bash" in row and len(row) > 80, out
    assert f"Roles in {REPO}" in out


def test_status_is_one_line_per_run(tmp_path):
    state = StateDir(tmp_path / "state-folder-with-a-name-long-enough-to-matter")
    state.write(RunRecord.from_json({"agent_id": LONG_ID, "role": "edit-local", "status": "rejected", "label": "rejected",
                          "branch": f"agent/{LONG_ID}", "commit": "c" * 40, "attempts": [{"number": 1}]}))
    out = _run("status", "--state-dir", str(state.root), cwd=tmp_path)
    (row,) = [line for line in out.splitlines() if LONG_ID in line]
    assert f"agent/{LONG_ID}" in row and "rejected" in row and "c" * 12 in row, out
    assert f"agent runs in {state.root}" in out


def test_the_spawn_summary_is_not_folded(capsys, monkeypatch):
    for name in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    reason = "The tests are not green: `pytest -q tests/test_a_module_with_a_long_name.py` exited with code 1; 2 test(s) failed."
    checks = [CheckRecord("output::report-format", "report-fields", "rejected", "Your final report is missing 2 fields"),
              CheckRecord("quality::tests-green", "tests-green", "rejected", reason + "\nFAILED tests/test_a.py::test_b")]
    outcome = Outcome("rejected", None, LONG_ID, "edit-local", branch=f"agent/{LONG_ID}", inspection="e" * 40,
                      message="## quality::tests-green (tests-green) rejected your work\n\n" + reason,
                      attempts=[Attempt(1, 1.0, 0, None, 3, 4, 0, report="", checks=checks)])
    spawn_cli._shown(outcome)
    out = capsys.readouterr().out
    assert "\x1b" not in out
    lines = out.splitlines()
    assert f"rejected  agent {LONG_ID} (edit-local)" in lines
    # The cause first: the failing tests, not the report the role's atoms happen to list first.
    assert f"cause: quality::tests-green: {reason}" in lines, out
    assert f"kept for inspection: {'e' * 40}" in lines and f"branch: agent/{LONG_ID}" in lines
    assert f"  {reason}" in lines, out
    table = [line for line in lines if "quality::tests-green" in line and "rejected" in line and "│" in line]
    assert table and lines.index(table[0]) < next(i for i, x in enumerate(lines) if "output::report-format" in x)
