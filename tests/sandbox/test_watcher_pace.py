"""The limits watcher's pace: woken by the kernel where it can tell of a change, the disk looked at as often as
its budget needs and no more."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time

import pytest

from runtime.sandbox.disk import Meter
from runtime.sandbox.limits import CLOSE_LOOK_S, DISK_LOOK_S, FAST_WRITE, MIB, Hold, Spend, _disk_wait
from runtime.sandbox.notify import FileEvents
from tests.conftest import require


def test_a_modified_file_wakes_the_waiter_and_an_untouched_one_does_not(tmp_path):
    watched = tmp_path / "memory.events"
    watched.write_text("max 0\n")
    events = FileEvents.watch([watched])
    assert events is not None
    try:
        poller = select.poll()
        poller.register(events.fd, select.POLLIN)
        assert poller.poll(50) == []
        watched.write_text("max 1\n")
        assert poller.poll(1000) != []
        events.drain()
        assert poller.poll(50) == []
    finally:
        events.close()
    assert FileEvents.watch([]) is None
    assert FileEvents.watch([tmp_path / "missing"]) is None  # the caller polls instead


def test_the_disk_is_looked_at_often_enough_for_a_fast_writer_to_go_a_quarter_past_its_budget_at_most():
    budget = 64 * MIB
    wait = _disk_wait(budget, 0, 0, 0.1)
    assert wait is not None
    assert wait * FAST_WRITE <= budget * 1.25  # from a standing start: the whole budget and a quarter
    assert CLOSE_LOOK_S <= wait < DISK_LOOK_S
    # Writing fast now: the next look comes before a quarter of what is left would be written.
    fast = _disk_wait(budget, 40 * MIB, 20 * MIB, 0.01)
    assert fast is not None and fast < wait
    assert _disk_wait(64 * 1024 * MIB, 0, 0, 0.1) == DISK_LOOK_S  # a budget of gigabytes: rarely
    assert _disk_wait(None, 0, 0, 0.1) is None  # no budget: never
    assert _disk_wait(budget, budget, 0, 0.1) == CLOSE_LOOK_S  # at the budget, writing: at once


def test_the_c_library_is_reached_without_a_lookup_process():
    """`ctypes.util.find_library` runs `ldconfig` or a compiler: the watcher takes the interpreter's own C library."""
    import runtime.sandbox.notify as notify

    assert notify._c() is not None
    assert "ctypes.util" not in sys.modules or "find_library" not in vars(notify)


def _held(disk_mb: int) -> Hold:
    from runtime.sandbox.cgroups import support

    require(os.geteuid() == 0 and "memory" in support().places, "a run cgroup with the memory controller (root)")
    return Hold.open(Spend.of(processes=64, memory_mb=256, disk_mb=disk_mb, cpus=2.0))


def test_an_idle_tree_costs_the_watcher_a_look_at_its_meter_every_tenth_of_a_second_at_most(monkeypatch):
    """The meter reads a file per process: a tree that does nothing (an agent waiting on its model) is not
    metered at the pace its budget would need, only when the kernel's count of its activity moves."""
    reads: list[float] = []
    real = Meter.written

    def counted(self: Meter, pids: list[int]) -> int:
        reads.append(time.monotonic())
        return real(self, pids)

    monkeypatch.setattr(Meter, "written", counted)
    hold = _held(64)
    proc = subprocess.Popen([*hold.prefix(), "sleep", "30"])
    try:
        hold.pids = [proc.pid]
        hold.watch()
        time.sleep(0.5)  # its start: the interpreter-free `sleep` settles at once
        before = len(reads)
        time.sleep(2)
        assert len(reads) - before <= 2 / DISK_LOOK_S + 2, len(reads) - before  # at the pace: ~200
        assert hold.breached is None
    finally:
        proc.kill()
        proc.wait()
        hold.close()


@pytest.mark.parametrize("idle_s", [0.05, 0.4, 1.2])
def test_a_tree_that_writes_after_sitting_still_is_stopped_a_quarter_past_its_budget_at_most(tmp_path, idle_s):
    hold = _held(32)
    code = (f"import os, time\ntime.sleep({idle_s})\nchunk = os.urandom(1 << 20)\n"
            f"for i in range(200):\n    open('{tmp_path}/f%d' % i, 'wb').write(chunk)\n")
    proc = subprocess.Popen([*hold.prefix(), sys.executable, "-c", code])
    try:
        hold.pids = [proc.pid]
        hold.watch()
        proc.wait(timeout=60)
        assert hold.breached == "disk"
        written = sum(f.stat().st_size for f in tmp_path.iterdir())
        assert written <= 32 * MIB * 1.25, f"{written / MIB:.0f} MiB written"
    finally:
        if proc.poll() is None:
            proc.kill()
        hold.close()
