"""tools::mcp-allowlist: MCP tools (`mcp__<server>__<tool>`), each allowed, or asked, by a rule naming its
server and tool, with the input fields that name paths or URLs checked as Read, Write and WebFetch check
theirs. A tool no rule names is not this gate's to grant: the engine refuses it, saying which rule would.

An MCP server runs outside every sandbox the runtime builds, with whatever it can reach: a rule says which of
its tools a role may call and which of their fields carry paths (`reads`, `writes`) or URLs (`urls`); the
other fields are the server's own business. `ask = true` leaves each call to a person.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call

from runtime.gate.decision import DENY, allow, ask, deny
from runtime.gate.kinds.base import Gate, PolicyError, no_more

if TYPE_CHECKING:
    from runtime.gate.decision import GateDecision
    from runtime.gate.engine import Context
    from runtime.lang.jsontypes import JSON, JSONObject

PREFIX = "mcp__"


def split_name(tool: str) -> tuple[str, str] | None:
    """(server, tool) of an MCP tool's name, or None for any other tool."""
    if not tool.startswith(PREFIX):
        return None
    server, sep, name = tool[len(PREFIX):].partition("__")
    return (server, name) if sep and server and name else None


class ServerRule:
    """One rule: an MCP server, the tools of it the rule names (names or `*` patterns), the input fields that name
    paths it reads or writes or URLs it reaches, and whether a person is asked each call."""

    __slots__ = ("server", "tools", "reads", "writes", "urls", "ask")

    def __init__(self, raw: JSON) -> None:
        if not isinstance(raw, dict):
            raise PolicyError("mcp-allowlist: `servers` must be a list of rules")
        server = raw.get("server")
        if not isinstance(server, str):
            raise PolicyError("mcp-allowlist: a rule names its server")
        self.server = server
        self.tools = _names(raw, "tools")
        self.reads = _names(raw, "reads")
        self.writes = _names(raw, "writes")
        self.urls = _names(raw, "urls")
        self.ask = bool(raw.get("ask", False))


def _names(rule: JSONObject, key: str) -> tuple[str, ...]:
    value = rule.get(key, [])
    names = tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()
    if not isinstance(value, list) or len(names) != len(value):
        raise PolicyError(f"mcp-allowlist: a rule's `{key}` must be a list of names")
    return names


class McpAllowlist(Gate):
    kind = "mcp-allowlist"

    def configure(self, params: dict[str, object]) -> None:
        rules = params.pop("servers", [])
        # `ask`: a person's session asks about the servers they configured that no rule names (read where Claude
        # Code reads them when such a call comes: runtime.gate.claude_setup); `deny`: only what a rule names.
        self.configured = params.pop("configured", "deny")
        if self.configured not in ("ask", "deny"):
            raise PolicyError("mcp-allowlist: `configured` must be ask or deny")
        if not isinstance(rules, list):
            raise PolicyError("mcp-allowlist: `servers` must be a list of rules")
        self.rules = [ServerRule(rule) for rule in rules]
        no_more(self.kind, params)

    def rule_for(self, server: str, name: str) -> ServerRule | None:
        from fnmatch import fnmatchcase  # only MCP calls pay for it

        for rule in self.rules:
            if rule.server == server and any(fnmatchcase(name, t) for t in rule.tools):
                return rule
        return None

    def on_tool(self, tool: str, tool_input: JSONObject, ctx: Context) -> GateDecision | None:
        named = split_name(tool)
        if named is None:
            return None
        rule = self.rule_for(*named)
        if rule is None:
            return None
        for field in rule.reads:
            value = tool_input.get(field)
            if value is not None and (not isinstance(value, str) or not value or "\x00" in value):
                return deny(f"`{tool}`: `{field}` names a path to read, and must be a non-empty path", self.atom, "mcp")
        for field in rule.writes:
            value = tool_input.get(field)
            if value is None:
                continue
            if not isinstance(value, str) or value[:1] == "~":
                return deny(f"`{tool}`: `{field}` names a path to write, and must be an absolute path", self.atom, "mcp")
            d = ctx.check_write(value, (ctx.cwd,), tool)
            if d.verdict == DENY:
                return d
        for field in rule.urls:
            value = tool_input.get(field)
            if value is None:
                continue
            from runtime.gate.kinds.egress import EgressAllowlist
            from runtime.lang.domains import url_refusal

            gates = [g for g in ctx.policy.gates if isinstance(g, EgressAllowlist)]
            why = url_refusal([d for g in gates for d in g.domains], value, tuple(p for g in gates for p in g.ports),
                              ctx.policy.audience)
            if why:
                return deny(f"`{tool}`: `{field}` refused: {why}", self.atom, "mcp")
        server = rule.server
        if rule.ask:
            return ask(f"`{tool}` is a tool of the MCP server `{server}`, which runs outside the sandbox: a person "
                       "decides each call (drop `ask` from the server's rule in the role to allow its calls without "
                       "asking)", self.atom, f"mcp:{server}")
        return allow(f"`{tool}`: the MCP server `{server}`'s rule allows it", self.atom, f"mcp:{server}")
