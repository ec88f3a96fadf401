"""scope::files-whitelist and scope::files-denylist: where writes may land.

Globs are translated to one anchored regex per list when the policy loads.
An empty or missing whitelist allows no writes at all (never "everything").
"""

from __future__ import annotations

import re

from runtime.gate.decision import allow, deny
from runtime.gate.kinds.base import Gate, no_more, take_list
from runtime.manifests.globs import globs_to_regex, literal_parts


def compile_globs(globs: list[str]):
    pattern = globs_to_regex(globs)
    return re.compile(pattern) if pattern else None


def literal_prefixes(globs: list[str]) -> tuple[str, ...]:
    """The leading wildcard-free folders of each glob (`src/gen/**` -> `src/gen`)."""
    return tuple("/".join(parts) for parts in map(literal_parts, globs) if parts)


def holds_any(rel: str, prefixes: tuple[str, ...]) -> bool:
    """Is ``rel`` one of ``prefixes`` or a folder above one? (`rm -rf src` removes `src/gen`.)"""
    if rel == "":
        return bool(prefixes)
    return any(p == rel or p.startswith(rel + "/") for p in prefixes)


class WriteWhitelist(Gate):
    kind = "write-whitelist"
    grants = True

    def configure(self, params):
        self.globs = take_list(params, "globs")
        self.match = compile_globs(self.globs)
        self.shown = ", ".join(self.globs) if self.globs else "(nothing: this task allows no writes)"
        no_more(self.kind, params)

    def on_write(self, resolved, rel, ctx):
        if rel is None:
            return deny(f"`{resolved}` is outside the worktree; you may write only inside: {self.shown}", self.atom, "outside-root")
        if self.match is not None and self.match.match(rel):
            return allow(f"`{rel}` is inside the write scope", self.atom, "files-whitelist")
        return deny(f"`{rel}` is outside your write scope; you may write only inside: {self.shown}", self.atom, "files-whitelist")


class WriteDenylist(Gate):
    kind = "write-denylist"

    def configure(self, params):
        self.globs = take_list(params, "globs")
        self.match = compile_globs(self.globs)
        self.prefixes = literal_prefixes(self.globs)
        no_more(self.kind, params)

    def on_write(self, resolved, rel, ctx):
        if rel is None or self.match is None:
            return None
        if self.match.match(rel) or holds_any(rel, self.prefixes):
            return deny(f"`{rel or '.'}` is in or holds the task's denylist ({', '.join(self.globs)}); leave it unchanged", self.atom, "files-denylist")
        return None
