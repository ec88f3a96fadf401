"""What changed in a state folder, told to every open page: one watcher per console, read by every event stream.

The runs write their own record of what happens: each agent's `state.json` (rewritten atomically at every
phase), the audit log (appended: every gate decision, tool result, check), the orchestrator's database of
plan runs and their events, and the approvals store. The watcher looks at those files' sizes and times
every `WATCH_S` (a few stat calls, whatever the number of open pages), reads only what the audit log
gained since it last looked, and puts each change on the queue of every open event stream as topics:

- ``runs``: an agent's record or a plan run changed (the home page's lists);
- ``agent:<id>``: that agent's record or its audit records (its page: attempts, transcript, checks);
- ``plan:<id>``: a plan run's events (its page); ``plans`` when any did;
- ``approvals``: a call was asked, decided or expired.

It also says what a person wants to hear about, as notifications: an agent's call waits for a decision,
an agent's run or a plan run ended. The page shows them as browser notifications. Nothing here changes
the state folder; a file that does not parse yet (a write in progress) is looked at again next time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from runtime.approvals.store import ApprovalError, ApprovalStore, store_path
from runtime.audit.log import read_from
from runtime.audit.records import Gated
from runtime.errors import FatalError
from runtime.orchestration.report import PlanStatus
from runtime.orchestration.state import OrchestratorState
from runtime.outcomes import OutcomeStatus
from runtime.spawn.state import RecordStatus, RunRecord

if TYPE_CHECKING:
    from runtime.spawn.state import StateDir

WATCH_S = 0.05  # how often the state folder is looked at: a change reaches an open page within about this
AUDIT_READ_MAX = 4 * 1024 * 1024  # what the watcher reads of the audit log's growth at one look


@dataclass(frozen=True)
class Notice:
    """Something a person watching wants to know: shown as a browser notification."""

    title: str
    body: str
    url: str


@dataclass(frozen=True)
class Change:
    """One look's news: the topics that changed, and the notices."""

    topics: frozenset[str]
    notices: tuple[Notice, ...] = ()

    def events(self) -> bytes:
        """The change as server-sent events: a `change` naming its topics, then one `notify` per notice."""
        out = [f"event: change\ndata: {json.dumps(sorted(self.topics))}\n\n"]
        out += [f"event: notify\ndata: {json.dumps(n.__dict__)}\n\n" for n in self.notices]
        return "".join(out).encode()


def _stat(path: os.PathLike[str] | str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


@dataclass
class _Seen:
    agents: dict[str, tuple[tuple[int, int], RecordStatus]] = field(default_factory=dict)  # id -> (stat, status)
    plans_db: tuple[tuple[int, int] | None, ...] = ()
    plans: dict[str, PlanStatus] = field(default_factory=dict)  # run id -> status
    plan_event: int = 0  # the last plan event id read
    audit_at: int = 0
    audit_stat: tuple[int, int] | None = None
    approvals_db: tuple[tuple[int, int] | None, ...] = ()
    pending: frozenset[str] = frozenset()
    approvals: tuple[frozenset[str], int, float] = (frozenset(), 0, 0.0)


class Watcher:
    """Looks at one state folder for changes and hands each to every subscriber's queue."""

    def __init__(self, state: StateDir, interval: float = WATCH_S) -> None:
        self.state = state
        self.interval = interval
        self._queues: set[asyncio.Queue[Change]] = set()
        self._task: asyncio.Task[None] | None = None
        self._seen = _Seen()
        self.look(first=True)  # what is there already is no news

    def subscribe(self) -> asyncio.Queue[Change]:
        queue: asyncio.Queue[Change] = asyncio.Queue(maxsize=256)
        self._queues.add(queue)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())
        return queue

    def unsubscribe(self, queue: asyncio.Queue[Change]) -> None:
        self._queues.discard(queue)

    async def _run(self) -> None:
        while self._queues:
            await asyncio.sleep(self.interval)
            change = await asyncio.to_thread(self.look)
            if change is None:
                continue
            for queue in list(self._queues):
                with contextlib.suppress(asyncio.QueueFull):  # a page that reads nothing misses news, not memory
                    queue.put_nowait(change)

    # -- one look ---------------------------------------------------------------------------
    def look(self, first: bool = False) -> Change | None:
        topics: set[str] = set()
        notices: list[Notice] = []
        self._agents(topics, notices, first)
        self._plans(topics, notices, first)
        self._audit(topics, first)
        self._approvals(topics, notices, first)
        if first or not topics:
            return None
        return Change(frozenset(topics), tuple(notices))

    def _agents(self, topics: set[str], notices: list[Notice], first: bool) -> None:
        seen = self._seen.agents
        now: dict[str, tuple[tuple[int, int], RecordStatus]] = {}
        runs = self.state.root / "runs"
        for path in runs.glob("*/state.json"):
            agent = path.parent.name
            st = _stat(path)
            if st is None:
                continue
            before = seen.get(agent)
            if before is not None and before[0] == st:
                now[agent] = before
                continue
            try:
                status = RunRecord.from_json(json.loads(path.read_text(encoding="utf-8")), str(path)).status
            except (OSError, ValueError, TypeError, KeyError, FatalError):
                continue  # looked at again next time
            now[agent] = (st, status)
            topics.update(("runs", f"agent:{agent}"))
            if not first and isinstance(status, OutcomeStatus) and (before is None or before[1] != status):
                notices.append(Notice(f"agent {agent}: {status}", "its run ended", f"/agents/{agent}"))
        if set(seen) - set(now):
            topics.add("runs")
        self._seen.agents = now

    def _plans(self, topics: set[str], notices: list[Notice], first: bool) -> None:
        db = self.state.root / "orchestrator.sqlite"
        stats = tuple(_stat(f"{db}{suffix}") for suffix in ("", "-wal"))
        if stats == self._seen.plans_db or stats[0] is None:
            return
        try:
            store = OrchestratorState.read_only(db, timeout=1)
            if store is None:
                return
            try:
                runs, changed, last = store.changes_since(self._seen.plan_event)
            finally:
                store.close()
        except sqlite3.Error:
            return  # a write in progress, or no tables yet: looked at again next time
        self._seen.plans_db = stats
        self._seen.plan_event = last
        ids = changed | {k for k, v in runs.items() if self._seen.plans.get(k) != v}
        if ids:
            topics.update(("runs", "plans", *(f"plan:{i}" for i in ids)))
        for run_id, status in runs.items():
            if not first and status != PlanStatus.RUNNING and self._seen.plans.get(run_id) not in (None, status):
                notices.append(Notice(f"plan run {run_id}: {status}", "the run ended", f"/plans/{run_id}"))
        self._seen.plans = dict(runs)

    def _audit(self, topics: set[str], first: bool) -> None:
        path = self.state.audit
        st = _stat(path)
        if st is None or st == self._seen.audit_stat:
            return
        self._seen.audit_stat = st
        if st[0] < self._seen.audit_at:
            self._seen.audit_at = 0  # a new log
        if first:
            self._seen.audit_at = st[0]
            return
        entries, self._seen.audit_at = read_from(path, self._seen.audit_at, AUDIT_READ_MAX)
        topics.update(f"agent:{e.agent}" for e in entries if e.agent is not None)
        if any(isinstance(e.record, Gated) for e in entries):
            topics.add("runs")  # a running agent's tool calls, counted in its row as they happen

    def _approvals(self, topics: set[str], notices: list[Notice], first: bool) -> None:
        path = store_path(self.state.root)
        stats = tuple(_stat(f"{path}{suffix}") for suffix in ("", "-wal"))
        if stats == self._seen.approvals_db or stats[0] is None:
            return
        try:
            rows, count, decided = ApprovalStore(path, create=False).glance()
        except (sqlite3.Error, ApprovalError):
            return  # a write in progress, or no tables yet: looked at again next time
        self._seen.approvals_db = stats
        pending = frozenset(r[0] for r in rows)
        signature = (pending, count, decided)
        if signature == self._seen.approvals:
            return  # the file changed, not what it holds (a checkpoint)
        self._seen.approvals = signature
        topics.add("approvals")
        if not first:
            for request_id, agent, summary in rows:
                if request_id not in self._seen.pending:
                    notices.append(Notice(f"agent {agent} waits for you", summary[:200], "/approvals"))
        self._seen.pending = pending
