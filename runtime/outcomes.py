"""How a run of an agent ended: one status, below every package that records or reads it."""

from __future__ import annotations

from enum import StrEnum


class OutcomeStatus(StrEnum):
    """How a run of an agent ended: its outcome's status (``runtime.spawn.outcome``), the final status of its
    run record; a `RunFailure` is one of them."""

    OK = "ok"
    REJECTED = "rejected"
    FAILED = "failed"
    EXHAUSTED = "exhausted"
    # The agent said the task cannot be done as asked, and why; nothing is committed.
    ESCALATED = "escalated"
    # The checks passed and a reviewer asks a person to look; committed for inspection alone.
    NEEDS_REVIEW = "needs-review"
