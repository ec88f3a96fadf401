"""The hook's own deadline (`runtime.gate.deadline`): how long, and what happens when it passes."""

import signal
import time

import pytest

from runtime.gate import deadline


@pytest.fixture
def alarm():
    """Leave SIGALRM and the real-time timer as they were, and the module unarmed."""
    handler = signal.getsignal(signal.SIGALRM)
    yield
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, handler)
    deadline._answer = None


class Exited(Exception):
    pass


@pytest.fixture
def exits(monkeypatch):
    """Record what the deadline writes and the status it exits with, instead of ending the test run."""
    written = []

    def write(fd, data):
        written.append((fd, data))
        return len(data)

    def exit_(status):
        raise Exited(status)

    monkeypatch.setattr(deadline.os, "write", write)
    monkeypatch.setattr(deadline.os, "_exit", exit_)
    return written


def test_the_default_deadline_is_well_under_claude_codes(monkeypatch):
    monkeypatch.delenv("RUNTIME_HOOK_DEADLINE", raising=False)
    assert deadline.seconds() == deadline.DEADLINE_S == 10.0


@pytest.mark.parametrize("value,seconds", [("2", 2.0), ("0.25", 0.25), ("9.99", 9.99), (" 3 ", 3.0)])
def test_the_variable_may_shorten_the_deadline(monkeypatch, value, seconds):
    monkeypatch.setenv("RUNTIME_HOOK_DEADLINE", value)
    assert deadline.seconds() == seconds


@pytest.mark.parametrize("value", ["10", "11", "1e9", "inf", "0", "-1", "-inf", "nan", "", "abc", "1s"])
def test_the_variable_never_lengthens_or_disables_it(monkeypatch, value):
    monkeypatch.setenv("RUNTIME_HOOK_DEADLINE", value)
    assert deadline.seconds() == 10.0


def test_arm_sets_a_timer_of_the_deadline_and_disarm_clears_it(monkeypatch, alarm):
    monkeypatch.setenv("RUNTIME_HOOK_DEADLINE", "5")
    deadline.arm(b"out", b"err")
    remaining, _ = signal.getitimer(signal.ITIMER_REAL)
    assert 4 < remaining <= 5
    assert signal.getsignal(signal.SIGALRM) == deadline._expired
    assert deadline._answer == (b"out", b"err")
    deadline.disarm()
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert deadline._answer is None


def test_disarm_without_arm_leaves_the_timer_alone(alarm):
    deadline._answer = None
    signal.signal(signal.SIGALRM, lambda *_: None)
    signal.setitimer(signal.ITIMER_REAL, 30)
    deadline.disarm()
    assert signal.getitimer(signal.ITIMER_REAL)[0] > 29


def test_when_the_deadline_passes_the_deny_is_written_and_the_process_exits_2(monkeypatch, alarm, exits):
    monkeypatch.setenv("RUNTIME_HOOK_DEADLINE", "0.05")
    deadline.arm(b'{"deny": 1}', b"too slow")
    with pytest.raises(Exited) as info:
        time.sleep(5)  # the alarm cuts in
    assert info.value.args == (2,)
    assert exits == [(1, b'{"deny": 1}'), (2, b"too slow")]


def test_a_disarmed_deadline_does_nothing_when_a_late_alarm_arrives(exits):
    deadline._answer = None
    deadline._expired(signal.SIGALRM, None)
    assert exits == []


def test_the_process_exits_even_when_the_deny_cannot_be_written(monkeypatch, alarm, exits):
    def broken(fd, data):
        raise BrokenPipeError

    monkeypatch.setattr(deadline.os, "write", broken)
    deadline._answer = (b"out", b"err")
    with pytest.raises(Exited) as info:
        deadline._expired(signal.SIGALRM, None)
    assert info.value.args == (2,)
