"""The audit log as OCSF events (`runtime audit export --format ocsf`): what a SIEM takes as it is.

Each record of the log becomes one event of the Open Cybersecurity Schema Framework, version `OCSF_VERSION`,
validated against that version's published schema in the tests (`tests/audit/test_ocsf.py`):

- a gate decision on a tool call: the call's own activity, with the `security_control` profile's disposition
  (Allowed, Blocked, or a person asked): a shell command is Process Activity (1007, Launch), a file tool File
  System Activity (1001: Read, Create, Update), a web tool HTTP Activity (4002), any other tool API Activity
  (6003);
- a request through the egress proxy: HTTP Activity (4002), its decision as the disposition, and, when it ended,
  the bytes each way and how long;
- everything else the runtime records (a spawn, a check, a commit, an approval, an outcome...): a Base Event
  (0) naming the record's kind, its data kept under `unmapped`.

Every event keeps the log's own proof: `metadata.uid` is the record's hash, `metadata.sequence` its place in
the chain, and `unmapped.prev` the hash before it, so a SIEM can check the chain it received.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from datetime import datetime
from typing import TYPE_CHECKING

from runtime import __version__
from runtime.audit.records import AuditEntry, Egress, Gated

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSON, JSONDict

OCSF_VERSION = "1.5.0"
PROFILES = ["security_control"]
PRODUCT: JSONDict = {"name": "agent-role-runtime", "vendor_name": "agent-role-runtime", "version": __version__}

_SHELL = {"Bash"}
_READS = {"Read": 2, "Glob": 2, "Grep": 2, "NotebookRead": 2}  # File System Activity: Read
_WRITES = {"Write": 1, "Edit": 3, "MultiEdit": 3, "NotebookEdit": 3}  # Create, Update
_WEB = {"WebFetch", "WebSearch"}
# HTTP Activity's activity_id per method; 99 Other
_HTTP = {"CONNECT": 1, "DELETE": 2, "GET": 3, "HEAD": 4, "OPTIONS": 5, "POST": 6, "PUT": 7, "TRACE": 8}
# the gate's decision -> (disposition_id, disposition, action_id, action, status_id)
_DECISIONS = {"allow": (1, "Allowed", 1, "Allowed", 1), "deny": (2, "Blocked", 2, "Denied", 2)}
_ASKED = (99, "Asked a person", 99, "Asked a person", 99)


def _time(entry: AuditEntry) -> int:
    return int(datetime.fromisoformat(entry.time.replace("Z", "+00:00")).timestamp() * 1000)


def _base(entry: AuditEntry, class_uid: int, category_uid: int, activity_id: int, activity_name: str,
          severity_id: int = 1, profiles: bool = False) -> JSONDict:
    metadata: JSONDict = {"version": OCSF_VERSION, "product": dict(PRODUCT), "uid": entry.hash,
                          "sequence": entry.seq, "log_name": "audit.jsonl", "original_time": entry.time}
    if profiles:
        metadata["profiles"] = list(PROFILES)
    if entry.agent:
        metadata["correlation_uid"] = entry.agent
    return {"class_uid": class_uid, "category_uid": category_uid, "activity_id": activity_id,
            "activity_name": activity_name, "type_uid": class_uid * 100 + activity_id, "time": _time(entry),
            "severity_id": severity_id, "metadata": metadata,
            "unmapped": {"kind": entry.kind, "prev": entry.prev}}


def _actor(entry: AuditEntry) -> JSONDict:
    """The agent, as OCSF's actor: a user of the runtime's (its agent id), and the runtime as the app."""
    user: JSONDict = {"name": entry.agent or "orchestrator", "uid": entry.agent or "orchestrator", "type_id": 99,
                      "type": "AI agent"}
    return {"user": user, "app_name": PRODUCT["name"]}


def _device() -> JSONDict:
    return {"hostname": socket.gethostname(), "type_id": 0}


def _disposition(event: JSONDict, decision: str | None) -> None:
    disposition_id, disposition, action_id, action, status_id = _DECISIONS.get(decision or "", _ASKED)
    event.update(disposition_id=disposition_id, disposition=disposition, action_id=action_id, action=action,
                 status_id=status_id)


def _gate(entry: AuditEntry, record: Gated) -> JSONDict:
    tool = record.tool or "unknown"
    given = record.input if isinstance(record.input, dict) else {}
    denied = record.decision != "allow"
    severity = 3 if denied else 1
    if tool in _SHELL:
        event = _base(entry, 1007, 1, 1, "Launch", severity, profiles=True)
        command = str(given.get("command", ""))
        # decided before it runs: no pid yet; the producer's own id for it is the record's place in the chain
        event["process"] = {"cmd_line": command, "name": command.split()[0] if command.split() else "sh",
                            "uid": f"{entry.agent or 'orchestrator'}/{entry.seq}"}
    elif tool in _READS or tool in _WRITES:
        activity = _READS.get(tool) or _WRITES[tool]
        event = _base(entry, 1001, 1, activity, {1: "Create", 2: "Read", 3: "Update"}[activity], severity,
                      profiles=True)
        path = str(given.get("file_path") or given.get("notebook_path") or given.get("path") or given.get("pattern") or "")
        event["file"] = {"name": path.rsplit("/", 1)[-1] or path or tool, "path": path, "type_id": 1}
    elif tool in _WEB:
        event = _base(entry, 4002, 4, 3, "Get", severity, profiles=True)
        url = str(given.get("url") or given.get("query") or "")
        event["http_request"] = {"http_method": "GET", "url": {"url_string": url}}
    else:
        event = _base(entry, 6003, 6, 99, "Other", severity, profiles=True)
        event["api"] = {"operation": tool, "service": {"name": "agent tools"}}
        event["src_endpoint"] = {"hostname": socket.gethostname()}
    if event["class_uid"] != 4002:  # HTTP Activity has no actor: the agent is the event's correlation_uid
        event["actor"] = _actor(entry)
    if event["class_uid"] in (1001, 1007):
        event["device"] = _device()
    _disposition(event, record.decision)
    event["message"] = f"{tool}: {record.decision}" + (f" ({record.reason})" if record.reason else "")
    unmapped = event["unmapped"]
    assert isinstance(unmapped, dict)
    unmapped.update(tool=tool, input=record.input, atom=record.atom, rule=record.rule, attempt=record.attempt)
    return event


def _egress(entry: AuditEntry, record: Egress) -> JSONDict:
    method = (record.method or "").upper()
    activity = _HTTP.get(method, 99)
    event = _base(entry, 4002, 4, activity, method.title() if activity != 99 else "Other",
                  3 if record.decision not in (None, "allow") else 1, profiles=True)
    endpoint: JSONDict = {"hostname": record.host or "", "port": record.port or 0}
    if record.address:
        endpoint["ip"] = record.address
    event["dst_endpoint"] = endpoint
    scheme = "" if method == "CONNECT" else "http://"  # a tunnel names host:port alone; the path is not recorded
    event["http_request"] = {"url": {"hostname": record.host or "", "port": record.port or 0,
                                     "url_string": f"{scheme}{record.host or ''}:{record.port or 0}"}}
    if activity != 99:  # a connection turned away before its request was read has no method
        event["http_request"]["http_method"] = method  # type: ignore[index]
    if record.event == "request":
        _disposition(event, record.decision)
        if record.status is not None:
            event["http_response"] = {"code": record.status}
        event["message"] = record.reason or record.decision or "request"
        if record.count:
            event["count"] = record.count
    else:
        event["status_id"] = 1
        event["traffic"] = {"bytes_out": record.bytes_up or 0, "bytes_in": record.bytes_down or 0,
                            "bytes": (record.bytes_up or 0) + (record.bytes_down or 0)}
        if record.duration_s is not None:
            event["duration"] = int(record.duration_s * 1000)
        event["message"] = f"ended: {record.ended or 'closed'}"
    unmapped = event["unmapped"]
    assert isinstance(unmapped, dict)
    unmapped.update(event=record.event, id=record.id, phase=record.phase, credentialed=record.credentialed)
    return event


def _other(entry: AuditEntry) -> JSONDict:
    event = _base(entry, 0, 0, 99, entry.kind)
    event["message"] = f"{entry.kind} ({entry.agent or 'orchestrator'})"
    unmapped = event["unmapped"]
    assert isinstance(unmapped, dict)
    unmapped["data"] = entry.data()
    return event


def event(entry: AuditEntry) -> JSONDict:
    """One record of the log as its OCSF event."""
    record = entry.record
    if isinstance(record, Gated):
        return _gate(entry, record)
    if isinstance(record, Egress):
        return _egress(entry, record)
    return _other(entry)


def events(entries: Iterator[AuditEntry]) -> Iterator[JSON]:
    for entry in entries:
        yield event(entry)
