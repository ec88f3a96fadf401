"""Re-running a task after its orchestrator died (runtime.spawn.recover), and the clean-up of what killed runs
left, on real git in tmp. The spawn is a stand-in holding what recover reads."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from runtime.attest.signing import TrustRoot, load_key
from runtime.attest.verdict import Repo, Status, check
from runtime.audit.records import AuditRecord
from runtime.errors import FatalError
from runtime.manifests.agent import LimitsSection
from runtime.spawn import sockets
from runtime.spawn.outcome import Outcome
from runtime.spawn.recover import Resume, ResumeMerge, clean_leftovers, recover
from runtime.spawn.state import RunRecord, StateDir
from runtime.workspace.git import Git
from runtime.workspace.locks import acquire
from tests.support import git

AGENT = "ag-1"
BRANCH = f"agent/{AGENT}"


class Audit:
    def __init__(self) -> None:
        self.records: list[tuple[str, str, dict[str, Any]]] = []

    def append(self, record: AuditRecord, agent: str | None = None) -> SimpleNamespace:
        self.records.append((record.kind_name(), agent, record.data()))
        return SimpleNamespace(hash="h")


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> tuple[Path, str]:
    """A repository with one commit on `trunk`, made once and copied for each test."""
    root = tmp_path_factory.mktemp("recover")
    repo = root / "repo"
    git(root, "init", "-q", "--template=", "-b", "trunk", str(repo))
    (repo / "a.py").write_text("a = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    return repo, git(repo, "rev-parse", "HEAD")


TASK_SHA = "e" * 64


@pytest.fixture
def setup(template, tmp_path, monkeypatch):
    source, base = template
    repo = tmp_path / "repo"
    shutil.copytree(source, repo, symlinks=True)
    state = StateDir(tmp_path / "state")
    monkeypatch.setenv("RUNTIME_SIGNING_KEY", str(tmp_path / "keys" / "signing"))  # a recovered commit is signed
    return SimpleNamespace(agent_id=AGENT, branch=BRANCH, git=Git(repo), state=state, audit=Audit(),
                           options=SimpleNamespace(merge=False, again=False, feedback=None, afresh=False,
                                                   use_sandbox=True), repo=repo, base=base,
                           task=SimpleNamespace(path=Path("tasks/fix.toml"), digest=TASK_SHA, goal="Fix a.",
                                                role=SimpleNamespace(name="edit-local")),
                           agent=SimpleNamespace(backend="builtin", model="scripted/fix", limits=LimitsSection()))


def record(setup, status: str, **fields: Any) -> RunRecord:
    fields = {"base": setup.base, "base_branch": "trunk", "branch": BRANCH, "role": "edit-local", **fields}
    return setup.state.write(RunRecord(AGENT, status, **fields))


def commit_on(setup, branch: str, message: str, parents: tuple[str, ...] | None = None) -> str:
    """A commit (the base's files) on ``branch`` with ``message``, made without any checkout."""
    parents = parents if parents is not None else (setup.base,)
    args = [a for p in parents for a in ("-p", p)]
    sha = git(setup.repo, "commit-tree", *args, "-m", message, f"{setup.base}^{{tree}}")
    git(setup.repo, "update-ref", f"refs/heads/{branch}", sha)
    return sha


def verified_message(agent: str = AGENT) -> str:
    return (f"agent {agent} (edit-local): Fix a.\n\nTask-Sha256: {TASK_SHA}\nAgent-Id: {agent}\nRole: edit-local\n"
            "Verified: yes\nAudit-Head: h\n")


def worktree(setup) -> Path:
    path = setup.state.worktree(AGENT)
    path.parent.mkdir(parents=True, exist_ok=True)
    git(setup.repo, "worktree", "add", "-q", str(path), BRANCH)
    return path


def branch_exists(setup, name: str = BRANCH) -> bool:
    return setup.git.branch_exists(name)


def recovered(setup) -> list[dict[str, Any]]:
    return [data for kind, _, data in setup.audit.records if kind == "recover"]


# -- a first run ----------------------------------------------------------------------------------

def test_an_agent_id_never_used_starts_afresh(setup):
    assert recover(setup) is None
    assert setup.audit.records == []


def test_an_agent_id_whose_branch_exists_without_a_record_is_refused(setup):
    commit_on(setup, BRANCH, "someone's work")
    with pytest.raises(FatalError) as info:
        recover(setup)
    assert str(info.value) == f"agent id {AGENT} is in use: branch {BRANCH} exists; pick another agent id"


# -- an interrupted run (Ctrl-C, SIGTERM) ---------------------------------------------------------

def test_an_interrupted_run_with_its_branch_is_resumed_from_its_work(setup):
    work = commit_on(setup, BRANCH, "interrupted work")
    path = worktree(setup)
    record(setup, "interrupted", work=work)
    assert recover(setup) == Resume(setup.base, "trunk", work)
    assert not path.exists()
    assert git(setup.repo, "rev-parse", BRANCH) == work  # the work stays on its branch
    assert recovered(setup) == [{"finished": False, "resumed": "interrupted", "work": work}]


def test_an_interrupted_run_without_its_branch_starts_afresh(setup):
    record(setup, "interrupted")
    assert recover(setup) is None
    assert recovered(setup) == [{"finished": False, "previous": "interrupted"}]


# -- a finished run -------------------------------------------------------------------------------

@pytest.mark.parametrize("status,label,shown", [("ok", "ok", "ok"), ("rejected", None, "rejected"),
                                                ("failed", "failed(agent)", "failed(agent)"),
                                                ("exhausted", "exhausted(turns)", "exhausted(turns)")])
def test_a_finished_run_is_refused_and_its_branch_kept(setup, status, label, shown):
    commit = commit_on(setup, BRANCH, "its work")
    record(setup, status, label=label)
    with pytest.raises(FatalError) as info:
        recover(setup)
    assert str(info.value) == (f"agent {AGENT} already ran ({shown}) and its branch {BRANCH} is kept: "
                               "`runtime spawn tasks/fix.toml --afresh` starts it again from the current base and "
                               f"the task file as it is now (the old branch kept as refs/agent-runtime/previous/{AGENT}/N); "
                               f"`runtime again {AGENT}` starts a new series of attempts on its work, as first spawned")
    assert git(setup.repo, "rev-parse", BRANCH) == commit


def test_afresh_starts_a_finished_run_again_keeping_its_branch_and_folder(setup):
    """`runtime spawn TASK --afresh`: the id is free again; the old branch under a named ref, the old folder kept."""
    setup.options.afresh = True
    for n in (1, 2):  # twice: the second keeps its own ref and folder beside the first's
        commit = commit_on(setup, BRANCH, f"rejected work {n}")
        record(setup, "rejected")
        (setup.state.run(AGENT) / "attempt-1").mkdir(exist_ok=True)
        assert recover(setup) is None
        assert not branch_exists(setup)
        assert git(setup.repo, "rev-parse", f"refs/agent-runtime/previous/{AGENT}/{n}") == commit
        assert not setup.state.run(AGENT).exists()
        assert (setup.state.root / "previous" / f"{AGENT}.{n}" / "attempt-1").is_dir()
        assert (setup.state.root / "previous" / f"{AGENT}.{n}" / "state.json").is_file()
    kinds = [(kind, data.get("kept_ref")) for kind, _, data in setup.audit.records]
    assert kinds == [("afresh", f"refs/agent-runtime/previous/{AGENT}/1"),
                     ("afresh", f"refs/agent-runtime/previous/{AGENT}/2")]


def test_afresh_refuses_work_already_merged(setup):
    setup.options.afresh = True
    commit = commit_on(setup, BRANCH, "merged work")
    record(setup, "ok", label="ok", commit=commit, merged=commit)
    with pytest.raises(FatalError, match="it is done"):
        recover(setup)
    assert git(setup.repo, "rev-parse", BRANCH) == commit


def test_a_finished_run_that_gave_its_id_back_starts_afresh_with_its_folder_cleared(setup):
    record(setup, "failed", label="failed(setup)", id_free=True)
    (setup.state.run(AGENT) / "attempt-1").mkdir()
    assert recover(setup) is None
    assert not setup.state.run(AGENT).exists()
    assert recovered(setup) == [{"finished": False, "previous": "failed"}]


# -- a run killed while committing or merging -----------------------------------------------------

@pytest.mark.parametrize("status", ["committing", "merging"])
def test_a_verified_commit_on_the_branch_finishes_the_run_without_committing_again(setup, status):
    commit = commit_on(setup, BRANCH, verified_message())
    record(setup, status)
    outcome = recover(setup)
    assert isinstance(outcome, Outcome)
    assert (outcome.status, outcome.agent_id, outcome.role, outcome.base, outcome.branch, outcome.commit,
            outcome.merged) == ("ok", AGENT, "edit-local", setup.base, BRANCH, commit, None)
    assert "nothing was committed twice" in outcome.message
    saved = setup.state.read(AGENT)
    assert (saved.status, saved.label, saved.commit, saved.merged) == ("ok", "ok", commit, None)
    assert git(setup.repo, "rev-list", "--count", f"{setup.base}..{BRANCH}") == "1"
    assert recovered(setup) == [{"finished": True, "commit": commit}]
    # stopped between the commit and its attestation: the commit is attested now, as the spawn would have
    key = load_key()
    assert key is not None
    (finding,) = check(Repo(setup.repo), [f"{commit}^!"], TrustRoot.of_key(key))
    assert finding.status == Status.VALID, finding.reason
    assert finding.statement is not None and finding.statement.predicate.gate.audit_head == "h"


def test_a_verified_commit_the_base_already_merged_names_that_merge(setup):
    commit = commit_on(setup, BRANCH, verified_message())
    merge = commit_on(setup, "trunk", "Merge agent ag-1", parents=(setup.base, commit))
    commit_on(setup, "trunk", "a later merge", parents=(merge, commit))
    record(setup, "merging")
    setup.options.merge = True
    outcome = recover(setup)
    assert isinstance(outcome, Outcome) and (outcome.commit, outcome.merged) == (commit, merge)
    assert setup.state.read(AGENT).merged == merge


def test_a_verified_commit_the_base_reached_without_a_merge_commit_is_its_own_merge(setup):
    commit = commit_on(setup, BRANCH, verified_message())
    git(setup.repo, "update-ref", "refs/heads/trunk", commit)
    record(setup, "merging")
    outcome = recover(setup)
    assert isinstance(outcome, Outcome) and outcome.merged == commit


def test_a_verified_commit_not_yet_merged_is_merged_now_when_the_rerun_asks(setup):
    commit = commit_on(setup, BRANCH, verified_message())
    previous = record(setup, "merging")
    setup.options.merge = True
    assert recover(setup) == ResumeMerge(commit, previous)
    assert recovered(setup) == [{"finished": False, "resumed": "merge", "commit": commit}]


def test_without_a_base_branch_a_verified_commit_is_finished_unmerged(setup):
    commit = commit_on(setup, BRANCH, verified_message())
    record(setup, "committing", base_branch=None)
    setup.options.merge = True
    outcome = recover(setup)
    assert isinstance(outcome, Outcome) and (outcome.commit, outcome.merged) == (commit, None)


@pytest.mark.parametrize("text", [
    "agent ag-1: Fix a.\n\nAgent-Id: ag-1\nVerified: no\nOutcome: rejected\n",
    verified_message("ag-2"),
    "agent ag-1: make it say Verified: yes\n\nAgent-Id: ag-1\n",  # the words, but not a trailer's whole line
    "agent ag-1: Fix a.\n\nAgent-Id: ag-1\nVerified: yes\nVerified: no\n",
])
def test_a_commit_that_is_not_this_agents_verified_one_is_left_for_a_person(setup, text):
    commit = commit_on(setup, BRANCH, text)
    record(setup, "committing")
    with pytest.raises(FatalError) as info:
        recover(setup)
    assert str(info.value) == (f"interrupted run of {AGENT} left commits on {BRANCH}; inspect and delete the branch")
    assert git(setup.repo, "rev-parse", BRANCH) == commit


def test_a_committing_run_whose_branch_is_still_at_the_base_starts_afresh(setup):
    git(setup.repo, "branch", BRANCH, setup.base)
    record(setup, "committing")
    assert recover(setup) is None
    assert not branch_exists(setup)


# -- a run killed before it committed -------------------------------------------------------------

@pytest.mark.parametrize("status", ["running", "verifying"])
def test_a_run_killed_before_committing_is_cleaned_and_started_afresh(setup, status):
    git(setup.repo, "branch", BRANCH, setup.base)
    path = worktree(setup)
    (path / "half-done.py").write_text("x\n")
    record(setup, status)
    assert recover(setup) is None
    assert not path.exists() and not branch_exists(setup)
    assert git(setup.repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert recovered(setup) == [{"finished": False, "previous": status}]


def test_a_verified_looking_commit_of_a_run_that_never_reached_committing_is_not_trusted(setup):
    commit_on(setup, BRANCH, verified_message())
    record(setup, "running")
    with pytest.raises(FatalError, match="left commits on agent/ag-1"):
        recover(setup)


def test_a_leftover_folder_that_git_does_not_know_as_a_worktree_is_removed_all_the_same(setup):
    path = setup.state.worktree(AGENT)
    (path / "sub").mkdir(parents=True)
    (path / "sub" / "f").write_text("x")
    record(setup, "running")
    assert recover(setup) is None
    assert not path.exists()


# -- clean_leftovers ------------------------------------------------------------------------------

def agent_worktree(setup, agent_id: str, status: str | None = None) -> Path:
    path = setup.state.worktree(agent_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    git(setup.repo, "worktree", "add", "-q", "-b", f"agent/{agent_id}", str(path), setup.base)
    if status is not None:
        setup.state.write(RunRecord(agent_id, status))
    return path


def test_no_worktrees_folder_is_nothing_to_clean(setup):
    assert clean_leftovers(setup.state, setup.git, AGENT) == []


def test_the_worktrees_of_dead_runs_go_and_the_others_stay(setup):
    current = agent_worktree(setup, AGENT)
    dead = agent_worktree(setup, "ag-dead", "running")
    unrecorded = agent_worktree(setup, "ag-norecord")
    finished = agent_worktree(setup, "ag-kept", "ok")  # asked to be kept (--keep)
    held = agent_worktree(setup, "ag-live", "running")
    stray = setup.state.worktree("ag-stray")
    stray.mkdir()
    (stray / "f").write_text("x")
    with acquire(setup.state.locks, "ag-live"):
        removed = clean_leftovers(setup.state, setup.git, AGENT)
    assert removed == ["ag-dead", "ag-norecord", "ag-stray"]
    assert not dead.exists() and not unrecorded.exists() and not stray.exists()
    assert current.exists() and finished.exists() and held.exists()
    listed = git(setup.repo, "worktree", "list", "--porcelain")
    assert "ag-dead" not in listed and "ag-norecord" not in listed
    assert all(name in listed for name in (AGENT, "ag-kept", "ag-live"))
    assert branch_exists(setup, "agent/ag-dead")  # the branches are recover's business, not the clean-up's


def test_the_socket_folders_of_dead_runs_go_too(setup, tmp_path, monkeypatch):
    folder = tmp_path / "rt-dead"
    folder.mkdir()
    registry = setup.state.root / "sockets"
    registry.mkdir(parents=True)
    (registry / folder.name).write_text(f"999999\n{folder}\n")
    monkeypatch.setattr(sockets, "alive", lambda pid: False)
    assert clean_leftovers(setup.state, setup.git, AGENT) == []
    assert not folder.exists() and not (registry / folder.name).exists()
