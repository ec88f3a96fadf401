"""How an agent runs: one module per backend behind the ``Backend`` protocol, in ``BACKENDS``.

Adding a backend is one module and one entry here (and its name in the
``[agent] backend`` field of ``runtime.manifests.agent``, which validates the
fields each backend takes: manifests sit below spawn, so the rules of a task
file stay there as data). Everything else of an attempt (sandbox, limits,
verify, retries) is the same for every backend.
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
