"""Timeouts several layers must agree on (manifests validate them, approvals and the hook obey them).

Here, beside ``runtime.errors`` at the bottom of the package, so that every layer may import them.
Standard library only: the approvals client and the hook run inside the sandbox.
"""

from __future__ import annotations

HOOK_TIMEOUT_S = 30  # Claude Code's hook timeout as the runtime configures it (runtime.tooling.claude)
HOOK_WAIT_MAX_S = 25  # the longest a hook may wait for a decision: well below HOOK_TIMEOUT_S
ANSWER_GRACE_S = 2.0  # how long a client waits past the request's expiry for the service's answer
DEFAULT_APPROVAL_TIMEOUT_S = 300  # `[agent.limits] approval-timeout-s` when a task does not say
