"""Approvals: a gate's `ask` held pending until a person decides.

When the gate answers ``ask`` for an agent's tool call, the orchestrator holds that exact call
pending, keyed by agent, tool and the SHA-256 of the call's canonical JSON input, shows it, and
waits for ``runtime approve ID`` or ``runtime deny ID --reason ...`` (or an interactive prompt).
A request that nobody decides before it expires is denied. One approval answers one call: asking
again after a decision is a new request.

Where decisions live, and how they reach the agent:

- The requests and decisions are rows of ``approvals.sqlite`` in the orchestrator's state folder
  (``runtime.approvals.store``). The state folder is never bound into an agent's sandbox (only
  the agent's worktree scope, its private home and its read-only run folder are), so an agent
  can neither read nor write a decision there.
- The orchestrator serves each spawned agent an approvals socket (``runtime.approvals.service``),
  next to its model broker's socket, in a short temporary folder bound read-only into the
  sandbox. The agent's side (the builtin loop, or ``runtime check --approvals SOCK`` as a hook)
  sends the call it wants to make and reads back ``allow`` or ``deny``. The socket only asks:
  there is no message that decides, and the agent id is the service's own, never taken from the
  request. The answer travels on the connection that asked, so it is bound to that exact call.

Every request and decision is appended to the audit log (kinds ``approval-request`` and
``approval-decision``).

Timeouts: a request expires after the task's ``[agent.limits] approval-timeout-s`` (default
300 s). Claude Code kills a PreToolUse hook after ``HOOK_TIMEOUT_S`` (30 s, see
``runtime.spawn.backends.claude_code.cli``) and then blocks the call (`onFailure: block`), so a hook never
waits longer than ``HOOK_WAIT_MAX_S`` plus ``ANSWER_GRACE_S`` (27 s): ``runtime check`` asks for
at most 25 s, and for the claude-code backend ``approval-timeout-s`` is capped at 25 s.

This package imports only the standard library (and ``runtime.ipc.unix_service``): its client
runs inside the sandbox.
"""

from __future__ import annotations

from runtime.timeouts import ANSWER_GRACE_S, HOOK_TIMEOUT_S, HOOK_WAIT_MAX_S
from runtime.timeouts import DEFAULT_APPROVAL_TIMEOUT_S as DEFAULT_TIMEOUT_S

__all__ = ["ANSWER_GRACE_S", "DEFAULT_TIMEOUT_S", "HOOK_TIMEOUT_S", "HOOK_WAIT_MAX_S"]
