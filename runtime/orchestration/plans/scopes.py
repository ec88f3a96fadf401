"""Write scopes of subtasks, and when two of them may touch one path (plan validation: parallel writers)."""

from __future__ import annotations

from runtime.lang.globs import literal_parts
from runtime.manifests.compose import param_values
from runtime.manifests.params import param_list
from runtime.manifests.task import Task


def globs_overlap(a: str, b: str) -> bool:
    """Whether two write globs may name a common path, decided conservatively.

    Each glob is cut before its first component holding a wildcard (``*``,
    ``?``, ``[``); the literal components before it (all of them for a glob
    without wildcards, which names a file or a whole folder) are its prefix.
    Two globs overlap when one prefix is a component-wise prefix of the other,
    compared case-insensitively: ``src/calc/**`` and ``src/**`` overlap,
    ``src/a.py`` and ``src/b.py`` do not, ``src/a`` and ``src/ab`` do not,
    ``src/*.py`` and ``src/a.py`` do, and a glob starting with a wildcard
    (empty prefix) overlaps everything.
    """
    pa = tuple(p.casefold() for p in literal_parts(a))
    pb = tuple(p.casefold() for p in literal_parts(b))
    n = min(len(pa), len(pb))
    return pa[:n] == pb[:n]


def write_scope(task: Task) -> list[str]:
    """The globs a task's agent may write: its role's whitelist values (nothing without one).

    Denylists are ignored: they do not make two scopes disjoint enough to trust.
    """
    gates = {a.gate: a for a in task.role.atoms if a.gate}
    if "write-whitelist" not in gates or "read-only" in gates:
        return []
    return param_list(param_values(task.role, task)[gates["write-whitelist"].name].get("globs"), str)
