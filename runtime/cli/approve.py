"""`runtime approve ID`, `runtime deny ID --reason ...` and `runtime approvals`.

A spawned agent's call that the gate answered `ask` waits, pending, in the state folder's
`approvals.sqlite` (see `runtime.approvals`). These verbs decide it, or list what waits. They find
the state folder like `runtime status` does (`--state-dir`, `RUNTIME_STATE_DIR`, else the default
folder of the repository around the current directory). A decision is taken once; an unknown,
decided or expired id is an error (exit 1). The orchestrator audits the decision when it hands it
to the agent.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from runtime.cli.settings import Approvals, Approve
from runtime.cli.status import state_dir
from runtime.printable import printable

if TYPE_CHECKING:
    from runtime.approvals.store import ApprovalStore
    from runtime.cli.settings import Deny
    from runtime.spawn.state import StateDir


def _store(args: Approve | Deny | Approvals, create: bool = False) -> tuple[ApprovalStore | None, StateDir]:
    from runtime.approvals.store import ApprovalStore, store_path

    state = state_dir(args.state_dir)
    if not create and not store_path(state.root).is_file():
        return None, state
    return ApprovalStore.for_state(state.root), state


def run(args: Approve | Deny | Approvals) -> int:
    if isinstance(args, Approvals):
        return _list(args)
    from runtime.approvals.service import decided_by
    from runtime.approvals.store import ApprovalError

    store, state = _store(args)
    if store is None:
        raise ApprovalError(f"no approval request `{args.id}`: there are no approvals in {state.root}")
    approved = isinstance(args, Approve)
    approval = store.decide(args.id, approved, args.reason, decided_by(f"runtime {args.verb}"))
    if args.json:
        print(json.dumps(approval.to_dict(), indent=2))
    else:
        verb = "approved" if approved else "denied"
        print(printable(f"{verb} [{approval.id}] agent {approval.agent}: {approval.summary}"))
    return 0


def _list(args: Approvals) -> int:
    store, state = _store(args)
    if store is None:
        rows = []
    elif args.all:
        store.sweep()
        rows = store.all(limit=200)
    else:
        rows = store.pending()
    if args.agent:
        rows = [a for a in rows if a.agent == args.agent]
    if args.json:
        print(json.dumps([a.to_dict() for a in rows], indent=2))
        return 0
    from rich.table import Table

    from runtime.cli.show import console as make_console
    from runtime.cli.show import text

    console = make_console()
    title = f"{'approval requests' if args.all else 'pending approvals'} in {state.root}"
    if not rows:
        console.print(text(f"no {'approval requests' if args.all else 'pending approvals'} in {state.root}"))
        return 0
    table = Table(title=text(title))
    columns = ["id", "agent", "call", "gate reason", "expires in"] + (["status", "by", "reason"] if args.all else [])
    for col in columns:
        table.add_column(col, overflow="fold", no_wrap=col in ("id", "expires in", "status"))
    for a in rows:
        left = a.expires_in()
        row = [a.id, a.agent, a.summary, a.gate_reason, f"{left:.0f} s" if a.pending and left > 0 else "-"]
        if args.all:
            row += [a.status, a.decided_by or "", a.reason or ""]
        table.add_row(*(text(cell) for cell in row))  # summaries are agents' tool inputs: escaped, never markup
    console.print(table)
    if not args.all:
        print("decide with `runtime approve ID` or `runtime deny ID --reason ...`", file=sys.stderr)
    return 0

