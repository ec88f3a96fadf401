"""policy::no-git-ops: no git or gh in any form; only the orchestrator holds git."""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call

from runtime.gate.decision import deny
from runtime.gate.kinds.base import Gate, no_more, take_list
from runtime.lang.audience import phrase

if TYPE_CHECKING:
    from runtime.gate.decision import GateDecision
    from runtime.gate.engine import Context
    from runtime.lang.shell_types import Command


class NoGit(Gate):
    kind = "no-git"

    def configure(self, params: dict[str, object]) -> None:
        self.programs = frozenset(p.lower() for p in take_list(params, "programs"))
        no_more(self.kind, params)

    def on_command(self, cmd: Command, ctx: Context) -> GateDecision | None:
        name = cmd.name.lower()
        if name in self.programs or name.startswith("git-"):
            return deny(
                f"`{cmd.name}` is a git tool{f' (run through `{cmd.via.strip()}`)' if cmd.via else ''}: "
                f"{phrase(ctx.policy.audience, 'git')}",
                self.atom, cmd.name,
            )
        for key, _ in cmd.assigns:
            if key.upper().startswith("GIT_"):
                return deny(f"`{key}` configures git; {phrase(ctx.policy.audience, 'git-variable')}: run the command "
                            "without it", self.atom, key)
        return None
