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
from typing import TYPE_CHECKING

from runtime.verify.kinds.base import MalformedInput
from runtime.verify.kinds.kind import Evidence, Gathering

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONObject

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
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


def wanted(params: JSONObject) -> bool:
    """The kind's optional `baseline` parameter, read from its table (an atom of an older catalog has none: off)."""
    value = params.get("baseline", False)
    if not isinstance(value, bool):
        raise MalformedInput(f"parameter `baseline` must be a boolean, got {type(value).__name__}")
    return value


class BaseRun(Evidence):
    """The same command on the base, where it failed on the change."""

    exit_code: int
    output: str


def take_base(base: BaseRun | None, baseline: bool) -> tuple[int, str] | None:
    """A command's run on the base, as (exit code, output); None without one or where the task did not ask
    for ``baseline``."""
    if not baseline or base is None:
        return None
    return base.exit_code, base.output


async def base_of(gathering: Gathering, baseline: bool, command: str, code: int) -> BaseRun | None:
    """``command`` run on the base too, where it failed on the change and the task asked for ``baseline``."""
    if code == 0 or not baseline:
        return None
    run = await gathering.run_at_base(command)
    return None if run is None else BaseRun(exit_code=run.exit_code, output=run.output)


def as_at_base(exit_code: int, output: str, base: tuple[int, str] | None) -> bool:
    """The command failed exactly as it does at the base: the same exit code, nothing new in its output."""
    return base is not None and exit_code != 0 and base[0] == exit_code and not new_lines(output, base[1])
