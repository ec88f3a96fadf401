"""runtime audit verify|show|export: the hash-chained audit log of this repository's runs."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from typing import TYPE_CHECKING

from runtime.audit.log import records, verify
from runtime.cli.settings import AuditExport, AuditVerify
from runtime.cli.status import state_dir
from runtime.errors import UsageError
from runtime.printable import printable

if TYPE_CHECKING:
    from pathlib import Path

    from runtime.cli.settings import AuditShow


def run(args: AuditVerify | AuditShow | AuditExport) -> int:
    path = state_dir(args.state_dir).audit
    if isinstance(args, AuditExport):
        return _export(args, path)
    if isinstance(args, AuditVerify):
        problems = verify(path)
        if args.json:
            count = sum(1 for _ in records(path)) if not problems else None
            print(json.dumps({"path": str(path), "intact": not problems, "records": count,
                              "problems": [{"line": p.line, "message": p.message} for p in problems]}))
            return 2 if problems else 0
        for problem in problems:
            print(printable(f"{path}:{problem}"), file=sys.stderr)
        if problems:
            return 2
        count = sum(1 for _ in records(path))
        print(f"{path}: {count} records, chain intact")
        return 0
    shown = 0
    for entry in records(path, agent=args.agent, kind=args.kind):
        shown += 1
        if args.json:
            print(json.dumps(entry.to_json()))
        else:
            # Records hold what agents sent (tool inputs, reports, check output): one escaped line each.
            data = ", ".join(f"{k}={_short(json.dumps(v))}" for k, v in entry.data().items())
            print(printable(f"{entry.seq:>6} {entry.time} {entry.kind:<13} {entry.agent or '-':<20} {data}"))
    if not shown and args.kind is not None:
        # Nothing printed: say why when the kind itself is the likely mistake (`--kind gat`).
        kinds = {entry.kind for entry in records(path)}
        if args.kind not in kinds:
            import difflib

            close = difflib.get_close_matches(args.kind, sorted(kinds), n=1)
            hint = f" (did you mean `{close[0]}`?)" if close else ""
            print(printable(f"note: no record in {path} has kind `{args.kind}`{hint}; the kinds there: "
                            f"{', '.join(sorted(kinds)) or 'none yet'}"), file=sys.stderr)
    return 0


def _export(args: AuditExport, path: Path) -> int:
    """One JSON object per line on standard output: an OCSF event per record, or the record's line."""
    if args.since is not None:
        try:
            datetime.fromisoformat(args.since.replace("Z", "+00:00"))
        except ValueError:
            raise UsageError(f"--since {args.since}: not an ISO-8601 time (2026-12-05T09:00:00Z)") from None
    chosen = records(path, agent=args.agent, kind=args.kind, since=args.since)
    if args.format == "ocsf":
        from runtime.audit.ocsf import events

        for event in events(chosen):
            print(json.dumps(event, separators=(",", ":")))
    else:
        for entry in chosen:
            print(json.dumps(entry.to_json(), separators=(",", ":")))
    return 0


def _short(text: str, limit: int = 100) -> str:
    """At most ``limit`` characters, cut at a word and marked, never mid-word."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit - 1)
    return text[: cut if cut > limit // 2 else limit - 1] + "…"
