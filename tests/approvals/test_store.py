"""The approvals store: one pending request per exact call, decided once, expired on time."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
import threading
import time

import pytest

from runtime.approvals.store import (
    ApprovalError,
    ApprovalStatus,
    ApprovalStore,
    input_hash,
    store_path,
    summarize,
)
from runtime.audit.redact import Redactor

CALL = {"command": "touch src/calc/x.txt"}


@pytest.fixture
def store(tmp_path) -> ApprovalStore:
    return ApprovalStore.for_state(tmp_path / "state")


def test_the_file_lives_in_the_state_folder_in_wal_mode_and_private(store, tmp_path):
    assert store.path == store_path(tmp_path / "state") == tmp_path / "state" / "approvals.sqlite"
    assert stat.S_IMODE(os.stat(store.path).st_mode) == 0o600
    conn = sqlite3.connect(store.path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        columns = [r[1] for r in conn.execute("PRAGMA table_info(requests)")]
    finally:
        conn.close()
    assert columns == ["id", "agent", "tool", "input_hash", "summary", "gate_reason", "created", "expires",
                       "status", "decided_by", "reason", "decided", "command"]


def test_a_bash_call_keeps_its_command_only_when_nothing_in_it_was_redacted(store):
    from runtime.audit.redact import Redactor

    plain, _ = store.request("ag-1", "Bash", {"command": "make deploy"}, "asked", 60)
    assert store.get(plain.id).command == "make deploy"
    secret = "s3cr3t-value-123456"
    hidden, _ = store.request("ag-1", "Bash", {"command": f"curl -H 'x: {secret}' x"}, "asked", 60,
                              redactor=Redactor([secret]))
    assert store.get(hidden.id).command is None and secret not in store.get(hidden.id).summary
    edit, _ = store.request("ag-1", "Write", {"file_path": "a", "content": "b"}, "asked", 60)
    assert store.get(edit.id).command is None


def test_a_request_is_pending_with_a_short_id_and_the_hash_of_its_canonical_input(store):
    a, new = store.request("ag-1", "Bash", CALL, "`touch` needs approval", 60)
    assert new and a.status == ApprovalStatus.PENDING and a.pending
    assert len(a.id) == 8 and int(a.id, 16) >= 0
    # Canonical JSON: key order and spacing do not change the hash.
    assert a.input_hash == input_hash({"command": "touch src/calc/x.txt"}) == input_hash(dict(CALL))
    assert input_hash({"b": 1, "a": [1, 2]}) == input_hash({"a": [1, 2], "b": 1})
    assert input_hash({"a": 1}) != input_hash({"a": 2})
    assert a.summary == "Bash: touch src/calc/x.txt" and a.gate_reason == "`touch` needs approval"
    assert 59 < a.expires - a.created <= 60 and a.decided_by is None and a.reason is None
    assert store.pending() == [a] and store.get(a.id) == a and store.get(a.id.upper()) == a


def test_the_same_call_while_pending_is_the_same_request(store):
    a, new_a = store.request("ag-1", "Bash", CALL, "r", 60)
    b, new_b = store.request("ag-1", "Bash", {"command": "touch src/calc/x.txt"}, "r", 60)
    assert new_a and not new_b and a == b
    # Another agent, tool or input is another request.
    others = [store.request("ag-2", "Bash", CALL, "r", 60)[0],
              store.request("ag-1", "Write", {"file_path": "a", "content": "x"}, "r", 60)[0],
              store.request("ag-1", "Bash", {"command": "touch src/calc/y.txt"}, "r", 60)[0]]
    assert len({a.id, *(o.id for o in others)}) == 4 and len(store.pending()) == 4
    # Once decided, asking again is a new request: one approval answers one call.
    store.decide(a.id, True, None, "alice")
    c, new_c = store.request("ag-1", "Bash", CALL, "r", 60)
    assert new_c and c.id != a.id


def test_concurrent_requests_for_one_call_make_one_request(store):
    ids, errors = [], []

    def ask():
        try:
            ids.append(ApprovalStore(store.path).request("ag-1", "Bash", CALL, "r", 60)[0].id)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(set(ids)) == 1 and len(store.pending()) == 1


def test_decide_approves_or_denies_once(store):
    a = store.request("ag-1", "Bash", CALL, "r", 60)[0]
    b = store.request("ag-1", "Bash", {"command": "touch b"}, "r", 60)[0]
    approved = store.decide(a.id, True, "looks fine", "alice (runtime approve)")
    assert approved.status == ApprovalStatus.APPROVED and approved.allowed and approved.decided_by == "alice (runtime approve)"
    assert approved.reason == "looks fine" and approved.decided >= approved.created
    denied = store.decide(b.id, False, "not that file", "bob")
    assert denied.status == ApprovalStatus.DENIED and not denied.allowed and denied.reason == "not that file"
    with pytest.raises(ApprovalError, match="already approved by alice"):
        store.decide(a.id, False, "changed my mind", "alice")
    with pytest.raises(ApprovalError, match="already denied by bob"):
        store.decide(b.id, True, None, "bob")
    with pytest.raises(ApprovalError, match="no approval request `00000000`"):
        store.decide("00000000", True, None, "alice")
    assert store.pending() == []


def test_a_denial_needs_a_reason(store):
    a = store.request("ag-1", "Bash", CALL, "r", 60)[0]
    for empty in (None, "", "   "):
        with pytest.raises(ApprovalError, match="needs a reason"):
            store.decide(a.id, False, empty, "alice")
    assert store.get(a.id).status == ApprovalStatus.PENDING


def test_an_expired_request_cannot_be_decided(store):
    a = store.request("ag-1", "Bash", CALL, "r", 0.2)[0]
    time.sleep(0.3)
    with pytest.raises(ApprovalError, match="expired at .*the call was denied"):
        store.decide(a.id, True, None, "alice")
    gone = store.get(a.id)
    assert gone.status == ApprovalStatus.EXPIRED and gone.decided_by == "expiry"
    with pytest.raises(ApprovalError, match="already expired"):
        store.decide(a.id, True, None, "alice")


def test_sweep_and_pending_expire_old_requests(store):
    old = store.request("ag-1", "Bash", CALL, "r", 10, now=time.time() - 20)[0]
    fresh = store.request("ag-1", "Bash", {"command": "touch b"}, "r", 60)[0]
    assert store.get(old.id).status == ApprovalStatus.PENDING  # nothing swept it yet
    assert [a.id for a in store.pending()] == [fresh.id]
    assert store.get(old.id).status == ApprovalStatus.EXPIRED
    assert store.sweep() == []
    # An expired request for the same call does not block a new one.
    again, new = store.request("ag-1", "Bash", CALL, "r", 60)
    assert new and again.id != old.id


def test_wait_returns_the_decision_taken_elsewhere(store):
    a = store.request("ag-1", "Bash", CALL, "r", 30)[0]
    threading.Timer(0.3, lambda: ApprovalStore(store.path).decide(a.id, True, None, "alice")).start()
    started = time.monotonic()
    done = store.wait(a.id, 10)
    assert done.status == ApprovalStatus.APPROVED and time.monotonic() - started < 5


def test_wait_expires_the_request_at_its_expiry(store):
    a = store.request("ag-1", "Bash", CALL, "r", 0.5)[0]
    started = time.monotonic()
    done = store.wait(a.id, 10)
    assert done.status == ApprovalStatus.EXPIRED and 0.3 < time.monotonic() - started < 3


def test_wait_with_a_shorter_timeout_or_a_stop_leaves_it_pending(store):
    a = store.request("ag-1", "Bash", CALL, "r", 30)[0]
    assert store.wait(a.id, 0.2).status == ApprovalStatus.PENDING
    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()
    assert store.wait(a.id, None, stop=stop).status == ApprovalStatus.PENDING
    with pytest.raises(ApprovalError):
        store.wait("ffffffff", 1)


def test_expire_withdraws_only_a_pending_request(store):
    a = store.request("ag-1", "Bash", CALL, "r", 30)[0]
    ended = store.expire(a.id, "the agent stopped waiting", by="withdrawn")
    assert ended.status == ApprovalStatus.EXPIRED and ended.reason == "the agent stopped waiting"
    assert store.expire(a.id, "again") is None


def test_the_summary_is_one_redacted_line_and_the_input_is_not_stored(store):
    secret = "sk-live-0123456789abcdef"
    redactor = Redactor({"API_KEY": secret})
    call = {"command": f"curl -H 'Authorization: {secret}'\n  https://example.org/" + "x" * 400}
    a = store.request("ag-1", "Bash", call, f"needs approval ({secret})", 60, redactor=redactor)[0]
    assert secret not in a.summary and "[REDACTED" in a.summary and "\n" not in a.summary
    assert len(a.summary) < 460 and a.summary.endswith("characters not shown]") and secret not in a.gate_reason
    assert secret.encode() not in store.path.read_bytes()
    assert summarize("Write", {"file_path": "src/a.py", "content": "x" * 10}) == "Write src/a.py (content 10 chars)"
    assert summarize("WebFetch", {"url": "https://a", "prompt": "p"}) == 'WebFetch {"prompt":"p","url":"https://a"}'


def test_another_process_decides(store, tmp_path):
    a = store.request("ag-1", "Bash", CALL, "r", 30)[0]
    code = (f"from runtime.approvals.store import ApprovalStore; "
            f"ApprovalStore({str(store.path)!r}).decide({a.id!r}, False, 'no', 'carol')")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    assert store.wait(a.id, 5).status == ApprovalStatus.DENIED


def test_bad_requests_are_refused(store):
    with pytest.raises(ValueError):
        store.request("", "Bash", CALL, "r", 5)
    with pytest.raises(ValueError):
        store.request("ag", "Bash", CALL, "r", 0)
    with pytest.raises(ValueError):
        store.request("ag", "Bash", {"x": float("nan")}, "r", 5)


def test_opening_a_missing_store_without_create_is_an_error(tmp_path):
    with pytest.raises(ApprovalError, match="no approvals"):
        ApprovalStore.for_state(tmp_path / "none", create=False)


def test_the_summary_hides_nothing_a_terminal_would_swallow():
    # A newline separates shell commands: it must not look like an argument of the first one.
    assert summarize("Bash", {"command": "touch a\nrm -rf src"}) == "Bash: touch a\\nrm -rf src"
    shown = summarize("Bash", {"command": "echo ok\x1b[2K\r\u202erm -rf x\u200b"})
    assert "\x1b" not in shown and "\u202e" not in shown and "\u200b" not in shown and "\r" not in shown
    assert "\\x1b" in shown and "\\u202e" in shown and "\\r" in shown
    long = summarize("Bash", {"command": "true " + " " * 600 + "&& rm -rf src"})
    assert "characters not shown" in long
