"""runtime.workspace.git against real repositories: worktrees, commits, hooks off, merges."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.workspace.changes import changed_paths
from runtime.workspace.git import BaseMoved, Git, GitError, NothingToCommit
from tests.support import user_git, user_repo

sh = user_git


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return user_repo(tmp_path, {"src/app.py": "x = 1\n", "README.md": "line 1\nline 2\nline 3\n"})


def commit_file(root: Path, name: str, text: str, message: str = "change") -> str:
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(text)
    sh(root, "add", "-A")
    sh(root, "commit", "-qm", message)
    return sh(root, "rev-parse", "HEAD")


def agent_commit(git: Git, tmp_path: Path, name: str, files: dict[str, str], base: str | None = None) -> Path:
    worktree = tmp_path / f"wt-{name}"
    git.add_worktree(worktree, f"agent/{name}", base)
    for path, text in files.items():
        (worktree / path).parent.mkdir(parents=True, exist_ok=True)
        (worktree / path).write_text(text)
    git.commit_all(worktree, f"agent {name}")
    return worktree


def test_binds_to_the_top_level_from_any_path_inside(repo):
    git = Git(repo / "src")
    assert git.root == repo
    assert git.common_dir == repo / ".git"
    assert git.current_branch() == "trunk"
    assert git.head() == sh(repo, "rev-parse", "HEAD")


def test_worktree_lifecycle(repo, tmp_path):
    git = Git(repo)
    worktree = tmp_path / "wt"
    base = git.add_worktree(worktree, "agent/a1")
    assert base == git.head()
    assert git.branch_exists("agent/a1")
    assert sh(worktree, "symbolic-ref", "HEAD") == "refs/heads/agent/a1"
    assert (worktree / "src" / "app.py").read_text() == "x = 1\n"

    (worktree / "src" / "app.py").write_text("x = 2\n")
    (worktree / "new dir").mkdir()
    (worktree / "new dir" / "n.txt").write_text("new\n")
    sha = git.commit_all(worktree, "agent a1: edit app\n\n#42 keeps its hash line", branch="agent/a1")
    assert sh(repo, "rev-parse", "refs/heads/agent/a1") == sha
    assert sh(repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%P", sha) == (
        f"agent-runtime <agent-runtime@localhost>|agent-runtime <agent-runtime@localhost>|{base}")
    assert "#42 keeps its hash line" in sh(repo, "log", "-1", "--format=%B", sha)
    assert sh(repo, "show", "--name-only", "--format=", sha).splitlines() == ["new dir/n.txt", "src/app.py"]
    assert git.head() == base and git.current_branch() == "trunk"  # the user's checkout did not move

    git.remove_worktree(worktree)
    assert not worktree.exists()
    assert [w.path for w in git.worktrees()] == [repo]
    git.delete_branch("agent/a1")
    assert not git.branch_exists("agent/a1")


def test_base_defaults_to_head_on_a_non_main_branch(repo, tmp_path):
    sh(repo, "checkout", "-qb", "feature")
    feature_head = commit_file(repo, "feature.txt", "f\n")
    git = Git(repo)
    assert git.current_branch() == "feature"
    assert git.add_worktree(tmp_path / "wt", "agent/a1") == feature_head
    assert (tmp_path / "wt" / "feature.txt").exists()
    trunk = sh(repo, "rev-parse", "trunk")
    assert git.add_worktree(tmp_path / "wt2", "agent/a2", "trunk") == trunk
    assert not (tmp_path / "wt2" / "feature.txt").exists()


def test_detached_head_has_no_branch(repo):
    sh(repo, "checkout", "-q", "--detach")
    assert Git(repo).current_branch() is None


def test_existing_branch_or_path_is_refused(repo, tmp_path):
    git = Git(repo)
    git.add_worktree(tmp_path / "wt", "agent/a1")
    with pytest.raises(GitError, match="already exists"):
        git.add_worktree(tmp_path / "wt-other", "agent/a1")
    assert not (tmp_path / "wt-other").exists()
    (tmp_path / "taken").mkdir()
    with pytest.raises(GitError, match="already exists"):
        git.add_worktree(tmp_path / "taken", "agent/a2")
    assert not git.branch_exists("agent/a2")


def test_unknown_revisions_and_option_like_names_are_errors(repo):
    git = Git(repo)
    with pytest.raises(GitError) as info:
        git.resolve("no-such-branch")
    assert "unknown revision" in str(info.value) and "\n" not in str(info.value)
    assert "\n" not in str(GitError(["commit", "-m", "two\nlines"], "error: one\nerror: two\n", 1))
    with pytest.raises(GitError):
        git.resolve("--all")
    with pytest.raises(GitError):
        git.branch_exists("bad..name")
    with pytest.raises(GitError) as outside:
        Git(repo.parent)  # not inside a repository
    assert str(outside.value) == f"{repo.parent} is not inside a git repository: run this from your repository (or `git init` one)"


def test_read_file_at_a_revision(repo):
    git = Git(repo)
    first = git.head()
    commit_file(repo, "src/app.py", "x = 3\n")
    assert git.read_file(first, "src/app.py") == b"x = 1\n"
    assert git.read_file("HEAD", "src/app.py") == b"x = 3\n"
    assert git.read_file(first, "missing.txt") is None
    assert git.read_file(first, "src") is None  # a folder is not a file
    with pytest.raises(GitError):
        git.read_file("no-such-rev", "src/app.py")


def test_commit_refuses_when_there_is_nothing_to_commit(repo, tmp_path):
    git = Git(repo)
    git.add_worktree(tmp_path / "wt", "agent/a1")
    with pytest.raises(NothingToCommit):
        git.commit_all(tmp_path / "wt", "empty")
    (tmp_path / "wt" / "x.txt").write_text("x\n")
    with pytest.raises(GitError, match="not agent/other"):
        git.commit_all(tmp_path / "wt", "wrong branch", branch="agent/other")


def test_callers_git_variables_are_ignored(repo, tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "index"))
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'core.hooksPath'='/tmp/evil'")
    git = Git(repo)
    assert git.root == repo and git.current_branch() == "trunk"


def _marker_script(path: Path, marker: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho ran >> '{marker}'\nexit 0\n")
    path.chmod(0o755)
    return path


def test_planted_hooks_do_not_run_when_the_orchestrator_commits(repo, tmp_path):
    marker = tmp_path / "hook-ran"
    for hook in ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "post-checkout"):
        _marker_script(repo / ".git" / "hooks" / hook, marker)
    sh(repo, "commit", "-q", "--allow-empty", "-m", "sanity")  # the planted hooks are live for plain git
    assert marker.exists()
    marker.unlink()

    git = Git(repo)
    worktree = tmp_path / "wt"
    git.add_worktree(worktree, "agent/a1")
    (worktree / "x.txt").write_text("x\n")
    git.commit_all(worktree, "agent work")
    assert not marker.exists()

    # A hooksPath in the repository's config is overridden too.
    _marker_script(tmp_path / "evil-hooks" / "post-commit", marker)
    sh(repo, "config", "core.hooksPath", str(tmp_path / "evil-hooks"))
    (worktree / "y.txt").write_text("y\n")
    git.commit_all(worktree, "more agent work")
    assert not marker.exists()


def test_planted_fsmonitor_does_not_run_on_status_or_commit(repo, tmp_path):
    marker = tmp_path / "fsmonitor-ran"
    script = _marker_script(tmp_path / "fsmonitor.sh", marker)
    sh(repo, "config", "core.fsmonitor", str(script))
    sh(repo, "status", "--porcelain")  # plain git runs it
    assert marker.exists()
    marker.unlink()

    git = Git(repo)
    worktree = tmp_path / "wt"
    base = git.add_worktree(worktree, "agent/a1")
    (worktree / "x.txt").write_text("x\n")
    assert [c.path for c in changed_paths(git, worktree, base)] == ["x.txt"]
    git.commit_all(worktree, "agent work")
    git.remove_worktree(worktree)
    assert not marker.exists()


def test_simulate_merge_clean_and_conflicting(repo, tmp_path):
    git = Git(repo)
    base = git.head()
    agent_commit(git, tmp_path, "clean", {"src/new.py": "n = 1\n"})
    agent_commit(git, tmp_path, "clash", {"README.md": "agent line\n"})
    user = commit_file(repo, "README.md", "user line\n")

    sim = git.simulate_merge(user, "agent/clean")
    assert sim.clean and sim.tree and sim.conflicts == []
    assert (sim.base, sim.head) == (user, sh(repo, "rev-parse", "agent/clean"))
    assert sh(repo, "ls-tree", "-r", "--name-only", sim.tree).splitlines() == ["README.md", "src/app.py", "src/new.py"]

    sim = git.simulate_merge(user, "agent/clash")
    assert not sim.clean and sim.tree is None and sim.conflicts == ["README.md"]
    assert git.simulate_merge(base, "agent/clash").clean  # no conflict against its own base
    assert git.simulate_merge(base, "agent/clash~0").clean  # any revision works too
    sh(repo, "tag", "agent/clean", base)  # a tag named like the branch does not shadow it
    assert git.simulate_merge(user, "agent/clean").head == sh(repo, "rev-parse", "refs/heads/agent/clean")
    assert sh(repo, "rev-parse", "HEAD") == user and sh(repo, "status", "--porcelain") == ""


def test_checkout_tree_materialises_a_simulated_merge_and_removes_it(repo, tmp_path):
    git = Git(repo)
    agent_commit(git, tmp_path, "a1", {"src/new.py": "n = 1\n"})
    user = commit_file(repo, "user.txt", "u\n")
    sim = git.simulate_merge(user, "agent/a1")
    place = tmp_path / "check"
    with git.checkout_tree(sim.tree, place, parents=(sim.base, sim.head)) as checkout:
        assert (checkout / "src" / "new.py").read_text() == "n = 1\n"
        assert (checkout / "user.txt").read_text() == "u\n"
        assert sh(checkout, "rev-parse", "HEAD^1") == user
        with pytest.raises(subprocess.CalledProcessError):
            sh(checkout, "symbolic-ref", "-q", "HEAD")  # detached
    assert not place.exists()
    assert [w.path for w in git.worktrees()] == [repo, tmp_path / "wt-a1"]


def test_remove_worktree_whose_git_link_the_agent_deleted(repo, tmp_path):
    git = Git(repo)
    worktree = tmp_path / "wt"
    git.add_worktree(worktree, "agent/a1")
    (worktree / ".git").unlink()
    git.remove_worktree(worktree)
    assert not worktree.exists() and [w.path for w in git.worktrees()] == [repo]
    with pytest.raises(GitError):
        git.remove_worktree(repo / "src")  # never deletes a folder git did not record


def test_merge_into_a_base_branch_not_checked_out_leaves_the_user_tree_alone(repo, tmp_path):
    git = Git(repo)
    base = git.head()
    agent_commit(git, tmp_path, "a1", {"src/new.py": "n = 1\n"})
    sh(repo, "checkout", "-qb", "feature")
    (repo / "README.md").write_text("uncommitted user edit\n")
    (repo / "scratch.txt").write_text("untracked\n")
    before = sh(repo, "status", "--porcelain")

    merged = git.merge("trunk", "agent/a1", "merge agent a1", expected_base=base)
    assert sh(repo, "rev-parse", "trunk") == merged
    assert sh(repo, "log", "-1", "--format=%P", merged).split() == [base, sh(repo, "rev-parse", "agent/a1")]
    assert sh(repo, "log", "-1", "--format=%an", merged) == "agent-runtime"
    assert git.current_branch() == "feature" and sh(repo, "status", "--porcelain") == before
    assert (repo / "README.md").read_text() == "uncommitted user edit\n"
    assert not (repo / "src" / "new.py").exists()


def test_merge_fast_forwards_a_clean_checkout_of_the_base(repo, tmp_path):
    git = Git(repo)
    base = git.head()
    agent_commit(git, tmp_path, "a1", {"src/new.py": "n = 1\n"})
    (repo / "untracked.txt").write_text("kept\n")
    merged = git.merge("trunk", "agent/a1", "merge agent a1", expected_base=base)
    assert git.head() == merged and git.current_branch() == "trunk"
    assert (repo / "src" / "new.py").read_text() == "n = 1\n"
    assert sh(repo, "status", "--porcelain") == "?? untracked.txt"


def test_merge_refuses_a_dirty_checkout_of_the_base(repo, tmp_path):
    git = Git(repo)
    base = git.head()
    agent_commit(git, tmp_path, "a1", {"src/new.py": "n = 1\n"})
    (repo / "README.md").write_text("work in progress\n")
    with pytest.raises(GitError, match="uncommitted changes"):
        git.merge("trunk", "agent/a1", "merge agent a1", expected_base=base)
    assert git.head() == base and sh(repo, "rev-parse", "trunk") == base
    assert (repo / "README.md").read_text() == "work in progress\n"
    assert not (repo / "src" / "new.py").exists() and not (repo / ".git" / "MERGE_HEAD").exists()


@pytest.mark.parametrize("checked_out", [True, False])
def test_merge_refused_when_the_base_moved(repo, tmp_path, checked_out):
    git = Git(repo)
    base = git.head()
    agent_commit(git, tmp_path, "a1", {"src/new.py": "n = 1\n"})
    sim = git.simulate_merge(base, "agent/a1")
    moved = commit_file(repo, "later.txt", "l\n")
    if not checked_out:
        sh(repo, "checkout", "-qb", "elsewhere")
    with pytest.raises(BaseMoved):
        git.merge("trunk", "agent/a1", "merge agent a1", expected_base=sim.base)
    assert sh(repo, "rev-parse", "trunk") == moved


def test_merge_refused_on_conflict(repo, tmp_path):
    git = Git(repo)
    agent_commit(git, tmp_path, "a1", {"README.md": "agent\n"})
    user = commit_file(repo, "README.md", "user\n")
    sh(repo, "checkout", "-qb", "elsewhere")
    with pytest.raises(GitError, match="conflicts in README.md"):
        git.merge("trunk", "agent/a1", "merge agent a1", expected_base=user)
    assert sh(repo, "rev-parse", "trunk") == user


def test_merge_loses_a_race_with_a_base_that_moves_mid_merge(repo, tmp_path, monkeypatch):
    """update-ref is a compare-and-swap: a commit landing between the check and the update wins."""
    git = Git(repo)
    base = git.head()
    agent_commit(git, tmp_path, "a1", {"src/new.py": "n = 1\n"})
    sh(repo, "checkout", "-qb", "elsewhere")
    real_holding = git.holding

    def racing_holding(ref):
        sh(repo, "commit", "-q", "--allow-empty", "-m", "someone else's work")
        sh(repo, "branch", "-f", "trunk", "HEAD")  # trunk moves right now
        return real_holding(ref)

    monkeypatch.setattr(git, "holding", racing_holding)
    with pytest.raises(BaseMoved):
        git.merge("trunk", "agent/a1", "merge agent a1", expected_base=base)
    assert sh(repo, "rev-parse", "trunk") == sh(repo, "rev-parse", "elsewhere")


def test_who_holds_a_branch_is_read_from_gits_own_records_as_git_says_it(repo, tmp_path):
    git = Git(repo)
    git.add_worktree(tmp_path / "wt1", "agent/a1")
    git.add_worktree(tmp_path / "wt2", "agent/a2")
    for ref in ("refs/heads/trunk", "refs/heads/agent/a1", "refs/heads/agent/a2", "refs/heads/none"):
        assert git.holding(ref) == [w.path for w in git.worktrees() if w.branch == ref], ref
    assert git.holding("refs/heads/agent/a1") == [(tmp_path / "wt1").resolve()]


def test_a_removed_worktree_leaves_no_record_and_no_process_to_prune_it(repo, tmp_path, monkeypatch):
    git = Git(repo)
    git.add_worktree(tmp_path / "wt", "agent/a1")
    ran = []
    real_run = git.run
    monkeypatch.setattr(git, "run", lambda *args, **kw: ran.append(args) or real_run(*args, **kw))
    git.remove_worktree(tmp_path / "wt")
    assert ran == [] and not (tmp_path / "wt").exists()
    assert sh(repo, "worktree", "list", "--porcelain").count("worktree ") == 1  # the main checkout alone
    assert sh(repo, "worktree", "prune", "--dry-run", "-v") == ""  # nothing left for git to prune


def test_remove_worktree_the_agent_made_unwritable(repo, tmp_path):
    git = Git(repo)
    worktree = tmp_path / "wt"
    git.add_worktree(worktree, "agent/a1")
    (worktree / "locked" / "inner").mkdir(parents=True)
    (worktree / "locked" / "inner" / "f.txt").write_text("f\n")
    (worktree / "locked" / "inner").chmod(0o000)
    (worktree / "locked").chmod(0o500)
    if os.geteuid() == 0:
        # Root ignores file modes; without its capabilities it is held to them like any user.
        code = f"from runtime.workspace.git import Git; Git({str(repo)!r}).remove_worktree({str(worktree)!r})"
        proc = subprocess.run(["setpriv", "--bounding-set=-all", "--inh-caps=-all", sys.executable, "-c", code],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    else:
        git.remove_worktree(worktree)
    assert not worktree.exists() and [w.path for w in git.worktrees()] == [repo]


def test_merge_into_the_checked_out_base_never_overwrites_an_untracked_file(repo, tmp_path):
    git = Git(repo)
    base = git.head()
    agent_commit(git, tmp_path, "a1", {"src/new.py": "n = 1\n"})
    (repo / "src" / "new.py").write_text("the user's own untracked draft\n")
    with pytest.raises(GitError, match="untracked working tree files would be overwritten"):
        git.merge("trunk", "agent/a1", "merge agent a1", expected_base=base)
    assert git.head() == base and sh(repo, "rev-parse", "trunk") == base
    assert (repo / "src" / "new.py").read_text() == "the user's own untracked draft\n"
    assert sh(repo, "status", "--porcelain") == "?? src/new.py"
