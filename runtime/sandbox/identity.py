"""Who an agent runs as: never the host's root.

An orchestrator started as root (CI, containers) would otherwise hand its uid to
the agent, and uid 0 writes sysctls (`/proc/sys/kernel/core_pattern` runs a
program as host root) and reads `/etc/shadow` whatever namespaces and dropped
capabilities say: those files check the uid, not capabilities. So a root
orchestrator runs every agent process, verify check and test run as a
dedicated unprivileged host uid and gid (`RUNTIME_AGENT_UID`/`RUNTIME_AGENT_GID`,
default 1900000000, far above the ranges distributions hand out to users and to
`/etc/subuid`, so no host account shares it). An orchestrator that is not root
runs its agents as itself: it has nothing more to give away, and it could not
switch uid anyway.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from runtime.errors import FatalError

DEFAULT_AGENT_ID = 1_900_000_000


@dataclass(frozen=True)
class AgentUser:
    """The host uid and gid an agent's processes run as."""

    uid: int
    gid: int


def _id_from_env(name: str) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return DEFAULT_AGENT_ID
    if not raw.isdigit() or not 0 < int(raw) < 2**32 - 1:
        raise FatalError(f"{name}={raw!r} is not a valid uid/gid: give a positive integer other than 0")
    return int(raw)


def agent_user() -> AgentUser | None:
    """The identity agents switch to, or None when the orchestrator is not root (agents run as it)."""
    if os.geteuid() != 0:
        return None
    return AgentUser(_id_from_env("RUNTIME_AGENT_UID"), _id_from_env("RUNTIME_AGENT_GID"))
