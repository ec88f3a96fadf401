"""An append-only, hash-chained JSONL audit log.

Every spawn step is one line, one JSON object::

    {"seq": 7, "time": "2025-01-31T12:00:00.123456Z", "kind": "gate", "agent": "fix-tok-1",
     "data": {...}, "prev": "sha256:<hash of record 6>", "hash": "sha256:<hex>"}

``seq`` counts from 1; the first record's ``prev`` is ``GENESIS``
(``sha256:`` and 64 zeros). ``hash`` is the SHA-256 of the record's canonical
JSON without ``hash`` (sorted keys, no spaces, ASCII, see ``record_hash``), so
a record cannot be edited, and because each record names the hash of the one
before it, none can be deleted, reordered or inserted, without ``verify``
noticing. A chain proves nothing about its own end: dropping the last records,
or rewriting every record from some point on, leaves a valid chain. Anchor the
last hash elsewhere (a commit message, the run's summary) to close that gap.

Kinds are a string matching ``^[a-z][a-z0-9-]*$``. Each kind the runtime writes is one record class of
``runtime.audit.records`` (gate decisions, tool calls, checks, retries, commits, egress, approvals, the
outcome...): ``append`` takes a record, and ``records``/``read_from`` give each line back as an
``AuditEntry`` (its envelope and its record; a line of a kind or shape this version does not write is a
``Foreign`` record, read all the same).

A record's data passes through the log's ``Redactor`` before it is hashed, so a
secret is never on disk, not even inside the hashed content. Values must be
JSON already (str, int, finite float, bool, None, lists, dicts with str keys):
anything else, bytes included, is a ``TypeError`` rather than silently
stringified.

Several processes may append at once (parallel spawns): each append takes an
exclusive ``fcntl.flock`` on the file, reads the last record's ``seq`` and
``hash`` under the lock, writes its line and fsyncs, so the chain never forks
and lines never interleave.
"""

from __future__ import annotations

import bisect
import fcntl
import hashlib
import json
import math
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypedDict

from runtime.audit.records import AuditEntry, AuditRecord, Worker, read_data
from runtime.audit.redact import Redactor

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSON, JSONDict

GENESIS = "sha256:" + "0" * 64
FIELDS = ("seq", "time", "kind", "agent", "data", "prev", "hash")
KIND_RE = re.compile(r"[a-z][a-z0-9-]*")
_HASH_RE = re.compile(r"sha256:[0-9a-f]{64}")
_TAIL_CHUNK = 64 * 1024


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a log: the 1-based line and a one-line message."""

    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


class _Line(TypedDict):
    """A line of the log as JSON, its fields checked (``_parse``)."""

    seq: int
    time: str
    kind: str
    agent: str | None
    data: JSONDict
    prev: str
    hash: str


def canonical_json(value: JSON | Mapping[str, object]) -> str:
    """The one serialisation that is hashed: sorted keys, no spaces, ASCII only."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def record_hash(record: Mapping[str, object]) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``record`` without its ``hash`` key."""
    body = {key: value for key, value in record.items() if key != "hash"}
    return "sha256:" + hashlib.sha256(canonical_json(body).encode("ascii")).hexdigest()


class AuditLog:
    """Appends hash-chained records to the JSONL file at ``path``."""

    def __init__(self, path: str | os.PathLike[str], redactor: Redactor | None = None) -> None:
        self.path = os.fspath(path)
        self.redactor = redactor

    def append(self, record: AuditRecord, agent: str | None = None, *, worker: Worker | None = None) -> AuditEntry:
        """Write one record and return its line (as written: redacted, seq and hash included). ``worker``: the
        record is a cluster worker's, forwarded (``runtime.orchestration.ray_executor``)."""
        kind = record.kind_name()
        if not isinstance(kind, str) or not KIND_RE.fullmatch(kind):
            raise ValueError(f"audit kind must match ^[a-z][a-z0-9-]*$, got {kind!r}")
        if agent is not None and not isinstance(agent, str):
            raise TypeError(f"audit agent must be str or None, not {type(agent).__name__}")
        fields = record.data()
        if worker is not None:
            if "worker" in fields:
                raise ValueError("a forwarded record has a `worker` of its own")
            fields["worker"] = worker.data()
        _check_json(fields, "data")
        # A private copy, as it will read back (tuples become lists).
        data = json.loads(json.dumps(fields, allow_nan=False))
        if self.redactor is not None:
            redacted = self.redactor.redact_obj(data)
            if not isinstance(redacted, dict):  # a dict redacts to a dict
                raise TypeError(f"the redactor made {type(redacted).__name__} of a record's data")
            data = redacted
        folder = os.path.dirname(self.path)
        if folder:
            os.makedirs(folder, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            last, torn = _tail(fd)
            line: _Line = {
                "seq": last["seq"] + 1 if last else 1,
                "time": datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z"),
                "kind": kind,
                "agent": agent,
                "data": data,
                "prev": last["hash"] if last else GENESIS,
                "hash": "",
            }
            line["hash"] = record_hash(line)
            # A torn last line (a writer died mid-line) stays in the file for
            # verify to report; the new record starts on a line of its own.
            # Written in field order for readers; the hash covers the canonical form.
            text = json.dumps(line, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
            _write_all(fd, (("\n" if torn else "") + text + "\n").encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)  # releases the lock
        return _entry(line)


def verify(path: str | os.PathLike[str]) -> list[Problem]:
    """Every problem found in the log at ``path``, by line; empty means intact.

    Detects an edited record (its hash does not match), a malformed line, a
    truncated last line, a deleted record (seq gap), reordered records (seq
    out of order), a record inserted in the middle (a duplicate seq the chain
    does not continue from, or an out-of-order seq) and a broken link (``prev``
    is not the hash of the record before). At most one problem per line. A
    missing file is an empty, intact log.
    """
    problems: dict[int, str] = {}
    entries: list[_Entry] = []
    malformed: list[int] = []
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        return []
    with handle:
        for number, raw in enumerate(handle, start=1):
            complete = raw.endswith(b"\n")
            record, error = _parse(raw[:-1] if complete else raw)
            if record is None:
                malformed.append(number)
                what = "truncated last line (an interrupted write?)" if not complete else "malformed line"
                problems[number] = f"{what}: {error}"
                continue
            if not complete:
                problems[number] = "last line has no newline (an interrupted write?)"
            if record_hash(record) != record["hash"]:
                problems.setdefault(number, f"record edited: seq {record['seq']} does not match its hash")
            entries.append(_Entry(number, record["seq"], record["prev"], record["hash"]))
    for number, message in _chain_problems(entries, malformed):
        problems.setdefault(number, message)
    return [Problem(number, problems[number]) for number in sorted(problems)]


def records(
    path: str | os.PathLike[str],
    agent: str | None = None,
    kind: str | None = None,
    since: datetime | str | None = None,
) -> Iterator[AuditEntry]:
    """The well-formed records of the log in file order, filtered for ``runtime audit show``.

    ``since`` (a datetime or an ISO-8601 string; naive means UTC) keeps
    records at or after that time. Lines that do not parse are skipped:
    reporting them is ``verify``'s job.
    """
    cutoff = _as_utc(since) if since is not None else None
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        return
    with handle:
        for raw in handle:
            record, _ = _parse(raw.rstrip(b"\n"))
            if record is None:
                continue
            if agent is not None and record["agent"] != agent:
                continue
            if kind is not None and record["kind"] != kind:
                continue
            if cutoff is not None:
                try:
                    if _as_utc(record["time"]) < cutoff:
                        continue
                except ValueError:
                    continue
            yield _entry(record)


def read_from(path: str | os.PathLike[str], offset: int, limit: int = 16 * 1024 * 1024) -> tuple[list[AuditEntry], int]:
    """The well-formed records of the whole lines after ``offset`` (at most ``limit`` bytes), and the offset
    after the last whole line: a reader that follows the log (the console) reads each line once. A line
    still being written is left for the next read."""
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            chunk = handle.read(limit)
    except FileNotFoundError:
        return [], offset
    out, end = read_lines(chunk)
    return out, offset + end


def read_lines(chunk: bytes) -> tuple[list[AuditEntry], int]:
    """The well-formed records of the whole lines of ``chunk``, and the bytes those lines take."""
    end = chunk.rfind(b"\n") + 1
    out = []
    for raw in chunk[:end].split(b"\n"):
        record, _ = _parse(raw) if raw else (None, "")
        if record is not None:
            out.append(_entry(record))
    return out, end


# -- internals ---------------------------------------------------------------


@dataclass(frozen=True)
class _Entry:
    line: int
    seq: int
    prev: str
    hash: str


def _entry(line: _Line) -> AuditEntry:
    record, worker = read_data(line["kind"], line["data"])
    return AuditEntry(line["seq"], line["time"], line["kind"], line["agent"], record, line["prev"], line["hash"],
                      worker)


def _check_json(value: object, where: str) -> None:
    """Raise TypeError unless ``value`` is plain JSON (no bytes, sets, objects, NaN)."""
    if value is None or isinstance(value, (str, bool, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TypeError(f"{where}: {value!r} is not a JSON number")
        return
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _check_json(item, f"{where}[{index}]")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{where}: key {key!r} is not a string")
            _check_json(item, f"{where}.{key}")
        return
    raise TypeError(f"{where}: {type(value).__name__} is not JSON; convert it explicitly")


def _parse(raw: bytes) -> tuple[_Line | None, str]:
    """A record with the right fields and types, or None and why not."""
    try:
        record = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        return None, f"not JSON ({exc})" if raw.strip() else "empty line"
    if not isinstance(record, dict):
        return None, "not a JSON object"
    if sorted(record) != sorted(FIELDS):
        return None, f"fields are {sorted(record)}, expected {list(FIELDS)}"
    seq, time, kind, agent, data, prev, digest = (record[key] for key in FIELDS)
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
        return None, f"seq {seq!r} is not a positive integer"
    if not isinstance(kind, str) or not KIND_RE.fullmatch(kind):
        return None, f"kind {kind!r} is not a valid kind"
    if agent is not None and not isinstance(agent, str):
        return None, "agent is not a string"
    if not isinstance(time, str) or not isinstance(data, dict):
        return None, "time or data has the wrong type"
    for key, value in (("prev", prev), ("hash", digest)):
        if not isinstance(value, str) or not _HASH_RE.fullmatch(value):
            return None, f"{key} is not a sha256:<hex> hash"
    return {"seq": seq, "time": time, "kind": kind, "agent": agent, "data": data, "prev": prev, "hash": digest}, ""


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _chain_problems(entries: list[_Entry], malformed: list[int]) -> Iterator[tuple[int, str]]:
    """Duplicates, order, gaps and links of the well-formed records, as (line, message)."""
    by_seq: dict[int, list[_Entry]] = {}
    for entry in entries:
        by_seq.setdefault(entry.seq, []).append(entry)
    links = {(entry.seq, entry.prev) for entry in entries}
    hashes_by_seq = {seq: {entry.hash for entry in group} for seq, group in by_seq.items()}

    # 1. Several records with one seq: the one the chain continues from is
    #    genuine, the others were inserted (or copied).
    def score(entry: _Entry) -> tuple[bool, bool, int]:
        forward = (entry.seq + 1, entry.hash) in links
        backward = entry.prev in hashes_by_seq.get(entry.seq - 1, {GENESIS} if entry.seq == 1 else set())
        return forward, backward, -entry.line

    canonical: dict[int, _Entry] = {}
    for seq, group in by_seq.items():
        chosen = max(group, key=score)
        canonical[seq] = chosen
        for entry in group:
            if entry is not chosen:
                yield entry.line, (
                    f"inserted record: seq {seq} is also on line {chosen.line}, which the chain continues from"
                )

    # 2. Order: the longest run of lines with increasing seq is in place; the rest moved.
    ordered = sorted(canonical.values(), key=lambda entry: entry.line)
    keep = _longest_increasing(ordered)
    kept = [ordered[i] for i in keep]
    kept_set = set(keep)
    for index, entry in enumerate(ordered):
        if index in kept_set:
            continue
        before = next((ordered[i] for i in reversed(keep) if i < index), None)
        after = next((ordered[i] for i in keep if i > index), None)
        if before is not None and before.seq > entry.seq:
            where = f"after seq {before.seq} (line {before.line})"
        elif after is not None:
            where = f"before seq {after.seq} (line {after.line})"
        else:
            where = "in the wrong place"
        yield entry.line, f"records reordered: seq {entry.seq} is {where}"

    # 3. Gaps between records in place that no line of the file accounts for.
    present = set(by_seq)
    previous = _Entry(0, 0, "", GENESIS)
    for entry in kept:
        missing = [seq for seq in range(previous.seq + 1, entry.seq) if seq not in present]
        torn = sum(1 for line in malformed if previous.line < line < entry.line)
        if len(missing) > torn:
            yield entry.line, (
                f"record(s) deleted: seq jumps from {previous.seq} to {entry.seq}"
                f" ({len(missing)} missing before this line)"
            )
        previous = entry

    # 4. Links: each record names the hash of the record with the seq before it.
    for entry in ordered:
        if entry.seq == 1:
            if entry.prev != GENESIS:
                yield entry.line, "chain broken: the first record's prev is not the genesis hash"
            continue
        before = canonical.get(entry.seq - 1)
        if before is not None and entry.prev != before.hash:
            yield entry.line, (
                f"chain broken: prev is not the hash of seq {before.seq} (line {before.line});"
                " one of them was rewritten or forged"
            )


def _longest_increasing(entries: list[_Entry]) -> list[int]:
    """Indices of a longest strictly increasing subsequence of ``seq`` (O(n log n))."""
    tails: list[int] = []  # seq at the end of the best run of each length
    tail_index: list[int] = []
    parent = [-1] * len(entries)
    for index, entry in enumerate(entries):
        length = bisect.bisect_left(tails, entry.seq)
        if length == len(tails):
            tails.append(entry.seq)
            tail_index.append(index)
        else:
            tails[length] = entry.seq
            tail_index[length] = index
        parent[index] = tail_index[length - 1] if length else -1
    result: list[int] = []
    index = tail_index[-1] if tail_index else -1
    while index != -1:
        result.append(index)
        index = parent[index]
    return result[::-1]


def _tail(fd: int) -> tuple[_Line | None, bool]:
    """The last well-formed record of the open file, and whether its end is a torn line."""
    size = os.fstat(fd).st_size
    if size == 0:
        return None, False
    torn = os.pread(fd, 1, size - 1) != b"\n"
    window = _TAIL_CHUNK
    while True:
        start = max(0, size - window)
        chunk = os.pread(fd, size - start, start)
        lines = chunk.split(b"\n")
        if start > 0:
            lines = lines[1:]  # may begin mid-line
        for raw in reversed(lines):
            record, _ = _parse(raw)
            if record is not None:
                return record, torn
        if start == 0:
            return None, torn
        window *= 4


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _as_utc(value: datetime | str) -> datetime:
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)
