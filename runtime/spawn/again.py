"""`runtime again ID`: a new series of attempts for an agent whose run finished, on its own work.

The run is spawned again from what its record keeps: the task as it was spawned (`StateDir.task_manifest`:
a task file's text, or an inline plan subtask's tables written out), the catalog it was compiled from as it
is now (a rule written since by "always" or `runtime allow` holds),
inside the OS sandbox or not, watched or not. The new series starts from the head of the agent's branch
(its verified or its kept work) and is judged against the same base, with the task's full retries; its
first attempt is given what a person sent back (`feedback`) as a retry is given verify's. Its attempts
follow the earlier ones in the record, so the console and `runtime status` show every series.

An interrupted run is resumed as `runtime spawn` resumes it, with the feedback. What is refused, in one
line, before anything runs: no run of that id, one still running (its lock is held), one whose work was
merged already (a new change is a new task), one whose branch is gone.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.errors import UsageError
from runtime.manifests.catalog import Catalog
from runtime.manifests.locate import catalog_now
from runtime.manifests.task import Task, task_from_manifest
from runtime.spawn.state import RunRecord, RunStatus, StateDir
from runtime.workspace.locks import holder

if TYPE_CHECKING:
    from runtime.spawn.pipeline import SpawnOptions

SENT_BACK = "## A person reviewing your work sent it back"
MAX_FEEDBACK = 32 * 1024  # what a person sends back, as the record keeps it (`TEXT_BOUNDS`)


def again_record(state: StateDir, agent_id: str) -> RunRecord:
    """The finished run of ``agent_id`` that may go again, or a UsageError saying why not."""
    record = state.read(agent_id)
    if record is None:
        raise UsageError(f"no run of agent {agent_id} in {state.root} (`runtime status` lists them)")
    if holder(state.locks, agent_id) is not None:
        raise UsageError(f"agent {agent_id} is running now: wait for it to finish, then send it back")
    if not record.final and record.status != RunStatus.INTERRUPTED:
        raise UsageError(f"agent {agent_id} is {record.status}, and its orchestrator is gone: `runtime status` "
                         "says more")
    if record.merged:
        raise UsageError(f"agent {agent_id}'s work was merged ({record.merged[:12]}): it is done; give the next "
                         "change a task and an agent id of its own")
    return record


def again_task(state: StateDir, record: RunRecord, repo: Path | None = None) -> tuple[Task, Catalog]:
    """The task the run was spawned with, loaded again from its catalog as it is now (`catalog_now`: the rule a
    person just wrote with "always" or `runtime allow` is read)."""
    manifest = state.task_manifest(record.agent_id)
    if not manifest.is_file():
        raise UsageError(f"agent {record.agent_id}'s run keeps no task ({manifest} is missing: it ran under an older "
                         "runtime): spawn its task under a new agent id")
    catalog_root = Path(record.catalog) if record.catalog else None
    if catalog_root is None or not catalog_root.is_dir():
        raise UsageError(f"agent {record.agent_id} was compiled from the catalog {record.catalog or '(unknown)'}, "
                         "which is gone: spawn its task under a new agent id")
    catalog = Catalog(Path(catalog_now(catalog_root, repo)) if repo is not None else catalog_root)
    task = task_from_manifest(catalog, manifest.read_text(encoding="utf-8"), record.task, record.task_sha256)
    return dataclasses.replace(task, agent_id=record.agent_id), catalog


def again_options(record: RunRecord, state: StateDir, repo: Path, feedback: str | None, merge: bool) -> SpawnOptions:
    """The spawn's options as the run had them, carrying on its work with ``feedback``."""
    from runtime.spawn.pipeline import SpawnOptions

    text = (feedback or "").strip() or None
    if text is not None and len(text) > MAX_FEEDBACK:
        raise UsageError(f"what is sent back is {len(text)} characters; at most {MAX_FEEDBACK} reach the agent")
    if text is not None:
        text = f"{SENT_BACK}\n\n{text}"
    # Judged against the base it had; `--merge` merges into the branch it came from.
    base = record.base_branch if merge and record.base_branch else record.base
    return SpawnOptions(repo=repo, base=base, merge=merge, use_sandbox=record.sandboxed, state_dir=state.root,
                        catalog=record.catalog or None, unattended=record.unattended, again=True, feedback=text,
                        subtask=record.subtask)
