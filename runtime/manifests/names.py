"""Names of atoms, roles and agents, and the rules they follow."""

from __future__ import annotations

import re

NAME_HALF = re.compile(r"^[a-z][a-z0-9-]{0,63}$")
ROLE_NAME = re.compile(r"^[a-z][a-z0-9-]{0,63}$")
AGENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_WINDOWS_RESERVED = {"con", "prn", "aux", "nul"} | {f"com{i}" for i in range(1, 10)} | {f"lpt{i}" for i in range(1, 10)}


def check_atom_name(name: str) -> str:
    """Return ``name`` if it is ``<category>::<slug>``; raise ValueError otherwise."""
    parts = name.split("::")
    if len(parts) != 2 or not all(NAME_HALF.fullmatch(p) for p in parts):
        raise ValueError(f"`{name}` is not an atom name: expected `<category>::<slug>`, each half matching {NAME_HALF.pattern}")
    return name


def check_role_name(name: str) -> str:
    if not ROLE_NAME.fullmatch(name):
        raise ValueError(f"`{name}` is not a role name: expected {ROLE_NAME.pattern}")
    return name


def check_agent_id(agent_id: str) -> str:
    """Agent ids become branch, folder and file names: keep them boring."""
    if not agent_id.isascii():
        raise ValueError(f"agent id `{agent_id}` must be ASCII")
    if len(agent_id.encode()) > 64:
        raise ValueError(f"agent id `{agent_id[:20]}…` is longer than 64 bytes")
    if not AGENT_ID.fullmatch(agent_id):
        raise ValueError(f"agent id `{agent_id}` must match [A-Za-z0-9][A-Za-z0-9_.-]*")
    if ".." in agent_id:
        raise ValueError(f"agent id `{agent_id}` must not contain `..`")
    if agent_id.endswith(".") or agent_id.endswith(".lock"):
        raise ValueError(f"agent id `{agent_id}` must not end with `.` or `.lock` (not a valid branch name)")
    if agent_id.split(".", 1)[0].lower() in _WINDOWS_RESERVED:
        raise ValueError(f"agent id `{agent_id}` uses a Windows-reserved name")
    return agent_id


def generated_agent_id(role: str, digest: str) -> str:
    """``ag-<role>-<hex>`` from the task's content hash: stable across runs."""
    return f"ag-{role}-{digest[:10]}"
