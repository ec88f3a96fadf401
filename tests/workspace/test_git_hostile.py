"""Every git command the orchestrator runs over an agent's worktree, against every configuration key and
attribute git documents as running a program, planted everywhere the agent can write: a canary must never run.

Differential, as the gate is tested against bash: the planted tree is first shown to be live (git run
the way a naive orchestrator would, `git add -A` with the old hardening, runs the canary through the
nested repository at a submodule's path), then every operation of the orchestrator (listing the changes,
commit, inspection commit, simulated merge, merge into a checked-out base, bundle out and in, the
re-check's checkout, resume's checkout, worktree removal) runs over a freshly planted tree and the
canary log must stay empty. The keys come from the installed git's own manual pages (`gitdocs`).

Places the agent can write: any file of its worktree, so a nested repository's `.git/config`,
`config.worktree`, `info/attributes` and hooks, its `.gitattributes`, the worktree's own
`.gitattributes` and `.gitmodules`, and the worktree's `.git` link (read-only in the sandbox, planted
anyway: the orchestrator names the git directory itself and must not read the link's target).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from runtime.workspace import hazards
from runtime.workspace.changes import changed_paths
from runtime.workspace.git import Git
from runtime.workspace.hazards import NestedRepositories
from tests.conftest import require
from tests.support import user_git
from tests.workspace import gitdocs

# A commit anyone can re-make byte for byte; the base records it as a submodule, and the agent re-makes it.
NESTED_ENV = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a",
              "GIT_COMMITTER_EMAIL": "a@b", "GIT_AUTHOR_DATE": "2001-01-01T00:00:00Z",
              "GIT_COMMITTER_DATE": "2001-01-01T00:00:00Z", "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent"}
# Keys that move what git looks at rather than run anything: planted, they would stop the nested git
# before the keys that do run something.
RELOCATING = {"core.worktree", "core.bare", "include.path"}


def nested_git(folder: Path, *args: str) -> str:
    env = {**os.environ, **NESTED_ENV, "GIT_DIR": str(folder / ".git"), "GIT_WORK_TREE": str(folder)}
    return subprocess.run(["git", *args], cwd=folder, env=env, check=True, capture_output=True, text=True).stdout


def make_nested(folder: Path) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    nested_git(folder, "init", "-q", "-b", "main", ".")
    (folder / "f").write_text("data\n")
    nested_git(folder, "add", "f")
    nested_git(folder, "commit", "-qm", "nested")
    return nested_git(folder, "rev-parse", "HEAD").strip()


class Canary:
    """Programs that record that they ran: one per key (its name says which), a hooks folder, an
    include file naming every key again."""

    def __init__(self, root: Path, keys: list[str]) -> None:
        self.root, self.keys = root, keys
        self.bin, self.log = root / "bin", root / "ran.log"
        self.bin.mkdir(parents=True)
        self.hooks = root / "hooks"
        self.hooks.mkdir()
        for hook in sorted(set(gitdocs.documented_hooks() or []) | set(gitdocs.KNOWN_HOOKS)):
            self._script(self.hooks / hook, f"hook {hook}")
        for key in keys:
            self._script(self.program(key), key)
        self.include = root / "included.config"
        self.include.write_text(self.config_text(prefix="included "))

    def _script(self, path: Path, what: str) -> None:
        path.write_text(f"#!/bin/sh\necho {shlex.quote(what)} \"$(id -u)\" >> {shlex.quote(str(self.log))}\ncat\n")
        path.chmod(0o755)

    def program(self, key: str, prefix: str = "") -> Path:
        path = self.bin / re.sub(r"[^A-Za-z0-9._-]", "_", f"{prefix}{key}")
        if not path.exists():
            self._script(path, prefix + key)
        return path

    def value(self, key: str, prefix: str = "") -> str:
        if key == "core.hooksPath":
            return str(self.hooks)
        if key.startswith("includeIf."):
            return str(self.include)
        if key.startswith("alias."):
            return f"!{self.program(key, prefix)}"
        return str(self.program(key, prefix))

    def config_text(self, prefix: str = "") -> str:
        lines = []
        for key in self.keys:
            if prefix == "included " and key.startswith("includeIf."):
                continue  # the included file includes nothing: git refuses circular includes
            section, _, name = key.rpartition(".")
            head, _, sub = section.partition(".")
            header = f'[{head} "{sub}"]' if sub else f"[{head}]"
            value = self.value(key, prefix).replace("\\", "\\\\").replace('"', '\\"')
            lines += [header, f'\t{name} = "{value}"']
        return "\n".join(lines) + "\n"

    def ran(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []


@pytest.fixture(scope="module")
def program_keys(tmp_path_factory) -> list[str]:
    documented = gitdocs.documented_keys()
    if documented is None:
        require(False, "git's manual pages (git-config(1)) are not installed, so the keys come from the "
                       "built-in list only")
    keys = sorted({c for key in {*(documented or []), *gitdocs.KNOWN_KEYS} for c in gitdocs.concrete(key)}
                  - RELOCATING)
    planted = gitdocs.accepted(keys, "/nonexistent/bin/program", tmp_path_factory.mktemp("scratch") / "repo")
    # The documented keys are read, and the ones everyone knows run a program are among those planted.
    assert {"filter.evil.clean", "core.fsmonitor", "diff.evil.textconv", "merge.evil.driver", "gpg.program",
            "core.sshCommand", "credential.helper", "diff.external"} <= set(planted)
    return planted


@pytest.fixture
def planted(tmp_path, program_keys):
    """(git, worktree, base, canary): a repository with a submodule in the base inside the agent's part,
    and a worktree where every place the agent could write holds every key."""
    canary = Canary(tmp_path / "canary", program_keys)
    vendor = tmp_path / "vendor-lib"
    sha = make_nested(vendor)
    repo = tmp_path / "repo"
    user_git(tmp_path, "init", "-q", "-b", "trunk", str(repo))
    user_git(repo, "config", "user.name", "Test User")
    user_git(repo, "config", "user.email", "test@example.com")
    (repo / "src").mkdir()
    (repo / "src" / "app.py").write_text("x = 1\n")
    (repo / ".gitmodules").write_text(f'[submodule "lib"]\n\tpath = src/vendor\n\turl = {vendor}\n')
    (repo / "src" / "vendor").mkdir()
    user_git(repo, "add", "-A")
    user_git(repo, "update-index", "--add", "--cacheinfo", f"160000,{sha},src/vendor")
    user_git(repo, "commit", "-qm", "a project vendoring a submodule")
    git = Git(repo)
    worktree = tmp_path / "wt"
    base = git.add_worktree(worktree, "agent/x")
    plant(worktree, canary, tmp_path)
    return git, worktree, base, canary


def plant(worktree: Path, canary: Canary, tmp: Path) -> None:
    attributes = "* filter=evil diff=evil merge=evil text\n"
    for folder in (worktree / "src" / "vendor", worktree / "src" / "fresh"):
        make_nested(folder)  # at the base's gitlink commit (src/vendor), and a new one (src/fresh)
        gitdir = folder / ".git"
        (gitdir / "config").write_text((gitdir / "config").read_text() + canary.config_text()
                                       + "[extensions]\n\tworktreeConfig = true\n")
        (gitdir / "config.worktree").write_text(canary.config_text(prefix="worktree "))
        (gitdir / "info").mkdir(exist_ok=True)
        (gitdir / "info" / "attributes").write_text(attributes)
        (folder / ".gitattributes").write_text(attributes)
        (folder / ".gitmodules").write_text(f'[submodule "x"]\n\tpath = x\n\turl = ext::{canary.program("gitmodules-url")}\n')
        for hook in canary.hooks.iterdir():
            (gitdir / "hooks" / hook.name).write_bytes(hook.read_bytes())
            (gitdir / "hooks" / hook.name).chmod(0o755)
        os.utime(folder / "f", (978307207, 978307207))  # same size, new date: only its content can tell
    (worktree / ".gitattributes").write_text(attributes)
    (worktree / ".gitmodules").write_text(
        f'[submodule "lib"]\n\tpath = src/vendor\n\turl = ext::{canary.program("gitmodules-url")}\n'
        f'\tupdate = !{canary.program("gitmodules-update")}\n')
    (worktree / "src" / "app.py").write_text("x = 2\n")  # the agent's real work


def test_the_planted_tree_is_live(planted):
    """The control: git run over the worktree as the orchestrator ran it before (`add -A` with hooks and
    fsmonitor off, the git directory named) runs the nested repository's clean filter, on the host."""
    git, worktree, base, canary = planted
    gitdir = git.worktree_gitdir(worktree)
    old_hardening = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    subprocess.run(["git", *old_hardening, "add", "-A"], cwd=worktree, capture_output=True,
                   env={**env, "GIT_DIR": str(gitdir), "GIT_WORK_TREE": str(worktree)})
    assert any("filter.evil." in line for line in canary.ran()), canary.ran()


def _listing_refuses(git, worktree, base, tmp, canary):
    with pytest.raises(NestedRepositories):
        changed_paths(git, worktree, base)


def _commit_refuses(git, worktree, base, tmp, canary):
    with pytest.raises(NestedRepositories):
        git.commit_all(worktree, "m")
    with pytest.raises(NestedRepositories):
        git.unstaged_files(worktree)


def _remove(git, worktree, base, tmp, canary):
    git.remove_worktree(worktree)
    assert not worktree.exists()


def _spawn_order(git, worktree, base, tmp, canary):
    """What a spawn with --merge does, in order, and what a plan, a resume and a cluster do after it."""
    changes = changed_paths(git, worktree, base, clear_nested=True)
    nested = {c.path for c in changes if c.reason}
    assert nested == {"src/vendor", "src/fresh"}, changes
    assert hazards.survey(worktree) == []
    changed_paths(git, worktree, base, clear_nested=True)  # after the checks ran: listed again
    git.unstaged_files(worktree)
    # `.gitmodules` is a control file, never committed (an `update = !command` in it makes git refuse
    # to work in the checkout it lands in); the rest of the agent's work is.
    commit = git.commit_all(worktree, "verified work", branch="agent/x", exclude=[*sorted(nested), ".gitmodules"])
    assert git.text("ls-tree", "-r", commit, "src/fresh") == ""  # never committed
    simulation = git.simulate_merge(base, "agent/x")
    assert simulation.clean
    with git.checkout_tree(str(simulation.tree), tmp / "merged", parents=(base, commit)) as merged:
        changed_paths(git, merged, base)  # the checks' checkout of the simulated merge
    merged_commit = git.merge("trunk", "agent/x", "merge", expected_base=base)  # trunk checked out: ff in place
    git.dirty_checkout("trunk")
    git.bundle("agent/x", tmp / "work.bundle")
    git.import_bundle(tmp / "work.bundle", "agent/x", commit)
    git.remove_worktree(worktree)
    git.checkout_worktree(tmp / "resumed", "agent/x")  # a resumed run starts from the branch
    plant(tmp / "resumed", canary, tmp)
    changed_paths(git, tmp / "resumed", base, clear_nested=True)
    git.commit_all(tmp / "resumed", "resumed", exclude=["src/vendor", "src/fresh", ".gitmodules"], allow_empty=True)
    git.remove_worktree(tmp / "resumed")
    assert merged_commit


def _tampered_link(git, worktree, base, tmp, canary):
    """The worktree's `.git` link pointed at a git directory of the agent's, with every key: the
    orchestrator names the real one and reports the link as a change."""
    fake = worktree / "fake.git"
    subprocess.run(["git", "init", "-q", "--bare", str(fake)], check=True, capture_output=True)
    (fake / "config").write_text((fake / "config").read_text() + canary.config_text(prefix="link "))
    (worktree / ".git").unlink()
    (worktree / ".git").write_text(f"gitdir: {fake}\n")
    changes = changed_paths(git, worktree, base, clear_nested=True)
    assert any(c.path == ".git" and c.escapes for c in changes)
    git.remove_worktree(worktree)


OPERATIONS = {"listing refuses": _listing_refuses, "commit refuses": _commit_refuses, "removal": _remove,
              "spawn, merge, bundle, resume": _spawn_order, "tampered .git link": _tampered_link}


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_no_orchestrator_git_command_runs_what_the_agent_planted(planted, tmp_path, operation):
    git, worktree, base, canary = planted
    OPERATIONS[operation](git, worktree, base, tmp_path, canary)
    assert canary.ran() == []

