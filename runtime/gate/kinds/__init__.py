"""The registry of gate kinds: one module per kind, looked up by name."""

from __future__ import annotations

from runtime.gate.kinds.base import Gate, PolicyError
from runtime.gate.kinds.bash_allowlist import BashAllowlist
from runtime.gate.kinds.deny_tools import DenyTools
from runtime.gate.kinds.dep_files import DepFiles
from runtime.gate.kinds.egress import EgressAllowlist
from runtime.gate.kinds.mcp import McpAllowlist
from runtime.gate.kinds.no_git import NoGit
from runtime.gate.kinds.no_network import NoNetwork
from runtime.gate.kinds.read_only import ReadOnly
from runtime.gate.kinds.secrets import SecretReads
from runtime.gate.kinds.write_scope import WriteDenylist, WriteWhitelist

GATES: dict[str, type[Gate]] = {
    cls.kind: cls
    for cls in (DenyTools, BashAllowlist, WriteWhitelist, WriteDenylist, ReadOnly, NoGit, DepFiles, NoNetwork,
                EgressAllowlist, McpAllowlist, SecretReads)
}

__all__ = ["GATES", "Gate", "PolicyError"]
