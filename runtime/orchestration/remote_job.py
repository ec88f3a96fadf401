"""One job on a worker node that has no repository of its own: the spawn pipeline in a private checkout.

What arrives is plain data: the `Job` (as JSON) and the base commit as a git bundle. The worker
makes a throwaway repository from the bundle, runs the job through the same pipeline as a local
run (its own worktree, bubblewrap sandbox, gate, verify and local retries) with a state folder of
its own, and returns the outcome, its audit records and the verified agent branch as a bundle
that holds only what the base does not. The orchestrator's repository is never touched here: it
imports the bundle and checks it again (a worker is not trusted to have verified honestly).

Nothing here imports ray: the Ray executor wraps `run_job` as a remote function, and this module
runs the same without it (which is how its tests and a worker's own logs can reproduce a job).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anyio

from runtime.errors import FatalError
from runtime.manifests.catalog import Catalog
from runtime.manifests.task import task_from_manifest
from runtime.spawn.outcome import Outcome
from runtime.spawn.pipeline import SpawnOptions, spawn_task
from runtime.workspace.git import Git, GitError

BASE_REF = "refs/runtime-export/base"  # the one ref a base bundle holds


@dataclass(frozen=True)
class RemoteResult:
    """What a worker sends back: all plain data (the bundle as bytes, None when there is no commit)."""

    result_json: str  # `SubtaskResult.to_json()`, without a bundle path (the orchestrator writes one)
    bundle: bytes | None
    audit: list[dict[str, Any]]  # the worker's audit records, in order, for the orchestrator's one log


def base_bundle(git: Git, commit: str, folder: Path) -> Path:
    """The base commit as a bundle (everything it needs): what a worker builds its checkout from."""
    path = folder / f"base-{commit[:12]}.bundle"
    if not path.exists():
        ref = f"{BASE_REF}-{commit[:12]}"
        git.run("update-ref", ref, commit)
        try:
            tmp = path.with_suffix(".tmp")
            git.run("bundle", "create", "--quiet", str(tmp), ref)
            tmp.replace(path)
        finally:
            git.run("update-ref", "-d", ref, ok=None)
    return path


def run_job(job_json: str, base: bytes, use_sandbox: bool = True) -> RemoteResult:
    """Run one job in a private checkout made from ``base`` (a bundle); see the module's text."""
    from runtime.orchestration.executor import Job, SubtaskResult

    job = Job.from_json(job_json)
    folder = Path(tempfile.mkdtemp(prefix="runtime-job-"))
    try:
        repo = folder / "repo"
        repo.mkdir()
        bundle = folder / "base.bundle"
        bundle.write_bytes(base)
        git = _init(repo)
        git.run("fetch", "--quiet", "--no-tags", str(bundle), "+refs/*:refs/runtime-base/*")
        git.run("update-ref", "refs/heads/base", job.base)
        git.run("checkout", "--quiet", "base")
        state = folder / "state"
        options = SpawnOptions(repo=repo, base=job.base, use_sandbox=use_sandbox, state_dir=state,
                               catalog=job.catalog, context=job.context)
        outcome = anyio.run(_spawn, job, options)
        out: bytes | None = None
        if outcome.status == "ok" and outcome.commit and outcome.branch:
            path = folder / "agent.bundle"
            git.run("bundle", "create", "--quiet", str(path), f"refs/heads/{outcome.branch}", f"^{job.base}")
            out = path.read_bytes()
        # The worker's checkout and its inspection commit go with it; the outcome's message says what happened.
        outcome = replace(outcome, worktree=None, inspection=None)
        return RemoteResult(SubtaskResult(job.subtask_id, outcome).to_json(), out, _audit(state))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _init(repo: Path) -> Git:
    import subprocess

    subprocess.run(["git", "init", "--quiet", str(repo)], check=True, capture_output=True)
    return Git(repo)


async def _spawn(job: Any, options: SpawnOptions) -> Outcome:
    role = "-"
    try:
        catalog = Catalog(Path(job.catalog))
        if catalog.digest() != job.catalog_digest:
            raise FatalError(f"the catalog at {job.catalog} on this node is not the one the plan was made with "
                             "(its files differ): install the same runtime and catalog on every node")
        task = task_from_manifest(catalog, job.task_manifest, job.task_path, job.task_digest)
        task, role = replace(task, agent_id=job.agent_id), task.role.name
        return await spawn_task(task, catalog, options)
    except (FatalError, GitError) as exc:
        return Outcome("failed", "runtime", job.agent_id, role, message=str(exc))


def _audit(state: Path) -> list[dict[str, Any]]:
    try:
        lines = (state / "audit.jsonl").read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in lines if line.strip()]
