"""tools::deny-tools: the listed tools are denied, whatever else the role shows."""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call

from runtime.gate.decision import deny
from runtime.gate.kinds.base import Gate, no_more, take_list

if TYPE_CHECKING:
    from runtime.gate.decision import GateDecision
    from runtime.gate.engine import Context
    from runtime.lang.jsontypes import JSONObject


class DenyTools(Gate):
    kind = "deny-tools"

    def configure(self, params: dict[str, object]) -> None:
        self.tools = frozenset(take_list(params, "tools"))
        no_more(self.kind, params)

    def on_tool(self, tool: str, tool_input: JSONObject, ctx: Context) -> GateDecision | None:
        if tool in self.tools:
            usable = ", ".join(sorted(ctx.policy.tools - self.tools)) or "none"
            return deny(f"`{tool}` is denied for this role; it may not use {', '.join(sorted(self.tools))}: use the "
                        f"tools it may use ({usable})", self.atom, tool)
        return None
