"""runtime again ID [--feedback FILE|-] [--merge]: a new series of attempts for an agent whose run finished,
on its own work, told first what ``--feedback`` says (see `runtime.spawn.again`). Exit 0 ok, 2 otherwise."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.errors import UsageError

if TYPE_CHECKING:
    from runtime.cli.settings import Again


def run(args: Again) -> int:
    from runtime.cli.spawn import execute
    from runtime.cli.status import state_dir
    from runtime.manifests.names import AGENT_ID
    from runtime.spawn.again import again_options, again_record, again_task
    from runtime.spawn.pipeline import spawn_task

    if not AGENT_ID.fullmatch(args.agent):
        raise UsageError(f"{args.agent!r} is not an agent id")
    feedback = None
    if args.feedback == "-":
        feedback = sys.stdin.read()
    elif args.feedback:
        try:
            feedback = Path(args.feedback).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"--feedback {args.feedback}: cannot be read ({exc})") from None
    state = state_dir(args.state_dir)
    record = again_record(state, args.agent)
    task, catalog = again_task(state, record, Path.cwd())
    options = again_options(record, state, Path.cwd(), feedback, args.merge)
    if not record.sandboxed:
        print("WARNING: this agent ran WITHOUT an OS sandbox (--no-os-sandbox), and runs so again; only the gate "
              "stands between it and your machine", file=sys.stderr)
    return execute(lambda o: spawn_task(task, catalog, o), options, args.json,
                   lambda: f"interrupted: agent {args.agent}'s work is kept on branch agent/{args.agent}; "
                           f"`runtime again {args.agent}` resumes it")
