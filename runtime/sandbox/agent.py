"""The sandbox of one agent, derived from its compiled policy.

Writable: the folders the task's whitelist names (a glob's part before its
first wildcard), inside the worktree, with all they hold. A file the whitelist
names (`src/calc.py`) makes its folder writable instead, with the folders
inside it read-only again: Claude Code's Edit and Write replace a file
atomically, writing `calc.py.tmp.<pid>.<hex>` beside it and renaming that over
it, which neither a read-only folder nor a file bound on its own allows. A
path that does not exist yet does the same to its nearest existing folder. The
gate still refuses the file tools' writes to other files there, and verify
rejects any file the globs do not hold. The worktree's top is such a folder
whatever the scope says: a repository's own test and check commands write
their scratch there as on their developers' machines (`.coverage`,
`.pytest_cache`, c8's `coverage/`, a doctest's `file.txt.part` in the working
folder), which the base's ignore rules keep out of the change
(`runtime.workspace.changes`), and verify runs its own commands over a
throwaway copy. Read-only: the worktree's `.git`, its control files (`.claude`,
`.agent-runtime`, `.gitmodules`, `.mcp.json`: made for the sandbox's life when
absent, so they cannot be created) and the base's submodule folders, and the
run folder with the bundle, the policy and the broker socket. Everything else of the
host is absent but the system folders (see `runtime.sandbox.bwrap`), with the
interpreter and the runtime bound in read-only wherever they live. No network:
roles with web tools reach out only through the egress proxy's relay.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import runtime
from runtime.lang.globs import literal_parts
from runtime.policy.document import PolicyDocument
from runtime.sandbox.bwrap import SandboxSpec
from runtime.sandbox.env import agent_env
from runtime.sandbox.toolchain import ToolchainMounts, make_mount_points


def writable_paths(policy: PolicyDocument, worktree: Path) -> tuple[list[Path], list[tuple[Path, tuple[str, ...]]]]:
    """The folders the whitelist makes writable whole, and its file folders (`SandboxSpec.file_folders`):
    each a folder with the names in it that the globs lead to."""
    globs = policy.write_globs() or []
    whole: list[Path] = []
    files: dict[Path, list[str]] = {}
    for glob in globs:
        path = worktree.joinpath(*literal_parts(glob))
        if path.is_dir() and not path.is_symlink():
            if path.resolve().is_relative_to(worktree.resolve()) and path not in whole:
                whole.append(path)
            continue
        name = path.name
        path = path.parent
        while not path.exists() and path != worktree:  # its nearest existing folder takes the first new name
            name, path = path.name, path.parent
        if path.is_symlink() or not path.is_dir() or not path.resolve().is_relative_to(worktree.resolve()):
            continue  # a planted symlink never becomes a writable bind
        if name and name not in files.setdefault(path, []):
            files[path].append(name)
    # A file folder inside a folder writable whole needs nothing more.
    folders = [(folder, tuple(names)) for folder, names in files.items()
               if not any(folder == w or w in folder.parents for w in whole)]
    return whole, folders


def runtime_binds() -> list[Path]:
    """What the agent process needs to run: the interpreter and the runtime package."""
    package_root = Path(runtime.__file__).resolve().parent.parent
    paths = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), package_root}
    return sorted(p for p in paths if p.exists())


def runtime_in_checkout(mounts: ToolchainMounts) -> ToolchainMounts:
    """``mounts`` with the runtime's own folders that lie inside the main checkout added as toolchain
    folders. Where the toolchain shows the worktree at the main checkout's path, that mirror covers
    them: a project-local install (`.agent-runtime/venv`) would lose the agent its interpreter. As
    toolchain folders they are bound again over the mirror (and on an empty mount point in the
    worktree, which git does not see), read-only like the rest."""
    repo = mounts.repo.resolve()
    held = [repo / rel for _, rel in mounts.folders]
    extra: list[tuple[Path, str]] = []
    for path in sorted(runtime_binds(), key=lambda p: len(p.parts)):  # a venv before its site-packages
        if path.is_relative_to(repo) and path != repo and not any(path.is_relative_to(h) for h in held):
            extra.append((path, str(path.relative_to(repo))))
            held.append(path)
    return replace(mounts, folders=(*mounts.folders, *extra)) if extra else mounts


def with_toolchain(spec: SandboxSpec, mounts: ToolchainMounts | None) -> SandboxSpec:
    """``spec`` showing the repository's toolchain read-only, its folders first on PATH."""
    if mounts is None:
        return spec
    mounts = runtime_in_checkout(mounts)
    make_mount_points(mounts, spec.worktree)
    spec.toolchain_binds = mounts.binds(spec.worktree)
    spec.caches = mounts.caches
    spec.expose(mounts.expose)
    spec.env = {**spec.env, **mounts.env, "PATH": mounts.search_path(spec.worktree, spec.env["PATH"])}
    return spec


# The control names the sandbox makes read-only at the worktree's top, and whether each is a folder (the
# placeholder made when it is absent). `.git` is there already: the worktree's link, never absent.
_CONTROL_FOLDERS = {".claude": True, ".agent-runtime": True, ".gitmodules": False, ".mcp.json": False}


def control_paths(worktree: Path, exempt: Sequence[str] = (), submodules: Sequence[str] = ()) -> list[tuple[Path, bool]]:
    """What the sandbox shows read-only in ``worktree`` whatever the write scope says, present or not:
    the control files at its top (but those the task may change, `exempt`), and the base's submodule
    folders. Deeper control files are the gate's and verify's (they are refused and rejected anywhere)."""
    out = []
    for name, folder in _CONTROL_FOLDERS.items():
        if any(path == name or path.startswith(name + "/") for path in exempt):
            continue
        out.append((worktree / name, folder))
    return out + [(worktree / path, True) for path in submodules]


def agent_sandbox(policy: PolicyDocument, worktree: Path, home: Path, run_ro: list[Path],
                  declared_env: dict[str, str], extra_ro: Sequence[Path] = (),
                  toolchain: ToolchainMounts | None = None, submodules: Sequence[str] = ()) -> SandboxSpec:
    kinds = policy.sandbox_kinds()
    protected = [p for p in (worktree / ".git",) if p.exists()]
    writable, file_folders = writable_paths(policy, worktree)
    if not any(folder == worktree for folder, _ in file_folders) and worktree not in writable:
        file_folders.insert(0, (worktree, ()))  # the top takes scratch; its folders stay read-only again
    spec = SandboxSpec(
        worktree=worktree,
        home=home,
        writable=writable,
        file_folders=file_folders,
        readonly=protected,
        read_only_worktree="read-only-worktree" in kinds,
        extra_binds_ro=list(run_ro),
        env=agent_env(home, declared_env),
        control=control_paths(worktree, policy.control_files(), submodules),
    )
    # The interpreter and the runtime must stay visible, wherever they are installed.
    spec.expose([*runtime_binds(), *extra_ro])
    return with_toolchain(spec, toolchain)
