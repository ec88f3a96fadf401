"""The registry of gate kinds: one module per kind, looked up by name.

A kind's module is imported when a policy names the kind: the hook is a fresh process per call, and a
policy uses some of the kinds only.
"""

from __future__ import annotations

from runtime.gate.kinds.base import Gate, PolicyError

# kind -> (its module under runtime.gate.kinds, its class)
_KINDS = {
    "deny-tools": ("deny_tools", "DenyTools"),
    "bash-allowlist": ("bash_allowlist", "BashAllowlist"),
    "write-whitelist": ("write_scope", "WriteWhitelist"),
    "write-denylist": ("write_scope", "WriteDenylist"),
    "read-only": ("read_only", "ReadOnly"),
    "no-git": ("no_git", "NoGit"),
    "dep-files": ("dep_files", "DepFiles"),
    "no-network": ("no_network", "NoNetwork"),
    "egress-allowlist": ("egress", "EgressAllowlist"),
    "mcp-allowlist": ("mcp", "McpAllowlist"),
    "secret-reads": ("secrets", "SecretReads"),
}
KINDS = frozenset(_KINDS)


def gate_class(kind: str) -> type[Gate] | None:
    """The class of gate ``kind``, its module imported now; None for a kind no module implements."""
    where = _KINDS.get(kind)
    if where is None:
        return None
    module, name = where
    cls: type[Gate] = getattr(__import__(f"{__name__}.{module}", fromlist=[name]), name)
    return cls


def all_gates() -> dict[str, type[Gate]]:
    """Every kind's class, by kind (each module imported)."""
    return {kind: cls for kind in _KINDS if (cls := gate_class(kind)) is not None}


__all__ = ["KINDS", "Gate", "PolicyError", "all_gates", "gate_class"]
