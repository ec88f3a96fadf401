"""Finding the catalog (a folder with ``capabilities/`` and ``roles/``).

Order: ``--catalog``, then ``RUNTIME_CATALOG``, then (for commands a person
runs, never for the hook) the nearest folder upward from the working
directory that has both, then the catalog shipped with the package. The hook
never searches the working directory: that folder belongs to the agent, and
a catalog planted there must not become its policy. Standard library only.
"""

from __future__ import annotations

import os

from runtime.errors import UsageError


def _is_catalog(folder: str) -> bool:
    return os.path.isdir(os.path.join(folder, "capabilities")) and os.path.isdir(os.path.join(folder, "roles"))


def shipped_catalog() -> str | None:
    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    for candidate in (os.path.join(package, "_catalog"), os.path.dirname(package)):
        if _is_catalog(candidate):
            return candidate
    return None


def find_catalog(explicit: str | None = None, search_cwd: bool = True) -> str:
    if explicit:
        root = os.path.realpath(explicit)
        if not _is_catalog(root):
            raise UsageError(f"{explicit}: not a catalog (needs capabilities/ and roles/ folders)")
        return root
    env = os.environ.get("RUNTIME_CATALOG")
    if env:
        return find_catalog(env, search_cwd=False)
    if search_cwd:
        folder = os.path.realpath(os.getcwd())
        while True:
            if _is_catalog(folder):
                return folder
            parent = os.path.dirname(folder)
            if parent == folder:
                break
            folder = parent
    shipped = shipped_catalog()
    if shipped is None:
        raise UsageError("no catalog found: pass --catalog DIR (a folder with capabilities/ and roles/)")
    return shipped
