"""Every change an agent made in its worktree, relative to the base commit.

The listing is built in a throwaway index (``GIT_INDEX_FILE``): it starts as the
base tree, gets ``add -A`` of the worktree, and is compared with the base by
``diff-index -M``. One pass thus covers edits, new files (untracked, in new
folders too), deletions, renames and type changes, whatever HEAD is, and without
trusting or touching the worktree's own index, whose assume-unchanged and
skip-worktree flags would hide edits from ``status``. Paths are NUL-separated
and decoded with the filesystem encoding, so any name survives.

Ignored files are not changes, unless an ignore source changed: then an agent
could have hidden files by editing the rules, so we fail closed. A changed,
added or deleted ``.gitignore`` (including one that ignores itself) reveals
every ignored file under its folder (a ``.gitignore`` rules only its subtree),
unless that folder was ignored already (pytest's self-ignoring cache); an
``info/exclude`` written since the worktree was created reveals them all.
Paths git cannot index (through an any-case ``.git`` folder) and nested
repositories, whose files git never looks at, are reported as added and escaping.
Before git reads the tree at all, the hazards of ``runtime.workspace.hazards``
are looked for: a nested repository makes the listing refuse
(``NestedRepositories``), or, for the spawn pipeline (``clear_nested``), have
its `.git` deleted first; those and the folders git cannot hold (too deep,
unreadable) are reported as added and escaping, with the reason.
The worktree's ``.git`` link is checked against the main repository's records:
a rewritten or replaced link is reported as a change of ``.git``; a missing
worktree or link raises ``WorkspaceMissing``.
"""

from __future__ import annotations

import os
import posixpath
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TypeGuard

from runtime.errors import FatalError
from runtime.verify.kinds.kind import Change
from runtime.workspace import hazards as hazards_
from runtime.workspace.git import Git, GitError
from runtime.workspace.safe_files import UnsafeFile, read_under

KINDS = {"A": "added", "M": "modified", "D": "deleted", "R": "renamed", "T": "typechange", "U": "modified"}
GITLINK = "160000"  # a nested repository: git records a commit id and never looks inside

__all__ = ["Change", "Listing", "WorkspaceMissing", "changed_paths", "check_worktree", "listing"]


class WorkspaceMissing(FatalError):
    """The worktree or its ``.git`` link is gone: the run ends as failed(kind=workspace)."""

    kind = "workspace"


def check_worktree(git: Git, worktree: str | os.PathLike[str]) -> Path:
    """The admin dir git recorded for ``worktree``; WorkspaceMissing if the worktree is unusable."""
    path = Path(worktree)
    if os.path.islink(path) or not path.is_dir():
        raise WorkspaceMissing(f"worktree {path} is gone")
    gitdir = git.worktree_gitdir(path)
    if gitdir is None:
        raise WorkspaceMissing(f"{path} is not a worktree of {git.root}")
    if not os.path.lexists(path / ".git"):
        raise WorkspaceMissing(f"the .git link of worktree {path} was removed")
    return gitdir


@dataclass(frozen=True)
class Listing:
    """The changes of a worktree, and the untracked files its ignore rules hide that are no change at all
    (a `__pycache__`, a build folder): not part of the work, so not what verify may run over."""

    changes: list[Change]
    ignored: frozenset[str]


def changed_paths(git: Git, worktree: str | os.PathLike[str], base_sha: str, *,
                  clear_nested: bool = False) -> list[Change]:
    """Every change of ``worktree`` relative to ``base_sha``: in path order, then ``.git`` if it changed.

    A nested repository raises ``NestedRepositories`` before git reads anything, unless
    ``clear_nested``: then its `.git` is deleted first and it is reported as an escaping change."""
    return listing(git, worktree, base_sha, clear_nested=clear_nested).changes


def listing(git: Git, worktree: str | os.PathLike[str], base_sha: str, *, clear_nested: bool = False) -> Listing:
    """`changed_paths`, and the ignored files that are no change, from the same pass over the tree."""
    gitdir = check_worktree(git, worktree)
    root, base = os.path.realpath(worktree), git.resolve(base_sha)
    found = hazards_.survey(root)
    if any(h.kind == "nested-repository" for h in found):
        if not clear_nested:
            raise hazards_.NestedRepositories(root, [h.path for h in found if h.kind == "nested-repository"])
        found = hazards_.clear(root)
    held = [Change(h.path, "added", escapes=True, reason=h.reason) for h in found]
    # git never enters them: a nested repository's files are another repository's, the others it cannot read
    fenced = [f":(exclude,literal){h.path}" for h in found]
    common = os.fspath(git.common_dir)
    with tempfile.TemporaryDirectory(prefix="agent-runtime-") as tmp:
        # The throwaway index's blobs go to a throwaway object store (the repository's own objects stay
        # readable as an alternate): listing the changes never writes the agent's files into the repository.
        os.mkdir(os.path.join(tmp, "objects"))
        env = {"GIT_DIR": str(gitdir), "GIT_WORK_TREE": root, "GIT_INDEX_FILE": os.path.join(tmp, "index"),
               "GIT_OBJECT_DIRECTORY": os.path.join(tmp, "objects"),
               "GIT_ALTERNATE_OBJECT_DIRECTORIES": os.path.join(common, "objects")}
        git.run("read-tree", base, cwd=root, env=env)
        # git fails the whole add on a path through an any-case ".git" folder or on a
        # nested repository without a commit: then those are listed, left out and reported directly.
        refused: list[str] = []
        try:
            _add(git, root, env, tmp, ["."] + fenced, "-A")
        except GitError:
            refused = [p for p in _ls(git, root, env, "--exclude-standard") if _unindexable(p)]
            _add(git, root, env, tmp, ["."] + fenced + [f":(exclude,literal){p}" for p in refused], "-A")
        changes = _diff(git, root, env, base)
        ignored = _ls(git, root, env, "--ignored", "--exclude-standard")
        ignored = [p for p in ignored if not any(_below(p, h.path) for h in found)]
        reveal = _revealed(git, root, env, changes, ignored, _exclude_changed(git, gitdir))
        if reveal:
            refused += [p for p in reveal if _unindexable(p)]
            _add(git, root, env, tmp, [f":(literal){p}" for p in reveal if not _unindexable(p)], "--force")
            changes = _diff(git, root, env, base)
        changes += [Change(p.rstrip("/"), "added", escapes=True) for p in refused]
    # A hazard's own path may also be listed by git (a gitlink of the base whose repository was deleted).
    changes = [c for c in changes if not any(_below(c.path, h.path) for h in held)] + held
    link = _git_link_change(Path(root), gitdir)
    changed = {c.path for c in changes}
    return Listing(sorted(changes, key=lambda c: c.path) + ([link] if link else []),
                   frozenset(p for p in ignored if p not in changed))


def _below(path: str, folder: str) -> bool:
    path = path.rstrip("/")
    return path == folder or path.startswith(folder + "/")


def _ls(git: Git, root: str, env: dict[str, str], *flags: str) -> list[str]:
    """Untracked paths (relative to the throwaway index), filtered by ``flags``."""
    out = git.run("ls-files", "-z", "--others", *flags, cwd=root, env=env).stdout
    return [os.fsdecode(p) for p in out.split(b"\0") if p]


def _add(git: Git, root: str, env: dict[str, str], tmp: str, specs: list[str], *flags: str) -> None:
    if specs:  # the pathspecs go through a file: there may be many, and any bytes
        listing = os.path.join(tmp, "pathspecs")
        Path(listing).write_bytes(b"\0".join(os.fsencode(s) for s in specs))
        git.run("add", *flags, f"--pathspec-from-file={listing}", "--pathspec-file-nul", cwd=root, env=env)


def _unindexable(path: str) -> bool:
    # ls-files lists a nested repository as "folder/", never its files
    return path.endswith("/") or any(part.casefold() == ".git" for part in path.split("/"))


def _diff(git: Git, root: str, env: dict[str, str], base: str) -> list[Change]:
    out = git.run("diff-index", "--cached", "--raw", "-z", "-M", base, cwd=root, env=env).stdout
    fields, changes, i = out.split(b"\0"), [], 0
    while i + 1 < len(fields) and fields[i].startswith(b":"):
        # ":<old mode> <new mode> <old sha> <new sha> <status>" NUL <path> [NUL <new path>]
        meta = fields[i].decode().split()
        status, new_mode = meta[4][0], meta[1]
        if status in "RC":
            old, path, i = os.fsdecode(fields[i + 1]), os.fsdecode(fields[i + 2]), i + 3
        else:
            old, path, i = None, os.fsdecode(fields[i + 1]), i + 2
        changes.append(_annotate(root, path, KINDS.get(status, "modified"), old, new_mode))
    return changes


def _annotate(root: str, path: str, kind: str, old: str | None, mode: str) -> Change:
    full = os.path.join(root, path)
    if kind == "deleted" or not os.path.islink(full):
        return Change(path, kind, old, None, kind != "deleted" and mode == GITLINK)
    return Change(path, kind, old, os.readlink(full), _escapes(root, os.path.realpath(full)))


def _escapes(root: str, resolved: str) -> bool:
    if resolved != root and not resolved.startswith(root + os.sep):
        return True
    first = os.path.relpath(resolved, root).split(os.sep)[0]
    return first.casefold() == ".git"


def _is_gitignore(path: str | None) -> TypeGuard[str]:
    if not path:
        return False
    return posixpath.basename(path).casefold() == ".gitignore"


def _revealed(git: Git, root: str, env: dict[str, str], changes: list[Change], ignored: list[str],
              exclude_changed: bool) -> list[str]:
    """The ignored paths that count as changes, because a rule that could hide them changed."""
    if exclude_changed:
        return ignored
    folders = {posixpath.dirname(p) for c in changes for p in (c.path, c.old_path) if _is_gitignore(p)}
    # A new .gitignore that is itself ignored (it may ignore itself) counts too, unless rules
    # outside its folder already ignore the folder, as with pytest's or a venv's self-ignoring
    # .gitignore in a folder the base ignores: then it hides nothing that was not hidden.
    # Rules outside that themselves changed are sources of their own and reveal the folder.
    for folder in {posixpath.dirname(p) for p in ignored if _is_gitignore(p)} - folders:
        # "./": a folder named like pathspec magic (":(top)x") stays a plain path.
        if not folder or git.run("check-ignore", "-q", "--", f"./{folder}", cwd=root, env=env, ok=(0, 1)).returncode:
            folders.add(folder)
    if "" in folders:
        return ignored
    return [p for p in ignored if any(p.startswith(f + "/") for f in folders)]


def _exclude_changed(git: Git, gitdir: Path) -> bool:
    """Was ``info/exclude`` written since the worktree was made? ctime cannot be set back by a writer."""
    exclude = git.common_dir / "info" / "exclude"
    try:
        changed = exclude.stat().st_ctime_ns
    except FileNotFoundError:
        return False  # no file hides nothing
    try:
        made = (gitdir / "commondir").stat().st_ctime_ns  # written once, by `worktree add`
    except FileNotFoundError:
        return True
    return changed >= made


def _git_link_change(root: Path, gitdir: Path) -> Change | None:
    """A Change of ``.git`` unless it is still the file ``gitdir: <the admin dir git recorded>``."""
    link = root / ".git"
    if link.is_symlink():
        return Change(".git", "typechange", None, os.readlink(link), True)
    if link.is_dir() and os.path.realpath(link) == os.path.realpath(gitdir):
        return None  # the main working tree (a plain checkout): `.git` is the repository itself
    if not link.is_file():
        return Change(".git", "typechange", None, None, True)
    try:  # never through a symlink swapped in after the checks above, and never more than a link holds
        data, _ = read_under(root, ".git", 4096)
    except (OSError, UnsafeFile):
        return Change(".git", "typechange", None, None, True)
    text = data.decode("utf-8", "surrogateescape").strip()
    target = text.removeprefix("gitdir: ")
    if target == text or "\n" in target or os.path.realpath(root / target) != os.path.realpath(gitdir):
        return Change(".git", "modified", None, None, True)
    return None
