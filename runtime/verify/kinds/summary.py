"""What "verified" meant for one piece of work's tests, as the outcome, `runtime status --json`, the run's
report and the commit's trailers record it: which tests ran, from where, with which configuration, against
which run of the base, and which of the base's tests now pass."""

from __future__ import annotations

from typing import Literal

from runtime.verify.kinds.kind import Evidence

MAX_IDS = 50


class TestsSummary(Evidence):
    """The tests-green verdict's record. ``mode``: judged per test, or by the command's exit code alone
    where the task said so. ``steps``: the commands as the orchestrator ran them (with the reporters it
    added); ``config``: each runner's configuration as it reported it; ``base``, ``base-run``: the base
    commit and the cache key of its run; ``passed``: tests that pass now; ``base-tests``: tests the base ran;
    ``still-pass``: of the base's passing tests, those that pass now; ``fixed``: the base's failing tests
    that pass now; ``new``: tests the base did not have; ``removed``: the base's tests the task named as
    going away; ``hidden``: hidden tests that passed; ``failing-as-at-base``: failures let through as the
    base's own (`baseline`)."""

    __test__ = False
    mode: Literal["per-test", "exit-code"]
    command: str
    source: str = ""
    steps: list[str] = []
    runners: list[str] = []
    config: list[str] = []
    base: str = ""
    base_run: str = ""
    base_cached: bool = False
    base_ran_at: float = 0.0
    passed: int = 0
    base_tests: int = 0
    still_pass: int = 0
    fixed: list[str] = []
    new: int = 0
    removed: list[str] = []
    hidden: int = 0
    failing_as_at_base: list[str] = []
    # The tamper checks the run of the base's tests held (`runtime.verify.kinds.canaries`), or why it had none; whether
    # that run was made twice (its first checks disagreed: a flaky test, told from a forged report).
    tamper_checks: int = 0
    tamper_none: str = ""
    rerun: bool = False
    new_run: int = 0  # tests in the run of the work's new tests on its own test side (0: there was none)

    def trailer(self) -> str:
        """One line for a commit's `Tests:` trailer."""
        if self.mode == "exit-code":
            return f"`{self.command}` exit code 0 only (no per-test results)"
        runners = ", ".join(dict.fromkeys(self.runners)) or "none"
        parts = [f"{self.passed} passed ({runners})", f"base {self.base[:12]}: {self.base_tests} ran, "
                 f"{self.still_pass} still pass, {len(self.fixed)} fixed"]
        if self.new:
            parts.append(f"{self.new} new")
        if self.hidden:
            parts.append(f"{self.hidden} hidden")
        if self.removed:
            parts.append(f"{len(self.removed)} removed by the task")
        if self.failing_as_at_base:
            parts.append(f"{len(self.failing_as_at_base)} failing as at the base")
        parts.append(f"{self.tamper_checks} tamper checks held" if self.tamper_checks else "no tamper checks")
        return "; ".join(parts)
