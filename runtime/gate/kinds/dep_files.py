"""safety::no-dep-bump: dependency declarations and lock files stay as they are."""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call

from runtime.gate.decision import deny
from runtime.gate.kinds.base import Gate, no_more, take_list
from runtime.gate.kinds.write_scope import GlobMatch, holds_any, literal_prefixes
from runtime.lang.audience import phrase

if TYPE_CHECKING:
    from runtime.gate.decision import GateDecision
    from runtime.gate.engine import Context
    from runtime.lang.shell_types import Command


class DepFiles(Gate):
    kind = "dep-files"

    def configure(self, params: dict[str, object]) -> None:
        self.globs = take_list(params, "globs")
        self.match = GlobMatch(self.globs)
        self.prefixes = literal_prefixes(self.globs)  # empty for `**/name` globs
        # Flags are dropped on both sides: `python3 -m pip install` matches `python3 pip install`.
        self.commands: dict[str, list[tuple[str, ...]]] = {}
        for c in take_list(params, "commands"):
            words = tuple(w for w in c.split() if not w.startswith("-"))
            self.commands.setdefault(words[0], []).append(words)
        no_more(self.kind, params)

    def on_write(self, resolved: str, rel: str | None, ctx: Context) -> GateDecision | None:
        if rel is not None and self.globs and (self.match.match(rel) or (not ctx.folder and holds_any(rel, self.prefixes))):
            return deny(f"`{rel}` declares or locks dependencies; this task may not change them "
                        f"({phrase(ctx.policy.audience, 'dependencies')})", self.atom, "dep-files")
        return None

    def on_command(self, cmd: Command, ctx: Context) -> GateDecision | None:
        prefixes = self.commands.get(cmd.name)
        if not prefixes:
            return None
        words = (cmd.name, *[a for a in cmd.args if not a.startswith("-")])
        for prefix in prefixes:
            if words[: len(prefix)] == prefix:
                return deny(f"`{' '.join(prefix)}` changes dependencies; this task may not "
                            f"({phrase(ctx.policy.audience, 'dependencies')})", self.atom, " ".join(prefix))
        return None
