"""The hash-chained audit log: record format, tamper detection, concurrent appenders."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from runtime.audit.log import GENESIS, AuditLog, Problem, record_hash, records, verify
from runtime.audit.records import Foreign
from runtime.audit.redact import Redactor

REPO = Path(__file__).resolve().parents[2]


def _write_log(path: Path, count: int = 10) -> list[dict]:
    log = AuditLog(path)
    return [log.append(Foreign("tool", {"tool": "Read", "summary": f"read file {i}"}), agent=f"agent-{i % 3}").to_json()
            for i in range(count)]


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _save(path: Path, lines: list[bytes]) -> None:
    path.write_bytes(b"".join(lines))


# -- format --------------------------------------------------------------------


def test_record_format_and_chain(tmp_path):
    path = tmp_path / "audit.jsonl"
    written = _write_log(path, 3)
    on_disk = [json.loads(line) for line in _lines(path)]
    assert on_disk == written
    for number, record in enumerate(on_disk, start=1):
        assert list(record) == ["seq", "time", "kind", "agent", "data", "prev", "hash"]
        assert record["seq"] == number
        assert record["hash"] == record_hash(record)
        assert record["hash"].startswith("sha256:") and len(record["hash"]) == 71
        assert record["time"].endswith("Z")
        assert datetime.fromisoformat(record["time"]).tzinfo is not None
    assert on_disk[0]["prev"] == GENESIS == "sha256:" + "0" * 64
    assert on_disk[1]["prev"] == on_disk[0]["hash"]
    assert on_disk[2]["prev"] == on_disk[1]["hash"]
    assert on_disk[0]["data"] == {"tool": "Read", "summary": "read file 0"}


def test_chain_intact_after_many_appends(tmp_path):
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    for i in range(300):
        log.append(Foreign(["spawn", "gate", "tool", "check"][i % 4], {"i": i, "nested": {"list": [1, 2.5, None, True]}}),
                   agent="a1")
    assert verify(path) == []
    assert [r.seq for r in records(path)] == list(range(1, 301))


def test_missing_file_is_an_empty_intact_log(tmp_path):
    assert verify(tmp_path / "nope.jsonl") == []
    assert list(records(tmp_path / "nope.jsonl")) == []


def test_creates_the_parent_folder(tmp_path):
    path = tmp_path / "runs" / "r1" / "audit.jsonl"
    AuditLog(path).append(Foreign("spawn", {}), agent="a")
    assert verify(path) == [] and path.exists()


@pytest.mark.parametrize("kind", ["", "Gate", "1gate", "gate decision", "gate_x", "gate\n", None])
def test_kind_must_be_a_slug(tmp_path, kind):
    with pytest.raises(ValueError, match="kind"):
        AuditLog(tmp_path / "a.jsonl").append(Foreign(kind, {}))
    assert not (tmp_path / "a.jsonl").exists()


@pytest.mark.parametrize(
    "data",
    [
        {"blob": b"raw bytes"},
        {"nested": {"deep": [1, b"x"]}},
        {"tags": {"a", "b"}},
        {"path": Path("/tmp")},
        {"when": datetime.now(UTC)},
        {"ratio": float("nan")},
        {"ratio": float("inf")},
        {"map": {1: "int key"}},
        {"obj": object()},
    ],
)
def test_non_json_values_are_refused(tmp_path, data):
    path = tmp_path / "a.jsonl"
    with pytest.raises(TypeError):
        AuditLog(path).append(Foreign("tool", data), agent="a")
    assert not path.exists() or path.read_bytes() == b""


def test_agent_must_be_a_string(tmp_path):
    with pytest.raises(TypeError):
        AuditLog(tmp_path / "a.jsonl").append(Foreign("tool", {}), agent=7)


# -- tamper detection --------------------------------------------------------


def test_edited_byte_in_a_middle_record(tmp_path):
    path = tmp_path / "audit.jsonl"
    _write_log(path)
    lines = _lines(path)
    assert b"read file 4" in lines[4]
    lines[4] = lines[4].replace(b"read file 4", b"read file 5")
    _save(path, lines)
    problems = verify(path)
    assert [p.line for p in problems] == [5]
    assert "edited" in problems[0].message


def test_edited_record_with_a_recomputed_hash_breaks_the_next_link(tmp_path):
    path = tmp_path / "audit.jsonl"
    _write_log(path)
    lines = _lines(path)
    record = json.loads(lines[4])
    record["data"]["summary"] = "nothing to see"
    record["hash"] = record_hash(record)
    lines[4] = (json.dumps(record) + "\n").encode()
    _save(path, lines)
    problems = verify(path)
    assert [p.line for p in problems] == [6]
    assert "chain broken" in problems[0].message and "line 5" in problems[0].message


def test_deleted_middle_line(tmp_path):
    path = tmp_path / "audit.jsonl"
    _write_log(path)
    lines = _lines(path)
    del lines[4]
    _save(path, lines)
    problems = verify(path)
    assert problems == [Problem(5, "record(s) deleted: seq jumps from 4 to 6 (1 missing before this line)")]


def test_deleted_first_line(tmp_path):
    path = tmp_path / "audit.jsonl"
    _write_log(path)
    _save(path, _lines(path)[1:])
    problems = verify(path)
    assert [p.line for p in problems] == [1]
    assert "deleted" in problems[0].message


def test_several_deleted_lines(tmp_path):
    path = tmp_path / "audit.jsonl"
    _write_log(path)
    lines = _lines(path)
    del lines[3:6]
    _save(path, lines)
    problems = verify(path)
    assert [p.line for p in problems] == [4]
    assert "3 missing" in problems[0].message


def test_swapped_lines(tmp_path):
    path = tmp_path / "audit.jsonl"
    _write_log(path)
    lines = _lines(path)
    lines[3], lines[4] = lines[4], lines[3]
    _save(path, lines)
    problems = verify(path)
    assert [p.line for p in problems] == [4]
    assert problems[0].message == "records reordered: seq 5 is before seq 4 (line 5)"


def test_moved_line(tmp_path):
    path = tmp_path / "audit.jsonl"
    _write_log(path, 12)
    lines = _lines(path)
    moved = lines.pop(2)  # seq 3 moved after seq 8
    lines.insert(7, moved)
    _save(path, lines)
    problems = verify(path)
    assert [p.line for p in problems] == [8]
    assert "reordered: seq 3 is after seq 8" in problems[0].message


def test_truncated_last_line(tmp_path):
    path = tmp_path / "audit.jsonl"
    _write_log(path)
    data = path.read_bytes()
    path.write_bytes(data[:-25])
    problems = verify(path)
    assert [p.line for p in problems] == [10]
    assert problems[0].message.startswith("truncated last line")


def test_missing_final_newline(tmp_path):
    path = tmp_path / "audit.jsonl"
    _write_log(path)
    path.write_bytes(path.read_bytes()[:-1])
    problems = verify(path)
    assert [p.line for p in problems] == [10]
    assert "no newline" in problems[0].message


def test_append_after_a_torn_line_keeps_the_chain(tmp_path):
    path = tmp_path / "audit.jsonl"
    _write_log(path, 5)
    path.write_bytes(path.read_bytes() + b'{"seq": 6, "time": "20')  # a writer died mid-line
    record = AuditLog(path).append(Foreign("outcome", {"result": "ok"}), agent="a")
    assert record.seq == 6
    problems = verify(path)
    assert [p.line for p in problems] == [6]
    assert problems[0].message.startswith("malformed line")
    assert [r.seq for r in records(path)] == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize(
    "garbage",
    [b"not json at all\n", b"\n", b"[1, 2]\n", b'{"seq": 5}\n', b"\xff\xfe\n", b'{"seq": NaN}\n'],
)
def test_malformed_middle_line(tmp_path, garbage):
    path = tmp_path / "audit.jsonl"
    _write_log(path)
    lines = _lines(path)
    lines[4] = garbage
    _save(path, lines)
    problems = verify(path)
    assert [p.line for p in problems] == [5]
    assert problems[0].message.startswith("malformed line")


def test_forged_record_inserted_in_the_middle(tmp_path):
    """A forger who knows the format and recomputes the hash is still caught via prev."""
    path = tmp_path / "audit.jsonl"
    written = _write_log(path)
    forged = {
        "seq": 5,
        "time": written[4]["time"],
        "kind": "gate",
        "agent": "agent-1",
        "data": {"tool": "Bash", "decision": "allow", "reason": "looks fine"},
        "prev": written[3]["hash"],
    }
    forged["hash"] = record_hash(forged)
    lines = _lines(path)
    lines.insert(4, (json.dumps(forged) + "\n").encode())
    _save(path, lines)
    problems = verify(path)
    assert [p.line for p in problems] == [5]
    assert "inserted" in problems[0].message and "line 6" in problems[0].message


def test_forged_record_with_a_new_seq_inserted_in_the_middle(tmp_path):
    path = tmp_path / "audit.jsonl"
    written = _write_log(path)
    forged = {"seq": 11, "time": written[4]["time"], "kind": "commit", "agent": None, "data": {}}
    forged["prev"] = written[-1]["hash"]
    forged["hash"] = record_hash(forged)
    lines = _lines(path)
    lines.insert(4, (json.dumps(forged) + "\n").encode())
    _save(path, lines)
    problems = verify(path)
    assert [p.line for p in problems] == [5]
    assert "reordered" in problems[0].message


def test_duplicated_line(tmp_path):
    path = tmp_path / "audit.jsonl"
    _write_log(path)
    lines = _lines(path)
    lines.insert(5, lines[4])
    _save(path, lines)
    problems = verify(path)
    assert [p.line for p in problems] == [6]
    assert "inserted" in problems[0].message


def test_forged_first_record_prev(tmp_path):
    path = tmp_path / "audit.jsonl"
    _write_log(path, 3)
    lines = _lines(path)
    first = json.loads(lines[0])
    first["prev"] = "sha256:" + "1" * 64
    first["hash"] = record_hash(first)
    lines[0] = (json.dumps(first) + "\n").encode()
    _save(path, lines)
    assert [p.line for p in verify(path)] == [1, 2]


def test_reformatted_json_still_verifies(tmp_path):
    """Hashes cover canonical JSON, so whitespace and key order do not matter."""
    path = tmp_path / "audit.jsonl"
    _write_log(path, 4)
    lines = [(json.dumps(dict(reversed(json.loads(line).items())), indent=None) + "\n").encode() for line in _lines(path)]
    _save(path, lines)
    assert verify(path) == []


def test_problem_str():
    assert str(Problem(3, "record edited")) == "line 3: record edited"


# -- concurrency ------------------------------------------------------------------

_CHILD = """
import os, sys, time
from runtime.audit.log import AuditLog
from runtime.audit.records import Foreign
path, go, who = sys.argv[1:4]
while not os.path.exists(go):
    time.sleep(0.001)
log = AuditLog(path)
for i in range(50):
    log.append(Foreign("tool", {"i": i, "pad": "x" * (i * 97)}), agent=who)
"""


def test_concurrent_appenders_make_one_chain(tmp_path):
    path = tmp_path / "audit.jsonl"
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    children = [
        subprocess.Popen([sys.executable, "-c", _CHILD, str(path), str(go), f"agent-{n}"], cwd=REPO, env=env)
        for n in range(8)
    ]
    time.sleep(0.3)
    go.touch()
    for child in children:
        assert child.wait(timeout=120) == 0
    assert verify(path) == []
    all_records = list(records(path))
    assert len(all_records) == 400
    assert [r.seq for r in all_records] == list(range(1, 401))
    for n in range(8):
        mine = [r.data()["i"] for r in records(path, agent=f"agent-{n}")]
        assert mine == list(range(50))


# -- redaction ------------------------------------------------------------------


def test_data_is_redacted_before_hashing(tmp_path):
    import base64
    from urllib.parse import quote, quote_plus

    secret = "tok/en+=&Very-Secret"
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path, redactor=Redactor({"GITHUB_TOKEN": secret}))
    header = "Basic " + base64.b64encode(f"user:{secret}".encode()).decode()
    record = log.append(
        Foreign("tool", {
            "command": f"curl -H 'Authorization: {header}' https://x/?t={quote(secret, safe='')}",
            "output": {secret: [secret, quote_plus(secret), json.dumps(secret)]},
            "b64": base64.urlsafe_b64encode(secret.encode()).decode().rstrip("="),
        }),
        agent="a",
    )
    text = path.read_text()
    forms = [
        secret,
        quote(secret, safe=""),
        quote_plus(secret),
        base64.b64encode(secret.encode()).decode(),
        base64.urlsafe_b64encode(secret.encode()).decode().rstrip("="),
        base64.b64encode(f"user:{secret}".encode()).decode()[8:30],
    ]
    for form in forms:
        assert form not in text
    assert "[REDACTED:GITHUB_TOKEN]" in text
    assert record.data()["output"] == {
        "[REDACTED:GITHUB_TOKEN]": ["[REDACTED:GITHUB_TOKEN]"] * 2 + ['"[REDACTED:GITHUB_TOKEN]"']
    }
    assert record.hash == record_hash(json.loads(text.splitlines()[0]))
    assert verify(path) == []


# -- records() ------------------------------------------------------------------


def test_records_filters(tmp_path):
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    log.append(Foreign("spawn", {"task": "t"}), agent="a1")
    log.append(Foreign("gate", {"tool": "Bash", "decision": "deny", "reason": "git", "atom": "no-git", "rule": "program"}),
               agent="a1")
    log.append(Foreign("gate", {"tool": "Read", "decision": "allow", "reason": "ok", "atom": None, "rule": None}), agent="a2")
    log.append(Foreign("outcome", {"result": "ok"}), agent=None)
    assert [r.seq for r in records(path, agent="a1")] == [1, 2]
    assert [r.seq for r in records(path, kind="gate")] == [2, 3]
    assert [r.seq for r in records(path, agent="a2", kind="gate")] == [3]
    future = datetime.now(UTC) + timedelta(hours=1)
    assert list(records(path, since=future)) == []
    past = (datetime.now(UTC) - timedelta(hours=1)).replace(tzinfo=None).isoformat()
    assert len(list(records(path, since=past))) == 4
    third = list(records(path))[2].time
    assert [r.seq for r in records(path, since=third)] == [3, 4]


def test_returned_record_equals_what_reads_back(tmp_path):
    path = tmp_path / "audit.jsonl"
    data = {"pair": (1, 2), "nested": {"x": ["y"]}}
    record = AuditLog(path).append(Foreign("check", data), agent="a")
    data["nested"]["x"].append("mutated later")
    assert record == next(records(path))
    assert record.data() == {"pair": [1, 2], "nested": {"x": ["y"]}}
