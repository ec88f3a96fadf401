"""The audit log as OCSF events: every kind of record the runtime writes (and a log of an earlier version) becomes
an event that validates against OCSF 1.5.0's published schema (its classes and the `security_control` profile, as
the `ocsf-json-schema` package carries them at a pinned version), mapped onto the class a SIEM expects."""

from __future__ import annotations

import json
import os
import subprocess
from functools import cache

import jsonschema
import pytest
from ocsf_json_schema import OcsfJsonSchemaEmbedded, get_ocsf_schema

from runtime.audit.log import AuditLog, records
from runtime.audit.ocsf import OCSF_VERSION, event
from runtime.audit.records import Egress, Gated
from tests.audit.test_records import BEFORE, NOW
from tests.conftest import RUNTIME
from tests.support import git


@cache
def _validator(class_uid: int, profiles: tuple[str, ...]) -> jsonschema.Draft202012Validator:
    schema = OcsfJsonSchemaEmbedded(get_ocsf_schema(version=OCSF_VERSION))
    name = schema.lookup_class_name_from_uid(class_uid=class_uid)
    return jsonschema.Draft202012Validator(schema.get_class_schema(class_name=name, profiles=list(profiles)))


def _valid(ev: dict) -> None:
    errors = list(_validator(ev["class_uid"], tuple(ev["metadata"].get("profiles", []))).iter_errors(ev))
    assert not errors, [f"{'/'.join(map(str, e.path))}: {e.message[:200]}" for e in errors[:3]]


@pytest.fixture
def log(tmp_path):
    path = tmp_path / "audit.jsonl"
    audit = AuditLog(path)
    for record, agent, worker in NOW:
        audit.append(record, agent, worker=worker)
    audit.append(Gated(attempt=1, tool="Write", input={"file_path": "src/new.py", "content": "x = 1\n"},
                       decision="allow", reason="in scope", atom="scope::files-whitelist", rule="files-whitelist"), "ag-1")
    audit.append(Gated(attempt=1, tool="WebFetch", input={"url": "https://docs.python.org/3/", "prompt": "read"},
                       decision="ask", reason="not on the list", atom="net::egress-allowlist", rule=None), "ag-1")
    audit.append(Gated(attempt=1, tool="mcp__github__create_issue", input={"title": "x"}, decision="deny",
                       reason="no rule names it", atom="tools::mcp-allowlist", rule=None), "ag-1")
    audit.append(Egress(event="end", id="ab12", method="CONNECT", host="registry.example.com", port=443,
                        address="93.184.216.34", bytes_up=10, bytes_down=20, duration_s=0.5, ended="closed",
                        credentialed=3), "ag-1")
    return path


def test_every_record_the_runtime_writes_is_a_valid_ocsf_event(log):
    entries = list(records(log))
    assert {e.kind for e in entries} >= {"spawn", "gate", "egress", "tool", "check", "commit", "merge", "outcome"}
    for entry in entries:
        ev = event(entry)
        _valid(ev)
        assert ev["metadata"]["version"] == OCSF_VERSION and ev["type_uid"] == ev["class_uid"] * 100 + ev["activity_id"]
        # the chain travels with each event: a SIEM can check it
        assert (ev["metadata"]["uid"], ev["metadata"]["sequence"], ev["unmapped"]["prev"]) == (
            entry.hash, entry.seq, entry.prev)


def test_a_log_of_an_earlier_version_exports_valid_events_too(tmp_path):
    for entry in records(BEFORE):
        _valid(event(entry))


def test_each_kind_lands_on_the_class_a_siem_expects(log):
    by = [(e.kind, event(e)) for e in records(log)]
    gates: dict[str, dict] = {}
    for kind, ev in by:
        if kind == "gate":
            gates.setdefault(ev["unmapped"]["tool"], ev)
    shell = gates["Bash"]
    assert (shell["class_uid"], shell["activity_name"], shell["process"]["cmd_line"]) == (1007, "Launch",
                                                                                         "git push origin main")
    assert (shell["disposition"], shell["action"], shell["severity_id"]) == ("Blocked", "Denied", 3)
    assert (gates["Read"]["class_uid"], gates["Read"]["activity_name"], gates["Read"]["file"]["path"]) == (
        1001, "Read", "src/calc.py")
    assert (gates["Write"]["activity_name"], gates["Write"]["disposition"]) == ("Create", "Allowed")
    assert (gates["WebFetch"]["class_uid"], gates["WebFetch"]["disposition_id"]) == (4002, 99)  # a person is asked
    assert (gates["mcp__github__create_issue"]["class_uid"],
            gates["mcp__github__create_issue"]["api"]["operation"]) == (6003, "mcp__github__create_issue")
    egress = [ev for kind, ev in by if kind == "egress"]
    allowed = egress[0]
    assert (allowed["class_uid"], allowed["activity_name"], allowed["disposition"]) == (4002, "Connect", "Allowed")
    assert allowed["dst_endpoint"] == {"hostname": "pypi.org", "port": 443, "ip": "151.101.0.223"}
    ended = egress[-1]
    assert ended["traffic"] == {"bytes_out": 10, "bytes_in": 20, "bytes": 30} and ended["duration"] == 500
    assert ended["unmapped"]["credentialed"] == 3
    spawn = next(ev for kind, ev in by if kind == "spawn")
    assert (spawn["class_uid"], spawn["activity_name"], spawn["unmapped"]["data"]["role"]) == (0, "spawn", "edit-local")


def test_the_cli_exports_ocsf_lines_and_the_logs_own(log, tmp_path):
    git(tmp_path, "init", "-q")  # the repository whose runs these are
    env = {**os.environ, "RUNTIME_STATE_DIR": str(log.parent)}
    out = subprocess.run([RUNTIME, "audit", "export", "--agent", "ag-1"], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(lines) == 4 and all(ev["metadata"]["correlation_uid"] == "ag-1" for ev in lines)
    for ev in lines:
        _valid(ev)
    raw = subprocess.run([RUNTIME, "audit", "export", "--format", "jsonl", "--kind", "egress"], capture_output=True,
                         text=True, env=env, cwd=tmp_path, timeout=60)
    assert [json.loads(line) for line in raw.stdout.splitlines()] == [e.to_json() for e in records(log, kind="egress")]
    bad = subprocess.run([RUNTIME, "audit", "export", "--since", "last week"], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=60)
    assert bad.returncode == 1 and "not an ISO-8601 time" in bad.stderr and bad.stdout == ""
