"""What an agent can leave in its worktree that the orchestrator's git must never meet, or cannot hold.

**Nested repositories.** A folder below the worktree's top holding a `.git`
(folder or `gitdir:` file) is another repository. When the orchestrator's git
lists or commits the worktree and the index records that folder as a gitlink
(a submodule of the base inside the scope, or one an earlier inspection commit
recorded), git asks whether it is dirty by running `git status` *inside* it,
with *its* configuration: a `filter.<x>.clean`, a `core.fsmonitor`, hooks the
agent wrote there run on the host, as the orchestrator, root included. Options
passed with `-c` do not reach them (`filter.<any name>` cannot be listed in
advance), `diff.ignoreSubmodules` does not stop `add` or `diff-index`, and
`safe.directory` does not apply to a child git whose `GIT_DIR` is named. So no
git command reads a worktree while one is there: the spawn pipeline deletes
the nested `.git` entries first (`clear`, reported as a rejection, so the
work is never committed, not even for inspection), and every git entry point
over an agent's worktree refuses one it finds (`guard`). Deleting rather than
renaming: the orchestrator must never run git inside that repository either,
and its files stay, listed in the rejection.

**Paths git cannot hold.** git skips, with a warning, folders it cannot open:
a path longer than PATH_MAX, a folder it may not read. Their files would be
neither judged nor committed; they are reported (`too-deep`, `unreadable`) so
the rejection says why.

The survey walks the tree through descriptors (``runtime.workspace.tree``), so
nothing the agent left there makes the walk itself fail.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass

from runtime.errors import FatalError
from runtime.workspace.tree import remove_below, walk

# git works with paths relative to the worktree's top: past this many bytes it cannot open them (PATH_MAX
# is 4096 with the terminating NUL); a margin keeps names inside such a folder under it too.
MAX_PATH_BYTES = 3800
GIT = ".git"

KINDS = {
    "nested-repository": "a nested repository (a `.git` below the worktree's top): git would run its "
                         "configuration on the host, so nested repositories are never committed; its `.git` "
                         "was deleted before git read the tree",
    "too-deep": f"a folder whose path is longer than git can hold ({MAX_PATH_BYTES} bytes): its files can be "
                "neither checked nor committed",
    "unreadable": "a folder the orchestrator cannot read: its files can be neither checked nor committed",
}


@dataclass(frozen=True)
class Hazard:
    """One path (relative, POSIX; bytes that are not UTF-8 surrogate-escaped) of a kind in ``KINDS``."""

    path: str
    kind: str

    @property
    def reason(self) -> str:
        return KINDS[self.kind]


class NestedRepositories(FatalError):
    """A git command over a worktree was refused: it holds nested repositories."""

    kind = "workspace"

    def __init__(self, root: str | os.PathLike[str], paths: Sequence[str]) -> None:
        self.paths = list(paths)
        shown = ", ".join(repr(p) for p in self.paths[:5]) + (" ..." if len(self.paths) > 5 else "")
        super().__init__(f"{os.fspath(root)} holds nested repositories ({shown}); git would run their "
                         "configuration, so the orchestrator runs no git command over it")


def survey(root: str | os.PathLike[str]) -> list[Hazard]:
    """Every hazard below ``root``, in walk order. The top's own `.git` (the worktree's link, or a plain
    checkout's repository) is the repository itself, not a hazard, and is not entered."""
    found: list[Hazard] = []
    skipped: list[tuple[str, str]] = []
    for folder in walk(root, skipped=skipped):
        names = folder.dirs + [e.name for e in folder.others]
        if folder.depth == 0:
            folder.dirs[:] = [d for d in folder.dirs if d != GIT]
        elif GIT in names:
            found.append(Hazard(folder.path, "nested-repository"))
            folder.dirs[:] = [d for d in folder.dirs if d != GIT]
        keep = []
        for name in folder.dirs:
            child = f"{folder.path}/{name}" if folder.path else name
            if len(os.fsencode(child)) > MAX_PATH_BYTES:
                found.append(Hazard(child, "too-deep"))
            else:
                keep.append(name)
        folder.dirs[:] = keep
    found += [Hazard(path, "unreadable") for path, _ in skipped]
    return found


def guard(root: str | os.PathLike[str]) -> None:
    """Refuse (``NestedRepositories``) a tree holding nested repositories, before git reads it."""
    nested = [h.path for h in survey(root) if h.kind == "nested-repository"]
    if nested:
        raise NestedRepositories(root, nested)


def clear(root: str | os.PathLike[str]) -> list[Hazard]:
    """Delete the `.git` of every nested repository below ``root`` (never following a symlink on the
    way) and return every hazard found, for the rejection to name."""
    hazards = survey(root)
    for hazard in hazards:
        if hazard.kind == "nested-repository":
            _delete_git_entry(root, hazard.path)
    left = [h.path for h in survey(root) if h.kind == "nested-repository"]
    if left:  # nothing runs in the tree now, so this is a bug or a file system refusing: fail closed
        raise NestedRepositories(root, left)
    return hazards


def _delete_git_entry(root: str | os.PathLike[str], relative: str) -> None:
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in relative.split("/"):
            nxt = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = nxt
        try:
            st = os.stat(GIT, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return
        if stat.S_ISDIR(st.st_mode):
            remove_below(fd, GIT)
        else:
            os.unlink(GIT, dir_fd=fd)
    finally:
        os.close(fd)
