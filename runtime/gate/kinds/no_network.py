"""net::no-network: no network tools and no programs whose job is the network."""

from __future__ import annotations

from runtime.gate.decision import deny
from runtime.gate.kinds.base import Gate, no_more, take_list


class NoNetwork(Gate):
    kind = "no-network"

    def configure(self, params):
        self.programs = frozenset(take_list(params, "programs"))
        self.tools = frozenset(take_list(params, "tools"))
        no_more(self.kind, params)

    def on_tool(self, tool, tool_input, ctx):
        if tool in self.tools:
            return deny(f"`{tool}` needs the network, which this role does not have", self.atom, tool)
        return None

    def on_command(self, cmd, ctx):
        if cmd.name in self.programs:
            return deny(f"`{cmd.name}` uses the network, which this role does not have", self.atom, cmd.name)
        return None
