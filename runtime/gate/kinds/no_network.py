"""net::no-network: no network tools and no programs whose job is the network."""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call

from runtime.gate.decision import deny
from runtime.gate.kinds.base import Gate, no_more, take_list
from runtime.lang.audience import phrase

if TYPE_CHECKING:
    from runtime.gate.decision import GateDecision
    from runtime.gate.engine import Context
    from runtime.lang.jsontypes import JSONObject
    from runtime.lang.shell_types import Command


class NoNetwork(Gate):
    kind = "no-network"

    def configure(self, params: dict[str, object]) -> None:
        self.programs = frozenset(take_list(params, "programs"))
        self.tools = frozenset(take_list(params, "tools"))
        no_more(self.kind, params)

    def on_tool(self, tool: str, tool_input: JSONObject, ctx: Context) -> GateDecision | None:
        if tool in self.tools:
            return deny(f"`{tool}` needs the network, which this role does not have; "
                        f"{phrase(ctx.policy.audience, 'network')}", self.atom, tool)
        return None

    def on_command(self, cmd: Command, ctx: Context) -> GateDecision | None:
        if cmd.name in self.programs:
            return deny(f"`{cmd.name}` uses the network, which this role does not have; "
                        f"{phrase(ctx.policy.audience, 'network')}", self.atom, cmd.name)
        return None
