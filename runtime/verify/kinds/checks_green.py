"""checks-green: every check command of the task (linters, type checkers, builds) exits 0, or fails
exactly as it does at the base.

Evidence::

    {"results": [{"command": "ruff check .", "exit-code": 0, "output": "...",
                  "base": {"exit-code": 1, "output": "..."}}, ...]}

Every command in the ``commands`` parameter needs a result: a missing one is
an error, since the check was not run and cannot count as passed. Results for
commands not in the parameter are ignored. A command with several results
passes only if all of them passed. With the ``baseline`` parameter (the task's
`[verification] baseline`), `base`, the failing command's run on the base, lets
a failure the repository already had through: the same exit code and no output
line the base did not print (``runtime.verify.kinds.baseline``). Otherwise only
the new lines are quoted: what the change made worse is what to fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from runtime.verify.kinds.base import MAX_QUOTED_LINES, quoted, tail, take_str_list
from runtime.verify.kinds.baseline import BaseRun, as_at_base, base_of, new_lines, take_base, wanted
from runtime.verify.kinds.kind import Evidence, Gathering, Kind
from runtime.verify.kinds.result import VerifyResult, error, passed, rejected

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONObject


@dataclass(frozen=True, slots=True)
class ChecksParams:
    """checks-green: the check commands, and whether a check failing as it does at the base is let through."""

    commands: tuple[str, ...]
    baseline: bool = False

    @classmethod
    def read(cls, data: JSONObject) -> ChecksParams:
        return cls(tuple(take_str_list(data, "commands", "parameter")), wanted(data))


class CheckRun(Evidence):
    command: str
    exit_code: int
    output: str
    base: BaseRun | None = None


class CheckRuns(Evidence):
    """checks-green: each check command's exit code and output."""

    results: list[CheckRun]


async def gather(params: ChecksParams, gathering: Gathering) -> CheckRuns:
    results = []
    for command in params.commands:
        run = await gathering.run(command)
        results.append(CheckRun(command=command, exit_code=run.exit_code, output=run.output,
                                base=await base_of(gathering, params.baseline, command, run.exit_code)))
    return CheckRuns(results=results)

# Each failing check gets a share of the quoted lines, so one noisy check cannot hide the others.
TAIL_LINES_PER_CHECK = 15


def checks_green(params: ChecksParams, evidence: CheckRuns) -> VerifyResult:
    commands = params.commands
    ran: set[str] = set()
    first_failure: dict[str, tuple[int, str, tuple[int, str] | None]] = {}
    at_base: set[str] = set()
    for result in evidence.results:
        command, exit_code, output = result.command, result.exit_code, result.output
        base = take_base(result.base, params.baseline)
        ran.add(command)
        if exit_code == 0:
            continue
        if as_at_base(exit_code, output, base):
            at_base.add(command)
        else:
            first_failure.setdefault(command, (exit_code, output, base))
    missing = [c for c in commands if c not in ran]
    if missing:
        return error(f"no result for the check command(s): {', '.join(f'`{c}`' for c in missing)}", {"missing": missing})
    failing = [c for c in commands if c in first_failure]
    as_before = [c for c in commands if c in at_base and c not in first_failure]
    if not failing:
        if as_before:
            return passed(f"all {len(commands)} check(s) passed or fail only as at the base: "
                          f"{', '.join(f'`{c}`' for c in as_before)} fail(s) there too, and the change adds nothing",
                          {"checks": len(commands), "as-at-base": as_before})
        return passed(f"all {len(commands)} check(s) passed", {"checks": len(commands)})
    per_check = max(min(MAX_QUOTED_LINES // len(failing), TAIL_LINES_PER_CHECK), 3)
    sections = []
    for command in failing:
        exit_code, output, base = first_failure[command]
        head = f"- `{command}` exited with code {exit_code}"
        fails_at_base = base is not None and base[0] != 0
        if base is not None and fails_at_base:
            lines = new_lines(output, base[1])[:per_check]
            head += (f"; it fails at the base too (code {base[0]}), so only what the change adds is quoted"
                     if lines else f"; at the base it exited with code {base[0]}")
        else:
            lines = tail(output, per_check)
        if lines:
            sections.append(f"{head}:\n{quoted(lines)}")
        else:
            sections.append(head + (" and printed nothing new" if fails_at_base else " and printed nothing"))
    return rejected(
        # The first line names them: it is what a run prints as the reason.
        f"{len(failing)} of {len(commands)} check(s) failed: {', '.join(f'`{c}`' for c in failing)}. "
        "Fix what they report and run them again:\n" + "\n".join(sections),
        {"checks": len(commands), "failing": failing, **({"as-at-base": as_before} if as_before else {})},
    )


KIND = Kind("checks-green", {"commands": "command-list", "baseline": "bool"}, ChecksParams.read, CheckRuns, gather, checks_green,
            runs_commands=True, optional=frozenset({"baseline"}))
