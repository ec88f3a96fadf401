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

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

from runtime.workspace.git import Git, GitError

REGULAR_MODES = ("100644", "100755")  # a symlink (120000) or submodule (160000) holds no file text
_OID = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")  # SHA-1 or SHA-256
_CHUNK = 500  # paths per ls-tree call, well under the kernel's argument limit


@dataclass(frozen=True)
class Blob:
    """A regular file of the base: its object id and size in bytes."""

    oid: str
    size: int


def base_blobs(git: Git, rev: str, paths: Iterable[str]) -> dict[str, Blob]:
    """The regular files ``rev`` records at ``paths`` (relative to the top level); a path that is no regular
    file there (absent, a folder, a symlink, a submodule) is left out."""
    commit = git.resolve(rev)
    wanted = sorted({p for p in paths if p})
    found: dict[str, Blob] = {}
    for start in range(0, len(wanted), _CHUNK):
        chunk = wanted[start:start + _CHUNK]
        # Without -r, a path that is a folder lists its entries, which the exact match below drops.
        out = git.run("ls-tree", "-z", "-l", "--full-tree", commit, "--", *chunk,
                      env={"GIT_LITERAL_PATHSPECS": "1"}).stdout
        for entry in out.split(b"\0"):
            meta, tab, name = entry.partition(b"\t")
            fields = meta.split()
            if not tab or len(fields) != 4:
                continue
            mode, kind, oid, size = (f.decode() for f in fields)
            path = os.fsdecode(name)
            if kind == "blob" and mode in REGULAR_MODES and path in chunk and size.isdigit():
                found[path] = Blob(oid, int(size))
    return found


def read_blob(git: Git, blob: Blob, limit: int) -> bytes | None:
    """The bytes of ``blob``; None when it is larger than ``limit`` (it is never read then)."""
    if not _OID.fullmatch(blob.oid):
        raise GitError(["cat-file", "blob", blob.oid], f"refusing object id {blob.oid!r}")
    if blob.size > limit:
        return None
    return git.run("cat-file", "blob", blob.oid).stdout
