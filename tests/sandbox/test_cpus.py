"""Which CPUs an agent is pinned to: the least held on this machine, whoever holds them; the dead hold none."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import pytest

from runtime.sandbox import cpus


@pytest.fixture
def record(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path / f"agent-runtime-{os.getuid()}" / "cpus.json"


def _cpu(prefix: list[str]) -> list[int]:
    assert prefix[1] == "--cpu-list"
    return [int(c) for c in prefix[2].split(",")]


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_agents_spread_over_the_cpus_and_give_them_back(record):
    first_cpu, second_cpu = cpus.available()[:2]  # CI and this machine have two cores at least
    with cpus.pinned(1) as first, cpus.pinned(1) as second:
        assert _cpu(first) == [first_cpu] and _cpu(second) == [second_cpu]
        assert sorted(c for held in json.loads(record.read_text()).values() for c in held) == [first_cpu, second_cpu]
    assert json.loads(record.read_text()) == {}


def test_a_cpu_held_by_a_live_process_is_avoided_and_one_held_by_a_dead_one_is_not(record):
    first_cpu, second_cpu = cpus.available()[:2]
    record.parent.mkdir(mode=0o700)
    record.write_text(json.dumps({f"{os.getppid()}:live": [first_cpu]}))
    with cpus.pinned(1) as prefix:
        assert _cpu(prefix) == [second_cpu]
    record.write_text(json.dumps({f"{_dead_pid()}:gone": [first_cpu]}))
    with cpus.pinned(1) as prefix:
        assert _cpu(prefix) == [first_cpu]
        assert list(json.loads(record.read_text())) == [k for k in json.loads(record.read_text()) if not k.endswith("gone")]


def test_a_folder_planted_as_a_symlink_is_refused(record, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    record.parent.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(cpus.FatalError, match="not this user's own folder"), cpus.pinned(1):
        pass
