"""runtime audit verify|show: the hash-chained audit log of this repository's runs."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from runtime.audit.log import records, verify
from runtime.cli.status import state_dir
from runtime.printable import printable

if TYPE_CHECKING:
    import argparse


def run(args: argparse.Namespace) -> int:
    path = state_dir(args).audit
    if args.action == "verify":
        problems = verify(path)
        if args.json:
            count = sum(1 for _ in records(path)) if not problems else None
            print(json.dumps({"path": str(path), "intact": not problems, "records": count, "problems": problems}))
            return 2 if problems else 0
        for problem in problems:
            print(printable(f"{path}:{problem}"), file=sys.stderr)
        if problems:
            return 2
        count = sum(1 for _ in records(path))
        print(f"{path}: {count} records, chain intact")
        return 0
    shown = 0
    for record in records(path, agent=args.agent, kind=args.kind):
        shown += 1
        if args.json:
            print(json.dumps(record))
        else:
            # Records hold what agents sent (tool inputs, reports, check output): one escaped line each.
            data = ", ".join(f"{k}={_short(json.dumps(v))}" for k, v in record["data"].items())
            print(printable(f"{record['seq']:>6} {record['time']} {record['kind']:<13} {record.get('agent') or '-':<20} "
                            f"{data}"))
    if not shown and args.kind is not None:
        # Nothing printed: say why when the kind itself is the likely mistake (`--kind gat`).
        kinds = {r["kind"] for r in records(path)}
        if args.kind not in kinds:
            import difflib

            close = difflib.get_close_matches(args.kind, sorted(kinds), n=1)
            hint = f" (did you mean `{close[0]}`?)" if close else ""
            print(printable(f"note: no record in {path} has kind `{args.kind}`{hint}; the kinds there: "
                            f"{', '.join(sorted(kinds)) or 'none yet'}"), file=sys.stderr)
    return 0


def _short(text: str, limit: int = 100) -> str:
    """At most ``limit`` characters, cut at a word and marked, never mid-word."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit - 1)
    return text[: cut if cut > limit // 2 else limit - 1] + "…"
