"""The limits watcher's pace: woken by the kernel where it can tell of a change, the disk looked at as often as
its budget needs and no more."""

from __future__ import annotations

import select
import sys

from runtime.sandbox.limits import CLOSE_LOOK_S, DISK_LOOK_S, FAST_WRITE, MIB, _disk_wait
from runtime.sandbox.notify import FileEvents


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
