"""Policies compiled on the fly for ``runtime check --role``, cached on disk.

The cache key hashes every catalog file, the role name, the task file, the
worktree root and the worktree's package.json (whose scripts the policy
carries), so an edit to any of them compiles afresh. Looking a policy up
needs the standard library only; compiling (pydantic) happens on a miss.

Hashing sixty catalog files on every tool call would cost the hook more than
the decision, so a small index per (catalog, role, task, root) remembers
which policy those inputs produced and the ``stat`` of every input file and
folder: while none has changed (size, mtime in nanoseconds, inode; a folder's
mtime moves when a file is added or removed), the hook reads the index and the
policy and hashes nothing. The catalog is the runtime's own (never writable by
an agent), so the stat check guards against stale results, not attacks.
"""

from __future__ import annotations

import os

from runtime.lang import hotjson

TYPE_CHECKING = False  # typing's, without importing typing: the hook reads the policy cache
if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONObject
    from runtime.policy.compiled import PolicyBody

from runtime.gate.policy import Policy, load_policy
from runtime.lang.audience import SESSION
from runtime.policy.document import VERSION, canonical, new_sha256


def cache_dir() -> str:
    explicit = os.environ.get("RUNTIME_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "agent-runtime", "policies")


def catalog_files(catalog_root: str) -> list[str]:
    return _walk(catalog_root)[0]


def _walk(catalog_root: str) -> tuple[list[str], list[str]]:
    from runtime.manifests.locate import CATALOG_PARTS, TOOLCHAIN_FILE, catalog_layers

    layers = catalog_layers(catalog_root)
    folders: list[str] = []
    # A layer's toolchain.toml, whether or not it exists yet: creating one changes the policy.
    files = [os.path.join(layer, TOOLCHAIN_FILE) for layer in layers]
    for sub in (os.path.join(layer, part) for layer in layers for part in CATALOG_PARTS):
        top = sub
        folders.append(top)
        for folder, dirs, names in os.walk(top):
            dirs.sort()
            folders += [os.path.join(folder, d) for d in dirs]
            files += [os.path.join(folder, n) for n in sorted(names)]
    return files, folders


def _stamp(path: str) -> str:
    """What the cache remembers of an input: its size, modification time and inode (`-` when absent)."""
    try:
        st = os.stat(path)
    except OSError:
        return "-"
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"


def stamps(paths: list[str]) -> str:
    """The stamps of ``paths``, as one string: an index compares it whole (a cold hook reads ~170 of them)."""
    return " ".join(map(_stamp, paths))


# The cache's own layout, in every key: 2 = policies in their canonical form (checked over their bytes); 3 = an
# index's paths and stamps each one string.
_LAYOUT = 3


def _index_path(folder: str, catalog_root: str, role: str, task_path: str | None, root: str) -> str:
    h = new_sha256(f"v{VERSION}.{_LAYOUT}\0{SESSION}\0{catalog_root}\0{role}\0{task_path or ''}\0{root}".encode())
    return os.path.join(folder, f"index-{role}-{h.hexdigest()[:32]}.json")


def _from_index(index: str) -> str | None:
    """The policy file the index names, if no input it lists has changed since."""
    try:
        with open(index, "rb") as fh:
            doc = hotjson.loads(fh.read())
        paths, remembered, policy = doc["paths"], doc["stamps"], doc["policy"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not (isinstance(paths, str) and isinstance(remembered, str) and isinstance(policy, str)) or os.sep in policy:
        return None
    return policy if stamps(paths.split("\0")) == remembered else None


def _root_inputs(root: str) -> list[str]:
    """Files of the worktree the policy reads when it is compiled, present or not: package.json's scripts
    (`npm test -- ARGS`), and the Makefile's targets and tox.ini's environments (`repository-targets`)."""
    from runtime.policy.targets import INPUTS

    return [os.path.join(root, name) for name in ("package.json", *INPUTS)]


def cache_key(catalog_root: str, role: str, task_path: str | None, root: str, files: list[str] | None = None) -> str:
    """``files``: the catalog's files, when the caller has walked it already."""
    h = new_sha256()
    h.update(f"v{VERSION}.{_LAYOUT}\0{SESSION}\0{role}\0{root}\0{task_path or ''}\0".encode())
    catalog = catalog_files(catalog_root) if files is None else files
    for path in catalog + ([task_path] if task_path else []) + _root_inputs(root):
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            data = b"\0absent"
        h.update(f"{path}\0{len(data)}\0".encode())
        h.update(data)
    digest: str = h.hexdigest()
    return digest


def cached_policy(catalog_root: str, role: str, task_path: str | None, root: str) -> Policy:
    """The policy for ``role`` (and ``task_path``) at ``root``, compiling it on a miss."""
    folder = cache_dir()
    index = _index_path(folder, catalog_root, role, task_path, root)
    name = _from_index(index)
    if name is not None and os.path.exists(os.path.join(folder, name)):
        return _load(folder, os.path.join(folder, name))
    files, folders = _walk(catalog_root)
    inputs = folders + files + ([task_path] if task_path else []) + _root_inputs(root)
    taken = stamps(inputs)  # taken before hashing: an edit in between misses next time
    path = os.path.join(folder, f"{role}-{cache_key(catalog_root, role, task_path, root, files)[:32]}.json")
    if not os.path.exists(path):
        from runtime.policy.build import build_policy  # pydantic: only on a cache miss

        # The hook of a person's Claude Code session compiles here: its reasons speak to that session.
        _write_json(folder, path, build_policy(catalog_root, role, task_path, root, audience=SESSION))
    _write_json(folder, index, {"policy": os.path.basename(path), "paths": "\0".join(inputs), "stamps": taken})
    return _load(folder, path)


def _write_json(folder: str, path: str, doc: PolicyBody | JSONObject) -> None:
    """A file of the cache, whole: an index, or a policy in its canonical form (its hash then checked over its
    bytes, `runtime.policy.document`)."""
    import tempfile  # only when writing: the hook's cache hit never needs it

    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    with os.fdopen(fd, "wb") as fh:
        fh.write(canonical(doc) + b"\n")
    os.replace(tmp, path)


# Policies kept in this process while their file is unchanged (a resident hook server, `runtime.cli.resident`,
# sets it; a cold hook reads one policy once): (path, size, mtime, inode, HOME) -> Policy.
KEPT: dict[tuple[object, ...], Policy] | None = None


def _load(folder: str, path: str) -> Policy:
    if KEPT is not None:
        try:
            st = os.stat(path)
        except OSError:
            return _read(folder, path)
        key = (path, st.st_size, st.st_mtime_ns, st.st_ino, os.environ.get("HOME"))
        found = KEPT.get(key)
        if found is None:
            if len(KEPT) >= 64:
                KEPT.clear()
            found = KEPT[key] = _read(folder, path)
        return found
    return _read(folder, path)


def _read(folder: str, path: str) -> Policy:
    policy = load_policy(path)
    # The cache holds the runtime's own files: never agent-writable.
    policy.protected += (os.path.realpath(folder),)
    return policy
