"""runtime show ID [--json] [--stat]: what an agent did: its outcome, every attempt, the checks of the last one,
its report, and its change against the base (the diff of its branch, or of its verified commit).

Everything here may quote the agent (its report, its files' names and contents, its checks' output): every
value is shown through ``runtime.cli.show``, control characters escaped. With ``--json``: the run's record as
`runtime status --json` has it, and the diff as text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.errors import UsageError
from runtime.orchestration.overview import change_of
from runtime.workspace.git import Git, GitError

if TYPE_CHECKING:
    from runtime.cli.settings import Show


def run(args: Show) -> int:
    from rich.table import Table

    from runtime.cli.show import block, console, line, text
    from runtime.cli.spawn import CHECK_COLOURS, colour
    from runtime.cli.status import state_dir
    from runtime.manifests.names import AGENT_ID
    from runtime.verify.kinds.record import by_cause

    if not AGENT_ID.fullmatch(args.agent):
        raise UsageError(f"{args.agent!r} is not an agent id")
    state = state_dir(args.state_dir)
    record = state.read(args.agent)
    if record is None:
        raise UsageError(f"no run of agent {args.agent} in {state.root} (`runtime status` lists them)")
    try:
        head, diff = change_of(Git(Path.cwd()).root, record, args.stat)
    except GitError as exc:
        raise UsageError(f"the change of agent {record.agent_id} cannot be read here ({exc}); run this in the "
                         "repository it ran in") from None
    if args.json:
        print(json.dumps({"agent": record.to_json(), "head": head, "diff": diff}, indent=2))
        return 0
    out = console()
    shade = colour(record.status, "tampering" if record.label == "rejected(tampering)" else None)
    series = f", {record.series} series" if record.series > 1 else ""
    out.print(line((record.label or record.status, f"bold {shade}"), f"  agent {record.agent_id} ({record.role}{series})"))
    for label, value in (("branch", record.branch), ("base", record.base_branch or record.base[:12]),
                         ("commit", record.commit), ("kept for inspection", record.work), ("merged", record.merged),
                         ("updated", record.updated)):
        if value:
            out.print(line(f"{label}: ", value))
    if record.attempts:
        table = Table(title="attempts")
        for col in ("attempt", "series", "exit", "turns", "tool calls", "denials", "tokens", "seconds", "ended"):
            table.add_column(col)
        for a in record.attempts:
            ended = f"stopped: {a.breach}" if a.breach else ("rejected" if a.feedback else "finished")
            table.add_row(*(text(v) for v in (a.number, a.series, a.exit_code, a.turns, a.tool_calls, a.denials,
                                              a.tokens, f"{a.duration_s:.1f}", ended)))
        out.print(table)
        last = record.attempts[-1]
        if last.checks:
            checks = Table(title=f"checks of attempt {last.number}")
            for col in ("atom", "status", "detail"):
                checks.add_column(col, overflow="fold")
            for c in by_cause(last.checks):
                style = CHECK_COLOURS.get(c.status, "red")
                detail = c.feedback.strip().splitlines()[0][:100] if c.feedback.strip() else ""
                checks.add_row(text(c.atom), text(c.status, style), text(detail))
            out.print(checks)
        for c in last.checks:
            if c.tests is not None:
                out.print(line("tests: ", c.tests.trailer()))
        if last.report:
            out.print(line(("report", "bold")))
            out.print(block(last.report))
    if record.message:
        out.print(line(("message", "bold")))
        out.print(block(record.message))
    if head is None:
        out.print(line("no change is kept"))
    else:
        out.print(line((f"the change: {record.base[:12]}..{head[:12]}", "bold")))
        out.print(text(diff or "(nothing changed)\n", multiline=True), end="")
    return 0
