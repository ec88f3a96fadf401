"""A spawn on a cluster's worker node: what it asks of the orchestrator that sent it.

On a worker node there is no key and no one to approve anything. The agent's broker (builtin) and
the Claude Code CLI's proxy (claude-code) still run next to the agent, keep its usage and hold it
to its limits, and its approvals service still takes its questions; but the model call is made,
and the approval decided, by the orchestrator, which alone holds the keys, records the approvals
where `runtime approve` finds them, and decides from the job it sent which model, server and script
a call goes to: a worker sends the conversation, never the model.

Standard library only: the spawn pipeline imports this, and so does the worker's job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from runtime.models.types import ModelReply, ModelRequest

if TYPE_CHECKING:
    from runtime.approvals.service import ApprovalAnswer, ApprovalAsk


@dataclass(frozen=True)
class Forwarded:
    """The upstream model API's whole answer to one HTTP request of the CLI's proxy."""

    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes


class RemoteOrchestrator(Protocol):
    def complete(self, request: ModelRequest) -> ModelReply:
        """One model call of the builtin agent (only its messages and tools are used); raises ModelError."""

    def forward(self, path: str, body: bytes, headers: dict[str, str]) -> Forwarded:
        """One request of the Claude Code CLI to the Messages API, without credentials; raises OSError."""

    def approve(self, request: ApprovalAsk) -> ApprovalAnswer:
        """One approval request (the approvals wire format), answered once decided or expired; never raises."""
