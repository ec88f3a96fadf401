"""`runtime allow 'COMMAND' [--role R]`: write the rule that allows a command into the repository's catalog.

The gate's reason for a call no rule decides names this command. See `runtime.tooling.allow`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.printable import printable

if TYPE_CHECKING:
    from runtime.cli.settings import Allow


def repository(start: Path) -> Path:
    """The repository around ``start`` (git's top folder), else ``start`` itself."""
    try:
        top = subprocess.run(["git", "-C", str(start), "rev-parse", "--show-toplevel"], capture_output=True,
                             text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return start.resolve()
    return Path(top.stdout.strip()).resolve() if top.returncode == 0 and top.stdout.strip() else start.resolve()


def run(args: Allow) -> int:
    from runtime.tooling.allow import AllowRefused, plan_allow, write

    repo = repository(Path(args.repo) if args.repo else Path.cwd())
    try:
        found = plan_allow(repo, args.command, args.role)
    except AllowRefused as exc:
        if args.json:
            print(json.dumps({"command": args.command, "role": args.role, "written": False, "refused": str(exc)}))
        print(f"runtime allow: {printable(str(exc))}", file=sys.stderr)
        return 1
    if isinstance(found, str):
        if args.json:
            print(json.dumps({"command": args.command, "role": args.role, "written": False, "already": found}))
        else:
            print(printable(found))
        return 0
    if not args.dry_run:
        write(found)
    shown = found.path.relative_to(repo) if found.path.is_relative_to(repo) else found.path
    if args.json:
        print(json.dumps({"command": args.command, "role": args.role, "written": not args.dry_run,
                          "path": str(found.path), "rules": list(found.rules), "diff": found.diff,
                          "reason": found.reason}, indent=2))
        return 0
    sys.stdout.write(printable(found.diff, multiline=True))
    verb = "would add" if args.dry_run else "added"
    print(f"\n{verb} {len(found.rules)} rule{'s' if len(found.rules) != 1 else ''} to {shown}; the gate "
          f"{'would allow' if args.dry_run else 'now allows'} it: {printable(found.reason)}")
    if not args.dry_run:
        print("review the change and commit it with the repository: it holds for every agent and session of this role")
    return 0

