"""Policies compiled on the fly for ``runtime check --role``, cached on disk.

The cache key hashes every catalog file, the role name, the task file and the
worktree root, so an edit to any of them compiles afresh. Looking a policy up
needs the standard library only; compiling (pydantic) happens on a miss.
"""

from __future__ import annotations

import json
import os
import tempfile

from runtime.gate.policy import VERSION, Policy, load_policy, new_sha256


def cache_dir() -> str:
    explicit = os.environ.get("RUNTIME_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "agent-runtime", "policies")


def catalog_files(catalog_root: str) -> list[str]:
    files = []
    for sub in ("capabilities", "roles"):
        top = os.path.join(catalog_root, sub)
        for folder, dirs, names in os.walk(top):
            dirs.sort()
            files += [os.path.join(folder, n) for n in sorted(names)]
    return files


def cache_key(catalog_root: str, role: str, task_path: str | None, root: str) -> str:
    h = new_sha256()
    h.update(f"v{VERSION}\0{role}\0{root}\0{task_path or ''}\0".encode())
    for path in catalog_files(catalog_root) + ([task_path] if task_path else []):
        with open(path, "rb") as fh:
            data = fh.read()
        h.update(f"{path}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def cached_policy(catalog_root: str, role: str, task_path: str | None, root: str) -> Policy:
    """The policy for ``role`` (and ``task_path``) at ``root``, compiling it on a miss."""
    folder = cache_dir()
    path = os.path.join(folder, f"{role}-{cache_key(catalog_root, role, task_path, root)[:32]}.json")
    if not os.path.exists(path):
        from runtime.policy.build import build_policy  # pydantic: only on a cache miss

        doc = build_policy(catalog_root, role, task_path, root)
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            json.dump(doc, fh, indent=1, sort_keys=True)
        os.replace(tmp, path)
    policy = load_policy(path)
    # The cache holds the runtime's own files: never agent-writable.
    policy.protected += (os.path.realpath(folder),)
    return policy
