"""A run's state file, read and written through its typed record only."""

from __future__ import annotations

import json

import pytest

from runtime.errors import FatalError
from runtime.spawn.outcome import Attempt
from runtime.spawn.state import RECORD_VERSION, RunRecord, StateDir
from runtime.verify.kinds.record import CheckRecord


def test_a_record_round_trips_with_its_attempts_and_a_version(tmp_path):
    state = StateDir(tmp_path)
    attempt = Attempt(1, 2.5, 0, None, turns=3, checks=[CheckRecord("scope::files-whitelist", "scope-whitelist",
                                                                    "passed", "ok")], peak_processes=7)
    written = state.write(RunRecord("ag-1", status="verifying", base="abc", attempts=(attempt,)))
    raw = json.loads((tmp_path / "runs" / "ag-1" / "state.json").read_text())
    assert raw["version"] == RECORD_VERSION and raw["status"] == "verifying" and raw["updated"]
    assert raw["attempts"][0]["checks"][0]["atom"] == "scope::files-whitelist"
    read = state.read("ag-1")
    assert read == written
    assert read is not None and read.attempts[0].checks[0].status == "passed" and not read.final


def test_a_record_written_before_versions_is_read_and_one_newer_is_refused(tmp_path):
    folder = tmp_path / "runs" / "ag-old"
    folder.mkdir(parents=True)
    (folder / "state.json").write_text(json.dumps({"agent_id": "ag-old", "status": "ok", "label": "ok",
                                                   "attempts": [], "someday": 1}))
    old = StateDir(tmp_path).read("ag-old")
    assert old is not None and old.final and old.extra == {"someday": 1}
    assert old.to_json()["someday"] == 1  # a field this runtime does not name is kept, not lost
    (folder / "state.json").write_text(json.dumps({"agent_id": "ag-old", "version": RECORD_VERSION + 1}))
    with pytest.raises(FatalError, match="newer than this runtime reads"):
        StateDir(tmp_path).read("ag-old")


def test_a_state_file_that_is_not_a_record_is_one_line(tmp_path):
    folder = tmp_path / "runs" / "ag-bad"
    folder.mkdir(parents=True)
    (folder / "state.json").write_text("[1, 2]")
    with pytest.raises(FatalError, match="not a run record"):
        StateDir(tmp_path).read("ag-bad")
    (folder / "state.json").write_text("{")
    with pytest.raises(FatalError, match="not JSON"):
        StateDir(tmp_path).read("ag-bad")
