"""What the orchestrator observes of a running agent, from its event stream.

Backends turn their own output into the same few facts: turns, tool calls,
denials (with reasons), the final report. Each fact is also appended to the
audit log, and a listener (the live view) is told after every change.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from runtime.audit.records import Gated, ToolRan
from runtime.gate.decision import ALLOW

if TYPE_CHECKING:
    from runtime.audit.log import AuditLog
    from runtime.audit.records import AuditRecord


@dataclass(frozen=True, slots=True)
class Denial:
    """A call the agent was refused: the tool it named and why, as its backend reported them."""

    tool: str | None
    reason: str | None


class ProgressState(StrEnum):
    """Where a running agent is, as the live views show it."""

    STARTING = "starting"
    RUNNING = "running"
    VERIFYING = "verifying"
    # A cluster's executor (`runtime.orchestration.ray_executor`): the job sent out, and its result back.
    DISPATCHED = "dispatched"
    RETURNED = "returned"


@dataclass
class Progress:
    agent_id: str
    attempt: int = 1
    state: ProgressState = ProgressState.STARTING
    turns: int = 0
    tool_calls: int = 0
    denials: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    report: str | None = None
    error: dict[str, str] | None = None
    started: float = field(default_factory=time.monotonic)
    denied: list[Denial] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)  # paths of allowed file-tool writes, in order
    repeats: int = 0  # how many times in a row the same tool call was made
    listener: Callable[[Progress], None] | None = None
    audit: AuditLog | None = None
    _last_call: str = ""

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self.started

    def changed(self) -> None:
        if self.listener is not None:
            self.listener(self)

    def record(self, record: AuditRecord) -> None:
        if self.audit is not None:
            self.audit.append(record, self.agent_id)

    def builtin_event(self, line: str) -> None:
        """One JSON line of the builtin agent (runtime.agent.events)."""
        try:
            event = json.loads(line)
        except ValueError:
            return  # not an event (stray output of a tool); the audit keeps events only
        if not isinstance(event, dict):
            return
        kind = event.get("event")
        if kind == "turn":
            self.turns += 1
        elif kind == "tool":
            self.tool_calls += 1
            call = json.dumps([event.get("tool"), event.get("input")], sort_keys=True)
            self.repeats = self.repeats + 1 if call == self._last_call else 1
            self._last_call = call
            decision = str(event.get("decision"))
            path = (event.get("input") or {}).get("file_path") if isinstance(event.get("input"), dict) else None
            if decision == ALLOW and event.get("tool") in ("Write", "Edit", "MultiEdit") and isinstance(path, str):
                self.writes.append(path)
            self.record(Gated(attempt=self.attempt, tool=_text(event.get("tool")), input=event.get("input"),
                              decision=decision, reason=_text(event.get("reason")), atom=_text(event.get("atom")),
                              rule=_text(event.get("rule"))))
            if decision != ALLOW:
                self.denials += 1
                self.denied.append(Denial(_text(event.get("tool")), _text(event.get("reason"))))
            else:
                self.record(ToolRan(attempt=self.attempt, tool=_text(event.get("tool")),
                                    is_error=bool(event.get("is_error")), result=str(event.get("result", ""))[:400]))
        elif kind == "final":
            self.report = str(event.get("content") or "")
        elif kind == "error":
            self.error = {"kind": str(event.get("kind") or "agent"), "message": str(event.get("message") or "")}
        self.changed()


def _text(value: object) -> str | None:
    """An event's name or reason: the agent's events hold text or nothing there."""
    return value if isinstance(value, str) else None
