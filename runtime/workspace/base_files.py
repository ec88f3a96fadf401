"""The files of a base commit, read from the object store alone.

Verify compares the agent's work with the base it started from (a file over a
size limit at the base may not grow). The base is read by the orchestrator's
hardened git (``runtime.workspace.git``) from the commit's tree: object ids
come from ``ls-tree`` of the resolved base commit and blobs are read by id, so
nothing the agent could have written in its worktree (its index, its files, a
``.git`` link) is consulted. Paths are matched literally (``GIT_LITERAL_PATHSPECS``):
a file named ``*`` or ``:(glob)x`` names only itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from runtime.workspace.git import OID, Git, GitError

REGULAR_MODES = ("100644", "100755")  # a symlink (120000) or submodule (160000) holds no file text


@dataclass(frozen=True)
class Blob:
    """A regular file of the base: its object id and size in bytes."""

    oid: str
    size: int


def base_blobs(git: Git, rev: str, paths: Iterable[str]) -> dict[str, Blob]:
    """The regular files ``rev`` records at ``paths`` (relative to the top level); a path that is no regular
    file there (absent, a folder, a symlink, a submodule) is left out. From the tree's listing (kept by tree)
    and each file's size, through the object store's one batch reader."""
    wanted = {p for p in paths if p}
    found: dict[str, Blob] = {}
    for entry in git.listing(rev):
        if entry.path in wanted and entry.kind == "blob" and entry.mode in REGULAR_MODES:
            size = git.size(entry.oid)
            if size is not None:
                found[entry.path] = Blob(entry.oid, size)
    return found


def read_blob(git: Git, blob: Blob, limit: int) -> bytes | None:
    """The bytes of ``blob``; None when it is larger than ``limit`` (it is never read then)."""
    if not OID.fullmatch(blob.oid):
        raise GitError(["cat-file", "blob", blob.oid], f"refusing object id {blob.oid!r}")
    if blob.size > limit:
        return None
    return git.blob(blob.oid)
