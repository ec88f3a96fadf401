"""checks-green: every check command of the task (linters, type checkers, builds) exits 0.

Evidence::

    {"results": [{"command": "ruff check .", "exit-code": 0, "output": "..."}, ...]}

Every command in the ``commands`` parameter needs a result: a missing one is
an error, since the check was not run and cannot count as passed. Results for
commands not in the parameter are ignored. A command with several results
passes only if all of them exited 0.
"""

from __future__ import annotations

from typing import Any

from runtime.verify.kinds.base import MAX_QUOTED_LINES, quoted, tail, take_int, take_str, take_str_list, take_table_list
from runtime.verify.result import VerifyResult, error, passed, rejected

# Each failing check gets a share of the quoted lines, so one noisy check cannot hide the others.
TAIL_LINES_PER_CHECK = 15


def checks_green(params: dict[str, Any], evidence: dict[str, Any]) -> VerifyResult:
    commands = take_str_list(params, "commands", "parameter")
    ran: set[str] = set()
    first_failure: dict[str, tuple[int, str]] = {}
    for n, result in enumerate(take_table_list(evidence, "results", "evidence")):
        where = f"evidence `results[{n}]`"
        command = take_str(result, "command", where)
        exit_code = take_int(result, "exit-code", where)
        output = take_str(result, "output", where)
        ran.add(command)
        if exit_code != 0:
            first_failure.setdefault(command, (exit_code, output))
    missing = [c for c in commands if c not in ran]
    if missing:
        return error(f"no result for the check command(s): {', '.join(f'`{c}`' for c in missing)}", {"missing": missing})
    failing = [c for c in commands if c in first_failure]
    if not failing:
        return passed(f"all {len(commands)} check(s) passed", {"checks": len(commands)})
    per_check = max(min(MAX_QUOTED_LINES // len(failing), TAIL_LINES_PER_CHECK), 3)
    sections = []
    for command in failing:
        exit_code, output = first_failure[command]
        lines = tail(output, per_check)
        sections.append(f"- `{command}` exited with code {exit_code}" + (":\n" + quoted(lines) if lines else " and printed nothing"))
    return rejected(
        # The first line names them: it is what a run prints as the reason.
        f"{len(failing)} of {len(commands)} check(s) failed: {', '.join(f'`{c}`' for c in failing)}. "
        "Fix what they report and run them again:\n" + "\n".join(sections),
        {"checks": len(commands), "failing": failing},
    )
