"""The attempt loop: run, verify, and on a rejection run again with the feedback.

Only a rejection uses up a retry. A breached limit ends the run as
exhausted(limit); a broken model, agent, workspace or check that could not
run ends it as failed(kind). Every attempt is recorded.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from runtime.audit.records import (
    CheckJudged,
    Egress,
    Escalated,
    NeedsReview,
    PolicyUpdate,
    Retried,
    ScratchThrown,
    Tampering,
    record_of,
)
from runtime.errors import AgentFailed, LimitExhausted, ManifestError, RunFailure
from runtime.manifests.catalog import Catalog
from runtime.manifests.locate import catalog_now
from runtime.manifests.role import load_role
from runtime.outcomes import OutcomeStatus
from runtime.policy.compile import compile_document
from runtime.policy.document import PolicyDocument, PolicyError
from runtime.sandbox.agent import agent_sandbox
from runtime.sandbox.identity import agent_user
from runtime.sandbox.launch import hand_over
from runtime.spawn.agent_process import TRUST_BUNDLE, TRUST_CA, AttemptSetup, declared_env, limit_check, run_attempt
from runtime.spawn.backends import backend_for
from runtime.spawn.backends.base import ModelAccess
from runtime.spawn.outcome import Attempt, CheckRecord, Verdict
from runtime.spawn.progress import Progress, ProgressState
from runtime.spawn.scratch_writes import scratch_note, throw_away_scratch
from runtime.spawn.sockets import remove_socket_folder, socket_folder
from runtime.spawn.state import RunStatus
from runtime.spawn.world import prepare_world
from runtime.verify.commands import CommandLog
from runtime.verify.kinds.record import by_cause
from runtime.verify.kinds.report_text import field as report_field
from runtime.verify.kinds.result import CheckStatus
from runtime.verify.passes import VerifyContext, judge_work
from runtime.verify.review import reviewer_for
from runtime.verify.test_runs import load_hidden
from runtime.workspace.changes import WorkspaceMissing, check_worktree
from runtime.workspace.tree import remove_tree

if TYPE_CHECKING:
    from runtime.approvals.service import ApprovalService
    from runtime.lang.jsontypes import JSONObject
    from runtime.sandbox.egress import EgressProxy
    from runtime.spawn.pipeline import SpawnRun


ESCALATION = "escalation"  # the report's field an agent ends with when the task cannot be done as asked


def escalation(report: str) -> str | None:
    """Why the agent says the task cannot be done as asked (its report's `Escalation:` field), or None."""
    reason = report_field(report, ESCALATION)
    return None if reason is None or reason.strip().casefold() in ("none", "no", "n/a", "-") else reason.strip()


def feedback_for(rejected: list[CheckRecord]) -> str:
    """The feedback of the rejecting checks, the work's own first: it is also the outcome's message, whose
    first lines a person reads as the reason (a missing report after them, never hiding them)."""
    parts = [f"## {c.atom} ({c.kind}) rejected your work\n\n{c.feedback.strip()}" for c in by_cause(rejected)]
    return "\n\n".join(parts)


def _start_broker(run: SpawnRun) -> tuple[ModelAccess | None, Path | None]:
    """The backend's way to the model (the broker, the CLI's proxy), which alone holds the keys."""
    return backend_for(run.agent.backend).model_access(run)


class PolicyInForce:
    """The policy an agent's calls are judged by: compiled again from the catalog as it is now (`policy_now`)
    before each retry and whenever a person allows an asked call, so a rule they wrote with it ("always" in the
    console, `runtime allow`) holds from the agent's next call on."""

    def __init__(self, run: SpawnRun) -> None:
        self.run, self.doc, self.attempt = run, run.policy, 0
        self._lock = threading.Lock()

    def refresh(self) -> PolicyDocument:
        with self._lock:
            self.doc = policy_now(self.run, self.doc, self.attempt)
            return self.doc


def _start_approvals(run: SpawnRun, folder: Path | None,
                     in_force: PolicyInForce | None = None) -> tuple[ApprovalService | None, Path | None]:
    """The run's approvals service: its socket next to the broker's, in the same short folder
    (bound read-only into the sandbox), or in a folder of its own when there is no broker. None in a
    run nobody watches (`unattended`): the agent's side then refuses every ask at once.

    Returns the service and the folder when it made one (the caller removes it). Decisions live in
    the state folder's `approvals.sqlite`, which no sandbox binds.
    """
    from runtime.approvals.service import ApprovalService, console_notifier
    from runtime.approvals.store import Approval, ApprovalStore, iso

    own = None
    if folder is None:
        own = folder = socket_folder(run.state.root)
    if run.options.unattended:
        return None, own
    try:
        store = ApprovalStore.for_state(run.state.root)
        explicit = run.options.state_dir or os.environ.get("RUNTIME_STATE_DIR")
        hint = shlex.join(["--state-dir", str(run.state.root)]) if explicit else ""
        printed = console_notifier(store, hint=hint)
        notifier = run.notifier()

        def on_pending(approval: Approval) -> None:
            printed(approval)
            notifier.send("waiting", approval.agent, request=approval.id, call=approval.summary,
                          reason=approval.gate_reason, expires_at=iso(approval.expires))
        remote = run.options.orchestrator
        service = ApprovalService(folder / "approvals.sock", run.agent_id, store,
                                  timeout_s=run.agent.limits.approval_timeout_s, audit=run.audit,
                                  on_pending=on_pending, forward=remote.approve if remote else None,
                                  on_allowed=(lambda _: in_force.refresh()) if in_force is not None else None).start()
    except BaseException:
        if own is not None:
            remove_socket_folder(run.state.root, own)
        raise
    return service, own


def policy_now(run: SpawnRun, current: PolicyDocument, attempt: int) -> PolicyDocument:
    """The run's policy compiled again from its catalog as it is now, for the next attempt: a rule a person added
    while the last one ran ("always" in the console, `runtime allow`) holds for this one, written where the gate
    reads the policy. Verify judges every attempt by the checks the run began with. A catalog that no longer
    compiles leaves the policy as it was (audited): the last one that did is the one in force."""
    try:
        catalog = Catalog(Path(catalog_now(run.catalog.root, run.git.root)))
        role = load_role(catalog, run.task.role.name)
        fresh = compile_document(role, run.task, run.worktree, catalog, submodules=run.submodules, mode=current.mode)
    except (ManifestError, PolicyError, OSError) as exc:
        run.audit.append(PolicyUpdate(attempt=attempt, hash=current.hash, kept=True,
                                      error=" ".join(str(exc).split())[:1000]), run.agent_id)
        return current
    if fresh.hash == current.hash:
        return current
    fresh.write(run.run_ro / "policy.json")
    run.audit.append(PolicyUpdate(attempt=attempt, hash=fresh.hash, catalog=str(catalog.root)), run.agent_id)
    return fresh


def fresh_home(home: Path) -> None:
    """Empty the agent's home before an attempt: nothing it (or code it ran) left there — client
    settings, shell start-up files, caches — carries over to the next attempt. Nothing is followed,
    and no depth or mode the agent left stops it (`runtime.workspace.tree`)."""
    for entry in os.scandir(home):
        with contextlib.suppress(FileNotFoundError):
            remove_tree(entry.path)


def _start_egress(run: SpawnRun, folder: Path) -> EgressProxy | None:
    """The agent's egress proxy, for a role that may reach the web and declares domains; else None
    (then the sandbox has no way out at all). Every request it sees goes to the audit log."""
    from runtime.sandbox.egress import EgressProxy, egress_rules

    rules = egress_rules(run.policy, run.credentials)
    if rules is None:
        return None

    def audit(record: JSONObject) -> None:
        run.audit.append(record_of(Egress.kind, record), run.agent_id)

    proxy = EgressProxy(folder / "egress.sock", rules, audit=audit).start()
    if proxy.ca is not None:
        # what the sandbox's clients trust: the system's roots and this run's CA (for the credentialed names alone)
        (run.run_ro / TRUST_BUNDLE).write_bytes(proxy.ca.trust_bundle())
        (run.run_ro / TRUST_CA).write_bytes(proxy.ca.certificate_pem)
    return proxy


def _redact_transcripts(run: SpawnRun, attempt_dir: Path, report: str | None) -> str | None:
    """Known secret values leave neither the transcripts on disk nor the report."""
    redactor = run.audit.redactor
    if not redactor:
        return report
    for name in ("stdout.log", "stderr.log"):
        path = attempt_dir / name
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            clean = redactor.redact(text)
            if clean != text:
                path.write_text(clean, encoding="utf-8")
    return redactor.redact(report) if report else report


def _stderr_tail(attempt_dir: Path) -> str:
    try:
        text = (attempt_dir / "stderr.log").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""
    # The last line by newline alone: splitlines() would also cut at a CR or a form feed in the text,
    # and keep only what the agent wrote after it.
    return f": {text.split(chr(10))[-1][:300]}" if text else ""


async def run_attempts(run: SpawnRun) -> Verdict:
    """Attempts until the checks pass or the retries are spent; a failure on the way is a Verdict too.
    A new series (`runtime again`) follows the earlier attempts the record holds, numbered after them."""
    attempts: list[Attempt] = list(run.journal.record.attempts)
    try:
        return await _attempts(run, attempts)
    except RunFailure as exc:
        return Verdict(exc.outcome, exc.detail, exc.message, tuple(attempts))


async def _attempts(run: SpawnRun, attempts: list[Attempt]) -> Verdict:
    agent = run.agent
    broker = sock_folder = approvals = approvals_folder = egress = None
    feedback = run.options.feedback if run.options.again else None  # what a person sent back
    series, first = run.journal.record.series, len(attempts)
    spent = (0, 0.0)  # tokens and cost of the earlier attempts
    base_results: dict[str, tuple[int, str]] = {}  # a failing command's run on the base, for every attempt
    hidden = await anyio.to_thread.run_sync(load_hidden, run.git, run.task)  # the oracle, read once
    with run.timed("setup"):  # the repository's world in the worktree ([worktree]), before any attempt
        world, made = await prepare_world(run)
    if made is not None:
        run.save(RunStatus.RUNNING, setup=made)
    try:
        with run.timed("model-access"):
            broker, sock_folder = _start_broker(run)
        in_force = PolicyInForce(run)
        approvals, approvals_folder = _start_approvals(run, sock_folder, in_force)
        sock_folder = sock_folder or approvals_folder
        assert sock_folder is not None  # without a broker's folder, _start_approvals made one
        egress = _start_egress(run, sock_folder)
        if run.options.use_sandbox:
            hand_over(sock_folder, agent_user())
        for k in range(agent.retries + 1):
            n = first + k + 1
            in_force.attempt = n
            policy = await anyio.to_thread.run_sync(in_force.refresh) if k else in_force.doc
            if approvals is not None:
                approvals.attempt = n
            fresh_home(run.home)
            progress = Progress(run.agent_id, attempt=n, listener=run.options.listener, audit=run.audit)
            binds = [run.run_ro] + ([sock_folder] if sock_folder else [])
            sandbox = (agent_sandbox(policy, run.worktree, run.home, binds, declared_env(run.task),
                                     toolchain=run.toolchain, submodules=run.submodules)
                       if run.options.use_sandbox else None)
            attempt_dir = run.state.attempt(run.agent_id, n)
            setup = AttemptSetup(run.task, policy, run.worktree, run.run_ro, run.home, attempt_dir, sandbox,
                                 broker.socket_path if broker else None, feedback, progress,
                                 usage=broker.usage if broker else None, approvals_socket=approvals.socket_path if approvals else None,
                                 egress_socket=egress.socket_path if egress else None,
                                 egress_trust=run.run_ro if egress is not None and egress.ca is not None else None,
                                 model=broker, toolchain=run.toolchain)
            with run.timed("agent"):
                result = await run_attempt(setup)
            progress.report = _redact_transcripts(run, attempt_dir, progress.report)
            # An agent that finished between two polls is judged on its final counts too.
            breach = result.breach or limit_check(setup)()  # also refreshes tokens and cost
            # The broker counts per spawn; an attempt records its own share.
            tokens, cost = progress.tokens - spent[0], progress.cost_usd - spent[1]
            spent = (progress.tokens, progress.cost_usd)
            attempt = Attempt(n, result.duration_s, result.exit_code, result.breach, progress.turns,
                              progress.tool_calls, progress.denials, tokens, cost, result.peak_memory_mb, progress.report,
                              peak_processes=result.peak_processes, disk_mb=result.disk_mb, series=series,
                              sent_back=feedback if k == 0 and run.options.again else None, policy=in_force.doc.hash)
            attempts.append(attempt)
            run.save(RunStatus.RUNNING, attempts=tuple(attempts))
            if breach == "loop":
                raise AgentFailed("loop", f"attempt {n} repeated the same tool call {progress.repeats} times in a row")
            if breach:
                raise LimitExhausted(breach, f"attempt {n} was stopped after {result.duration_s:.1f} s")
            if progress.error:
                raise AgentFailed(progress.error["kind"], progress.error["message"])
            try:
                check_worktree(run.git, run.worktree)
            except WorkspaceMissing as exc:
                raise AgentFailed("workspace", str(exc)) from None
            if result.exit_code != 0:
                raise AgentFailed("agent", f"the agent exited with code {result.exit_code}{_stderr_tail(attempt_dir)}")
            reason = escalation(progress.report or "")
            if reason is not None:
                # The agent found the task cannot be done as asked and said why: the honest way out. Its work is
                # neither judged nor committed; the person, or a plan's planner, decides what comes next.
                run.audit.append(Escalated(attempt=n, reason=reason[:4000]), run.agent_id)
                return Verdict(OutcomeStatus.ESCALATED, None, reason, tuple(attempts))
            progress.state = ProgressState.VERIFYING
            progress.changed()
            run.save(RunStatus.VERIFYING)
            with run.timed("verify"):
                # git over the whole tree: in a worker thread, as every git call of a spawn (plans share one loop)
                scratch_pass = await anyio.to_thread.run_sync(throw_away_scratch, run.git, run.worktree, run.base,
                                                             run.policy)
            thrown = scratch_pass.thrown
            if thrown:
                run.audit.append(ScratchThrown(attempt=n, paths=tuple(thrown[:200]), count=len(thrown)), run.agent_id)
            log = CommandLog(attempt_dir / "commands", run.audit.redactor)  # each judged command's whole output
            # the copy holds the work, not what the ignore rules hide (a .pyc is no test of its source)
            context = VerifyContext(run.git, run.base, run.worktree, run.state.run(run.agent_id), progress.report,
                                    running=run.verify_running(hidden, log), sandbox=sandbox, world=world,
                                    base_results=base_results, changes=scratch_pass.changes,
                                    ignored=scratch_pass.ignored, clear_nested=True,
                                    review=reviewer_for(run.task, agent, run.agent_id, progress.report or ""))
            with run.timed("verify"):
                attempt.checks = await judge_work(run.policy, context)
            if thrown:
                attempt.checks.append(CheckRecord("runtime", "scratch", CheckStatus.PASSED, scratch_note(thrown)))
            if setup.report_problem:
                attempt.checks.append(CheckRecord("runtime", "report-file", CheckStatus.REJECTED, setup.report_problem))
            for check in attempt.checks:
                run.audit.append(CheckJudged(attempt=n, atom=check.atom, check=check.kind, status=check.status,
                                             feedback=check.feedback[:4000]), run.agent_id)
            forged = [c for c in attempt.checks if c.tampering]
            if forged:
                # A forged report is no mistake a retry mends: the run ends, said as what it is.
                run.audit.append(Tampering(attempt=n, checks=tuple(c.atom for c in forged),
                                           evidence=tuple([t for c in forged for t in c.tampering][:50])), run.agent_id)
                return Verdict(OutcomeStatus.REJECTED, "tampering", feedback_for(forged), tuple(attempts))
            errors = [c for c in attempt.checks if c.status == CheckStatus.ERROR]
            if errors:
                raise AgentFailed("verify", "; ".join(f"{c.atom} could not run: {c.feedback}" for c in errors))
            rejected = [c for c in attempt.checks if c.status == CheckStatus.REJECTED]
            if rejected and all(c.review for c in rejected):
                # Every check passed and a reviewer asks a person to look: no retry answers that.
                run.audit.append(NeedsReview(attempt=n, findings=tuple([f for c in rejected for f in c.review][:50])),
                                 run.agent_id)
                return Verdict(OutcomeStatus.NEEDS_REVIEW, None, feedback_for(rejected), tuple(attempts))
            if not rejected:
                return Verdict(OutcomeStatus.OK, None, "", tuple(attempts))
            feedback = feedback_for(rejected)
            if k < agent.retries:
                attempt.feedback = feedback
                run.audit.append(Retried(attempt=n, checks=tuple(c.atom for c in rejected)), run.agent_id)
                continue
            return Verdict(OutcomeStatus.REJECTED, None, feedback, tuple(attempts))
        raise AssertionError("unreachable: the last attempt returns")  # pragma: no cover
    finally:
        if egress is not None:
            egress.close()
        if approvals is not None:
            approvals.close()  # a request still pending expires (audited)
        if broker is not None:
            broker.close()
        if sock_folder is not None:
            remove_socket_folder(run.state.root, sock_folder)
