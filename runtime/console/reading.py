"""What the console's pages show, read from the state folder into typed records once, here.

- ``AuditIndex``: the audit log followed as it grows (each line parsed once), its records by agent.
- ``transcript``: an agent's tool calls as the gate decided them and what each returned, by attempt.
- ``limits_of``: the limits an agent ran under (its task's `[agent.limits]`), beside the peaks it reached.
- ``policy_of``: the compiled policy it ran under (its run's `agent-ro/policy.json`), summarised.
- ``plan_view``: a plan run: its subtasks by sequence group, what each used, when each ran (so what ran
  in parallel), the merges, the plan checks, the judge's verdict and the replans.

Everything read here may hold text an agent wrote; the pages escape it (``runtime.console.pages``).
"""

from __future__ import annotations

import json
import threading
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runtime.audit.log import read_from
from runtime.audit.records import Again, ApprovalDecided, ApprovalRequested, Ended, Gated, Retried, ToolRan
from runtime.gate.decision import ALLOW, DENY
from runtime.manifests.agent import LimitsSection
from runtime.spawn.state import RunRecord, StateDir
from runtime.workspace.safe_files import UnsafeFile, read_under

if TYPE_CHECKING:
    from runtime.audit.records import AuditEntry, AuditRecord
    from runtime.lang.jsontypes import JSON
    from runtime.orchestration.judge import JudgementStatus
    from runtime.orchestration.report import PlanStatus
    from runtime.orchestration.state import SubtaskRowStatus

MAX_SHOWN = 1024 * 1024


def state_text(state: StateDir, path: Path, limit: int = MAX_SHOWN) -> str | None:
    """A file of the state folder as text (at most ``limit`` bytes), reached without following a symlink on the
    way: a link left in the state folder (by an agent's run, or anyone) is never followed out of it. None when
    it is not there as a regular file under the state folder."""
    for root in (state.root, state.root.resolve()):
        try:
            rel = path.relative_to(root)
        except ValueError:
            continue
        try:
            data, _ = read_under(root, rel, limit)
        except (OSError, UnsafeFile):
            return None
        return data.decode("utf-8", errors="replace")
    return None

# The records an agent's transcript shows.
TRANSCRIPT_RECORDS = (Gated, ToolRan, Again, Retried, ApprovalRequested, ApprovalDecided, Ended)


class AuditIndex:
    """The audit log's records by agent, read incrementally: a page of one agent reads only its own."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._offset = 0
        self._by_agent: dict[str, list[AuditEntry]] = {}
        self._lock = threading.Lock()

    def of(self, agent: str) -> list[AuditEntry]:
        with self._lock:
            try:
                size = self.path.stat().st_size
            except OSError:
                size = 0
            if size < self._offset:  # a new log
                self._offset, self._by_agent = 0, {}
            while self._offset < size:
                entries, offset = read_from(self.path, self._offset)
                if offset == self._offset:
                    break  # a line still being written
                self._offset = offset
                for entry in entries:
                    if isinstance(entry.record, TRANSCRIPT_RECORDS) and entry.agent is not None:
                        self._by_agent.setdefault(entry.agent, []).append(entry)
            return list(self._by_agent.get(agent, ()))


def live_calls(entries: list[AuditEntry], record: RunRecord) -> tuple[int, int]:
    """The tool calls and denials of ``record``'s attempt still going (the gate's records of an attempt its
    record does not hold yet): the counts a running agent's row shows besides its finished attempts'."""
    if record.final:
        return 0, 0
    done = {a.number for a in record.attempts}
    calls = denials = 0
    for entry in entries:
        gated = entry.record
        if isinstance(gated, Gated) and gated.attempt not in done:
            calls += 1
            denials += gated.decision == DENY
    return calls, denials


@dataclass(frozen=True)
class Call:
    """One tool call of an agent: what it asked, what the gate decided and why, and what it got back."""

    attempt: int
    time: str
    tool: str
    input: JSON
    decision: str
    atom: str
    rule: str
    reason: str
    result: str | None = None
    is_error: bool = False


@dataclass(frozen=True)
class Note:
    """Something else in an agent's transcript: a retry, a series sent back, an approval, the outcome."""

    attempt: int
    time: str
    kind: str
    text: str


def transcript(entries: list[AuditEntry]) -> list[Call | Note]:
    """An agent's audit records as its transcript: each gate decision with the result of the call it let
    through (the `tool` record after it), and the other events in between, in order."""
    out: list[Call | Note] = []
    open_calls: dict[tuple[int, str], int] = {}  # (attempt, tool) -> index of the last allowed call without a result
    for entry in entries:
        r, when = entry.record, entry.time
        attempt = _attempt(r)
        if isinstance(r, Gated):
            call = Call(attempt, when, r.tool or "", r.input, r.decision, r.atom or "", r.rule or "", r.reason or "")
            out.append(call)
            if call.decision == ALLOW:
                open_calls[(attempt, call.tool)] = len(out) - 1
        elif isinstance(r, ToolRan):
            index = open_calls.pop((attempt, r.tool or ""), None)
            if index is not None:
                prior = out[index]
                assert isinstance(prior, Call)
                out[index] = replace(prior, result=r.result, is_error=r.is_error)
        elif isinstance(r, Retried):
            out.append(Note(attempt, when, "retry", f"attempt {attempt} was rejected by {', '.join(r.checks)}: "
                                                    "sent back with the checks' feedback"))
        elif isinstance(r, Again):
            why = "with what a person sent back" if r.sent_back else "on its kept work"
            out.append(Note(attempt, when, "again", f"series {r.series} started {why} (after {r.previous})"))
        elif isinstance(r, ApprovalRequested):
            out.append(Note(attempt, when, "asked", f"asked a person: {r.summary} ({r.gate_reason})"))
        elif isinstance(r, ApprovalDecided):
            out.append(Note(attempt, when, "decided", f"{r.status} by {r.by or ''}: {r.reason or ''}"))
        elif isinstance(r, Ended):
            out.append(Note(attempt, when, "outcome", f"{r.label} {(r.commit or '')[:12]}".strip()))
    return out


def _attempt(record: AuditRecord) -> int:
    """The attempt a record belongs to; 0 for the run's own records."""
    if isinstance(record, (Gated, ToolRan, Retried)):
        return record.attempt
    if isinstance(record, (ApprovalRequested, ApprovalDecided)) and record.attempt is not None:
        return record.attempt
    return 0


@dataclass(frozen=True)
class Limit:
    name: str
    peak: str  # what the agent reached (over all attempts, the highest)
    limit: str  # what it could reach ("" when the task sets no bound)


def limits_of(state: StateDir, record: RunRecord) -> list[Limit]:
    """The task's limits beside the peaks the attempts reached; none when the run keeps no task."""
    kept = state_text(state, state.task_manifest(record.agent_id))
    if kept is None:
        return []
    try:
        raw = tomllib.loads(kept)
        limits = LimitsSection.model_validate(((raw.get("agent") or {}).get("limits")) or {})
    except ValueError:
        return []
    attempts = record.attempts

    def peak(of: Any) -> Any:
        return max((of(a) for a in attempts), default=0)

    tokens, cost = sum(a.tokens for a in attempts), sum(a.cost_usd for a in attempts)
    return [
        Limit("time", f"{peak(lambda a: a.duration_s):.1f} s", f"{limits.timeout_s} s"),
        Limit("turns", str(peak(lambda a: a.turns)), str(limits.max_turns)),
        Limit("tool calls", str(peak(lambda a: a.tool_calls)), str(limits.max_tool_calls)),
        Limit("tokens (all attempts)", str(tokens), str(limits.max_tokens or "")),
        Limit("cost (all attempts)", f"${cost:.4f}", f"${limits.max_cost_usd}" if limits.max_cost_usd else ""),
        Limit("memory", f"{peak(lambda a: a.peak_memory_mb):.0f} MB", f"{limits.memory_mb} MB"),
        Limit("processes", str(peak(lambda a: a.peak_processes)), str(limits.max_processes)),
        Limit("disk written", f"{peak(lambda a: a.disk_mb):.1f} MB", f"{limits.disk_mb} MB" if limits.disk_mb else ""),
        Limit("cpus", "", str(limits.cpus or "")),
    ]


@dataclass(frozen=True)
class PolicyView:
    mode: str
    role: str
    tools: tuple[str, ...]
    gates: tuple[tuple[str, str], ...]  # (atom, kind)
    sandbox: tuple[tuple[str, str], ...]
    verify: tuple[tuple[str, str], ...]
    protected: tuple[str, ...]
    text: str  # the whole document, for whoever reads it all


def policy_of(state: StateDir, agent_id: str) -> PolicyView | None:
    """The compiled policy an agent ran under, read as the gate reads it (`runtime.policy.document`): None when
    there is none, or it is not one (its hash, format or shape wrong)."""
    from runtime.policy.document import PolicyDocument, PolicyError

    text = state_text(state, state.run(agent_id) / "agent-ro" / "policy.json")
    if text is None:
        return None
    try:
        doc = PolicyDocument.read(json.loads(text))
    except (ValueError, PolicyError):
        return None
    return PolicyView(doc.mode, doc.role, doc.tools, tuple((e.atom, e.kind) for e in doc.gates),
                      tuple((e.atom, e.kind) for e in doc.sandbox), tuple((e.atom, e.kind) for e in doc.verify),
                      doc.protected, text)


# -- plan runs ----------------------------------------------------------------------------------

@dataclass
class SubtaskView:
    id: str
    sequence: int
    round: int
    uses: tuple[str, ...]
    agent: str
    status: SubtaskRowStatus
    label: str
    commit: str | None
    started: float | None = None  # its (last) dispatch, in seconds after the run started
    ended: float | None = None
    merged_as: str | None = None
    alongside: list[str] = field(default_factory=list)  # the subtasks it ran in parallel with


@dataclass
class PlanView:
    run_id: str
    status: PlanStatus
    goal: str
    base: str
    base_branch: str | None
    integration: str
    created: float
    updated: float
    detail: str | None
    subtasks: list[SubtaskView]
    checks: list[tuple[str, int]]  # (command, exit code)
    judgements: list[tuple[JudgementStatus, str]]  # (status, reason)
    replans: list[str]
    merged: tuple[str | None, str | None] | None  # (into, commit) of the accepted result
    report: str | None  # the run's report (a file of the run's folder)
    duration: float


def plan_view(state: StateDir, run_id: str) -> PlanView | None:
    from runtime.orchestration.events import Dispatch, Judged, Merged, PlanCheck, Replan, RunEnd, SubtaskEnd
    from runtime.orchestration.state import OrchestratorState

    store = OrchestratorState.read_only(state.root / "orchestrator.sqlite")
    if store is None:
        return None
    try:
        row = store.run(run_id)
        if row is None:
            return None
        subtask_rows = store.subtasks(run_id)
        merges = store.merges(run_id)
        events = store.events(run_id)
    finally:
        store.close()
    entries = row.plan.get("subtask")
    uses = {str(s.get("id")): s.get("uses") for s in entries if isinstance(s, dict)} if isinstance(entries, list) else {}
    start = row.created
    subtasks = [SubtaskView(r.subtask_id, r.sequence, r.round, _names(uses.get(r.subtask_id)), r.agent_id, r.status,
                            r.label or r.status, r.commit_sha, merged_as=merges.get(r.subtask_id)) for r in subtask_rows]
    by_id = {s.id: s for s in subtasks}
    checks: list[tuple[str, int]] = []
    judgements: list[tuple[JudgementStatus, str]] = []
    replans: list[str] = []
    merged = None
    report = None
    end = row.updated
    for when, event in events:
        sub = by_id.get(event.subtask) if isinstance(event, (Dispatch, SubtaskEnd)) else None
        if isinstance(event, Dispatch) and sub is not None:
            sub.started, sub.ended = when - start, None
        elif isinstance(event, SubtaskEnd) and sub is not None:
            sub.ended = when - start
        elif isinstance(event, PlanCheck):
            checks.append((event.command, event.exit_code))
        elif isinstance(event, Judged):
            judgements.append((event.status, event.reason))
        elif isinstance(event, Replan):
            replans.append(f"{event.reason} (new: {', '.join(event.subtasks)})")
        elif isinstance(event, Merged):
            merged = (event.into, event.commit)
        elif isinstance(event, RunEnd):
            report = event.report or None
    now = max([end, *(start + s.ended for s in subtasks if s.ended is not None)])
    for s in subtasks:
        if s.started is None:
            continue
        s_end = s.ended if s.ended is not None else now - start
        s.alongside = [o.id for o in subtasks if o is not s and o.started is not None
                       and o.started < s_end and (o.ended if o.ended is not None else now - start) > s.started]
    report_text = state_text(state, Path(report), 64 * 1024) if report else None  # only the run's own report
    return PlanView(run_id, row.status, row.goal, row.base, row.base_branch, row.integration, start, end, row.detail,
                    subtasks, checks, judgements, replans, merged, report_text, max(now - start, 0.001))


def _names(value: JSON) -> tuple[str, ...]:
    """A plan's list of subtask ids as stored (none when it has none)."""
    return tuple(map(str, value)) if isinstance(value, list) else ()
