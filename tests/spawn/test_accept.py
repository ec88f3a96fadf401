"""Accepting verified work (runtime.spawn.accept): the commit on the agent branch, the optional merge, and the
inspection commit of unaccepted work. Real git in tmp; the run is a stand-in holding what accept reads."""

from __future__ import annotations

import contextlib
import json
import shutil
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from runtime.approvals.store import ApprovalStore
from runtime.attest.signing import TrustRoot, load_key
from runtime.attest.verdict import Repo, Status, check
from runtime.audit.records import AuditRecord
from runtime.errors import LimitExhausted
from runtime.manifests.agent import LimitsSection
from runtime.manifests.toolchain import Toolchain
from runtime.policy.document import Entry
from runtime.spawn import accept as accept_module
from runtime.spawn.accept import (
    _approve_control_change,
    _merged_checks,
    accept,
    changed_control_files,
    commit_message,
    keep_for_inspection,
    last_checks,
    merge_failures,
    merge_verified,
    verdict_trailers,
)
from runtime.spawn.outcome import Acceptance, Attempt, CheckRecord, Verdict
from runtime.verify import passes as passes_module
from runtime.verify.commands import CommandLog, TreeRunners
from runtime.verify.passes import Running
from runtime.workspace.git import Git
from tests.support import git

AGENT = "ag-1"
BRANCH = f"agent/{AGENT}"


class Audit:
    """The audit log as accept uses it: records kept in order, each answered with its hash."""

    redactor = None

    def __init__(self) -> None:
        self.records: list[tuple[str, str, dict[str, Any]]] = []

    def append(self, record: AuditRecord, agent: str | None = None) -> SimpleNamespace:
        self.records.append((record.kind_name(), agent, record.data()))
        return SimpleNamespace(hash=f"hash-{len(self.records)}")

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [data for k, _, data in self.records if k == kind]


class Policy:
    def __init__(self, entries: list[Entry] = ()) -> None:
        self.entries = list(entries)

    def verify_entries(self, kinds=None) -> list[Entry]:
        return [e for e in self.entries if kinds is None or e.kind in kinds]


def stand_in(tmp_path: Path, **fields: Any) -> SimpleNamespace:
    """What accept reads of a spawn, but git and the worktree (``fields`` add them)."""
    saves: list[str] = []

    def verify_running(hidden, log) -> Running:  # as `SpawnRun.verify_running`, its limits a marker
        return Running(tmp_path / "home", Toolchain(), None, "limits", tmp_path / "state" / "base-tests", {}, hidden, log)

    return SimpleNamespace(verify_running=verify_running, audit_from=0,
        agent_id=AGENT, branch=BRANCH, base_branch="trunk",
        task=SimpleNamespace(goal="Fix a.\nIt is wrong.", role=SimpleNamespace(name="edit-local"),
                             path=Path("/tasks/fix-a.toml"), digest="d" * 64, agent=SimpleNamespace(env=()), fields={},
                             verification=SimpleNamespace(hidden_tests=None)),
        audit=Audit(), options=SimpleNamespace(merge=False, use_sandbox=False, state_dir=None, unattended=False), resumed=None,
        saves=saves, save=lambda status, **extra: saves.append(status), policy=Policy(),
        agent=SimpleNamespace(limits=LimitsSection.model_validate({"approval-timeout-s": 5}), backend="builtin",
                              model="scripted/fix"),
        home=tmp_path / "home", toolchain=None,
        state=SimpleNamespace(root=tmp_path / "state", run=lambda agent: tmp_path / "state" / "runs" / agent,
                              audit=tmp_path / "state" / "audit.jsonl"),
        catalog=SimpleNamespace(toolchain=Toolchain()),  # no [worktree]: the merge's tree needs no world
        **fields,
    )


@pytest.fixture(autouse=True)
def _signing_key(tmp_path, monkeypatch):
    """Verified work is signed: with a key of the test's own."""
    monkeypatch.setenv("RUNTIME_SIGNING_KEY", str(tmp_path / "keys" / "signing"))


@pytest.fixture
def bare(tmp_path, monkeypatch):
    """A spawn for what needs no repository (messages, approvals, the checks on a merge)."""
    monkeypatch.delenv("RUNTIME_STATE_DIR", raising=False)
    return stand_in(tmp_path, git=object())


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> tuple[Path, str]:
    """A repository on `trunk` and the agent's worktree on `agent/ag-1`, made once and copied for each test."""
    root = tmp_path_factory.mktemp("accept")
    repo = root / "repo"
    git(root, "init", "-q", "--template=", "-b", "trunk", str(repo))
    (repo / "src").mkdir()
    (repo / "src" / "a.py").write_text("a = 1\n")
    (repo / "README.md").write_text("# a\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = Git(repo).add_worktree(root / "state" / "worktrees" / AGENT, BRANCH, "trunk")
    return root, base


@pytest.fixture
def run(template, tmp_path, monkeypatch):
    """A spawn whose agent works in a real worktree on `agent/ag-1`, branched from `trunk`."""
    monkeypatch.delenv("RUNTIME_STATE_DIR", raising=False)
    source, base = template
    root = tmp_path / "copy"
    shutil.copytree(source, root, symlinks=True)
    worktree = root / "state" / "worktrees" / AGENT
    for link in (worktree / ".git", root / "repo" / ".git" / "worktrees" / AGENT / "gitdir"):  # git's absolute paths
        link.write_text(link.read_text().replace(str(source), str(root)))
    repo = root / "repo"
    return stand_in(root, git=Git(repo), repo=repo, base=base, worktree=worktree)


def findings(run, *revs: str):
    """The attestations' findings on ``revs``, checked against the test's signing key."""
    key = load_key()
    assert key is not None
    return check(Repo(run.repo), list(revs), TrustRoot.of_key(key))


def edit(run, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = run.worktree / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def message(run, rev: str) -> list[str]:
    return git(run.repo, "log", "-1", "--format=%B", rev).splitlines()


def files_at(run, rev: str) -> list[str]:
    return git(run.repo, "ls-tree", "-r", "--name-only", rev).splitlines()


def verdict(*checks: tuple[str, str]) -> Verdict:
    attempts = (Attempt(1, checks=[CheckRecord("old", "k", "rejected", "")]),
                Attempt(2, checks=[CheckRecord(atom, "k", status, "") for atom, status in checks]))
    return Verdict("ok", None, "", attempts)


# -- the commit message ---------------------------------------------------------------------------

def test_the_last_attempts_checks_are_the_ones_recorded():
    assert last_checks([]) == []
    assert last_checks(verdict(("quality::tests-green", "passed"), ("scope::x", "passed")).attempts) == [
        ("quality::tests-green", "passed"), ("scope::x", "passed")]


def test_a_verified_commits_message_names_the_task_its_checks_and_the_audit_head(bare):
    text = commit_message(bare, True, [("quality::tests-green", "passed"), ("scope::files-whitelist", "passed")], "ok")
    assert text.splitlines() == [
        "agent ag-1 (edit-local): Fix a.", "",
        "Task: /tasks/fix-a.toml", f"Task-Sha256: {'d' * 64}",
        "Checks: quality::tests-green passed, scope::files-whitelist passed",
        "Agent-Id: ag-1", "Role: edit-local", "Verified: yes", "Audit-Head: hash-1",
    ]
    assert bare.audit.records == [("commit-intent", AGENT, {"verified": True, "label": "ok"})]


def test_an_unverified_commits_message_says_so_and_why(bare):
    lines = commit_message(bare, False, [], "rejected").splitlines()
    assert "Verified: no" in lines and "Outcome: rejected" in lines and "Checks: none" in lines
    assert "Verified: yes" not in lines


def test_the_title_is_the_goals_first_line_cut_to_72_characters(bare):
    bare.task.goal = "  " + "x" * 100 + "\nmore"
    assert commit_message(bare, True, [], "ok").splitlines()[0] == "agent ag-1 (edit-local): " + "x" * 72


# -- accepting ------------------------------------------------------------------------------------

def test_verified_work_is_committed_on_the_agent_branch_and_not_merged(run):
    edit(run, {"src/a.py": "a = 2\n"})
    got = anyio.run(accept, run, verdict(("quality::tests-green", "passed")))
    assert got == Acceptance(git(run.repo, "rev-parse", BRANCH))
    assert git(run.repo, "rev-parse", "trunk") == run.base
    lines = message(run, BRANCH)
    assert "Verified: yes" in lines and "Checks: quality::tests-green passed" in lines
    assert run.saves == ["committing"]
    assert run.audit.of("commit") == [{"commit": got.commit, "branch": BRANCH}]
    # signed, noted and filed before the commit is recorded: it holds, and says what the commit says
    (finding,) = findings(run, f"{got.commit}^!")
    assert finding.status == Status.VALID, finding.reason
    facts = finding.statement.predicate
    assert (facts.agent_id, facts.task.sha256, facts.base) == (AGENT, "d" * 64, run.base)
    assert facts.gate.audit_head == "hash-1" and [c.atom for c in facts.checks] == ["quality::tests-green"]
    assert (run.state.run(AGENT) / "attestations" / f"{got.commit}.intoto.json").is_file()


def test_a_run_that_changed_nothing_is_verified_with_no_commit(run):
    assert anyio.run(accept, run, verdict()) == Acceptance(None)
    assert git(run.repo, "rev-parse", BRANCH) == run.base
    assert run.audit.of("commit") == [{"commit": None, "branch": BRANCH}]


def test_a_resumed_run_records_its_verdict_with_an_empty_commit(run):
    edit(run, {"src/a.py": "a = 2\n"})
    earlier = run.git.commit_all(run.worktree, "interrupted work")
    run.resumed = earlier
    got = anyio.run(accept, run, verdict())
    assert got.commit is not None and got.commit != earlier
    assert git(run.repo, "rev-parse", f"{got.commit}^") == earlier
    assert git(run.repo, "rev-parse", f"{got.commit}^{{tree}}") == git(run.repo, "rev-parse", f"{earlier}^{{tree}}")
    assert "Verified: yes" in message(run, got.commit)


def test_with_merge_a_run_that_changed_nothing_has_nothing_to_merge(run):
    run.options.merge = True
    assert anyio.run(accept, run, verdict()) == Acceptance(None, message="nothing to merge: the agent changed nothing")
    assert git(run.repo, "rev-parse", "trunk") == run.base


def test_with_merge_verified_work_is_merged_into_the_base_branch(run):
    run.options.merge = True
    edit(run, {"src/a.py": "a = 2\n"})
    got = anyio.run(accept, run, verdict())
    assert got.merged == git(run.repo, "rev-parse", "trunk") and got.commit == git(run.repo, "rev-parse", BRANCH)
    assert (got.refused, got.failure) == (None, None)
    assert git(run.repo, "rev-list", "--parents", "-n", "1", got.merged).split()[1:] == [run.base, got.commit]
    assert message(run, got.merged) == ["Merge agent ag-1 (edit-local) into trunk", "", "Agent-Id: ag-1"]
    assert run.saves == ["committing", "merging"]
    assert run.audit.of("merge") == [{"into": "trunk", "commit": got.merged}]
    assert [f.status for f in findings(run, f"{run.base}..trunk")] == [Status.VALID, Status.VALID]


# -- merging --------------------------------------------------------------------------------------

def committed(run, files: dict[str, str]) -> str:
    edit(run, files)
    return run.git.commit_all(run.worktree, "verified work")


def test_there_is_nothing_to_merge_into_when_the_base_is_not_a_branch(run):
    commit = committed(run, {"src/a.py": "a = 2\n"})
    run.base_branch = None
    got = anyio.run(merge_verified, run, commit)
    assert got.commit == commit and got.merged is None
    assert got.failure == ("failed", "merge", "the base is not a branch, so there is nothing to merge into")


def test_a_merge_that_conflicts_is_refused_naming_the_paths(run):
    commit = committed(run, {"src/a.py": "a = 2\n"})
    (run.repo / "src" / "a.py").write_text("a = 3\n")
    git(run.repo, "commit", "-qam", "meanwhile on trunk")
    trunk = git(run.repo, "rev-parse", "trunk")
    got = anyio.run(merge_verified, run, commit)
    assert got.refused == "merging into trunk conflicts in: src/a.py"
    assert (got.commit, got.merged) == (commit, None)
    assert git(run.repo, "rev-parse", "trunk") == trunk


def test_a_merge_whose_checks_fail_on_the_simulated_result_is_refused(run, monkeypatch):
    commit = committed(run, {"src/a.py": "a = 2\n"})
    seen = []

    async def failing(run_, tree, base, commit_):
        seen.append((tree, base, commit_))
        return [CheckRecord("quality::tests-green", "tests-green", "rejected", "1 test(s) failed"),
                CheckRecord("quality::check-green", "check-green", "rejected", "ruff exited 1"),
                CheckRecord("scope::files-whitelist", "scope-whitelist", "passed", "")]

    monkeypatch.setattr(accept_module, "_merged_checks", failing)
    got = anyio.run(merge_verified, run, commit)
    assert got.refused == ("the checks fail on the simulated merge:\nquality::tests-green: 1 test(s) failed\n"
                           "quality::check-green: ruff exited 1")
    assert seen == [(git(run.repo, "rev-parse", f"{commit}^{{tree}}"), run.base, commit)]
    assert git(run.repo, "rev-parse", "trunk") == run.base


def test_a_base_that_moved_during_the_checks_is_not_overwritten(run, monkeypatch):
    commit = committed(run, {"src/a.py": "a = 2\n"})

    async def moving(*args):
        git(run.repo, "commit", "-q", "--allow-empty", "-m", "someone else, meanwhile")
        return []

    monkeypatch.setattr(accept_module, "_merged_checks", moving)
    got = anyio.run(merge_verified, run, commit)
    outcome, detail, text = got.failure
    assert (outcome, detail, got.merged) == ("failed", "merge", None)
    assert text.startswith(f"the verified commit {commit} was not merged: ") and "moved" in text
    assert message(run, "trunk") == ["someone else, meanwhile"]


# -- control files --------------------------------------------------------------------------------

@pytest.mark.parametrize("files,control", [
    ({"src/a.py": "a = 2\n"}, []),
    ({".claude/settings.json": "{}", "src/a.py": "a = 2\n"}, [".claude/settings.json"]),
    ({".mcp.json": "{}", "sub/.agent-runtime/roles/x.toml": "", ".gitmodules": ""},
     [".gitmodules", ".mcp.json", "sub/.agent-runtime/roles/x.toml"]),
])
def test_the_control_files_a_commit_changes_against_the_base(run, files, control):
    assert changed_control_files(run, committed(run, files)) == control


def test_a_change_to_control_files_is_merged_only_when_approved(run, monkeypatch):
    commit = committed(run, {".claude/settings.json": "{}"})
    asked = []

    def approve(run_, commit_, paths):
        asked.append((commit_, paths))
        return SimpleNamespace(allowed=True, reason=None, status="approved")

    monkeypatch.setattr(accept_module, "_approve_control_change", approve)
    got = anyio.run(merge_verified, run, commit)
    assert asked == [(commit, [".claude/settings.json"])]
    assert got.merged == git(run.repo, "rev-parse", "trunk") != run.base


@pytest.mark.parametrize("reason,status,why", [("not now", "denied", "not now"), (None, "expired", "expired")])
def test_a_change_to_control_files_without_approval_stays_on_its_branch(run, monkeypatch, reason, status, why):
    commit = committed(run, {".mcp.json": "{}"})
    monkeypatch.setattr(accept_module, "_approve_control_change",
                        lambda *args: SimpleNamespace(allowed=False, reason=reason, status=status))
    got = anyio.run(merge_verified, run, commit)
    assert got.failure == ("failed", "merge", f"the verified commit {commit} changes control files (.mcp.json) and was "
                                              f"not merged: no approval ({why}); it stays on {BRANCH}")
    assert git(run.repo, "rev-parse", "trunk") == run.base


def test_an_unattended_run_never_merges_control_files_and_asks_nobody(run, monkeypatch):
    commit = committed(run, {".claude/settings.json": "{}"})
    asked = []
    monkeypatch.setattr(accept_module, "_approve_control_change", lambda *args: asked.append(args))
    run.options.unattended = True
    got = anyio.run(merge_verified, run, commit)
    assert asked == []
    assert got.failure == ("failed", "merge", f"the verified commit {commit} changes control files "
                                              "(.claude/settings.json) and was not merged: that needs a person's "
                                              f"approval, and nobody approves in this run (--unattended); it stays on "
                                              f"{BRANCH}")
    assert git(run.repo, "rev-parse", "trunk") == run.base


def _decide_when_asked(store: ApprovalStore, approved: bool) -> threading.Thread:
    def decide():
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            pending = store.pending(AGENT)
            if pending:
                store.decide(pending[0].id, approved, None if approved else "no thanks", "tester")
                return
            time.sleep(0.02)

    thread = threading.Thread(target=decide, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("approved", [True, False])
def test_a_person_decides_on_control_files_and_the_decision_is_audited(bare, approved, capsys):
    store = ApprovalStore.for_state(bare.state.root)
    thread = _decide_when_asked(store, approved)
    final = _approve_control_change(bare, "c" * 40, [".claude/settings.json"])
    thread.join(5)
    assert final.allowed is approved and final.status == ("approved" if approved else "denied")
    (request,) = bare.audit.of("approval-request")
    assert (request["tool"], request["new"], request["id"]) == ("merge", True, final.id)
    assert ".claude/settings.json" in request["gate_reason"] and "into trunk" in request["gate_reason"]
    (decision,) = bare.audit.of("approval-decision")
    assert (decision["id"], decision["status"], decision["decision"], decision["by"]) == (
        final.id, final.status, "allow" if approved else "deny", "tester")
    shown = capsys.readouterr().err
    assert f"runtime approve {final.id}\n" in shown  # the default state folder: no --state-dir to add


def test_no_decision_before_the_approval_timeout_is_a_denial(bare, capsys):
    bare.agent.limits = SimpleNamespace(approval_timeout_s=0.1)  # (a stand-in: no attestation is made here)
    bare.options.state_dir = str(bare.state.root)
    final = _approve_control_change(bare, "c" * 40, [".mcp.json"])
    assert not final.allowed and final.status == "expired"
    assert bare.audit.of("approval-decision")[0]["decision"] == "deny"
    assert f"--state-dir {bare.state.root}" in capsys.readouterr().err


# -- the checks on the simulated merge ------------------------------------------------------------

# By its exit code here: the per-test reading of a merge's tests is `test_the_merge_s_tests_are_judged_per_test...`.
TESTS = Entry("quality::tests-green", "tests-green", {"command": "pytest -q", "min-count": 1, "results": "exit-code"})
CHECKS = Entry("quality::check-green", "checks-green", {"commands": ["ruff check", "mypy"]})


def fake_runner(monkeypatch, answers: dict[str, Any], at_base: dict[str, tuple[int, str]] | None = None,
                asked_at_base: list[str] | None = None) -> list[tuple]:
    """`tree_runners` answering each command from ``answers`` (an exception is raised) and, on the base,
    from ``at_base`` (each command asked there is added to ``asked_at_base``); its calls."""
    calls: list[tuple] = []

    @contextlib.asynccontextmanager
    async def runners(*args):
        calls.append(args)

        async def run_command(command, timeout_s):
            answer = answers[command]
            if isinstance(answer, BaseException):
                raise answer
            return answer

        async def base_command(command, timeout_s):
            if asked_at_base is not None:
                asked_at_base.append(command)
            return (at_base or {})[command]

        yield TreeRunners(run_command, base_command, Path("/merge"), None)

    monkeypatch.setattr(passes_module, "tree_runners", runners)
    return calls


def test_without_test_or_check_commands_nothing_runs_on_the_merge(bare, monkeypatch):
    calls = fake_runner(monkeypatch, {})
    bare.policy = Policy([Entry("scope::files-whitelist", "scope-whitelist", {})])
    assert merge_failures(anyio.run(_merged_checks, bare, "tree", "base", "commit")) == []
    assert calls == []


def test_passing_commands_give_no_failure_and_run_on_the_merge_tree(bare, monkeypatch):
    calls = fake_runner(monkeypatch, {"pytest -q": (0, "3 passed in 0.1s"), "ruff check": (0, ""), "mypy": (0, "")})
    bare.policy = Policy([TESTS, CHECKS])
    assert merge_failures(anyio.run(_merged_checks, bare, "tree-sha", "base-sha", "commit-sha")) == []
    log = CommandLog(bare.state.run(bare.agent_id) / "merge-commands")  # each command's whole output
    assert calls == [(bare.git, "tree-sha", "base-sha", bare.home, False, ("base-sha", "commit-sha"), None, "limits", log, {},
                     None)]  # no [worktree]: no world to lay in the merge's tree


def test_each_failing_command_check_is_named_with_its_feedback(bare, monkeypatch):
    fake_runner(monkeypatch, {"pytest -q": (1, "FAILED tests/test_a.py::test_x\n1 failed in 0.1s"),
                              "ruff check": (0, ""), "mypy": (2, "error: bad type")},
                {"pytest -q": (0, "2 passed in 0.1s"), "mypy": (0, "")})
    bare.policy = Policy([TESTS, CHECKS])
    failures = merge_failures(anyio.run(_merged_checks, bare, "t", "b", "c"))
    assert len(failures) == 2
    assert failures[0].startswith("quality::tests-green: The tests are not green: `pytest -q` exited with code 1")
    assert failures[1].startswith("quality::check-green: ") and "mypy" in failures[1]


def test_a_command_that_exhausts_a_limit_is_a_failure_and_the_next_still_runs(bare, monkeypatch):
    fake_runner(monkeypatch, {"pytest -q": LimitExhausted("timeout", "the command ran past 900 s"),
                              "ruff check": (1, "E1"), "mypy": (0, "")}, {"ruff check": (0, "")})
    bare.policy = Policy([TESTS, CHECKS])
    failures = merge_failures(anyio.run(_merged_checks, bare, "t", "b", "c"))
    assert failures[0] == "quality::tests-green: exhausted(timeout): the command ran past 900 s"
    assert failures[1].startswith("quality::check-green: ") and "ruff check" in failures[1]


def test_a_merge_failing_only_as_its_base_does_passes_with_baseline(bare, monkeypatch):
    """The base branch's own lint warning and network test fail on the merge as on the base: with the task's
    `baseline`, no failure, and only the failing commands run there."""
    lint = "src/old.py:3:1: E302 expected 2 blank lines"
    net = "FAILED tests/test_net.py::test_fetch - ConnectionError\n1 failed, 4 passed in 0.2s"
    asked: list[str] = []
    fake_runner(monkeypatch, {"pytest -q": (1, net), "ruff check": (1, lint), "mypy": (0, "")},
                {"pytest -q": (1, net), "ruff check": (1, lint.replace(":3:", ":1:"))}, asked)
    bare.policy = Policy([Entry(TESTS.atom, TESTS.kind, {**TESTS.params, "baseline": True}),
                          Entry(CHECKS.atom, CHECKS.kind, {**CHECKS.params, "baseline": True})])
    assert merge_failures(anyio.run(_merged_checks, bare, "t", "b", "c")) == []
    assert asked == ["pytest -q", "ruff check"]
    asked.clear()
    bare.policy = Policy([TESTS, CHECKS])  # without `baseline`: the base is not asked, the failures stand
    assert len(merge_failures(anyio.run(_merged_checks, bare, "t", "b", "c"))) == 2 and asked == []


# -- keeping unaccepted work for inspection -------------------------------------------------------

def test_unaccepted_work_is_committed_on_its_branch_marked_unverified(run):
    edit(run, {"src/a.py": "a = 2\n", "notes.txt": "n\n"})
    commit = keep_for_inspection(run, [("quality::tests-green", "rejected")], "rejected")
    assert commit == git(run.repo, "rev-parse", BRANCH)
    lines = message(run, commit)
    assert "Verified: no" in lines and "Outcome: rejected" in lines and "Checks: quality::tests-green rejected" in lines
    assert not any(line.startswith("Left-Out:") for line in lines)
    assert sorted(files_at(run, commit)) == ["README.md", "notes.txt", "src/a.py"]
    assert run.audit.of("commit") == [{"commit": commit, "branch": BRANCH, "verified": False}]
    assert git(run.repo, "rev-parse", "trunk") == run.base


def test_nothing_changed_keeps_nothing(run):
    assert keep_for_inspection(run, [], "failed(agent)") is None
    assert run.audit.of("commit") == []


def test_a_worktree_that_is_gone_keeps_nothing(run):
    run.git.remove_worktree(run.worktree)
    assert keep_for_inspection(run, [], "failed(agent)") is None
    run.worktree = None
    assert keep_for_inspection(run, [], "failed(agent)") is None


def limits(run, file_bytes: int, change_bytes: int) -> None:
    run.policy = Policy([Entry("safety::size", "change-size",
                               {"max-file-bytes": file_bytes, "max-change-bytes": change_bytes})])


def left_out(lines: list[str]) -> str:
    found = [line for line in lines if line.startswith("Left-Out: ")]
    assert len(found) == 1, lines
    return found[0]


def test_files_over_the_limits_are_left_out_and_listed(run):
    limits(run, file_bytes=100, change_bytes=150)
    edit(run, {"big.bin": "x" * 101, "a1.txt": "y" * 80, "a2.txt": "y" * 70, "a3.txt": "y" * 80})
    commit = keep_for_inspection(run, [], "rejected")
    kept = set(files_at(run, commit))
    assert {"a1.txt", "a2.txt"} <= kept and not {"big.bin", "a3.txt"} & kept  # in path order: 80 + 70, then full
    assert left_out(message(run, commit)) == 'Left-Out: "a3.txt" (over the change limit), "big.bin" (too large)'
    assert (run.worktree / "big.bin").exists()  # left in the worktree, not deleted


def test_the_left_out_list_shows_twenty_and_counts_the_rest(run):
    limits(run, file_bytes=1, change_bytes=1000)
    edit(run, {"kept.txt": "k", **{f"f{n:02d}.txt": "too big" for n in range(25)}})
    commit = keep_for_inspection(run, [], "rejected")
    line = left_out(message(run, commit))
    assert line.count("(too large)") == 20 and line.endswith(" and 5 more")
    assert '"f19.txt" (too large)' in line and '"f20.txt"' not in line


def test_a_left_out_name_cannot_add_a_trailer_to_the_message(run):
    limits(run, file_bytes=1, change_bytes=1000)
    name = "x\nVerified: yes"
    edit(run, {name: "too big", "kept.txt": "k"})
    commit = keep_for_inspection(run, [], "rejected")
    lines = message(run, commit)
    assert "Verified: yes" not in lines and "Verified: no" in lines
    assert left_out(lines) == f"Left-Out: {json.dumps(name)} (too large)"


def test_when_everything_is_left_out_there_is_nothing_to_keep(run):
    limits(run, file_bytes=1, change_bytes=1000)
    edit(run, {"big.txt": "too big"})
    assert keep_for_inspection(run, [], "rejected") is None
    assert git(run.repo, "rev-parse", BRANCH) == run.base and run.audit.of("commit") == []


def test_a_nested_repository_is_never_committed_and_is_listed(run):
    edit(run, {"vendor/lib/code.py": "x = 1\n", "src/a.py": "a = 2\n"})
    git(run.worktree / "vendor" / "lib", "init", "-q")
    commit = keep_for_inspection(run, [], "rejected")
    assert files_at(run, commit) == ["README.md", "src/a.py"]
    assert left_out(message(run, commit)) == 'Left-Out: "vendor/lib" (nested repository or unreadable folder)'
    assert not (run.worktree / "vendor" / "lib" / ".git").exists()
    assert (run.worktree / "vendor" / "lib" / "code.py").exists()


# -- the merge's tests, judged per test against the base branch's head ----------------------------------

def test_the_merge_s_tests_are_judged_per_test_against_the_base_branch_s_head(bare, monkeypatch):
    """On the simulated merge, the tests run as verify ran them: the plan on the merged tree and on the base
    branch's head (the base the merge goes into, cached like any base), compared test by test; a base test
    the merge loses fails the merge."""
    from runtime.verify.kinds.kind import BaseRunRef
    from runtime.verify.kinds.runners.results import TestRun

    fake_runner(monkeypatch, {})
    asked: list[tuple[str, str]] = []

    def runs(*cases: tuple[str, str]) -> TestRun:
        return TestRun.model_validate({"steps": [{"command": "pytest -q", "exit-code": 0, "output": "", "report": {
            "runner": "pytest", "command": "pytest -q", "exit-code": 0, "complete": True,
            "tests": [{"id": i, "outcome": o} for i, o in cases]}}]})

    def plan_runners(run, at_base, root, folder, base, user, hidden, context, cache):
        async def on_work(plan, side):
            asked.append(("work", plan.command))
            return runs(("tests/test_a.py::test_one", "passed"))

        async def on_base(plan):
            asked.append(("base", base))
            return runs(("tests/test_a.py::test_one", "passed"), ("tests/test_a.py::test_two", "passed")), \
                BaseRunRef(key="k", base=base, ran_at=0.0, cached=False)
        return on_work, on_base

    monkeypatch.setattr(passes_module, "plan_runners", plan_runners)
    monkeypatch.setattr(accept_module, "load_hidden", lambda git, task: None)
    monkeypatch.setattr(passes_module, "plan_context", lambda toolchain, declared: {})
    bare.git = SimpleNamespace(read_file=lambda rev, path: None)
    bare.catalog = SimpleNamespace(toolchain=Toolchain())
    bare.policy = Policy([Entry("quality::tests-green", "tests-green", {"command": "pytest -q", "min-count": 1})])
    failures = merge_failures(anyio.run(_merged_checks, bare, "tree", "head-of-trunk", "commit"))
    assert asked == [("base", "head-of-trunk"), ("work", "pytest -q")]  # the base first: what checks copy
    assert len(failures) == 1 and failures[0].startswith("quality::tests-green: The tests are not green")
    assert "tests/test_a.py::test_two" in failures[0]


def test_the_trailers_list_the_allowed_test_edits_first_then_what_the_tests_rest_on():
    from runtime.verify.kinds.summary import TestsSummary

    summary = TestsSummary(mode="per-test", command="pytest -q", runners=["pytest"], base="b" * 40, base_run="k1",
                           base_cached=True, passed=6, base_tests=5, still_pass=4, fixed=["t::x"], new=1, hidden=2)
    attempt = Attempt(1, checks=[CheckRecord("quality::tests-protected", "tests-protected", "passed", "ok",
                                             test_edits=["tests/test_a.py"]),
                                 CheckRecord("quality::tests-green", "tests-green", "passed", "ok", summary)])
    text = verdict_trailers([attempt])
    assert text.splitlines() == [
        'Test-Edits: "tests/test_a.py"',
        "Tests: 6 passed (pytest); base bbbbbbbbbbbb: 5 ran, 4 still pass, 1 fixed; 1 new; 2 hidden; no tamper checks",
        "Tests-Base-Run: k1 (cached)",
    ]
    assert verdict_trailers([Attempt(1)]) == "" and verdict_trailers([]) == ""
