"""Model calls made by another machine: what an agent's broker or proxy uses on a cluster's worker node.

On a worker node there is no key. The agent's broker (builtin) and the Claude Code CLI's proxy
(claude-code) still run next to the agent, keep its usage and hold it to its limits, but the call
itself is made by the orchestrator, which alone holds the keys and decides, from the job it sent,
which model, server and script the call goes to: a worker sends the conversation, never the model.

Standard library only: this is imported by the spawn pipeline and by the worker's job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from runtime.models.types import ModelReply, ModelRequest


@dataclass(frozen=True)
class Forwarded:
    """The upstream model API's whole answer to one HTTP request of the CLI's proxy."""

    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes


class RemoteModels(Protocol):
    def complete(self, request: ModelRequest) -> ModelReply:
        """One model call of the builtin agent (only its messages and tools are used); raises ModelError."""

    def forward(self, path: str, body: bytes, headers: dict[str, str]) -> Forwarded:
        """One request of the Claude Code CLI to the Messages API, without credentials; raises OSError."""
