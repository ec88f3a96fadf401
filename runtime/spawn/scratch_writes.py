"""New files outside the write scope, thrown away before verify: what the agent's commands wrote as scratch.

A repository's own test and check commands write where its developers'
machines let them: `.coverage` and `.pytest_cache` at the top, c8's
`coverage/`, a doctest's `file.txt.part` in the working folder. The agent's
sandbox lets new files be made at the worktree's top and beside the scope's
files (`runtime.sandbox.agent`); those the base's ignore rules hold are no
change at all (`runtime.workspace.changes`). The rest of what lands outside the
scope cannot be part of the change either, and the file tools never wrote it
(the gate refuses their writes outside the scope): a command did. So, before
verify, every file *added* outside the scope is deleted from the worktree, and
the attempt says which. Verify then judges the change as it would be committed,
and its tests run without what was thrown away: work that needed such a file
fails there, with feedback. Everything else outside the scope (a tracked file
changed, deleted or renamed, a path into `.git`) stays for verify to reject.

When the tree holds a hazard (`runtime.workspace.hazards`: a nested repository,
a folder git cannot hold), nothing is thrown away: verify rejects the work and
says why. Deletion never follows a symlink: each path is reached folder by folder from
the worktree, and a path whose folder is a symlink or gone is left alone.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field

from runtime.policy.document import PolicyDocument
from runtime.verify.kinds.base import compile_globs, listing
from runtime.verify.kinds.scope import unsafe_reason
from runtime.workspace import hazards
from runtime.workspace.changes import Change
from runtime.workspace.changes import listing as list_changes
from runtime.workspace.git import Git, GitError
from runtime.workspace.safe_files import UnsafeFile, folder_under
from runtime.workspace.tree import remove_below


@dataclass(frozen=True)
class Scratch:
    """What was thrown away, and the change listing verify may take as it is (None: list them again)."""

    thrown: list[str] = field(default_factory=list)
    changes: list[Change] | None = None
    # The files the ignore rules hide that are no change (`__pycache__`, build output): verify's copy leaves
    # them out, or a .pyc there would be tested in place of its source. Empty where no listing was made.
    ignored: frozenset[str] = frozenset()


def throw_away_scratch(git: Git, worktree: os.PathLike[str] | str, base: str, policy: PolicyDocument) -> Scratch:
    """Delete the files added outside the write scope since ``base``.

    The listing this makes is the one verify would make (the tree is the same), so it is handed on when
    nothing was deleted: one pass over the tree instead of two for the usual attempt."""
    globs = policy.write_globs()
    try:
        found = list_changes(git, worktree, base)
    except (GitError, hazards.NestedRepositories):
        # A nested repository: verify reports it, with its reason, and rejects the work (clearing it here
        # would leave verify nothing to see). An unreadable tree: verify says why.
        return Scratch()
    changes = found.changes
    if globs is None or any(c.reason for c in changes):
        # no write scope; or a folder git cannot hold: verify rejects the work, saying why
        return Scratch(changes=changes, ignored=found.ignored)
    inside = compile_globs(globs)
    doomed = [c.path for c in changes
              if c.kind == "added" and c.old_path is None and unsafe_reason(c.path) is None
              and not (inside is not None and inside.match(c.path))]
    thrown = [path for path in doomed if _delete(worktree, path)]
    # deleting added files leaves the ignored ones as they were
    return Scratch(thrown, None if thrown else changes, found.ignored)


def _delete(root: os.PathLike[str] | str, relative: str) -> bool:
    folder, _, name = relative.rpartition("/")
    try:
        with folder_under(root, folder) as fd:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):  # never listed by git, which lists files: removed whole all the same
                remove_below(fd, name)
            else:
                os.unlink(name, dir_fd=fd)
    except (UnsafeFile, FileNotFoundError):
        return False
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return False
        raise
    return True


def scratch_note(paths: list[str]) -> str:
    """What the attempt's record says of them: a person or the agent can tell what did not land."""
    return (f"Thrown away {len(paths)} new file(s) outside your write scope, written by the commands you ran "
            f"(their scratch is not part of the change):\n{listing([f'`{p}`' for p in paths])}")
