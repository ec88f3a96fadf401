"""runtime audit verify|show: the hash-chained audit log of this repository's runs."""

from __future__ import annotations

import json
import sys

from runtime.audit.log import records, verify
from runtime.cli.status import state_dir
from runtime.errors import UsageError


def run(args) -> int:
    path = state_dir(args).audit
    if args.action == "verify":
        problems = verify(path)
        for problem in problems:
            print(f"{path}:{problem}", file=sys.stderr)
        if problems:
            return 2
        count = sum(1 for _ in records(path))
        print(f"{path}: {count} records, chain intact")
        return 0
    if args.kind is not None:
        kinds = {r["kind"] for r in records(path)}
        if args.kind not in kinds:
            import difflib

            close = difflib.get_close_matches(args.kind, sorted(kinds), n=1)
            hint = f" (did you mean `{close[0]}`?)" if close else ""
            raise UsageError(f"no record in {path} has kind `{args.kind}`{hint}; "
                             f"the kinds there: {', '.join(sorted(kinds)) or 'none (the log is empty)'}")
    for record in records(path, agent=args.agent, kind=args.kind):
        if args.json:
            print(json.dumps(record))
        else:
            data = ", ".join(f"{k}={_short(json.dumps(v))}" for k, v in record["data"].items())
            print(f"{record['seq']:>6} {record['time']} {record['kind']:<13} {record.get('agent') or '-':<20} {data}")
    return 0


def _short(text: str, limit: int = 100) -> str:
    """At most ``limit`` characters, cut at a word and marked, never mid-word."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit - 1)
    return text[: cut if cut > limit // 2 else limit - 1] + "…"
