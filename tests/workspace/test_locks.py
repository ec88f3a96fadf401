"""runtime.workspace.locks: one holder per agent id, across processes, stale locks taken over once."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess

import pytest

from runtime.errors import FatalError
from runtime.workspace.locks import AgentIdInUse, acquire, holder, lock_path

CONTENDERS = 8
FORK = multiprocessing.get_context("fork")


def test_acquire_release_and_holder(tmp_path):
    assert holder(tmp_path, "a1") is None
    with acquire(tmp_path, "a1") as lock:
        assert holder(tmp_path, "a1") == os.getpid()
        record = json.loads(lock.path.read_text())
        assert record["pid"] == os.getpid() and record["time"] > 0
        with pytest.raises(AgentIdInUse, match=f"in use by pid {os.getpid()}"):
            acquire(tmp_path, "a1")
        with acquire(tmp_path, "a2"):  # other ids are independent
            pass
    assert holder(tmp_path, "a1") is None and not lock.path.exists()
    acquire(tmp_path, "a1").release()  # free again
    assert [p.name for p in (tmp_path / "locks").iterdir() if not p.name.startswith(".takeover")] == []


def test_bad_agent_ids_are_refused(tmp_path):
    for bad in ("../x", "a/b", "", ".hidden", "x.lock"):
        with pytest.raises(FatalError):
            acquire(tmp_path, bad)


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _plant(tmp_path, agent_id: str, **record) -> None:
    path = lock_path(tmp_path, agent_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"time": 0, "token": "planted", **record}))


def test_stale_lock_is_taken_over(tmp_path):
    _plant(tmp_path, "a1", pid=_dead_pid(), start=None)
    assert holder(tmp_path, "a1") is None
    with acquire(tmp_path, "a1"):
        assert holder(tmp_path, "a1") == os.getpid()


def test_recycled_pid_is_not_taken_for_the_holder(tmp_path):
    _plant(tmp_path, "a1", pid=os.getpid(), start="1")  # our pid, but another process's start time
    with acquire(tmp_path, "a1"):
        assert json.loads(lock_path(tmp_path, "a1").read_text())["token"] != "planted"


def test_unreadable_lock_fails_closed(tmp_path):
    path = lock_path(tmp_path, "a1")
    path.parent.mkdir(parents=True)
    path.write_text("")
    with pytest.raises(AgentIdInUse, match="unreadable"):
        acquire(tmp_path, "a1")


def test_release_never_removes_someone_elses_lock(tmp_path):
    lock = acquire(tmp_path, "a1")
    _plant(tmp_path, "a1", pid=os.getppid(), start=None)  # e.g. taken over after we were judged dead
    lock.release()
    assert holder(tmp_path, "a1") == os.getppid()


def _contend(state_dir, agent_id, barrier, results, done) -> None:
    barrier.wait()
    try:
        lock = acquire(state_dir, agent_id)
    except AgentIdInUse as exc:
        results.put(("lost", os.getpid(), str(exc)))
        return
    results.put(("won", os.getpid(), ""))
    done.wait(60)  # hold until every contender has tried
    lock.release()


def _race(state_dir, agent_id: str) -> list[tuple[str, int, str]]:
    barrier, results, done = FORK.Barrier(CONTENDERS), FORK.Queue(), FORK.Event()
    procs = [FORK.Process(target=_contend, args=(state_dir, agent_id, barrier, results, done)) for _ in range(CONTENDERS)]
    for proc in procs:
        proc.start()
    try:
        outcomes = [results.get(timeout=60) for _ in procs]
    finally:
        done.set()
        for proc in procs:
            proc.join(30)
    assert all(proc.exitcode == 0 for proc in procs)
    return outcomes


def _one_winner(outcomes) -> int:
    winners = [pid for kind, pid, _ in outcomes if kind == "won"]
    assert len(winners) == 1, outcomes
    losses = [why for kind, _, why in outcomes if kind == "lost"]
    assert len(losses) == CONTENDERS - 1
    assert all(f"in use by pid {winners[0]}" in why for why in losses), losses
    return winners[0]


@pytest.mark.parametrize("round_", range(3))
def test_racing_spawns_exactly_one_wins(tmp_path, round_):
    _one_winner(_race(tmp_path, "racer"))
    assert holder(tmp_path, "racer") is None


def _acquire_and_die(state_dir, agent_id) -> None:
    acquire(state_dir, agent_id)  # never released: the process exits holding it


@pytest.mark.parametrize("round_", range(3))
def test_racing_takeover_of_a_stale_lock_exactly_one_wins(tmp_path, round_):
    dead = FORK.Process(target=_acquire_and_die, args=(tmp_path, "racer"))
    dead.start()
    dead.join(30)
    stale_pid = json.loads(lock_path(tmp_path, "racer").read_text())["pid"]
    assert stale_pid == dead.pid and holder(tmp_path, "racer") is None
    winner = _one_winner(_race(tmp_path, "racer"))
    assert winner != stale_pid
    assert not lock_path(tmp_path, "racer").exists()
    assert [p.name for p in (tmp_path / "locks").iterdir()] == [".takeover"]  # no drafts left behind
