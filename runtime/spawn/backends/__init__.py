"""How an agent runs: one folder per backend behind the typed ``Backend`` protocol (``base``).

The registry is ``AGENT_BACKENDS`` of ``runtime.manifests.kinds``: each name with the class that runs it
and what its `[agent]` table may hold, as data (manifests sit below spawn, so the rules of a task file stay
there). Adding a backend is one folder here and one entry there; a test adds a toy backend that way and runs
a whole spawn with it. A backend's module is imported when a spawn uses it. Everything else of an attempt
(sandbox, limits, verify, retries, a cluster job's model calls through ``Backend.job_model``) is the same for
every backend. The claude-code backend's parts live in its folder: the CLI's settings and stream
(``settings``), the CLI itself (``cli``) and its model proxy (``proxy``).
"""

from __future__ import annotations

from runtime.manifests.kinds import AGENT_BACKENDS
from runtime.spawn.backends.base import Backend

_made: dict[str, Backend] = {}  # implementation -> its one instance


def backend_for(name: str) -> Backend:
    """The backend ``name`` (a registered one: the task that names it was checked against the registry)."""
    spec = AGENT_BACKENDS[name]
    found = _made.get(spec.implementation)
    if found is None:
        found = _made[spec.implementation] = spec.load()()
    return found


def all_backends() -> dict[str, Backend]:
    """Every registered backend, by name (each module imported)."""
    return {name: backend_for(name) for name in AGENT_BACKENDS}


__all__ = ["Backend", "all_backends", "backend_for"]
