"""What a run may spend, from its task's limits and its role's policy: the disk budget's default."""

from __future__ import annotations

from runtime.manifests.agent import LimitsSection
from runtime.policy.document import seal
from runtime.sandbox.budget import DISK_SLACK_MB, MIB, agent_limits, check_limits, default_check_limits, disk_mb
from runtime.verify.kinds.change_size import DEFAULT_MAX_CHANGE_BYTES


def _role(max_change: int | None):
    verify = [] if max_change is None else [{"kind": "change-size", "params": {"max-file-bytes": 1 << 20,
                                                                               "max-change-bytes": max_change}}]
    return seal(role="test", root="/", verify=verify)


def test_the_disk_budget_is_the_change_the_role_allows_plus_the_slack():
    assert disk_mb(LimitsSection(), _role(4 * MIB)) == 4 + DISK_SLACK_MB
    assert disk_mb(LimitsSection(), _role(None)) == DEFAULT_MAX_CHANGE_BYTES / MIB + DISK_SLACK_MB
    assert disk_mb(LimitsSection.model_validate({"disk-mb": 10}), _role(4 * MIB)) == 10  # the task's word wins


def test_checks_get_the_agents_limits_with_their_own_output_cap():
    limits = LimitsSection.model_validate({"memory-mb": 256, "max-processes": 64, "cpus": 2})
    agent, check = agent_limits(limits, _role(4 * MIB)), check_limits(limits, _role(4 * MIB))
    assert (check.memory_mb, check.max_processes, check.disk_mb, check.cpus) == (256, 64, 4 + DISK_SLACK_MB, 2)
    assert (agent.memory_mb, agent.max_processes, agent.disk_mb) == (256, 64, 4 + DISK_SLACK_MB)
    assert default_check_limits().max_processes == LimitsSection().max_processes
