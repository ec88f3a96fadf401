"""runtime.workspace.locks: one holder per agent id, across processes; a dead holder's lock is free."""

from __future__ import annotations

import json
import multiprocessing
import os

import pytest

from runtime.errors import FatalError
from runtime.workspace.locks import AgentIdInUse, acquire, holder, lock_path

CONTENDERS = 8
FORK = multiprocessing.get_context("fork")


def test_acquire_release_and_holder(tmp_path):
    assert holder(tmp_path, "a1") is None
    with acquire(tmp_path, "a1") as lock:
        assert holder(tmp_path, "a1") == os.getpid()
        record = json.loads(lock.path.with_suffix(".holder").read_text())
        assert record["pid"] == os.getpid() and record["time"] > 0
        with pytest.raises(AgentIdInUse, match=f"in use by pid {os.getpid()}"):
            acquire(tmp_path, "a1")  # the same process, a second time: refused too
        with acquire(tmp_path, "a2"):  # other ids are independent
            pass
    assert holder(tmp_path, "a1") is None and not lock.path.with_suffix(".holder").exists()
    acquire(tmp_path, "a1").release()  # free again


def test_bad_agent_ids_are_refused(tmp_path):
    for bad in ("../x", "a/b", "", ".hidden", "x.lock"):
        with pytest.raises(FatalError):
            acquire(tmp_path, bad)


def test_a_holder_record_left_by_a_dead_process_holds_nothing(tmp_path):
    path = lock_path(tmp_path, "a1")
    path.parent.mkdir(parents=True)
    path.touch()
    path.with_suffix(".holder").write_text(json.dumps({"pid": os.getppid(), "time": 0}))
    assert holder(tmp_path, "a1") is None  # the flock decides, not the record
    with acquire(tmp_path, "a1"):
        assert holder(tmp_path, "a1") == os.getpid()


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
    acquire(state_dir, agent_id)
    os._exit(0)  # never released: the process dies holding it


@pytest.mark.parametrize("round_", range(3))
def test_a_dead_holders_lock_is_free_and_exactly_one_racer_takes_it(tmp_path, round_):
    dead = FORK.Process(target=_acquire_and_die, args=(tmp_path, "racer"))
    dead.start()
    dead.join(30)
    stale = json.loads(lock_path(tmp_path, "racer").with_suffix(".holder").read_text())["pid"]
    assert stale == dead.pid and holder(tmp_path, "racer") is None
    winner = _one_winner(_race(tmp_path, "racer"))
    assert winner != stale
