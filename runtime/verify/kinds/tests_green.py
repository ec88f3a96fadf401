"""tests-green: the task's test command passes, with at least ``min-count`` tests.

An exit code of zero is not enough on its own: a test run that collected
nothing, or that a model trimmed down, also exits zero. So the pass count is
read from the output (see ``runner_output`` for the formats). Evidence::

    {"exit-code": 0, "output": "<stdout and stderr of the command, interleaved>",
     "base": {"exit-code": 1, "output": "<the same command on the base>"}}

Rejected when the exit code is not zero, when any test failed or errored, or
when fewer than ``min-count`` passed; when the count cannot be read at all and
``min-count`` is above zero, that is a rejection too (nothing proves the tests ran).
With the ``baseline`` parameter (the task's `[verification] baseline`),
`base`, the failing run repeated on the base, lets failures the
repository already had through (a test that needs the network, one broken
upstream): the same exit code, and every failure the runner names one the base
names too, no more of them (``baseline``). The pass count still has to reach
``min-count``.
"""

from __future__ import annotations

from typing import Any

from runtime.verify.kinds.base import MAX_QUOTED_LINES, quoted, tail, take_int, take_str
from runtime.verify.kinds.baseline import new_lines, take_base, tests_fail_as_at_base
from runtime.verify.kinds.runner_output import RunCounts, read_counts
from runtime.verify.result import VerifyResult, passed, rejected

# Without failure lines to quote, the end of the output is where runners say what went wrong.
TAIL_LINES = 25


def tests_green(params: dict[str, Any], evidence: dict[str, Any]) -> VerifyResult:
    command = take_str(params, "command", "parameter")
    min_count = take_int(params, "min-count", "parameter")
    exit_code = take_int(evidence, "exit-code", "evidence")
    output = take_str(evidence, "output", "evidence")
    counts = read_counts(output)
    details: dict[str, Any] = {
        "runner": counts.runner, "passed": counts.passed, "failed": counts.failed,
        "errors": counts.errors, "exit-code": exit_code, "min-count": min_count,
    }
    problems = []
    base = take_base(evidence, "evidence", params)
    base_counts = read_counts(base[1]) if base is not None and base[0] != 0 else None
    if base is not None and base_counts is not None and tests_fail_as_at_base(exit_code, output, counts, base, base_counts):
        details["as-at-base"] = {"failed": counts.failed, "errors": counts.errors, "exit-code": exit_code}
        return _count_judged(command, min_count, counts, details,
                             f"; the run fails only as it does at the base ({_failing(counts)}), nothing new")
    if exit_code != 0:
        problems.append(f"`{command}` exited with code {exit_code}")
    if counts.failed:
        problems.append(f"{counts.failed} test(s) failed")
    if counts.errors:
        problems.append(f"{counts.errors} test(s) errored")
    if problems:
        return rejected(
            f"The tests are not green: {'; '.join(problems)}. Fix the cause and run `{command}` again until it passes.\n"
            f"{_relevant_output(counts, output, base_counts)}",
            details,
        )
    return _count_judged(command, min_count, counts, details, "")


def _count_judged(command: str, min_count: int, counts: RunCounts, details: dict[str, Any], note: str) -> VerifyResult:
    """The pass count against ``min-count``, once nothing failed (or failed only as at the base)."""
    if counts.passed is None:
        if min_count > 0:
            return rejected(
                f"The count of passing tests could not be read from the output of `{command}`, and at least "
                f"{min_count} must pass. Run the tests so that the runner prints its usual summary "
                "(for go test, use -v).",
                details,
            )
        return passed(f"`{command}` ran{note}" if note else f"`{command}` exited with code 0", details)
    if counts.passed < min_count:
        return rejected(
            f"Only {counts.passed} test(s) passed, but at least {min_count} must run and pass. "
            f"Add the missing tests (or make sure they are collected) and run `{command}` again.",
            details,
        )
    return passed(f"{counts.passed} test(s) passed ({min_count} required){note}", details)


def _failing(counts: RunCounts) -> str:
    parts = [f"{counts.failed} failed"] if counts.failed else []
    parts += [f"{counts.errors} errored"] if counts.errors else []
    return ", ".join(parts) or "its exit code"


def _relevant_output(counts: RunCounts, output: str, at_base: RunCounts | None = None) -> str:
    if counts.failure_lines:
        failures = counts.failure_lines
        head = "Failures:\n"
        if at_base is not None and at_base.failure_lines:
            new = new_lines("\n".join(failures), "\n".join(at_base.failure_lines))
            if new:
                head = (f"Failures new since the base ({len(failures) - len(new)} of them fail at the base too, and "
                        "are not this change's to fix):\n")
                failures = new
        lines = failures[:MAX_QUOTED_LINES]
        more = len(failures) - len(lines)
        return head + quoted(lines) + (f"\n    ... and {more} more" if more else "")
    lines = tail(output, TAIL_LINES)
    return "End of the output:\n" + quoted(lines) if lines else "The command printed nothing."
