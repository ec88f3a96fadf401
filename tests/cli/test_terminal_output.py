"""Every human output path shows agent text inert: `runtime status`, `audit show`, `approvals`,
`approve`/`deny`, `prune`, the error line, the spawn summary, the run's live view and report.

The commands run as processes, on pipes and on a pseudo-terminal, over state that holds the hostile
string where agents put text (state files, audit records, approval requests); the summary and the
live view run in-process with rich forced onto its terminal path (`FORCE_COLOR`) and off it. Every
byte written is checked by `tests.hostile_text.assert_inert`, and the escaped text must be there.
"""

from __future__ import annotations

import io
import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from runtime.approvals.service import console_notifier
from runtime.approvals.store import ApprovalStore
from runtime.audit.log import AuditLog
from runtime.audit.records import CheckJudged, Ended
from runtime.cli import run as run_cli_module
from runtime.cli import spawn as spawn_cli
from runtime.orchestration.events import AgentProgress, Judged, SharedPath, SubtaskEnd
from runtime.orchestration.report import ReplanNote, RunReport, SubtaskLine, render
from runtime.spawn.outcome import Attempt, CheckRecord, Outcome
from runtime.spawn.state import RunRecord, StateDir
from tests.conftest import RUNTIME
from tests.hostile_text import HOSTILE, MARKUP, SHOWN, assert_inert, run_cli
from tests.support import git

TTY = pytest.mark.parametrize("tty", [False, True], ids=["pipes", "pty"])
RICH_TERMINAL = pytest.mark.parametrize("terminal", [False, True], ids=["plain", "terminal"])


def _cli(tmp_path: Path, *args: str, tty: bool, cwd: Path | None = None) -> tuple[int, str]:
    code, out = run_cli([RUNTIME, *args], tty=tty, cwd=cwd or tmp_path, env=dict(os.environ))
    return code, assert_inert(out, tty=tty)


def _hostile_run(state: StateDir, agent_id: str = "ag-one") -> None:
    state.write(RunRecord.from_json({"agent_id": agent_id, "role": HOSTILE, "status": "rejected", "label": HOSTILE,
                           "branch": f"agent/{HOSTILE}", "commit": HOSTILE, "message": HOSTILE,
                           "attempts": [{"number": 1, "report": HOSTILE}]}))


@TTY
def test_status_shows_state_files_inert(tmp_path, tty):
    state = StateDir(tmp_path / "state")
    _hostile_run(state)
    code, out = _cli(tmp_path, "status", "--state-dir", str(state.root), tty=tty)
    assert code == 0 and "ag-one" in out and SHOWN in out and "[/bold]" in out, out


@TTY
def test_audit_show_shows_records_inert(tmp_path, tty):
    state = StateDir(tmp_path / "state")
    AuditLog(state.audit).append(Ended(label="rejected", message=HOSTILE, commit=None, merged=None), "ag-one")
    AuditLog(state.audit).append(CheckJudged(attempt=1, atom="quality::tests-green", check="tests-green",
                                             status="rejected", feedback="[/bold]"), HOSTILE)
    code, out = _cli(tmp_path, "audit", "show", "--state-dir", str(state.root), tty=tty)
    assert code == 0 and "outcome" in out and "[/bold]" in out, out
    assert SHOWN in out, out  # the agent field, which is not JSON


@TTY
def test_approvals_and_decisions_show_tool_inputs_inert(tmp_path, tty):
    state = tmp_path / "state"
    store = ApprovalStore.for_state(state)
    approval, _ = store.request("ag-one", "Bash", {"command": f"echo {HOSTILE}"}, HOSTILE, 300)
    # The store escapes what it keeps; the commands must not rely on it (an older store, a bug): raw text.
    raw = HOSTILE.replace("\udcff", "")  # SQLite keeps UTF-8 only
    conn = sqlite3.connect(state / "approvals.sqlite")
    with conn:
        conn.execute("UPDATE requests SET summary = ?, gate_reason = ?, agent = ? WHERE id = ?",
                     (raw, raw, raw, approval.id))
    conn.close()
    code, out = _cli(tmp_path, "approvals", "--state-dir", str(state), tty=tty)
    assert code == 0 and approval.id in out and SHOWN in out and all(m in out for m in MARKUP), out
    code, out = _cli(tmp_path, "deny", approval.id, "--reason", raw.replace("\x00", ""), "--state-dir", str(state),
                     tty=tty)
    assert code == 0 and f"denied [{approval.id}]" in out and SHOWN in out, out
    code, out = _cli(tmp_path, "approvals", "--all", "--state-dir", str(state), tty=tty)
    assert code == 0 and "denied" in out and SHOWN in out, out


def test_the_orchestrator_s_approval_prompt_shows_the_call_inert(tmp_path):
    store = ApprovalStore.for_state(tmp_path / "state")
    approval, _ = store.request("ag-one", "Bash", {"command": "true"}, "r", 300)
    raw = approval.__class__(**{**approval.__dict__, "summary": HOSTILE, "gate_reason": HOSTILE})
    out = io.StringIO()
    console_notifier(store, stream=out, interactive=False)(raw)
    text = assert_inert(out.getvalue().encode("utf-8"), tty=False)
    assert SHOWN in text and "[/bold]" in text, text


@TTY
def test_prune_lists_runs_inert(tmp_path, tty):
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", "-b", "trunk", str(repo))
    git(repo, "commit", "-q", "--allow-empty", "-m", "base")
    state = StateDir(tmp_path / "state")
    _hostile_run(state)
    code, out = _cli(tmp_path, "prune", "--dry-run", "--state-dir", str(state.root), tty=tty, cwd=repo)
    assert code == 0 and "would prune ag-one" in out and SHOWN in out, out


@TTY
def test_an_error_line_quoting_input_is_inert(tmp_path, tty):
    code, out = _cli(tmp_path, "status", HOSTILE.replace("\x00", "").replace("\udcff", ""),
                     "--state-dir", str(tmp_path / "state"), tty=tty)
    assert code == 1 and "error: no run of agent " + SHOWN in out, out


# -- in-process: the spawn summary and the run's live view, on rich's terminal path and off it -------

def _outcome(status: str = "ok") -> Outcome:
    checks = [CheckRecord("quality::tests-green", "tests-green", "passed", HOSTILE + "\nsecond line"),
              CheckRecord(HOSTILE, "checks-green", "rejected", f"FAILED {HOSTILE}")]
    attempt = Attempt(1, 1.0, 0, None, 3, 4, 0, report=HOSTILE, checks=checks, feedback=HOSTILE)
    return Outcome(status, None, "ag-one", "edit-local", base="b" * 40, branch="agent/ag-one", commit="c" * 40,
                   merged="d" * 40, worktree=f"/tmp/{HOSTILE}", message=f"merged; the checks said:\n{HOSTILE}\nok",
                   attempts=[attempt])


def _force(monkeypatch, terminal: bool) -> None:
    for name in ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    if terminal:
        monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "400")


@RICH_TERMINAL
def test_the_spawn_summary_of_committed_work_is_total_over_agent_text(capsys, monkeypatch, terminal):
    _force(monkeypatch, terminal)
    spawn_cli._shown(_outcome())
    captured = capsys.readouterr()
    out = assert_inert((captured.out + captured.err).encode("utf-8"), tty=terminal)
    assert captured.err == "" and SHOWN in out and all(m in out for m in MARKUP), out
    # A line the agent wrote never starts at the left margin, where the runtime's own lines do.
    assert "\nok\n" not in out and "\n  ok" in out, out


def test_a_bug_in_the_summary_is_one_line_and_never_the_outcome_s_exit_code(capsys, monkeypatch):
    def broken(outcome):
        raise RuntimeError(f"boom {HOSTILE}")

    monkeypatch.setattr(spawn_cli, "_summary", broken)
    monkeypatch.delenv("RUNTIME_DEBUG", raising=False)
    spawn_cli._shown(_outcome())  # does not raise: the committed run's exit code stays the outcome's
    err = assert_inert(capsys.readouterr().err.encode("utf-8"), tty=False)
    assert err.startswith("error: the summary could not be shown (RuntimeError: boom ") and "ok" in err, err
    assert "agent/ag-one" in err and "RUNTIME_DEBUG=1" in err, err
    monkeypatch.setenv("RUNTIME_DEBUG", "1")
    with pytest.raises(RuntimeError):
        spawn_cli._shown(_outcome())


@RICH_TERMINAL
def test_the_spawn_live_line_is_inert(capsys, monkeypatch, terminal):
    from runtime.spawn.progress import Progress

    _force(monkeypatch, terminal)
    live, listener = spawn_cli._live()
    try:
        listener(Progress(HOSTILE, state=HOSTILE))
        live.refresh()
    finally:
        live.stop()
    out = assert_inert(capsys.readouterr().err.encode("utf-8"), tty=terminal)
    if terminal:  # (a transient view on a plain stream shows nothing at all)
        assert SHOWN in out and "[/bold]" in out and "turns 0" in out, out


@RICH_TERMINAL
def test_the_run_s_live_table_and_event_lines_are_inert(capsys, monkeypatch, terminal):
    _force(monkeypatch, terminal)
    args = type("Args", (), {"json": False})()
    emit, live = run_cli_module._printer(args)
    try:
        emit("r1", AgentProgress("s1", HOSTILE, 1, HOSTILE, 2, 3, 0, 1, HOSTILE))  # a cost that is not a number
        emit("r1", SharedPath("s1", "r1.s1", f"/repo/src/{HOSTILE}"))
        emit("r1", Judged("replan", HOSTILE))
        emit("r1", SubtaskEnd("s1", HOSTILE, None))
    finally:
        live.stop()
    captured = capsys.readouterr()
    out = assert_inert((captured.out + captured.err).encode("utf-8"), tty=terminal)
    assert "shared-path: subtask=s1" in out and f"path=/repo/src/{SHOWN}" in out, out
    assert f"judgement: status=replan, reason={SHOWN}" in out and "error:" not in out, out


def test_the_run_report_holds_no_control_character_and_keeps_its_fences():
    report = RunReport("r1", HOSTILE, "rejected", f"reason\n{HOSTILE}", base="b" * 40, integration="run/r1",
                       subtasks=[SubtaskLine("s1", 1, 1, "edit-local", "r1.s1", "rejected",
                                             checks=[("quality::tests-green", HOSTILE)],
                                             message=f"```\n{HOSTILE}\n````\nafter")],
                       checks=[(HOSTILE, 1)], replans=[ReplanNote(HOSTILE)], questions=[HOSTILE])
    text = render(report)
    assert_inert(text.encode("utf-8"), tty=False)
    assert SHOWN in text and "[/bold]" in text
    # The message's own backticks cannot close the block it is quoted in.
    assert "\n`````\n```\n" in text and "\nafter\n`````\n" in text, text


def test_the_run_report_shows_a_subtask_s_allowed_test_edits_first_and_what_its_tests_rest_on():
    line = SubtaskLine("s1", 1, 1, "edit-local", "r1.s1", "ok", checks=[("quality::tests-green", "passed")],
                       test_edits=[f"tests/{HOSTILE}.py"], tests="6 passed (pytest); base bbbbbbbbbbbb: 5 ran")
    text = render(RunReport("r1", "goal", "accepted", "ok", subtasks=[line]))
    assert_inert(text.encode("utf-8"), tty=False)
    section = text.split("### s1\n", 1)[1]
    assert section.lstrip().startswith("**Test edits (the task allowed them):** `tests/"), section
    assert "**Tests:** 6 passed (pytest); base bbbbbbbbbbbb: 5 ran" in section
    assert section.index("Test edits") < section.index("**Tests:**") < section.index("quality::tests-green")


def test_json_outputs_stay_json(tmp_path):
    state = StateDir(tmp_path / "state")
    _hostile_run(state)
    proc = subprocess.run([RUNTIME, "status", "--json", "--state-dir", str(state.root)], capture_output=True,
                          cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.isascii(), proc.stderr
    (record,) = json.loads(proc.stdout)
    assert record["label"] == HOSTILE  # exact, lone surrogate and all (as \udcff)
