"""How an agent runs: one folder per backend behind the typed ``Backend`` protocol (``base``), in ``BACKENDS``.

Adding a backend is one folder here and its name in two registries: ``BACKENDS`` below, and
``AGENT_BACKENDS`` of ``runtime.manifests.kinds``, the names a task's ``[agent] backend`` may use
(manifests sit below spawn, so the rules of a task file stay there as data; a test adds a toy backend
that way and runs a whole spawn with it). Everything else of an attempt (sandbox, limits, verify,
retries, a cluster job's model calls through ``Backend.job_model``) is the same for every backend.
The claude-code backend's parts live in its folder: the CLI's settings and stream (``settings``), the
CLI itself (``cli``) and its model proxy (``proxy``).
"""

from __future__ import annotations

from runtime.spawn.backends.base import Backend
from runtime.spawn.backends.builtin import BuiltinBackend
from runtime.spawn.backends.claude_code import ClaudeCodeBackend
from runtime.spawn.backends.command import CommandBackend

BACKENDS: dict[str, Backend] = {
    "builtin": BuiltinBackend(),
    "command": CommandBackend(),
    "claude-code": ClaudeCodeBackend(),
}


def backend_for(name: str) -> Backend:
    return BACKENDS[name]


__all__ = ["BACKENDS", "Backend", "backend_for"]
