"""The approval requests and their decisions: one SQLite table in the orchestrator's state folder.

``approvals.sqlite`` (WAL mode, file mode 0600) lives in the state folder, next to
``audit.jsonl``; no sandbox binds it, so no agent can read or write it. One row per request::

    id          8 hex digits, what a person types: `runtime approve 1a2b3c4d`
    agent       the agent id (the approvals service's own, never the agent's word)
    tool        the tool name
    input_hash  sha256 of the call's canonical JSON input (sorted keys, no spaces, ASCII)
    summary     a redacted one-line summary of the call (the input itself is not stored)
    gate_reason why the gate answered ask
    created     unix time the request was made
    expires     unix time after which it is denied
    status      pending | approved | denied | expired
    decided_by  who decided (a user name and how, or `expiry`)
    reason      the decision's reason (what the agent reads on a denial)
    decided     unix time of the decision
    command     a Bash call's exact command when nothing in it was redacted (schema 2): what the
                console's "always" writes a rule for (`runtime allow`); NULL otherwise

The same (agent, tool, input hash) asked again while a request for it is pending gets that same
request back (a partial unique index keeps it at one, even across processes). A decision is taken
once: ``decide`` refuses an id that is not pending, or whose expiry has passed (and marks it
expired). Expired requests are swept (``sweep``) by every read and write, so a pending request is
never shown or approved past its expiry.

Every operation opens its own short connection, so one store is safe to share between threads
and processes (the orchestrator's service threads, `runtime approve` in another terminal).
Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, TypedDict

from runtime.errors import FatalError
from runtime.lang.jsontypes import JSON
from runtime.printable import printable
from runtime.sqlite_schema import migrate

FILE_NAME = "approvals.sqlite"
SUMMARY_MAX = 400
POLL_S = 0.1

# The schema as migrations (runtime.sqlite_schema): `PRAGMA user_version` says how many a file has.
_SCHEMA_V1 = """
CREATE TABLE IF NOT EXISTS requests (
    id          TEXT PRIMARY KEY,
    agent       TEXT NOT NULL,
    tool        TEXT NOT NULL,
    input_hash  TEXT NOT NULL,
    summary     TEXT NOT NULL,
    gate_reason TEXT NOT NULL,
    created     REAL NOT NULL,
    expires     REAL NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'expired')),
    decided_by  TEXT,
    reason      TEXT,
    decided     REAL
);
CREATE UNIQUE INDEX IF NOT EXISTS one_pending_per_call
    ON requests (agent, tool, input_hash) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS by_status ON requests (status, expires);
"""
_SCHEMA_V2 = "ALTER TABLE requests ADD COLUMN command TEXT;"
MIGRATIONS = (_SCHEMA_V1, _SCHEMA_V2)
_COLUMNS = ("id", "agent", "tool", "input_hash", "summary", "gate_reason", "created", "expires", "status",
            "decided_by", "reason", "decided", "command")


class ApprovalStatus(StrEnum):
    """A request's status: pending until a person decides it or it expires."""

    PENDING = "pending"
    APPROVED = "approved"
    DENIED = "denied"
    EXPIRED = "expired"


class ApprovalError(FatalError):
    """A decision that cannot be taken: no such request, already decided, or expired."""


def store_path(state_root: str | os.PathLike[str]) -> Path:
    """Where a state folder keeps its approvals."""
    return Path(state_root) / FILE_NAME


def canonical_input(tool_input: JSON) -> str:
    """The one serialisation that is hashed (the audit log's canonical JSON)."""
    return json.dumps(tool_input, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def input_hash(tool_input: JSON) -> str:
    """``sha256:<hex>`` of the canonical JSON of a call's input (ValueError/TypeError if it is not JSON)."""
    return "sha256:" + hashlib.sha256(canonical_input(tool_input).encode("ascii")).hexdigest()


def _one_line(text: str, limit: int = SUMMARY_MAX) -> str:
    """One line, with nothing hidden: control characters escaped (a newline in a shell command
    is a command separator, so it is shown as `\\n`, never folded into a space), and a cut
    says how much was cut."""
    flat = printable(text)
    if len(flat) <= limit:
        return flat
    return f"{flat[:limit]}… [+{len(flat) - limit} characters not shown]"


def summarize(tool: str, tool_input: JSON, redactor: Any = None) -> str:
    """A one-line, redacted summary of a call: what a person needs to decide on it."""
    inp = tool_input if isinstance(tool_input, dict) else {}
    if tool == "Bash" and isinstance(inp.get("command"), str):
        text = f"Bash: {inp['command']}"
    elif isinstance(inp.get("file_path") or inp.get("notebook_path"), str):
        path = inp.get("file_path") or inp.get("notebook_path")
        sizes = [f"{k} {len(v)} chars" for k, v in inp.items() if isinstance(v, str) and k not in ("file_path", "notebook_path")]
        text = f"{tool} {path}" + (f" ({', '.join(sizes)})" if sizes else "")
    else:
        try:
            body = canonical_input(tool_input)
        except (TypeError, ValueError):
            body = repr(tool_input)
        text = f"{tool} {body}"
    if redactor:
        text = redactor.redact(text)
    return _one_line(text)


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: a byte of the agent's that was not UTF-8
        return False
    return True


def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class ApprovalJSON(TypedDict):
    """An approval as `runtime approvals --json` prints it: its fields, and its times in ISO 8601 too."""

    id: str
    agent: str
    tool: str
    input_hash: str
    summary: str
    gate_reason: str
    created: float
    expires: float
    status: ApprovalStatus
    decided_by: str | None
    reason: str | None
    decided: float | None
    command: str | None
    created_at: str | None
    expires_at: str | None
    decided_at: str | None


@dataclass(frozen=True)
class Approval:
    """One request and, once taken, its decision."""

    id: str
    agent: str
    tool: str
    input_hash: str
    summary: str
    gate_reason: str
    created: float
    expires: float
    status: ApprovalStatus
    decided_by: str | None = None
    reason: str | None = None
    decided: float | None = None
    command: str | None = None  # a Bash call's command, unredacted only when nothing in it was redacted

    @property
    def pending(self) -> bool:
        return self.status == ApprovalStatus.PENDING

    @property
    def allowed(self) -> bool:
        return self.status == ApprovalStatus.APPROVED

    def expires_in(self, now: float | None = None) -> float:
        return self.expires - (time.time() if now is None else now)

    def to_dict(self) -> ApprovalJSON:
        return {"id": self.id, "agent": self.agent, "tool": self.tool, "input_hash": self.input_hash,
                "summary": self.summary, "gate_reason": self.gate_reason, "created": self.created,
                "expires": self.expires, "status": self.status, "decided_by": self.decided_by,
                "reason": self.reason, "decided": self.decided, "command": self.command,
                "created_at": iso(self.created), "expires_at": iso(self.expires), "decided_at": iso(self.decided)}


def _row(row: tuple[Any, ...]) -> Approval:
    """A request as its row holds it (the table's check keeps its status one of ApprovalStatus's)."""
    request_id, agent, tool, digest, summary, gate_reason, created, expires, status, by, reason, decided, command = row
    return Approval(request_id, agent, tool, digest, summary, gate_reason, created, expires, ApprovalStatus(status), by,
                    reason, decided, command)


class ApprovalStore:
    """The requests of one state folder (``approvals.sqlite``), shared by threads and processes."""

    def __init__(self, path: str | os.PathLike[str], *, create: bool = True) -> None:
        self.path = Path(path)
        if not create and not self.path.is_file():
            raise ApprovalError(f"no approvals in {self.path.parent} ({self.path.name} does not exist)")
        self._init_lock = threading.Lock()
        self._ready = False
        if create:
            self._init()

    @classmethod
    def for_state(cls, state_root: str | os.PathLike[str], *, create: bool = True) -> ApprovalStore:
        return cls(store_path(state_root), create=create)

    # -- connections ------------------------------------------------------------------------
    def _init(self) -> None:
        with self._init_lock:
            if self._ready:
                return
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            os.close(fd)
            conn = self._open()
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                migrate(conn, MIGRATIONS, self.path)
            finally:
                conn.close()
            self._ready = True

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=10.0, isolation_level=None)
        conn.execute("PRAGMA busy_timeout=10000")
        return conn

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (BEGIN IMMEDIATE: writers queue instead of failing later)."""
        conn = self._open()
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        finally:
            conn.close()

    @staticmethod
    def _get(conn: sqlite3.Connection, request_id: str) -> Approval | None:
        row = conn.execute(f"SELECT {', '.join(_COLUMNS)} FROM requests WHERE id = ?", (request_id,)).fetchone()
        return _row(row) if row else None

    @staticmethod
    def _expire(conn: sqlite3.Connection, now: float, where: str = "", args: tuple[object, ...] = ()) -> list[Approval]:
        rows = conn.execute(f"SELECT {', '.join(_COLUMNS)} FROM requests WHERE status = 'pending' AND expires <= ?"
                            f"{where}", (now, *args)).fetchall()
        for row in rows:
            conn.execute("UPDATE requests SET status = 'expired', decided_by = 'expiry', decided = ?, reason = ? "
                         "WHERE id = ? AND status = 'pending'",
                         (now, "no one decided before the request expired", row[0]))
        return [_row(r[:8] + (ApprovalStatus.EXPIRED, "expiry", "no one decided before the request expired", now) + r[12:])
                for r in rows]

    # -- the API ----------------------------------------------------------------------------
    def request(self, agent: str, tool: str, tool_input: JSON, gate_reason: str, timeout_s: float, *,
                redactor: Any = None, now: float | None = None) -> tuple[Approval, bool]:
        """The pending request for this exact call, and whether it is new.

        A pending, unexpired request for the same (agent, tool, input hash) is returned as it is
        (its expiry unchanged); otherwise a new one is made that expires ``timeout_s`` from now.
        """
        if not agent or not isinstance(agent, str) or not isinstance(tool, str) or not tool:
            raise ValueError("an approval request needs an agent id and a tool name")
        if not timeout_s > 0:
            raise ValueError("an approval request needs a positive timeout")
        digest = input_hash(tool_input)
        summary = summarize(tool, tool_input, redactor)
        command = tool_input.get("command") if tool == "Bash" and isinstance(tool_input, dict) else None
        if not isinstance(command, str) or (redactor and redactor.redact(command) != command) \
                or not command.isprintable() or not _encodes(command):
            command = None  # a secret's value is never stored, nor what is no text a rule can hold
        reason = _one_line(redactor.redact(gate_reason) if redactor else gate_reason, 1000)
        now = time.time() if now is None else now
        with self._tx() as conn:
            self._expire(conn, now, " AND agent = ? AND tool = ? AND input_hash = ?", (agent, tool, digest))
            row = conn.execute(f"SELECT {', '.join(_COLUMNS)} FROM requests WHERE status = 'pending' "
                               "AND agent = ? AND tool = ? AND input_hash = ?", (agent, tool, digest)).fetchone()
            if row:
                return _row(row), False
            while True:
                request_id = secrets.token_hex(4)
                if self._get(conn, request_id) is None:
                    break
            approval = Approval(request_id, agent, tool, digest, summary, reason, now, now + timeout_s,
                                ApprovalStatus.PENDING, command=command)
            cols = (*_COLUMNS[:9], "command")
            conn.execute(f"INSERT INTO requests ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                         (approval.id, agent, tool, digest, summary, reason, approval.created, approval.expires,
                          ApprovalStatus.PENDING, command))
            return approval, True

    def get(self, request_id: str) -> Approval | None:
        conn = self._open()
        try:
            return self._get(conn, _normal_id(request_id))
        finally:
            conn.close()

    def decide(self, request_id: str, approved: bool, reason: str | None, by: str, *,
               now: float | None = None) -> Approval:
        """Approve or deny a pending request; ApprovalError if it is unknown, decided or expired.

        A denial needs a reason: it is what the agent reads instead of the tool's result.
        """
        request_id = _normal_id(request_id)
        reason = _one_line(reason, 1000) if reason and reason.strip() else None
        if not approved and not reason:
            raise ApprovalError("a denial needs a reason (--reason): the agent reads it instead of the result")
        if not by or not isinstance(by, str):
            raise ApprovalError("a decision needs to say who took it")
        now = time.time() if now is None else now
        with self._tx() as conn:
            current = self._get(conn, request_id)
            if current is None:
                raise ApprovalError(f"no approval request `{request_id}` (see `runtime approvals`)")
            if current.status != ApprovalStatus.PENDING:
                who = f" by {current.decided_by}" if current.decided_by else ""
                why = f" ({current.reason})" if current.reason else ""
                raise ApprovalError(f"approval request `{request_id}` is already {current.status}{who}{why}; "
                                    "a request is decided once")
            expired = current.expires <= now
            if expired:  # recorded as expired (committed), then refused
                self._expire(conn, now, " AND id = ?", (request_id,))
            else:
                status = ApprovalStatus.APPROVED if approved else ApprovalStatus.DENIED
                conn.execute("UPDATE requests SET status = ?, decided_by = ?, reason = ?, decided = ? "
                             "WHERE id = ? AND status = 'pending'", (status, by, reason, now, request_id))
                decided = self._get(conn, request_id)
        if expired:
            raise ApprovalError(f"approval request `{request_id}` expired at {iso(current.expires)}; "
                                "the call was denied (the agent may ask again)")
        return decided  # type: ignore[return-value]

    def expire(self, request_id: str, reason: str, by: str = "expiry", *, now: float | None = None) -> Approval | None:
        """End a pending request early as expired (its agent stopped waiting); None if it was not pending."""
        now = time.time() if now is None else now
        with self._tx() as conn:
            cur = conn.execute("UPDATE requests SET status = 'expired', decided_by = ?, reason = ?, decided = ? "
                               "WHERE id = ? AND status = 'pending'", (by, reason, now, _normal_id(request_id)))
            return self._get(conn, _normal_id(request_id)) if cur.rowcount else None

    def sweep(self, now: float | None = None) -> list[Approval]:
        """Mark every pending request past its expiry as expired; returns those."""
        with self._tx() as conn:
            return self._expire(conn, time.time() if now is None else now)

    def pending(self, agent: str | None = None) -> list[Approval]:
        """The pending requests (after a sweep), oldest first."""
        self.sweep()
        return [a for a in self.all(agent) if a.status == ApprovalStatus.PENDING]

    def glance(self) -> tuple[list[tuple[str, str, str]], int, float]:
        """For a watcher beside the writers: the pending requests (id, agent, summary), how many requests there
        are, and when the last was decided. Read-only (no sweep, nothing created); may raise `sqlite3.Error`
        while a write is under way."""
        conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=1)
        try:
            pending = [(str(r[0]), str(r[1]), str(r[2])) for r in conn.execute(
                "SELECT id, agent, summary FROM requests WHERE status = ?", (ApprovalStatus.PENDING,))]
            count, decided = conn.execute("SELECT count(*), coalesce(max(decided), 0) FROM requests").fetchone()
        finally:
            conn.close()
        return pending, int(count), float(decided)

    def all(self, agent: str | None = None, limit: int | None = None) -> list[Approval]:
        """Every request, oldest first (the last ``limit`` when given)."""
        conn = self._open()
        try:
            sql = f"SELECT {', '.join(_COLUMNS)} FROM requests"
            args: tuple[object, ...] = ()
            if agent is not None:
                sql, args = sql + " WHERE agent = ?", (agent,)
            sql += " ORDER BY created DESC, rowid DESC"
            if limit is not None:
                sql += f" LIMIT {int(limit)}"
            return [_row(r) for r in reversed(conn.execute(sql, args).fetchall())]
        finally:
            conn.close()

    def wait(self, request_id: str, timeout: float | None, *, stop: threading.Event | None = None,
             poll_s: float = POLL_S) -> Approval:
        """The request once it is no longer pending (expiring it at its expiry), or as it is when
        ``timeout`` seconds passed or ``stop`` was set first."""
        request_id = _normal_id(request_id)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            current = self.get(request_id)
            if current is None:
                raise ApprovalError(f"no approval request `{request_id}`")
            if current.status != ApprovalStatus.PENDING:
                return current
            now = time.time()
            if current.expires <= now:
                with self._tx() as conn:
                    self._expire(conn, now, " AND id = ?", (request_id,))
                continue  # read back whatever won: a decision taken just before, or the expiry
            left = current.expires - now
            if deadline is not None:
                left = min(left, deadline - time.monotonic())
                if left <= 0:
                    return current
            if stop is not None:
                if stop.wait(min(poll_s, left)):
                    return self.get(request_id) or current
            else:
                time.sleep(min(poll_s, left))


def _normal_id(request_id: str) -> str:
    return str(request_id).strip().lower()
