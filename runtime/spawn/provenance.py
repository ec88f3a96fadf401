"""A spawn's attestations (`runtime.attest`): the predicate of its verified commit and of the merge it makes,
from what the orchestrator itself holds (the task it read, the policy its attempts ran under, the verdict's
checks, the gate's and the egress proxy's records in the audit log), signed and stored beside the commit."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from runtime import __version__
from runtime.attest.statement import CheckFacts, EgressFacts, GateFacts, Predicate, TaskFacts, merge_predicate
from runtime.attest.store import NOTES_REF, attest
from runtime.audit.log import read_lines
from runtime.audit.records import AuditEntry, Egress, Gated
from runtime.verify.kinds.record import CheckRecord

if TYPE_CHECKING:
    from runtime.spawn.outcome import Attempt
    from runtime.spawn.pipeline import SpawnSetup


def checks_of(records_: Sequence[CheckRecord]) -> list[CheckFacts]:
    return [CheckFacts(atom=c.atom, kind=c.kind, status=str(c.status), tests=c.tests, test_edits=list(c.test_edits),
                       review=list(c.review)) for c in records_]


def _entries(setup: SpawnSetup, since: int) -> Iterator[AuditEntry]:
    """This agent's gate and egress records from byte ``since`` of the log on: the lines written since the run
    started, not the whole log (a plan's grows with every agent), and of those only the lines that name this
    agent and kind are parsed (each line is canonical JSON: `"agent":"<id>"` is spelt so in it)."""
    named = b'"agent":' + json.dumps(setup.agent_id).encode() + b',"data"'
    kinds = (b'"kind":"gate"', b'"kind":"egress"')
    try:
        with open(setup.state.audit, "rb") as handle:
            handle.seek(since)
            for raw in handle:
                if raw.endswith(b"\n") and named in raw and any(k in raw for k in kinds):
                    entries, _ = read_lines(raw)
                    yield from entries
    except FileNotFoundError:
        return


def _activity(setup: SpawnSetup, head: str, since: int) -> tuple[GateFacts, EgressFacts]:
    """The gate's decisions and the egress of this agent id, as the audit log holds them from ``since`` on."""
    decisions: Counter[str] = Counter()
    requests = refused = up = down = 0
    hosts: set[str] = set()
    for entry in _entries(setup, since):
        record = entry.record
        if isinstance(record, Gated):
            decisions[record.decision] += 1
        elif isinstance(record, Egress) and record.phase is None:
            if record.event == "request":
                count = record.count or 1
                requests += count
                if record.decision != "allow":
                    refused += count
                elif record.host:
                    hosts.add(record.host)
            elif record.event == "end":
                up += record.bytes_up or 0
                down += record.bytes_down or 0
    gate = GateFacts(tool_calls=sum(decisions.values()), decisions=dict(sorted(decisions.items())), audit_head=head)
    return gate, EgressFacts(requests=requests, refused=refused, bytes_up=up, bytes_down=down, hosts=sorted(hosts))


def work_predicate(setup: SpawnSetup, base: str, attempts: Sequence[Attempt], head: str, since: int = 0) -> Predicate:
    """The predicate of the verified commit of ``attempts`` on ``base``; ``head``: the audit record the commit
    message names (`Audit-Head`); ``since``: where in the log this run's records start (0: a run that carries on an
    earlier one reads them all)."""
    task, agent = setup.task, setup.agent
    gate, egress = _activity(setup, head, since)
    last = attempts[-1] if attempts else None
    return Predicate(
        made="work", runtime=__version__, agent_id=setup.agent_id, role=task.role.name,
        task=TaskFacts(path=str(task.path), sha256=task.digest, goal=task.goal),
        base=base, policy_sha256=last.policy if last is not None and last.policy else None,
        backend=agent.backend, model=agent.model, sandbox=setup.options.use_sandbox, limits=agent.limits,
        attempts=len(attempts), verified=True, checks=checks_of(last.checks) if last is not None else [],
        gate=gate, egress=egress)


def attest_work(setup: SpawnSetup, commit: str, base: str, attempts: Sequence[Attempt], head: str,
                since: int = 0) -> None:
    attest(setup.git, commit, setup.branch, work_predicate(setup, base, attempts, head, since),
           setup.state.run(setup.agent_id))


def attest_merge(setup: SpawnSetup, merged: str, commit: str, into: str, parents: Sequence[str],
                 checks: Sequence[CheckRecord]) -> None:
    """The merge commit ``merged`` of the verified ``commit`` into ``into``, its checks run again on it."""
    predicate = merge_predicate(into, commit, list(parents), checks_of(checks), agent_id=setup.agent_id,
                                role=setup.task.role.name)
    attest(setup.git, merged, f"refs/heads/{into}", predicate, setup.state.run(setup.agent_id))


def attested(setup: SpawnSetup, commit: str) -> bool:
    """Whether ``commit`` has a note under the attestations' ref (a resumed run attests what it lacks)."""
    return setup.git.run("notes", f"--ref={NOTES_REF}", "list", commit, ok=(0, 1)).returncode == 0
