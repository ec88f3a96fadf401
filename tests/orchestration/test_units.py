"""The orchestration's pure logic, fast: judging, fan-in, state, and a round over a scripted executor."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import anyio
import pytest

from runtime.manifests.catalog import Catalog
from runtime.orchestration.events import MergeCommitted
from runtime.orchestration.executor import Job, SubtaskResult
from runtime.orchestration.fanin import integrate
from runtime.orchestration.judge import judge
from runtime.orchestration.plans.load import load_plan
from runtime.orchestration.rounds import RoundContext, agent_id_for, questions_in, run_round
from runtime.orchestration.state import OrchestratorState
from runtime.spawn.outcome import Attempt, Outcome
from runtime.workspace.git import Git
from tests.conftest import REPO
from tests.support import git


class _Verdict:
    def __init__(self, status: str, reason: str, learn=()) -> None:
        self.status, self.reason, self.learn = status, reason, list(learn)


# -- judge ---------------------------------------------------------------------------------------
def test_judge_names_every_gap_and_asks_no_reviewer_then():
    asked = []
    verdict = judge({"a": "ok", "b": "failed(llm)"}, {"c": ["x.py"]}, [("pytest", 1, "line\n1 failed")],
                    review=lambda: asked.append(1))
    assert verdict.status == "replan" and asked == []
    assert verdict.gap == ["subtask b ended failed(llm)", "subtask c conflicts with earlier work in: x.py",
                           "plan check `pytest` fails (exit 1):\nline\n1 failed"]


def test_judge_says_why_each_subtask_is_not_ok():
    verdict = judge({"a": "rejected", "b": "failed(llm)", "c": "ok"}, {}, [],
                    causes={"a": "quality::tests-green: The tests are not green", "b": ""})
    assert verdict.gap == ["subtask a ended rejected: quality::tests-green: The tests are not green",
                           "subtask b ended failed(llm)"]


def test_an_outcome_s_cause_is_the_work_s_first_failing_check_else_its_message():
    from runtime.spawn.outcome import Attempt, CheckRecord, Outcome

    checks = [CheckRecord("output::report-format", "report-fields", "rejected", "Your final report is missing"),
              CheckRecord("scope::files-whitelist", "scope-whitelist", "passed", "fine"),
              CheckRecord("quality::tests-green", "tests-green", "rejected", "\n## The tests are not green:\n  1 failed")]
    rejected = Outcome("rejected", None, "ag", "edit-local", message="m", attempts=[Attempt(1, checks=checks)])
    assert rejected.cause() == "quality::tests-green: The tests are not green:"
    only_report = Outcome("rejected", None, "ag", "edit-local", attempts=[Attempt(1, checks=checks[:2])])
    assert only_report.cause() == "output::report-format: Your final report is missing"
    passed = [CheckRecord("quality::tests-green", "tests-green", "passed", "ok")]
    refused = Outcome("rejected", None, "ag", "edit-local", message="\nthe merge conflicts in a.py\nmore",
                      attempts=[Attempt(1, checks=passed)])
    assert refused.cause() == "the merge conflicts in a.py"
    failed = Outcome("failed", "llm", "ag", "edit-local", message="openai/x: HTTP 500 " + "y" * 400, attempts=[])
    assert failed.cause().startswith("openai/x: HTTP 500") and len(failed.cause()) == 300
    assert Outcome("ok", None, "ag", "edit-local").cause() == ""


def test_judge_accepts_clean_work_and_defers_to_the_reviewer():
    assert judge({"a": "ok"}, {}, [("true", 0, "")]).status == "ok"
    ok = judge({"a": "ok"}, {}, [], review=lambda: _Verdict("ok", "fine", ["learned"]))
    assert (ok.status, ok.reason, ok.learn) == ("ok", "fine", ["learned"])
    no = judge({"a": "ok"}, {}, [], review=lambda: _Verdict("replan", "docs missing"))
    assert (no.status, no.gap) == ("replan", ["reviewer: docs missing"])


# -- state ---------------------------------------------------------------------------------------
def test_state_counts_dispatches_and_keeps_merges_and_events(tmp_path):
    state = OrchestratorState(tmp_path / "o.sqlite")
    state.create_run("r", None, {}, "base", "main", "run/r")
    state.put_subtask("r", "s", round=1, sequence=1, agent_id="", status="pending")
    assert [state.dispatched("r", "s") for _ in range(3)] == [1, 2, 3]
    state.put_subtask("r", "s", round=1, sequence=1, agent_id="r.s", status="ok")
    assert state.subtask("r", "s").status == "ok" and state.subtask("r", "s").dispatches == 3
    state.record_merge("r", "s", "c1", "m1")
    state.event("r", MergeCommitted("s", "m1"))
    assert state.merges("r") == {"s": "m1"} and state.events_of("r", MergeCommitted) == [MergeCommitted("s", "m1")]
    state.close()
    again = OrchestratorState(tmp_path / "o.sqlite")  # what --resume reads
    assert again.merges("r") == {"s": "m1"} and again.subtask("r", "s").agent_id == "r.s"


# -- fan-in --------------------------------------------------------------------------------------
def _repo(tmp_path: Path) -> Git:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    (repo / "a.txt").write_text("a\n")
    (repo / "b.txt").write_text("b\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    for branch, path, text in (("agent/x", "a.txt", "x\n"), ("agent/y", "b.txt", "y\n"), ("agent/z", "a.txt", "z\n")):
        git(repo, "checkout", "-q", "-b", branch, "main")
        (repo / path).write_text(text)
        git(repo, "commit", "-qam", branch)
    git(repo, "checkout", "-q", "main")
    git(repo, "branch", "run/r", "main")
    return Git(repo)


def test_fanin_merges_in_order_reports_conflicts_and_never_merges_twice(tmp_path):
    g = _repo(tmp_path)
    state = OrchestratorState(tmp_path / "o.sqlite")
    state.create_run("r", None, {}, g.resolve("main"), "main", "run/r")
    accepted = [(s, f"agent/{s}", g.resolve(f"agent/{s}")) for s in ("x", "y", "z")]
    first = integrate(g, state, "r", "run/r", accepted)
    assert set(first.merged) == {"x", "y"} and first.conflicts == {"z": ["a.txt"]}
    head = g.resolve("run/r")
    second = integrate(g, state, "r", "run/r", accepted[:2])
    assert second.merged == first.merged and g.resolve("run/r") == head  # recorded: not merged again
    fresh = OrchestratorState(tmp_path / "lost.sqlite")  # merged, but the record was lost (a crash in between)
    fresh.create_run("r", None, {}, g.resolve("main"), "main", "run/r")
    third = integrate(g, fresh, "r", "run/r", accepted[:1])
    assert third.merged["x"] == first.merged["x"] and g.resolve("run/r") == head


# -- rounds --------------------------------------------------------------------------------------
class ScriptedExecutor:
    """Ends each job with the label the test gives its subtask; records what it was asked."""

    def __init__(self, labels: dict[str, str]) -> None:
        self.labels, self.jobs, self.stopped = labels, [], []
        self._results: dict[str, SubtaskResult] = {}

    async def start(self, job: Job) -> str:
        self.jobs.append(job)
        status, _, detail = self.labels.get(job.subtask_id, "ok").partition("(")
        outcome = Outcome(status, detail.rstrip(")") or None, job.agent_id, "edit-local", commit="c" * 40,
                          attempts=[Attempt(1, report=f"Summary: did {job.subtask_id}\nQuestions: why?\n")])
        self._results[job.subtask_id] = SubtaskResult(job.subtask_id, outcome)
        return job.subtask_id

    async def stop(self, handle: str) -> None:
        self.stopped.append(handle)

    async def collect(self, handle: str) -> SubtaskResult:
        return self._results[handle]


def _round(tmp_path, labels: dict[str, str], max_dispatches: int = 3, state: OrchestratorState | None = None):
    catalog = Catalog(REPO)
    plan = load_plan(catalog, REPO / "manifests" / "examples" / "plan" / "plan.toml")
    state = state or OrchestratorState(tmp_path / "o.sqlite")
    if state.run("r") is None:
        state.create_run("r", None, {}, "b" * 40, "main", "run/r")
    executor = ScriptedExecutor(labels)
    events: list[tuple[str, dict]] = []
    integrations = []

    async def integrate_so_far() -> str:
        integrations.append(len(executor.jobs))
        return "h" * 40

    ctx = RoundContext("r", 1, state, executor, catalog, max_dispatches, {}, lambda sid, res: f"output of {sid}",
                       lambda kind, **data: events.append((kind, data)), integrate_so_far, base="b" * 40,
                       catalog_digest=catalog.digest())
    anyio.run(run_round, ctx, list(plan.subtasks))
    return ctx, executor, events, integrations, state


def test_a_round_runs_its_groups_in_order_with_the_integration_as_base(tmp_path):
    ctx, executor, events, integrations, _ = _round(tmp_path, {})
    assert [j.subtask_id for j in executor.jobs] == ["fix-mean", "add-median", "document"]
    assert integrations == [2, 3]  # after each sequence group
    first, last = executor.jobs[0], executor.jobs[-1]
    assert (first.base, last.base) == ("b" * 40, "h" * 40)  # the second group starts from the integration
    assert last.context == "output of fix-mean\n\noutput of add-median" and first.context is None
    assert first.agent_id == agent_id_for("r", "fix-mean", 1) == "r.fix-mean"
    assert {sid: r.outcome.label for sid, r in ctx.round_results.items()} == \
           {"fix-mean": "ok", "add-median": "ok", "document": "ok"}


def test_a_subtask_whose_inputs_failed_is_not_dispatched(tmp_path):
    ctx, executor, _, _, _ = _round(tmp_path, {"add-median": "rejected"})
    assert [j.subtask_id for j in executor.jobs] == ["fix-mean", "add-median"]
    assert ctx.results["document"].outcome.label == "failed(dependency)"
    assert "add-median" in ctx.results["document"].outcome.message


def test_too_many_dispatches_end_as_a_loop_and_accepted_work_is_never_rerun(tmp_path):
    _, _, _, _, state = _round(tmp_path, {"fix-mean": "rejected", "add-median": "rejected"}, max_dispatches=1)
    ctx, executor, _, _, _ = _round(tmp_path, {}, max_dispatches=1, state=state)  # the replanned round
    assert ctx.results["fix-mean"].outcome.label == "failed(loop)" and executor.jobs == []
    accepted = Outcome("ok", None, "r.fix-mean", "edit-local", commit="c" * 40)
    state.put_subtask("r", "fix-mean", status="ok", outcome_json=json.dumps(accepted.to_dict()))  # as if accepted
    ctx, executor, _, _, _ = _round(tmp_path, {}, max_dispatches=5, state=state)
    assert "fix-mean" not in [j.subtask_id for j in executor.jobs]
    assert ctx.results["fix-mean"].outcome.label == "ok"


@pytest.mark.parametrize("report, found", [
    ("Summary: x\nQuestions: which API?\n", ["which API?"]),
    ("## Questions\n- one\n- none\n2. two\n", ["one", "two"]),
    ("Summary: x\n", []),
    (None, []),
])
def test_questions_are_read_from_the_report(report, found):
    assert questions_in(report) == found


def test_resume_reads_the_run_once_with_its_latest_plan_and_replans(tmp_path):
    from runtime.errors import FatalError, UsageError
    from runtime.orchestration.run import resumed_run

    state = OrchestratorState(tmp_path / "orchestrator.sqlite")
    state.create_run("r1", str(tmp_path / "plan.toml"), {"plan": {"goal": "first"}}, "b" * 40, "main", "run/r1")
    state.update_run("r1", replans=2, plan={"plan": {"goal": "replanned"}})
    state.create_run("r2", None, {"plan": {}}, "c" * 40, None, "run/r2")
    state.update_run("r2", status="accepted")
    state.close()
    resumed = resumed_run(tmp_path, "r1")
    assert (resumed.base, resumed.base_branch, resumed.integration) == ("b" * 40, "main", "run/r1")
    assert resumed.plan_data == {"plan": {"goal": "replanned"}} and resumed.replans == 2
    with pytest.raises(UsageError, match="no run r9"):
        resumed_run(tmp_path, "r9")
    with pytest.raises(FatalError, match="already ended \\(accepted\\)"):
        resumed_run(tmp_path, "r2")


def test_every_event_kind_is_one_class_and_comes_back_from_the_state_as_it_went_in():
    from runtime.orchestration import events

    assert len(events.EVENTS) == len({cls.kind for cls in events.EVENTS.values()})
    sent = [events.RunStart("goal", "b" * 40, "run/r1"), events.Replan("why", ("a gap",), ("s1", "s2")),
            events.SubtaskEnd("s1", "ok", "c" * 40), events.SubtaskEnd("s2", "rejected", None, "tests fail"),
            events.AgentProgress("s1", "r1.s1", 1, "running", 2, 3, 0, 1.5, 0.0)]
    for event in sent:
        stored = json.loads(json.dumps(event.data()))
        assert events.from_stored(event.kind, stored) == event
    assert "cause" not in sent[2].data() and sent[3].data()["cause"] == "tests fail"  # optional: left out when None
    assert "node" not in sent[4].data()
    assert sent[0].to_json("r1") == {"event": "run-start", "run": "r1", "goal": "goal", "base": "b" * 40,
                                     "integration": "run/r1", "version": events.EVENTS_VERSION}
