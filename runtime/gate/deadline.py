"""The hook's own deadline: past it, the call is denied, whatever the gate was doing.

Claude Code gives a hook 30 s and then runs the tool anyway (unless the hook
carries `onFailure: block`, which a hand-written setting may lack). The checks
are linear in their input, but a deadline of the hook's own, from the moment
it starts, keeps that true of everything: an alarm whose handler writes a
deny and ends the process with exit 2. It runs between two Python bytecodes,
so it cannot cut into a long call in C; the parse, the one such call on agent
input, has a budget of its own (``runtime.gate.shell``).

Waiting for a person's approval is not the gate's work and has its own bound
(``runtime.approvals``): the alarm is disarmed before it.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call
if TYPE_CHECKING:
    from types import FrameType

DEADLINE_S = 10.0  # well under Claude Code's 30 s
_ENV = "RUNTIME_HOOK_DEADLINE"  # seconds; only ever shortens it (tests)
_answer: tuple[bytes, bytes] | None = None


def seconds() -> float:
    try:
        wanted = float(os.environ.get(_ENV, DEADLINE_S))
    except ValueError:
        return DEADLINE_S
    return wanted if 0 < wanted < DEADLINE_S else DEADLINE_S


def arm(stdout: bytes, stderr: bytes) -> None:
    """Deny with ``stdout``, ``stderr`` and exit 2 once the deadline passes, unless ``disarm`` is called first."""
    global _answer
    import _signal  # the C module: `signal` would import enum for nothing

    _answer = (stdout, stderr)
    _signal.signal(_signal.SIGALRM, _expired)
    _signal.setitimer(_signal.ITIMER_REAL, seconds())


def disarm() -> None:
    global _answer
    if _answer is None:
        return
    import _signal

    _signal.setitimer(_signal.ITIMER_REAL, 0)
    _answer = None


def _expired(_signum: int, _frame: FrameType | None) -> None:
    if _answer is None:
        return
    out, err = _answer
    try:
        os.write(1, out)
        os.write(2, err)
    finally:
        os._exit(2)
