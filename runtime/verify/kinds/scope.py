"""scope-whitelist, scope-denylist, no-changes: which files the agent's result changed.

The gate stops writes outside the scope as they happen, but a shell command can
still change files it was not asked to; these checks look at the result as a
whole. Evidence, for all three kinds::

    {"changed": ["src/app.py", "docs/notes.md"]}

``changed`` lists every path added, modified, deleted or renamed (both names)
relative to the worktree root, POSIX separators. A path that is absolute, has a
``..`` component or lies in a ``.git`` directory (any case) is rejected by both
scope kinds whatever the globs say: the agent must never touch them, and such a
path could slip past a glob.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from runtime.verify.kinds.base import compile_globs, listing, take_str_list
from runtime.verify.kinds.kind import Evidence, Gathering, Kind, NoParams
from runtime.verify.kinds.result import VerifyResult, passed, rejected

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONObject


@dataclass(frozen=True, slots=True)
class GlobParams:
    """scope-whitelist, scope-denylist (and dep-stable): the globs of the paths the kind is about."""

    globs: tuple[str, ...]

    @classmethod
    def read(cls, data: JSONObject) -> GlobParams:
        return cls(tuple(take_str_list(data, "globs", "parameter")))


class ChangedPaths(Evidence):
    """scope-whitelist, scope-denylist, no-changes: every path the change touches (a rename's both names)."""

    changed: list[str]


def changed(gathering: Gathering) -> list[str]:
    """Every path the change touches, a rename's both names, sorted."""
    changes = gathering.changes
    return sorted({c.path for c in changes} | {c.old_path for c in changes if c.old_path})


async def gather(params: GlobParams | NoParams, gathering: Gathering) -> ChangedPaths:
    return ChangedPaths(changed=changed(gathering))


def unsafe_reason(path: str) -> str | None:
    """Why a changed path is out of bounds whatever the globs say, or ``None``."""
    if not path:
        return "an empty path"
    if path.startswith("/") or re.match(r"^[A-Za-z]:", path):
        return "an absolute path"
    parts = path.split("/")
    if ".." in parts:
        return "a path leaving the worktree (`..`)"
    if any(part.casefold() == ".git" for part in parts):
        return "git's own files (`.git`)"
    return None


def _unsafe(changed: list[str]) -> list[str]:
    return [f"`{p}`: {reason}" for p in changed if (reason := unsafe_reason(p))]


def scope_whitelist(params: GlobParams, evidence: ChangedPaths) -> VerifyResult:
    globs = params.globs
    changed = evidence.changed
    match = compile_globs(globs)
    unsafe = _unsafe(changed)
    outside = [f"`{p}`" for p in changed if not unsafe_reason(p) and (match is None or not match.match(p))]
    offending = unsafe + outside
    if not offending:
        return passed(f"all {len(changed)} changed path(s) are inside the write scope", {"changed": len(changed)})
    allowed = ", ".join(f"`{g}`" for g in globs) if globs else "nothing (this task allows no changes)"
    return rejected(
        f"You changed {len(offending)} path(s) outside your write scope. You may change only: {allowed}.\n"
        f"{listing(offending)}\n"
        "Revert these changes: restore the files as they were and delete files you created there. "
        "If the task truly needs them, say so in your report instead of making them.",
        {"changed": len(changed), "offending": len(offending)},
    )


def scope_denylist(params: GlobParams, evidence: ChangedPaths) -> VerifyResult:
    globs = params.globs
    changed = evidence.changed
    match = compile_globs(globs)
    denied = [f"`{p}`" for p in changed if not unsafe_reason(p) and match is not None and match.match(p)]
    offending = _unsafe(changed) + denied
    if not offending:
        return passed(f"none of the {len(changed)} changed path(s) is denied", {"changed": len(changed)})
    return rejected(
        f"You changed {len(offending)} path(s) this task forbids (denied: {', '.join(f'`{g}`' for g in globs)}).\n"
        f"{listing(offending)}\n"
        "Revert these changes: restore the files as they were and delete files you created there.",
        {"changed": len(changed), "offending": len(offending)},
    )


def no_changes(params: NoParams, evidence: ChangedPaths) -> VerifyResult:
    changed = evidence.changed
    if not changed:
        return passed("no files changed", {"changed": 0})
    return rejected(
        f"Your role is read-only, but {len(changed)} path(s) changed:\n"
        f"{listing([f'`{p}`' for p in changed])}\n"
        "Revert them and put what you wanted to change in your report instead.",
        {"changed": len(changed)},
    )


WHITELIST = Kind("scope-whitelist", {"globs": "glob-list"}, GlobParams.read, ChangedPaths, gather, scope_whitelist)
DENYLIST = Kind("scope-denylist", {"globs": "glob-list"}, GlobParams.read, ChangedPaths, gather, scope_denylist)
NO_CHANGES = Kind("no-changes", {}, NoParams.read, ChangedPaths, gather, no_changes)
