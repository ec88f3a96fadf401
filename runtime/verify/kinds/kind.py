"""A verify kind, and what its gatherer may ask of the work it judges.

A kind is one module of this package holding four things: its parameters (a frozen record, read once from
the table the compiled policy holds), its evidence (one pydantic model, the only definition of what the
kind is judged on: gatherers build it, atoms' examples are checked against it, `runtime schema` describes
it), its gatherer (async: it reads the change through ``Gathering`` and, for a command kind, runs
commands) and its judge (pure: parameters and evidence in, ``VerifyResult`` out). The module names them in
one ``Kind`` value, and ``runtime.verify.kinds.registry`` lists each once.

``Gathering`` is the context every gatherer gets, defined here, below its users: the spawn pipeline's
worktree, a merge's re-check and `runtime verify` each implement it (``runtime.verify.gather``). The
types it hands out (``Change``, ``CommandRun``) live here for the same reason: the workspace that lists
changes sits above this package and imports them from it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeAlias, TypeVar

from pydantic import ConfigDict

from runtime.model import Model

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONObject
    from runtime.verify.kinds.result import VerifyResult
    from runtime.verify.kinds.runners.plan import TestPlan
    from runtime.verify.kinds.runners.results import TestRun


@dataclass(frozen=True)
class Change:
    """One changed path (POSIX, relative to the worktree root); ``old_path`` only for renames.

    ``escapes`` marks content a path check cannot vouch for: a symlink resolving
    outside the worktree or into ``.git``, a nested repository, a tampered ``.git``,
    a folder git cannot hold; ``reason`` says which, when a path alone does not.
    """

    path: str
    kind: str
    old_path: str | None = None
    symlink_target: str | None = None
    escapes: bool = False
    reason: str | None = None


@dataclass(frozen=True)
class TestSide:
    """How one run of a test plan lays the test side over the work's copy, for that run alone
    (`runtime.verify.kinds.test_side`): ``name`` (`base-tests`: the base's tests on the base's test side, with the task's
    hidden tests; `new-tests`: the work's new tests), ``files`` (path -> the bytes laid there, or None: taken
    away) and ``checks`` (tamper checks, `runtime.verify.kinds.canaries`: path -> source, sealed where the runner loads
    sealed files) and ``locked``."""

    __test__ = False
    name: str = "base-tests"
    files: tuple[tuple[str, bytes | None], ...] = ()
    checks: tuple[tuple[str, bytes], ...] = ()
    # Test files the run holds read-only (the base's test modules, conftests and package files): code the run
    # imports early cannot rewrite a test before its runner reads it.
    locked: tuple[str, ...] = ()
    # Whether the package's JavaScript files are ES modules (package.json's `"type": "module"`): node's sealed
    # loader runs CommonJS alone (`runtime.verify.kinds.runners.node_test`).
    esm: bool = False
    # Whether the plan's steps without a runner run here (`tsc`, a lint): once, on the work's own test side,
    # which is the run of the new tests where there is one.
    plain: bool = True


# A reviewer's word on a change. Literal rather than an enum: a kind's evidence model holds it, and the
# evidence's JSON schema (`schemas/capability.schema.json`) says the three as they are.
ReviewVerdict: TypeAlias = Literal["ok", "concerns", "unavailable"]


@dataclass(frozen=True)
class Reviewed:
    """What a reviewer said of a change (`runtime.verify.kinds.review`): ``verdict`` `ok`, `concerns` (its ``findings``)
    or `unavailable` (``why`` it could not answer)."""

    verdict: ReviewVerdict
    findings: tuple[str, ...] = ()
    why: str = ""


@dataclass(frozen=True)
class CommandRun:
    """A command's exit code and combined output, as verify ran it."""

    exit_code: int
    output: str


class Evidence(Model):
    """The base of every kind's evidence: a manifest model (kebab-case keys, strict types, no unknown key),
    which a gatherer builds by its Python field names."""

    model_config = ConfigDict(populate_by_name=True)


class Gathering(Protocol):
    """What a kind's gatherer may ask about the work: read-only views of the change, the base and the report,
    and (for command kinds) running the task's commands on the work and on the base."""

    @property
    def changes(self) -> Sequence[Change]:
        """Every change against the base, in path order."""
        ...

    @property
    def report(self) -> str:
        """The agent's final report ('' when it gave none)."""
        ...

    def text(self, path: str) -> str | None:
        """A changed file's text in the work, read without following symlinks; None when it is not a small
        regular text file."""
        ...

    def size(self, path: str) -> int | None:
        """A file's size in the work (lstat alone); None when it is no regular file."""
        ...

    def source(self, path: str) -> bytes | None:
        """A changed file's bytes in the work as a program loading it reads them: through symlinks that stay in
        the tree (out of `.git`), whole up to ``MAX_SOURCE_BYTES``; None when it is no regular file there."""
        ...

    def base_source(self, path: str) -> bytes | None:
        """The bytes ``path`` had at the base (its current name; a renamed file's from its old name), from the
        object store, whole up to ``MAX_SOURCE_BYTES``; None when it was no regular file there."""
        ...

    def base_text(self, path: str) -> str | None:
        """The text ``path`` had at the base (that very path: a renamed file's old name must be asked by its
        old name); None when it was no small regular text file there."""
        ...

    def base_texts(self, paths: Iterable[str]) -> dict[str, str | None]:
        """The base's text of each of ``paths`` (current names; a renamed file's from its old name), from the
        base commit's object store: None for a regular file that is no small text file; paths that were no
        regular file there are left out."""
        ...

    def base_sizes(self, paths: Iterable[str]) -> dict[str, int]:
        """The base's size of each of ``paths`` (current names), from the object store; absent ones left out."""
        ...

    def base_files(self, globs: Collection[str]) -> list[str]:
        """The base commit's regular files matching ``globs`` (the whole tree, not only the change)."""
        ...

    async def run(self, command: str) -> CommandRun:
        """``command`` on the work, in its sandbox."""
        ...

    async def run_at_base(self, command: str) -> CommandRun | None:
        """``command`` on a checkout of the base, shown at the work's path; None where the caller has none."""
        ...

    async def run_tests(self, plan: TestPlan, side: TestSide) -> TestRun:
        """A test plan on the work, its test side laid as ``side`` says: each runner started by the
        orchestrator, writing its structured report where the work cannot reach (`runtime.verify.test_runs`)."""
        ...

    async def run_tests_at_base(self, plan: TestPlan) -> tuple[TestRun, BaseRunRef] | None:
        """The same plan on the base, cached per base commit, and which run it was; None where the caller
        has no base to run it on."""
        ...

    def package_json(self) -> str | None:
        """The base's package.json at the tree's root (the scripts a test command may name), if any."""
        ...

    async def review(self, change: str) -> Reviewed:
        """A reviewer's reading of ``change`` (a unified diff) against the task; `unavailable` where there is none."""
        ...


class BaseRunRef(Evidence):
    """Which run of the base judged the work: its cache key, the base commit, when it ran (seconds since the
    epoch) and whether this verify read it from the cache."""

    key: str
    base: str
    ran_at: float
    cached: bool


@dataclass(frozen=True, slots=True)
class NoParams:
    """The parameters of a kind that takes none."""

    @classmethod
    def read(cls, data: JSONObject) -> NoParams:
        return cls()


P = TypeVar("P")
E = TypeVar("E", bound=Evidence)
# What a source file may hold to be read whole by a static kind (the change's own per-file limit is lower).
MAX_SOURCE_BYTES = 64 * 1024 * 1024
PRIVATE_SET = "<set>"  # a private parameter's value in the compiled policy


@dataclass(frozen=True)
class Kind(Generic[P, E]):
    """One verify kind: its parameters (name -> manifest parameter type: what an atom naming the kind
    declares), how they are read into the kind's own record of them (``read_params``: the table the compiled
    policy or an atom's example holds, checked key by key, raising ``MalformedInput`` naming a parameter that
    is missing or of the wrong type), its evidence model, its gatherer and its judge, which both get the
    record. ``runs_commands``: gathered by running the task's commands, which a re-check of
    imported work leaves out and which must not change the work. ``optional``: parameters an atom of an
    older catalog may lack (its record reads them with a default). ``private``: see the field. ``base_key``: (the evidence key of the
    work's files, the key of the base's) of a kind whose evidence gained the base's side, for
    `runtime migrate`."""

    name: str
    params: Mapping[str, str]
    read_params: Callable[[JSONObject], P]
    evidence: type[E]
    gather: Callable[[P, Gathering], Awaitable[E]]
    judge: Callable[[P, E], VerifyResult]
    runs_commands: bool = False
    # Judged again on a simulated merge: a kind that reads the work's change once (a reviewer) is not.
    on_merge: bool = True
    optional: frozenset[str] = frozenset()
    base_key: tuple[str, str] | None = None
    # Parameters whose value the compiled policy (which the agent's sandbox shows) must not hold: it holds
    # only whether they are set (`<set>`), and verify reads the value from the task.
    private: frozenset[str] = frozenset()

    def evidence_from(self, data: Any) -> E:
        """Evidence given as plain data (an atom's example, a test's table), validated into the kind's model."""
        return self.evidence.model_validate(data, by_name=False)
