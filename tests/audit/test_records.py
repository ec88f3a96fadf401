"""The audit log's records as classes: every kind writes the bytes the log held before it was typed, a log of
that time reads and verifies, and a line no class reads (a newer kind, another shape) reads all the same."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from runtime.audit.log import AuditLog, read_from, records, verify
from runtime.audit.records import (
    RECORDS,
    Afresh,
    Again,
    ApprovalDecided,
    ApprovalRequested,
    AuditRecord,
    CheckJudged,
    CommitIntent,
    Committed,
    Egress,
    Ended,
    Escalated,
    Foreign,
    Freed,
    Gated,
    Interrupted,
    MergedIn,
    NeedsReview,
    Notified,
    PolicyUpdate,
    Pruned,
    Recovered,
    Retried,
    ReviewAsked,
    ScratchThrown,
    SetupStep,
    Spawned,
    Tampering,
    ToolRan,
    Worker,
    WorldSetup,
    record_of,
)

# Written by the log as it was before its records were classes (`append(kind, agent, **data)`), with the data
# each of its writers gave: one line per kind and shape, two forwarded from a cluster worker.
BEFORE = Path(__file__).parent / "data" / "before-records.jsonl"

A = "ag-fix-1"
E = {"id": "5f1c2a9b0d3e", "method": "CONNECT", "host": "pypi.org", "port": 443, "address": "151.101.0.223"}
NODE = "9c" * 28

# What the writers give today for the same facts, in the same order.
NOW: list[tuple[AuditRecord, str | None, Worker | None]] = [(r, A, None) for r in (
    Spawned(task="tasks/fix.toml", sha256="ab" * 32, role="edit-local", backend="builtin", base="c0" * 20,
            branch="agent/ag-fix-1", sandbox=True),
    PolicyUpdate(attempt=2, hash="sha256:" + "1" * 64, kept=True, error="roles/x.toml:3: unknown atom"),
    PolicyUpdate(attempt=2, hash="sha256:" + "2" * 64, catalog="/repo/.agent-runtime"),
    Egress(event="request", **E, decision="allow", status=200, reason="in the allowlist"),
    Egress(event="request", **E, decision="allow", status=None, reason="in the allowlist"),
    Egress(event="request", **{**E, "address": None}, decision="deny", status=403,
           reason="example.com is not in the allowlist"),
    Egress(event="request", id="aa11bb22cc33", method=None, host=None, port=None, address=None, decision="deny",
           status=503, count=7, reason="too many connections (at most 64 at once)"),
    Egress(event="end", **E, bytes_up=512, bytes_down=40960, duration_s=1.25, ended="closed"),
    Egress(phase="setup", event="end", **E, bytes_up=0, bytes_down=0, duration_s=0, ended="idle"),
    Escalated(attempt=1, reason="the task asks for two contradictory things"),
    ScratchThrown(attempt=1, paths=("out.tmp", "notes/x.txt"), count=2),
    CheckJudged(attempt=1, atom="quality::tests-green", check="tests-green", status="rejected",
                feedback="`tests/test_calc.py::test_add` (failed)"),
    Tampering(attempt=1, checks=("quality::tests-green",), evidence=("the report names no test it ran",)),
    NeedsReview(attempt=1, findings=("the change weakens a test",)),
    Retried(attempt=1, checks=("quality::tests-green", "scope::files-whitelist")),
    WorldSetup(key="k" * 16, cached=True, shared=False, entries=(".venv", "node_modules")),
    WorldSetup(key="k" * 16, cached=False, shared=True, entries=(".venv",),
               commands=(SetupStep(command="uv sync", exit_code=0, duration_s=3.5, log="/state/setup/1.log"),),
               duration_s=4.0),
    WorldSetup(key="k" * 16, cached=False, shared=True, entries=(), commands=(), duration_s=0.0),
    CommitIntent(verified=True, label="ok"),
    Committed(commit="d" * 40, branch="agent/ag-fix-1"),
    Committed(commit=None, branch="agent/ag-fix-1"),
    Committed(commit="e" * 40, branch="agent/ag-fix-1", verified=False),
    MergedIn(into="main", commit="f" * 40),
    MergedIn(into=None, commit="f" * 40),
    ApprovalRequested(id="ap-1", tool="merge", input_hash="h" * 16, summary="merge agent/ag-fix-1",
                      gate_reason="the work changes control files", expires_at="2025-01-31T12:00:00Z", new=True),
    ApprovalRequested(attempt=1, id="ap-2", tool="Bash", input_hash="i" * 16, summary="make deploy",
                      gate_reason="no rule runs `make deploy`", expires_at="2025-01-31T12:00:00Z", new=False),
    ApprovalDecided(id="ap-1", tool="merge", input_hash="h" * 16, status="approved", decision="allow",
                    by="alice (console)", reason=None, decided_at="2025-01-31T11:59:00Z"),
    ApprovalDecided(attempt=1, id="ap-2", tool="Bash", input_hash="i" * 16, status="expired", decision="deny",
                    by="expiry", reason="no decision before the approval timeout", decided_at=None),
    Again(previous="rejected", head="a" * 40, series=2, sent_back=True),
    Afresh(previous="failed(agent)", kept_ref="refs/agent-runtime/previous/ag-fix-1/1", kept_head="b" * 40,
           kept_run="/state/previous/ag-fix-1.1"),
    Afresh(previous="failed(setup)", kept_ref=None, kept_head=None, kept_run="/state/previous/ag-fix-1.2"),
    Recovered(finished=False, resumed="interrupted", work="c" * 40),
    Recovered(finished=False, resumed="interrupted", work=None),
    Recovered(finished=False, resumed="merge", commit="d" * 40),
    Recovered(finished=True, commit="d" * 40),
    Recovered(finished=False, previous="running"),
    Gated(attempt=1, tool="Bash", input={"command": "git push origin main"}, decision="deny",
          reason="agents never run git", atom="policy::no-git-ops", rule="git"),
    Gated(attempt=1, tool="Read", input={"file_path": "src/calc.py"}, decision="allow",
          reason="allowed by the gate (PreToolUse hook)", atom=None, rule=None),
    Gated(attempt=1, tool=None, input=None, decision="deny", reason="refused by Claude Code's permission mode",
          atom=None, rule=None),
    ToolRan(attempt=1, tool="Read", is_error=False, result="def add(a, b):\n"),
    Notified(event="finished", command="notify-send", error="could not start: No such file or directory"),
)] + [
    (Notified(event="plan-finished", command="/usr/bin/notify", exit_code=0), None, None),
    (Notified(event="waiting", command="/usr/bin/notify", exit_code=1, stderr="boom"), A, None),
    (Freed(label="failed(agent)", branch="agent/ag-fix-1"), A, None),
    (Interrupted(branch="agent/ag-fix-1", work="c" * 40), A, None),
    (Interrupted(branch="agent/ag-fix-1", work=None), A, None),
    (Ended(label="ok", message="verified and merged", commit="d" * 40, merged="f" * 40), A, None),
    (Ended(label="failed(agent)", message="the agent exited with code 1", commit=None, merged=None), A, None),
    (ReviewAsked(tool="Bash", input={"command": "python scripts/gen.py"},
                 gate_reason="no rule judges `python scripts/gen.py`", verdict="ask",
                 reason="it writes outside the repo", model="claude-haiku"), "session", None),
    (Pruned(agents=("ag-merged",), runs=()), None, None),
    (Gated(attempt=1, tool="Bash", input={"command": "pytest -q"}, decision="allow", reason="sandboxed",
           atom="tools::bash-allowlist", rule="pytest"), "run-1.sub-a",
     Worker(node=NODE, seq=12, time="2025-01-31T12:00:00.123456Z")),
    (Ended(label="ok", message="", commit=None, merged=None), "run-1.sub-a",
     Worker(node=NODE, seq=13, time="2025-01-31T12:00:01.123456Z")),
]


def _compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def test_every_kind_has_one_class_and_each_is_written_here():
    assert len(RECORDS) == len({cls.__name__ for cls in RECORDS.values()})
    assert {type(record).kind for record, _, _ in NOW} == set(RECORDS)


def test_a_log_written_before_the_records_were_classes_verifies_and_reads_as_its_kinds():
    assert verify(BEFORE) == []
    lines = BEFORE.read_text().splitlines()
    entries = list(records(BEFORE))
    assert len(entries) == len(lines) == len(NOW)
    for line, entry, (record, agent, worker) in zip(lines, entries, NOW, strict=True):
        assert entry.record == record and (entry.agent, entry.worker) == (agent, worker), line
        assert entry.kind == record.kind
        # Read and written again, the line is the same, byte for byte.
        assert _compact(entry.to_json()) == line


def test_each_record_writes_the_bytes_its_writer_wrote_before(tmp_path):
    log = AuditLog(tmp_path / "audit.jsonl")
    before = [json.loads(line) for line in BEFORE.read_text().splitlines()]
    for (record, agent, worker), old in zip(NOW, before, strict=True):
        entry = log.append(record, agent, worker=worker)
        assert (entry.kind, entry.agent, _compact(entry.data())) == (old["kind"], old["agent"], _compact(old["data"]))
        assert entry.record == record
    assert verify(log.path) == []
    written = [json.loads(line) for line in Path(log.path).read_text().splitlines()]
    assert [_compact(r["data"]) for r in written] == [_compact(r["data"]) for r in before]


@pytest.mark.parametrize("kind, data", [
    ("denial", {"tool": "Bash", "reason": "a kind of a newer version"}),
    ("gate", {"tool": "Read", "input": {}, "decision": "allow"}),  # a shape no writer here makes
    ("gate", {"attempt": True, "tool": "Read", "input": {}, "decision": "allow", "reason": None, "atom": None,
              "rule": None}),  # true is no attempt number
    ("retry", {"checks": ["a"], "attempt": 1}),  # its keys in another order
    ("commit", {"commit": None, "branch": "b", "verified": None}),  # null where the writer leaves the key out
    ("setup", {"key": "k", "cached": False, "shared": True, "entries": [],
               "commands": [{"exit_code": 0, "command": "x", "duration_s": 1, "log": ""}], "duration_s": 1}),
    ("outcome", {"label": "ok", "message": "", "commit": None, "merged": None, "extra": 1}),
])
def test_a_line_no_class_reads_is_foreign_and_kept_as_it_was(tmp_path, kind, data):
    assert record_of(kind, data) == Foreign(kind, data)
    log = AuditLog(tmp_path / "audit.jsonl")
    entry = log.append(Foreign(kind, data), "ag")
    assert entry.record == Foreign(kind, data) and entry.kind == kind
    [read] = records(log.path)
    assert read == entry and _compact(read.data()) == _compact(data)
    assert json.loads(Path(log.path).read_text())["data"] == data
    assert verify(log.path) == []


def test_a_forwarded_record_keeps_where_it_was_first_written(tmp_path):
    log = AuditLog(tmp_path / "audit.jsonl")
    origin = Worker(node=NODE, seq=3, time="2025-01-31T12:00:00.000001Z")
    log.append(Foreign("denial", {"tool": "Bash"}), "ag", worker=origin)
    entries, end = read_from(log.path, 0)
    assert end == Path(log.path).stat().st_size
    [entry] = entries
    assert entry.worker == origin and entry.record == Foreign("denial", {"tool": "Bash"})
    assert list(entry.data()) == ["tool", "worker"]
    with pytest.raises(ValueError, match="worker"):
        log.append(Foreign("denial", {"worker": 1}), "ag", worker=origin)


def test_entries_cross_a_process_boundary_as_they_are():
    entries = list(records(BEFORE))
    assert pickle.loads(pickle.dumps(entries)) == entries
