"""A command that fails at the base as well: what its output adds to what it printed there.

Real repositories are seldom clean: flake8 over a tree with old warnings, a type checker with errors
nobody fixed, a test that needs the network. Judged alone, such a command fails every change, and the
feedback asks the agent to fix code its task never named (outside its scope, often). A task that sets
`[verification] baseline = true` has verify run a failing test or check command on a checkout of the
base as well (`base` in the evidence), and the change is judged by what is new: a failure that is
exactly the base's, with the same exit code and no output line the base did not print, is the
repository's, not the change's.

Never by default: a task whose goal is a failing test (fix the bug `test_mean` shows) would pass an
agent that did nothing, the failure being the base's. Nor for a plan's checks, which state its goal.

Lines are compared as a multiset after numbers are replaced (line and column numbers shift when code
is added above a warning; counts and timings change), so one more of the same warning is new. Anything
the comparison cannot match (a crash, another exit code, a line the base never printed) stays a failure.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from runtime.verify.kinds.base import MalformedInput, take_int, take_str
from runtime.verify.kinds.runner_output import ANSI, RunCounts

# A number on its own (`a.py:12:5:`, `Found 3 errors`, `0.52s`, `12ms`), not one inside a word or code
# (`F401`, `E501`, `TS2345`, `sha1`): those say which diagnostic it is.
_NUMBER = re.compile(r"(?<![A-Za-z_\d.])\d+(?:\.\d+)?(?:ms|s)?(?![A-Za-z_\d])")


def normalized(line: str) -> str:
    return _NUMBER.sub("#", ANSI.sub("", line)).strip()


def new_lines(output: str, base_output: str) -> list[str]:
    """The lines of ``output`` the base's output has no match for (each base line matches once)."""
    left = Counter(normalized(line) for line in base_output.splitlines())
    out = []
    for line in output.splitlines():
        key = normalized(line)
        if not key:
            continue
        if left[key] > 0:
            left[key] -= 1
        else:
            out.append(line.rstrip())
    return out


def wanted(params: dict[str, Any]) -> bool:
    """The kind's optional `baseline` parameter (an atom of an older catalog has none: off)."""
    value = params.get("baseline", False)
    if not isinstance(value, bool):
        raise MalformedInput(f"parameter `baseline` must be a boolean, got {type(value).__name__}")
    return value


def take_base(result: dict[str, Any], where: str, params: dict[str, Any]) -> tuple[int, str] | None:
    """The optional `base` table of a command's evidence: (exit code, output) at the base; None without it
    or where the task did not ask for ``baseline``."""
    if not wanted(params) or "base" not in result:
        return None
    base = result["base"]
    if not isinstance(base, dict):
        raise MalformedInput(f"{where} `base` must be a table, got {type(base).__name__}")
    return take_int(base, "exit-code", f"{where} `base`"), take_str(base, "output", f"{where} `base`")


def as_at_base(exit_code: int, output: str, base: tuple[int, str] | None) -> bool:
    """The command failed exactly as it does at the base: the same exit code, nothing new in its output."""
    return base is not None and exit_code != 0 and base[0] == exit_code and not new_lines(output, base[1])


def tests_fail_as_at_base(exit_code: int, output: str, counts: RunCounts, base: tuple[int, str], at_base: RunCounts) -> bool:
    """Every failure of a test run is one the base has: the same exit code, the same runner, no more
    failures or errors, and each failure line the runner names matched by one of the base's."""
    if exit_code == 0 or base[0] != exit_code:
        return False
    if not counts.failed and not counts.errors:
        return as_at_base(exit_code, output, base)  # failing for another reason (coverage, a crash): all of it
    if counts.runner != at_base.runner or counts.failed > at_base.failed or counts.errors > at_base.errors:
        return False
    named = counts.failure_lines
    # every failure named, or there is one the comparison cannot see
    return len(named) >= counts.failed + counts.errors and not new_lines("\n".join(named), "\n".join(at_base.failure_lines))

