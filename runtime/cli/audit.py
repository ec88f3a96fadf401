"""runtime audit verify|show: the hash-chained audit log of this repository's runs."""

from __future__ import annotations

import json
import sys

from runtime.audit.log import records, verify
from runtime.cli.status import state_dir


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
    for record in records(path, agent=args.agent, kind=args.kind):
        if args.json:
            print(json.dumps(record))
        else:
            data = ", ".join(f"{k}={json.dumps(v)[:80]}" for k, v in record["data"].items())
            print(f"{record['seq']:>6} {record['time']} {record['kind']:<13} {record.get('agent') or '-':<20} {data}")
    return 0
