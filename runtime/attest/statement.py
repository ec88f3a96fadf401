"""What an attestation says: an in-toto Statement (v1) whose subject is one commit and its tree, and whose
predicate is ours (`Predicate`, versioned; its JSON Schema is `schemas/attestation.schema.json`).

The predicate follows SLSA provenance's split: what was asked (the task, the role, the compiled policy's hash,
the base) and what ran (the backend and model, the sandbox and limits in force, the verify summary, the gate's
decision counts with the audit chain's head, the egress totals). A merge the orchestrator makes is attested too
(``made = "merge"``): its parents, the commit it merged, and the checks that ran again on the merged tree.

Every field is one the orchestrator itself measured or decided; nothing here is read from the agent's word.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from runtime.manifests.agent import LimitsSection
from runtime.model import Model
from runtime.verify.kinds.summary import TestsSummary

STATEMENT_TYPE: Final = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE: Final = "https://agent-runtime.invalid/attestation/verified-commit/v1"
PREDICATE_VERSION: Final = 1


class _Facts(Model):
    """A part of the predicate: kebab-case keys, strict, no unknown key (as every manifest table), built by
    its Python field names."""

    model_config = ConfigDict(populate_by_name=True)


class TaskFacts(_Facts):
    """The task as the run read it: its file, its digest (the commit's `Task-Sha256`), its goal."""

    path: str
    sha256: str
    goal: str


class CheckFacts(_Facts):
    """One check of the verdict: its atom and kind, its status, and for a tests-green check what the verdict
    rests on (which tests, from where, against which base run; the commit's `Tests:` trailer in full)."""

    atom: str
    kind: str
    status: str
    tests: TestsSummary | None = None
    test_edits: list[str] = []
    review: list[str] = []


class GateFacts(_Facts):
    """The gate's decisions on the agent's tool calls (every attempt of its series), and the audit chain's
    record written just before the commit (its hash closes the chain's prefix this attestation vouches for)."""

    tool_calls: int = Field(ge=0)
    decisions: dict[str, int]  # decision (allow, deny, ask...) -> count, as the audit log holds them
    audit_head: str


class EgressFacts(_Facts):
    """What went out through the egress proxy: requests decided, those refused, bytes each way."""

    requests: int = Field(ge=0)
    refused: int = Field(ge=0)
    bytes_up: int = Field(ge=0)
    bytes_down: int = Field(ge=0)
    hosts: list[str] = []


class MergeFacts(_Facts):
    """A merge the orchestrator made: into which branch, of which commit, with which parents; the checks that
    ran again on the merged tree (none where the plan judges the integration branch as a whole, later)."""

    into: str
    merged: str
    parents: list[str]
    checks: list[CheckFacts] = []
    run_id: str | None = None
    subtask: str | None = None


class Predicate(_Facts):
    """The predicate of a verified commit (``made = "work"``) or of the orchestrator's merge (``"merge"``)."""

    version: Literal[1] = PREDICATE_VERSION
    made: Literal["work", "merge"]
    runtime: str  # the runtime's version
    agent_id: str | None = None
    role: str | None = None
    task: TaskFacts | None = None
    base: str
    policy_sha256: str | None = None
    backend: str | None = None
    model: str | None = None
    sandbox: bool | None = None
    limits: LimitsSection | None = None
    attempts: int = Field(default=0, ge=0)
    verified: bool
    checks: list[CheckFacts] = []
    gate: GateFacts | None = None
    egress: EgressFacts | None = None
    merge: MergeFacts | None = None


class Digest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    gitCommit: str  # noqa: N815 (in-toto's digest names)
    gitTree: str  # noqa: N815


class Subject(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    name: str
    digest: Digest


class Statement(BaseModel):
    """An in-toto Statement v1 of one commit."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)

    type: Literal["https://in-toto.io/Statement/v1"] = Field(default=STATEMENT_TYPE, alias="_type")
    subject: list[Subject] = Field(min_length=1, max_length=1)
    predicateType: Literal["https://agent-runtime.invalid/attestation/verified-commit/v1"] = PREDICATE_TYPE  # noqa: N815
    predicate: Predicate

    @property
    def commit(self) -> str:
        return self.subject[0].digest.gitCommit

    @property
    def tree(self) -> str:
        return self.subject[0].digest.gitTree

    def to_json(self) -> bytes:
        """The statement as the envelope carries it: compact JSON, keys as written, kebab-case inside."""
        return self.model_dump_json(by_alias=True, exclude_none=True).encode("utf-8")


def statement(commit: str, tree: str, name: str, predicate: Predicate) -> Statement:
    return Statement(subject=[Subject(name=name, digest=Digest(gitCommit=commit, gitTree=tree))], predicate=predicate)


def merge_predicate(into: str, merged: str, parents: list[str], checks: list[CheckFacts] | None = None, *,
                    agent_id: str | None = None, role: str | None = None, run_id: str | None = None,
                    subtask: str | None = None) -> Predicate:
    """The predicate of a merge the orchestrator made of ``merged`` into ``into``."""
    from runtime import __version__

    return Predicate(made="merge", runtime=__version__, agent_id=agent_id, role=role, base=parents[0], verified=True,
                     merge=MergeFacts(into=into, merged=merged, parents=parents, checks=checks or [], run_id=run_id,
                                      subtask=subtask))
