"""runtime memory show|search|curate: what accepted runs left behind, and curating learnings.

Reading is open to everyone; the only writes here are curation decisions,
made through the meta-validation module (the memory's single writer).
"""

from __future__ import annotations

import getpass
import json
from dataclasses import asdict
from typing import TYPE_CHECKING

from runtime.cli.settings import MemoryCurate, MemorySearch
from runtime.cli.status import state_dir
from runtime.errors import UsageError
from runtime.printable import printable

if TYPE_CHECKING:
    from runtime.cli.settings import MemoryShow


def run(args: MemoryShow | MemorySearch | MemoryCurate) -> int:
    from runtime.memory.reader import open_memory
    from runtime.orchestration.meta import curate_learnings, memory_path

    root = state_dir(args.state_dir).root
    if isinstance(args, MemoryCurate):
        decisions = {int(n): "promote" for n in args.promote} | {int(n): "discard" for n in args.discard}
        if not decisions:
            raise UsageError("say which learnings to --promote or --discard (see `runtime memory show`)")
        for done in curate_learnings(root, decisions, curator=getpass.getuser()):
            print(json.dumps(asdict(done), default=str) if args.json else printable(f"learning {done}"))
        return 0
    reader = open_memory(memory_path(root))
    if isinstance(args, MemorySearch):
        entries = reader.search(args.query, tags=args.tag or ())
        rows = {"entries": [asdict(e) for e in entries]}
    else:
        rows = {"results": [asdict(e) for e in reader.results()], "facts": [asdict(e) for e in reader.facts()],
                "pending": [asdict(lr) for lr in reader.pending_learnings()]}
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
        return 0
    for section, items in rows.items():
        print(f"== {section} ({len(items)})")
        for item in items:  # entries come from agents' reports and a reviewer model: one escaped line each
            head = item.get("title") or item.get("text") or ""
            body = str(item.get("body") or "").strip().splitlines()[:1]
            print(printable(f"  [{item.get('id')}] {head}" + (f" — {body[0][:100]}" if body else "")))
    return 0
