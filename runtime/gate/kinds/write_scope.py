"""scope::files-whitelist and scope::files-denylist: where writes may land.

Globs are matched component by component (runtime.lang.globs), without
`re`, which a hook process then never imports. An empty or missing whitelist allows no writes at all (never
"everything").
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call

from runtime.gate.decision import allow, deny
from runtime.gate.kinds.base import Gate, PolicyError, no_more, take_list
from runtime.lang.globs import globs_to_regex, literal_parts, match_split, split_globs

if TYPE_CHECKING:
    import re

    from runtime.gate.decision import GateDecision
    from runtime.gate.engine import Context


class GlobMatch:
    """``match(rel)``: does a worktree-relative path match any of the globs? (False for no globs.)

    Matched by hand (``runtime.lang.globs.match_split``): a hook process then never imports `re`. Globs
    with a `[` class, which only the regex reads, are matched by their regex, compiled on the first call."""

    __slots__ = ("globs", "_split", "_regex")

    def __init__(self, globs: list[str]) -> None:
        self.globs = globs
        self._split = split_globs(globs)
        self._regex: re.Pattern[str] | None = None

    def match(self, rel: str) -> bool:
        if self._split is not None:
            return match_split(self._split, rel)
        if self._regex is None:
            import re

            self._regex = re.compile(globs_to_regex(self.globs) or "(?!)")
        return self._regex.match(rel) is not None


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

    def configure(self, params: dict[str, object]) -> None:
        self.globs = take_list(params, "globs")
        # Control files this task may change (the engine lets them past its control-file check; the
        # globs still decide whether they are in scope).
        self.control_files = take_list(params, "control-files") if "control-files" in params else []
        for path in self.control_files:
            if not path or path.startswith("/") or ".." in path.split("/"):
                raise PolicyError(f"control file `{path}` must be a relative path inside the worktree")
        self.match = GlobMatch(self.globs)
        self.prefixes = literal_prefixes(self.globs)
        self.shown = ", ".join(self.globs) if self.globs else "(nothing: this task allows no writes)"
        no_more(self.kind, params)

    def on_write(self, resolved: str, rel: str | None, ctx: Context) -> GateDecision | None:
        if rel is None:
            return deny(f"`{resolved}` is outside the worktree; you may write only inside: {self.shown}", self.atom, "outside-root")
        if self.match.match(rel):
            return allow(f"`{rel}` is inside the write scope", self.atom, "files-whitelist")
        if ctx.folder and rel and holds_any(rel, self.prefixes):
            return allow(f"`{rel}` is a folder the write scope lies in", self.atom, "files-whitelist")
        return deny(f"`{rel}` is outside your write scope; you may write only inside: {self.shown}", self.atom, "files-whitelist")


class WriteDenylist(Gate):
    kind = "write-denylist"

    def configure(self, params: dict[str, object]) -> None:
        self.globs = take_list(params, "globs")
        self.match = GlobMatch(self.globs)
        self.prefixes = literal_prefixes(self.globs)
        no_more(self.kind, params)

    def on_write(self, resolved: str, rel: str | None, ctx: Context) -> GateDecision | None:
        if rel is None or not self.globs:
            return None
        if self.match.match(rel) or (not ctx.folder and holds_any(rel, self.prefixes)):
            return deny(f"`{rel or '.'}` is in or holds the task's denylist ({', '.join(self.globs)}); leave it unchanged", self.atom, "files-denylist")
        return None
