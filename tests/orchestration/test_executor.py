"""The executor seam: plain data in and out, and every method of the local executor, `stop` included."""

from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from runtime.manifests.catalog import Catalog
from runtime.manifests.task import load_task
from runtime.orchestration.executor import Job, LocalExecutor, SubtaskResult
from runtime.spawn.outcome import Attempt, CheckRecord, Outcome
from runtime.spawn.pipeline import SpawnOptions
from runtime.workspace.git import Git
from tests.conftest import REPO
from tests.spawn.conftest import SH_FIX, SH_REPORT, Spawner, marker, no_survivors


def _job(s: Spawner, task_path: Path, subtask: str, catalog: Catalog, digest: str | None = None) -> Job:
    task = load_task(catalog, task_path)
    return Job("run-1", subtask, f"run-1.{subtask}", task.manifest, str(task.path), task.digest, str(catalog.root),
               digest or catalog.digest(), s.base, None)


def test_jobs_and_results_are_plain_data():
    job = Job("r", "s", "r.s", "[task]\n", "/p/t.toml", "ab" * 32, "/cat", "cd" * 32, "0" * 40, "ctx")
    assert Job.from_json(job.to_json()) == job
    assert json.loads(job.to_json())["task_manifest"] == "[task]\n"
    outcome = Outcome("rejected", None, "r.s", "edit-local", base="0" * 40, branch="agent/r.s", message="m",
                      attempts=[Attempt(1, 2.5, 0, None, 3, 4, 1, 10, 0.1, 12.0, "report",
                                        checks=[CheckRecord("a::b", "tests-green", "rejected", "f")])])
    result = SubtaskResult("s", outcome)
    again = SubtaskResult.from_json(result.to_json())
    assert again == result and again.report == "report" and again.outcome.label == "rejected"


def _run(executor_body):
    async def main():
        async with anyio.create_task_group() as group:
            await executor_body(group)
    anyio.run(main)


def _run_one(s: Spawner, job: Job) -> SubtaskResult:
    """One job through a local executor: its result."""
    options = SpawnOptions(repo=s.repo, state_dir=s.state, catalog=str(REPO))
    results = []

    async def body(group):
        executor = LocalExecutor(group, options, 1)
        results.append(await executor.collect(await executor.start(job)))

    _run(body)
    return results[0]


def test_the_local_executor_starts_collects_and_stops(spawner: Spawner):
    s = spawner
    catalog = Catalog(REPO)
    n = marker()
    fast = s.task(agent_id="ag-unused-1", command=f"{SH_FIX}; {SH_REPORT}")
    slow = s.task(agent_id="ag-unused-2", name="slow", command=f"sleep {n}; {SH_REPORT}")
    events: list[tuple[str, dict]] = []
    options = SpawnOptions(repo=s.repo, state_dir=s.state, catalog=str(REPO))
    results: dict[str, SubtaskResult] = {}

    async def body(group):
        executor = LocalExecutor(group, options, 2, lambda handle, event: events.append((handle, event)))
        fast_handle = await executor.start(_job(s, fast, "fast", catalog))
        slow_handle = await executor.start(_job(s, slow, "slow", catalog))
        results["fast"] = await executor.collect(fast_handle)
        await executor.stop(slow_handle)
        results["slow"] = await executor.collect(slow_handle)

    _run(body)
    assert results["fast"].outcome.label == "ok" and results["fast"].outcome.agent_id == "run-1.fast"
    assert results["fast"].commit is not None and s.sha("agent/run-1.fast") == results["fast"].commit
    assert results["slow"].outcome.label == "failed(stopped)"
    no_survivors(f"sleep {n}")
    assert {h for h, _ in events} == {"fast", "slow"}
    assert all(set(e) == {"agent", "attempt", "state", "turns", "tool_calls", "denials", "elapsed_s", "cost_usd", "writes"}
               for _, e in events)
    json.dumps(events)  # plain data


def test_a_job_naming_another_catalog_is_refused(spawner: Spawner):
    s = spawner
    catalog = Catalog(REPO)
    task = s.task(agent_id="ag-unused-3", command=f"{SH_FIX}; {SH_REPORT}")
    result = _run_one(s, _job(s, task, "t", catalog, digest="0" * 64))
    assert result.outcome.label == "failed(runtime)" and "not the one the plan was made with" in result.outcome.message
    assert s.sha("agent/run-1.t") is None


def test_a_job_placed_by_node_labels_is_refused_here(spawner: Spawner):
    s = spawner
    catalog = Catalog(REPO)
    task = s.task(agent_id="ag-unused-4", command=f"{SH_FIX}; {SH_REPORT}")
    result = _run_one(s, replace(_job(s, task, "t", catalog), node_labels={"pool": "big"}))
    assert result.outcome.label == "failed(runtime)" and "run it with --executor ray" in result.outcome.message
    assert s.sha("agent/run-1.t") is None


@pytest.mark.parametrize("inline", [False, True])
def test_a_task_crosses_as_its_manifest_and_loads_the_same(tmp_path, inline):
    from runtime.manifests.task import task_from_manifest
    from runtime.orchestration.plans.load import load_plan

    catalog = Catalog(REPO)
    plan = load_plan(catalog, REPO / "manifests" / "examples" / "plan" / "plan.toml") if inline else None
    task = plan.subtasks[0].task if plan else load_task(catalog, REPO / "manifests" / "examples" / "fix-tokenizer.toml")
    again = task_from_manifest(catalog, task.manifest, task.path, task.digest)
    assert (again.agent_id, again.role.name, again.fields, again.body, again.agent, again.digest) == \
           (task.agent_id, task.role.name, task.fields, task.body, task.agent, task.digest)


class BundlingExecutor:
    """The local executor, but its results come back as a worker's would: the agent branch as a bundle,
    gone from the orchestrator's repository until the orchestrator imports it."""

    def __init__(self, group, options, concurrency, listener=None, tamper: bool = False, forge: str | None = None) -> None:
        self.inner = LocalExecutor(group, options, concurrency, listener)
        self.repo, self.tamper, self.forge = Git(options.repo), tamper, forge

    async def start(self, job: Job) -> str:
        return await self.inner.start(job)

    async def stop(self, handle: str) -> None:
        await self.inner.stop(handle)

    async def collect(self, handle: str) -> SubtaskResult:
        result = await self.inner.collect(handle)
        branch = result.outcome.branch
        if result.outcome.commit is None or branch is None:
            return result
        bundle = Path(tempfile.mkdtemp()) / f"{handle}.bundle"
        if self.tamper:  # a worker that reports a commit its bundle does not hold
            self.repo.run("branch", "-f", branch, f"{branch}~1")
        outcome = result.outcome
        if self.forge is not None:  # a worker that adds a file outside the scope and says `ok` all the same
            tree = Path(tempfile.mkdtemp()) / "forge"
            self.repo.run("worktree", "add", "-q", str(tree), branch)
            (tree / self.forge).parent.mkdir(parents=True, exist_ok=True)
            (tree / self.forge).write_text("planted by a worker\n")
            self.repo.commit_all(tree, "verified work\n\nVerified: yes\n")
            self.repo.remove_worktree(tree)
            outcome = replace(outcome, commit=self.repo.resolve(branch))
        self.repo.bundle(branch, bundle)
        self.repo.delete_branch(branch)
        return SubtaskResult(result.subtask_id, outcome, str(bundle))


def _run_example_plan(orchestra, executor_factory):
    from runtime.orchestration.plans.load import load_plan
    from runtime.orchestration.run import RunOptions, run_plan

    catalog = Catalog(REPO)
    plan = load_plan(catalog, REPO / "manifests" / "examples" / "plan" / "plan.toml")
    options = RunOptions(repo=orchestra.repo, state_dir=orchestra.state, catalog=str(REPO), executor=executor_factory)
    return anyio.run(run_plan, plan, catalog, options)


def test_results_that_carry_their_work_as_a_bundle_are_imported_and_merged(orchestra):
    report = _run_example_plan(orchestra, BundlingExecutor)
    assert report.status == "accepted", report.reason
    for line in report.subtasks:
        assert line.label == "ok"
        assert Git(orchestra.repo).resolve(f"agent/{line.agent_id}") == line.commit  # imported, at the reported commit


def test_a_forged_ok_with_a_file_outside_the_scope_is_rejected_by_the_orchestrators_recheck(orchestra):
    report = _run_example_plan(orchestra, lambda *a: BundlingExecutor(*a, forge="ci/deploy.sh"))
    assert report.status == "rejected"
    labels = {line.subtask_id: line.label for line in report.subtasks}
    assert labels["fix-mean"] == "rejected" and labels["add-median"] == "rejected"
    messages = {line.subtask_id: line.message for line in report.subtasks}
    assert "re-check of the imported work failed" in messages["fix-mean"] and "ci/deploy.sh" in messages["fix-mean"]
    git = Git(orchestra.repo)
    run_branches = [b for b in git.text("for-each-ref", "--format=%(refname:short)", "refs/heads/run/").split()]
    for branch in run_branches:  # nothing planted reached the integration branch
        assert git.run("cat-file", "-e", f"{branch}:ci/deploy.sh", ok=None).returncode != 0


def test_a_bundle_without_the_reported_commit_rejects_the_work(orchestra):
    report = _run_example_plan(orchestra, lambda *a: BundlingExecutor(*a, tamper=True))
    assert report.status == "rejected"
    labels = {line.subtask_id: line.label for line in report.subtasks}
    assert labels["fix-mean"] == "rejected" and labels["add-median"] == "rejected"
    assert labels["document"] == "failed(dependency)"
