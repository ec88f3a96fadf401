"""tools::deny-tools: the listed tools are denied, whatever else the role shows."""

from __future__ import annotations

from runtime.gate.decision import deny
from runtime.gate.kinds.base import Gate, no_more, take_list


class DenyTools(Gate):
    kind = "deny-tools"

    def configure(self, params):
        self.tools = frozenset(take_list(params, "tools"))
        no_more(self.kind, params)

    def on_tool(self, tool, tool_input, ctx):
        if tool in self.tools:
            return deny(f"`{tool}` is denied for this role; it may not use {', '.join(sorted(self.tools))}", self.atom, tool)
        return None
