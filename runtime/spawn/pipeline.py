"""`runtime spawn`: one task manifest in, one verified commit (or a typed refusal) out.

The orchestrator alone touches git. It takes the agent id's lock, creates a
worktree on `agent/<id>` from the base, writes the bundle and the compiled
policy outside it, runs attempts (see `runtime.spawn.agent_process`) until the work
verifies or the retry budget is spent, then commits verified work on the agent
branch (and with `--merge`, merges it after re-checking a simulated merge).
Every phase is recorded in the run's state file and the audit log.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from runtime.attest.signing import ensure_key
from runtime.audit.log import AuditLog
from runtime.audit.records import Ended, Freed, Interrupted, Spawned
from runtime.audit.redact import Redactor, secrets_from_env
from runtime.errors import FatalError, ManifestError, RunFailure, UsageError
from runtime.manifests.agent import AgentSpec
from runtime.manifests.catalog import Catalog
from runtime.manifests.compose import compose_bundle
from runtime.manifests.locate import find_catalog
from runtime.manifests.task import Task, load_task
from runtime.outcomes import OutcomeStatus
from runtime.policy.compile import compile_document
from runtime.policy.document import SANDBOXED, STRICT, PolicyDocument
from runtime.sandbox.budget import check_limits
from runtime.sandbox.credentials import Credential
from runtime.sandbox.credentials import resolve as resolve_credentials
from runtime.sandbox.launch import preflight as sandbox_preflight
from runtime.sandbox.toolchain import ToolchainMounts, toolchain_mounts
from runtime.spawn.accept import accept, keep_for_inspection, last_checks, merge_verified
from runtime.spawn.agent_process import declared_env
from runtime.spawn.attempts import run_attempts
from runtime.spawn.caches import warming
from runtime.spawn.notify import Notifier
from runtime.spawn.outcome import Acceptance, Outcome, Verdict
from runtime.spawn.preflight import preflight, preflight_reach, preflight_tests, toolchain_file
from runtime.spawn.progress import Progress
from runtime.spawn.recover import Resume, ResumeMerge, clean_leftovers, recover
from runtime.spawn.remote import RemoteOrchestrator
from runtime.spawn.state import RecordStatus, RunRecord, RunStatus, StateDir, default_state_dir
from runtime.spawn.world import check_included
from runtime.verify.commands import CommandLog
from runtime.verify.passes import Running
from runtime.verify.test_runs import Hidden
from runtime.workspace.git import Git, GitError
from runtime.workspace.locks import acquire
from runtime.workspace.tree import remove_tree


@dataclass
class SpawnOptions:
    repo: Path = field(default_factory=Path.cwd)
    base: str | None = None
    merge: bool = False
    keep: bool = False
    use_sandbox: bool = True
    state_dir: Path | None = None
    catalog: str | None = None
    listener: Callable[[Progress], None] | None = None
    context: str | None = None  # outputs of earlier subtasks of a plan, added to the bundle
    # On a cluster's worker node: the orchestrator that sent the job, which makes the agent's model
    # calls with the keys only it holds and takes its approvals (`runtime.spawn.remote`). None: here.
    orchestrator: RemoteOrchestrator | None = None
    # A run nobody watches: what the gate would ask a person is refused at once (no approvals service, so
    # no agent waits out an expiry), and control files are never merged.
    unattended: bool = False
    # `runtime again`: a finished run's work carried on in a new series of attempts (`recover`), the first
    # of them given ``feedback`` (what a person reviewing the work sent back) as a retry is given verify's.
    again: bool = False
    feedback: str | None = None
    # `runtime spawn TASK --afresh`: a finished run's agent id started again from the current base and task file,
    # the old branch kept under a named ref (`recover`).
    afresh: bool = False
    subtask: str | None = None  # the plan subtask this spawn runs (recorded, for `runtime again`)


class PhaseClock:
    """Seconds spent per phase, summed over attempts, for the outcome's timings."""

    def __init__(self, **initial: float) -> None:
        self.timings: dict[str, float] = dict(initial)

    @contextlib.contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.timings[phase] = round(self.timings.get(phase, 0.0) + time.perf_counter() - started, 4)


class Journal:
    """The run's record in its state file, rewritten at every phase so that `runtime status` and a
    re-run read where the run got to. The one thing a spawn's phases change as they go, and only
    through `save`."""

    def __init__(self, state: StateDir, record: RunRecord) -> None:
        self._state, self.record = state, record

    def save(self, status: RecordStatus, **changes: Any) -> None:
        """Record ``status`` and ``changes`` (fields of `RunRecord`)."""
        self.record = self._state.write(self.record.with_(status=status, **changes))


@dataclass(frozen=True)
class SpawnSetup:
    """What a spawn knows before it creates anything: the checked task and where it will work."""

    task: Task
    catalog: Catalog
    git: Git
    state: StateDir
    audit: AuditLog
    options: SpawnOptions
    toolchain: ToolchainMounts | None  # the repository's tools, shown read-only in every sandbox
    clock: PhaseClock
    credentials: tuple[Credential, ...] = ()  # what the egress proxy adds for declared hosts (never the agent's)
    audit_from: int = 0  # the audit log's size when this spawn started: its records are after it

    @property
    def agent_id(self) -> str:
        return self.task.agent_id

    @property
    def branch(self) -> str:
        return f"agent/{self.task.agent_id}"

    @property
    def agent(self) -> AgentSpec:
        """The task's [agent] table (`spawn_task` refuses a task without one)."""
        if self.task.agent is None:
            raise ManifestError(self.task.src.path, 1, "the task has no [agent] table: say which backend runs it")
        return self.task.agent

    def timed(self, phase: str) -> contextlib.AbstractContextManager[None]:
        return self.clock.timed(phase)

    def notifier(self) -> Notifier:
        """The person's own `[notify]` command, told when the agent waits or the run ends."""
        return Notifier(self.catalog.notify, self.state.root, self.audit)


@dataclass(frozen=True, kw_only=True)
class SpawnRun(SpawnSetup):
    """A prepared spawn, as `_prepare` (or a resumed merge) made it: what the attempts, accepting
    the work and cleaning up read. Never changed after it is built; the state record changes only
    through its journal."""

    base: str
    base_branch: str | None
    worktree: Path
    run_ro: Path  # bundle and compiled policy, bound read-only into the sandbox
    home: Path
    policy: PolicyDocument
    resumed: str | None  # the commit an interrupted run had reached, when this run carries it on
    journal: Journal
    submodules: tuple[str, ...] = ()  # the base's gitlink folders: read-only to the agent, refused by the gate

    def save(self, status: RecordStatus, **extra: Any) -> None:
        self.journal.save(status, **extra)

    def verify_running(self, hidden: Hidden | None, log: CommandLog) -> Running:
        """How this spawn's verify passes run the task's commands (`runtime.verify.passes`): with the agent's
        home and toolchain, under its checks' limits, with the task's variables; the base's runs cached in the
        state folder for every agent and attempt judged against the same base."""
        return Running(self.home, self.catalog.toolchain, self.toolchain, check_limits(self.agent.limits, self.policy),
                       self.state.root / "base-tests", declared_env(self.task), hidden, log)


def load(task_path: str | Path, options: SpawnOptions) -> tuple[Task, Catalog]:
    catalog = Catalog(Path(find_catalog(options.catalog)))
    task = load_task(catalog, task_path)
    if task.agent is None:
        raise ManifestError(task.src.path, 1, "the task has no [agent] table: say which backend runs it")
    return task, catalog


async def spawn(task_path: str | Path, options: SpawnOptions) -> Outcome:
    task, catalog = load(task_path, options)
    return await spawn_task(task, catalog, options)


async def spawn_task(task: Task, catalog: Catalog, options: SpawnOptions) -> Outcome:
    """Spawn an already loaded task (a plan's subtasks arrive this way)."""
    if task.agent is None:
        raise ManifestError(task.src.path, 1, "the task has no [agent] table: say which backend runs it")
    # git, files and probes: in a worker thread, since parallel spawns share one event loop.
    started = time.perf_counter()
    git, toolchain, state, credentials = await anyio.to_thread.run_sync(_checked_before_anything, task, catalog,
                                                                        options)
    secrets = secrets_from_env(os.environ)
    for credential in credentials:
        secrets.update(credential.forms())
    audit = AuditLog(state.audit, redactor=Redactor(secrets))
    with acquire(state.locks, task.agent_id):
        clean_leftovers(state, git, task.agent_id)
        try:
            audit_from = state.audit.stat().st_size
        except FileNotFoundError:
            audit_from = 0
        setup = SpawnSetup(task, catalog, git, state, audit, options, toolchain,
                           PhaseClock(checks=round(time.perf_counter() - started, 4)), credentials, audit_from)
        finished = recover(setup)
        if isinstance(finished, ResumeMerge):
            return await _resume_merge(setup, finished)
        if isinstance(finished, Resume):
            return await _run(setup, finished)
        if finished is not None:
            return finished
        return await _run(setup)


def _checked_before_anything(task: Task, catalog: Catalog, options: SpawnOptions
                              ) -> tuple[Git, ToolchainMounts | None, StateDir, tuple[Credential, ...]]:
    """Everything cheap that can be wrong, checked before anything is created; then the state folder."""
    if options.use_sandbox:
        sandbox_preflight()
    preflight(task, models_here=options.orchestrator is None)
    catalog.notify.check()
    git = Git(options.repo)
    try:
        git.resolve(options.base or "HEAD")
    except GitError:
        if options.base:
            raise UsageError(f"--base {options.base}: no such revision in {git.root}") from None
        raise UsageError(f"{git.root} has no commits yet: an agent branches from a commit, so commit first") from None
    if options.merge:
        _check_merge_target(git, options)
    state_root = Path(options.state_dir or default_state_dir(git.root))
    preflight_tests(task, git, git.resolve(options.base or "HEAD"), sandboxed=options.use_sandbox, state=state_root)
    caches = state_root / "caches" if options.use_sandbox else None
    toolchain = toolchain_mounts(catalog.toolchain, git.root, caches) if catalog.toolchain else None
    world = catalog.toolchain.worktree
    check_included(git, world, catalog.toolchain.source)
    preflight_reach(task, git, git.resolve(options.base or "HEAD"), toolchain, sandboxed=options.use_sandbox,
                    toolchain_file=toolchain_file(catalog.layers, git.root),
                    setup_path=world.path if world.setup else ())
    # The policy as the worktree will have it, compiled once here: a role or toolchain it refuses (a
    # toolchain folder inside the write scope) is one line before any branch or worktree exists.
    egress = compile_document(task.role, task, git.root, catalog).egress()
    ensure_key()  # verified work is signed with it: a key that cannot be read or made stops the run here
    # the secrets the egress proxy adds for declared hosts, read now (never handed to the agent)
    credentials = resolve_credentials(egress.credentials) if egress is not None else ()
    if credentials:
        from runtime.sandbox.egress_ca import require

        require()  # the per-run CA's library, before anything is made
    if egress is not None:  # a credential for a host off the list is one line here, not a proxy that will not start
        from runtime.sandbox.egress import EgressRules  # roles that reach the web alone pay for its imports

        EgressRules(egress.domains, egress.addresses, egress.ports, credentials)
    state = StateDir(Path(options.state_dir or default_state_dir(git.root)).resolve())
    state.root.mkdir(parents=True, exist_ok=True)
    return git, toolchain, state, credentials


def _check_merge_target(git: Git, options: SpawnOptions) -> None:
    """`--merge` needs a branch to merge into that a merge can update: checked before anything is made."""
    branch = options.base if options.base and git.branch_exists(options.base) else None
    if options.base is None:
        branch = git.current_branch()
    if branch is None:
        raise UsageError(f"--merge needs a branch to merge into; {options.base or 'HEAD'} is not one "
                         "(check a branch out, or pass --base BRANCH)")
    dirty = git.dirty_checkout(branch)
    if dirty is not None:
        raise UsageError(f"--merge: {branch} is checked out in {dirty} with uncommitted changes, which the merge "
                         "would have to overwrite; commit or stash them first")


def _prepare(setup: SpawnSetup, resumed: Resume | None = None) -> SpawnRun:
    """The worktree on the agent branch, the run's folders, the compiled policy and the bundle."""
    task, git, options = setup.task, setup.git, setup.options
    worktree = setup.state.worktree(setup.agent_id)
    worktree.parent.mkdir(parents=True, exist_ok=True)
    base_branch: str | None = None
    if resumed is not None:
        # The interrupted run's work is on its branch: carry on from there, judged against the same base.
        base, base_branch = resumed.base, resumed.base_branch
        git.checkout_worktree(worktree, setup.branch)
    else:
        base = git.resolve(options.base or "HEAD")
        if options.base and git.branch_exists(options.base):
            base_branch = options.base
        elif not options.base:
            base_branch = git.current_branch()
        git.add_worktree(worktree, setup.branch, base)
    folder = setup.state.run(setup.agent_id)
    run_ro, home = folder / "agent-ro", folder / "home"
    run_ro.mkdir(parents=True, exist_ok=True)
    home.mkdir(parents=True, exist_ok=True)
    submodules = tuple(git.gitlinks(base))
    policy = compile_document(task.role, task, worktree, setup.catalog, submodules=submodules, mode=policy_mode(options))
    policy.write(run_ro / "policy.json")
    earlier = resumed.again if resumed is not None else None
    bundle = run_ro / "bundle.md"
    if earlier is None or not bundle.is_file():  # a new series keeps the bundle it had (a plan's context in it)
        bundle.write_text(compose_bundle(task.role, task, options.context), encoding="utf-8")
    setup.state.task_manifest(setup.agent_id).write_text(task.manifest, encoding="utf-8")
    record = RunRecord(setup.agent_id, role=task.role.name, task=str(task.path.resolve()), task_sha256=task.digest,
                       backend=setup.agent.backend, base=base, base_branch=base_branch, branch=setup.branch,
                       worktree=str(worktree), pid=os.getpid(),
                       resumed=resumed.commit if resumed is not None else None, catalog=str(setup.catalog.root),
                       sandboxed=options.use_sandbox, unattended=options.unattended,
                       subtask=earlier.subtask if earlier is not None else options.subtask,
                       attempts=earlier.attempts if earlier is not None else (),
                       series=earlier.series + 1 if earlier is not None else 1)
    run = SpawnRun(**_fields(setup), base=base, base_branch=base_branch, worktree=worktree, run_ro=run_ro,
                   home=home, policy=policy, resumed=resumed.commit if resumed is not None else None,
                   journal=Journal(setup.state, record), submodules=submodules)
    run.save(RunStatus.RUNNING)
    run.audit.append(Spawned(task=str(task.path), sha256=task.digest, role=task.role.name, backend=setup.agent.backend,
                             base=base, branch=run.branch, sandbox=options.use_sandbox), run.agent_id)
    return run


def policy_mode(options: SpawnOptions) -> str:
    """An agent inside the OS sandbox gets a sandboxed policy (shell commands judged by what the sandbox
    would refuse); one without it (`--no-os-sandbox`) the strict one, whose typed rules are all there is."""
    return SANDBOXED if options.use_sandbox else STRICT


def _fields(setup: SpawnSetup) -> dict[str, Any]:
    return {f.name: getattr(setup, f.name) for f in dataclasses.fields(SpawnSetup)}


async def _run(setup: SpawnSetup, resumed: Resume | None = None) -> Outcome:
    # git and file work runs in a worker thread: parallel spawns share one event loop.
    with setup.timed("prepare"):
        run = await anyio.to_thread.run_sync(_prepare, setup, resumed)
    # Each phase returns what it did; the outcome is built once, from those values, at the end.
    try:
        async with warming(run.git, run.base, run.toolchain):  # the build caches filled from the base, beside
            verdict = await run_attempts(run)
        with run.timed("commit"):
            acceptance: Acceptance | None = None
            inspection: str | None = None
            if verdict.status == OutcomeStatus.OK:
                acceptance = await accept(run, verdict)
            elif verdict.status == OutcomeStatus.FAILED and verdict.detail == "setup":
                pass  # what the worktree holds is setup's, never an agent's work: nothing is kept
            elif verdict.status == OutcomeStatus.ESCALATED:
                pass  # the agent said the task cannot be done as asked: no commit, its reason is the outcome
            else:
                inspection = await anyio.to_thread.run_sync(
                    keep_for_inspection, run, last_checks(verdict.attempts), verdict.label)
    except (anyio.get_cancelled_exc_class(), KeyboardInterrupt):
        # Ctrl-C or SIGTERM: the agent is stopped (its supervisor's own cleanup); its work so far is
        # committed on the agent branch and the run is left `interrupted`, which a re-run resumes.
        with anyio.CancelScope(shield=True), run.timed("cleanup"):
            await anyio.to_thread.run_sync(_keep_interrupted, run)
            await anyio.to_thread.run_sync(_remove_worktree, run)
        raise
    except BaseException as exc:
        # A fault of the runtime itself (not of the agent or its work): recorded as failed(runtime), then raised.
        crashed = _outcome(run, Verdict(OutcomeStatus.FAILED, "runtime", str(exc), ()), None, None)
        with anyio.CancelScope(shield=True), run.timed("cleanup"):
            if not run.options.keep:
                await anyio.to_thread.run_sync(_remove_worktree, run)
            # No attempt recorded: the agent had not run yet (its broker or sandbox would not start).
            if not run.journal.record.attempts:
                with contextlib.suppress(Exception):  # the fault being raised is what the user must see
                    crashed.id_free = await anyio.to_thread.run_sync(_free_agent_id, run, crashed)
        _record_outcome(run, crashed)
        raise
    with anyio.CancelScope(shield=True), run.timed("cleanup"):
        if not run.options.keep:
            await anyio.to_thread.run_sync(_remove_worktree, run)
    outcome = _outcome(run, verdict, acceptance, inspection)
    if _agent_did_nothing(outcome):
        outcome.id_free = await anyio.to_thread.run_sync(_free_agent_id, run, outcome)
    _record_outcome(run, outcome)
    return outcome


def _agent_did_nothing(outcome: Outcome) -> bool:
    """A run that failed before its agent did anything: no tool call, no report, nothing changed (a model
    that never answered, a sandbox that would not start). It leaves nothing to inspect."""
    return (outcome.status == OutcomeStatus.FAILED and outcome.commit is None and outcome.inspection is None
            and all(a.tool_calls == 0 and not a.report for a in outcome.attempts))


def _free_agent_id(run: SpawnRun, outcome: Outcome) -> bool:
    """Give the agent id back after a run that left nothing: its branch (still at the base) goes, and its
    state says the id is free, so the same command runs again without `runtime prune --unmerged`. A run
    that carries on interrupted work, or whose worktree was kept (--keep), keeps its claim."""
    if run.resumed is not None or run.options.keep or outcome.commit or outcome.inspection:
        return False
    try:
        if run.git.branch_exists(run.branch):
            if run.git.resolve(run.branch) != run.base:
                return False  # something is on it after all: kept, and the id with it
            run.git.delete_branch(run.branch)
    except GitError:
        return False
    run.audit.append(Freed(label=outcome.label, branch=run.branch), run.agent_id)
    return True


def _outcome(run: SpawnRun, verdict: Verdict, acceptance: Acceptance | None, inspection: str | None) -> Outcome:
    """The spawn's one Outcome, from the attempts' verdict and what accepting the work did."""
    status, detail, message = verdict.status, verdict.detail, verdict.message
    commit = merged = None
    if acceptance is not None:
        commit, merged = acceptance.commit, acceptance.merged
        if acceptance.failure is not None:
            status, detail, message = acceptance.failure
        elif acceptance.refused is not None:
            status, detail, message = OutcomeStatus.REJECTED, None, acceptance.refused
        elif acceptance.message:
            message = acceptance.message
    return Outcome(status, detail, run.agent_id, run.task.role.name, base=run.base, branch=run.branch, commit=commit,
                   merged=merged, inspection=inspection, worktree=str(run.worktree) if run.options.keep else None,
                   message=message, attempts=list(verdict.attempts), timings=dict(run.clock.timings))


def _keep_interrupted(run: SpawnRun) -> None:
    if run.journal.record.status in (RunStatus.COMMITTING, RunStatus.MERGING):
        return  # interrupted after the verified commit: `recover` finishes it from what git says
    message = "interrupted; the work so far is on the agent branch, and running the task again resumes it"
    attempts = run.journal.record.attempts
    work = keep_for_inspection(run, last_checks(attempts), RunStatus.INTERRUPTED)
    run.save(RunStatus.INTERRUPTED, label=RunStatus.INTERRUPTED, message=message, commit=None, merged=None, work=work,
             attempts=attempts)
    run.audit.append(Interrupted(branch=run.branch, work=work), run.agent_id)


def _record_outcome(run: SpawnRun, outcome: Outcome) -> None:
    run.save(outcome.status, label=outcome.label, message=outcome.message, commit=outcome.commit,
             merged=outcome.merged, attempts=tuple(outcome.attempts), id_free=outcome.id_free)
    run.audit.append(Ended(label=outcome.label, message=outcome.message, commit=outcome.commit, merged=outcome.merged),
                     run.agent_id)
    if run.options.subtask is None:  # a plan's subtask: the plan's end is told, not each of its agents
        lines = outcome.message.strip().splitlines()
        run.notifier().send("finished", run.agent_id, label=outcome.label, commit=outcome.commit,
                            message=lines[0][:300] if lines else "")


async def _resume_merge(setup: SpawnSetup, resume: ResumeMerge) -> Outcome:
    """Merge the verified commit of a run killed while committing or merging (checks run again)."""
    previous = resume.previous
    worktree = setup.state.worktree(setup.agent_id)
    folder = setup.state.run(setup.agent_id)
    (folder / "home").mkdir(parents=True, exist_ok=True)
    run = SpawnRun(**_fields(setup), base=previous.base, base_branch=previous.base_branch,
                   worktree=worktree, run_ro=folder / "agent-ro", home=folder / "home",
                   policy=compile_document(setup.task.role, setup.task, worktree, setup.catalog,
                                         mode=policy_mode(setup.options)),
                   resumed=previous.resumed, journal=Journal(setup.state, previous))
    attempts = previous.attempts
    verdict = Verdict(OutcomeStatus.OK, None, "the verified commit of an interrupted run, merged now", attempts)
    try:
        acceptance = await merge_verified(run, resume.commit)
    except RunFailure as exc:
        acceptance = Acceptance(resume.commit, failure=(exc.outcome, exc.detail, exc.message))
    outcome = _outcome(run, verdict, acceptance, None)
    _record_outcome(run, outcome)
    return outcome


def _remove_worktree(run: SpawnRun) -> None:
    try:
        run.git.remove_worktree(run.worktree)
    except (FatalError, OSError):
        with contextlib.suppress(OSError):
            remove_tree(run.worktree)
