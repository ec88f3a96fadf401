"""What a run of an agent's code may spend, from its task's `[agent.limits]`: one budget for the agent's
attempts and for every command that runs its work (the test and check commands of verify, of the
simulated merge, of a plan), so a test suite that imports the agent's code is held as the agent is.

The disk budget, unless `disk-mb` sets it, is the change the role allows (`scope::change-size`'s
`max-change-bytes`, or that atom's default where the role lacks it) plus `DISK_SLACK_MB` for what
runs write besides their change: a CLI's transcripts, a test run's caches and coverage data (builds
go to the sandbox's private /tmp, which is memory: cargo's target folder, Go's build cache). Writing past it ends the run as `exhausted(disk)` while it runs,
not after the fact (`runtime.sandbox.disk`).
"""

from __future__ import annotations

from dataclasses import replace

from runtime.manifests.agent import LimitsSection
from runtime.policy.document import PolicyDocument
from runtime.sandbox.supervise import Limits
from runtime.verify.kinds.change_size import DEFAULT_MAX_CHANGE_BYTES

DISK_SLACK_MB = 64
MIB = 1024 * 1024


def change_limit(policy: PolicyDocument | None) -> int:
    """The bytes a change may add under ``policy``: its change-size check's, else that check's default."""
    limit = policy.change_limit() if policy is not None else None
    return DEFAULT_MAX_CHANGE_BYTES if limit is None else limit


def disk_mb(limits: LimitsSection, policy: PolicyDocument | None) -> float:
    if limits.disk_mb is not None:
        return float(limits.disk_mb)
    return round(change_limit(policy) / MIB, 3) + DISK_SLACK_MB


def agent_limits(limits: LimitsSection, policy: PolicyDocument | None) -> Limits:
    """The agent's own: its clock, its processes, memory, disk and CPU, its output."""
    return Limits(timeout_s=limits.timeout_s, memory_mb=limits.memory_mb, max_processes=limits.max_processes,
                  disk_mb=disk_mb(limits, policy), cpus=limits.cpus, output_bytes=limits.max_output_bytes)


def check_limits(limits: LimitsSection, policy: PolicyDocument | None) -> Limits:
    """A check command's: the agent's limits on processes, memory, disk and CPU (each command's own
    clock and output cap are set where it runs)."""
    return replace(agent_limits(limits, policy), output_bytes=Limits(timeout_s=1).output_bytes)


def default_check_limits() -> Limits:
    """For commands no task owns (a plan's checks on the merged tree): the limits a task gets by default."""
    return check_limits(LimitsSection(), None)
