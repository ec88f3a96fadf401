"""The repository's toolchain, made visible inside a sandbox (read-only).

`toolchain_mounts` turns the declared toolchain (``runtime.manifests.toolchain``)
into what the sandbox needs, checked before anything is created:

- each folder (``.venv``, ``node_modules``) of the main checkout bound
  read-only at its place in the worktree, and at its own path, where a venv's
  scripts name their interpreter (``#!/repo/.venv/bin/python``);
- the worktree itself shown, read-only, at the main checkout's path: an
  editable install of the project (``pip install -e .``) imports from there,
  and so finds the agent's code, not the main checkout's (which the sandbox
  does not show);
- a venv's base interpreter (``home`` in ``pyvenv.cfg``), the host programs
  the toolchain names (``uv``, ``go``, ``cargo``) with their folders, and
  what the presets' probes find (Go's GOROOT and module cache, cargo's and
  rustup's homes), each read-only at its own path;
- the ``path`` folders first on PATH, and the presets' variables.

Nothing is writable: the agent cannot change the tools its checks run with.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from runtime.errors import FatalError
from runtime.manifests.toolchain import Toolchain
from runtime.sandbox.caches import BY_PROBE, CacheSlot
from runtime.sandbox.identity import agent_user


class ToolchainMissing(FatalError):
    """A declared toolchain folder or program is not there: one line saying what to create."""


@dataclass(frozen=True)
class ToolchainMounts:
    repo: Path
    folders: tuple[tuple[Path, str], ...] = ()  # (host folder, its place relative to the repository)
    expose: tuple[Path, ...] = ()  # read-only at their own paths: interpreters, host programs
    path: tuple[str, ...] = ()  # relative folders first on PATH
    host_path: tuple[str, ...] = ()  # folders of the host programs, on PATH after them
    env: dict[str, str] = field(default_factory=dict)
    caches: tuple[CacheSlot, ...] = ()  # the build caches a sandbox over the repository starts from

    def binds(self, worktree: Path) -> list[tuple[Path, Path]]:
        """(source, destination) read-only binds, in mount order, for an agent working in ``worktree``."""
        worktree = worktree.resolve()
        repo = self.repo.resolve()
        out: list[tuple[Path, Path]] = []
        mirror = not (worktree == repo or repo in worktree.parents or worktree in repo.parents)
        if mirror and self.folders:
            out.append((worktree, repo))
        for source, rel in self.folders:
            out.append((source, worktree / rel))
            if mirror or source != repo / rel:
                out.append((source, repo / rel))
        return out

    def host_env(self, env: dict[str, str]) -> dict[str, str]:
        """``env`` for a process outside any sandbox (--no-os-sandbox): the main checkout's folders and
        the host programs' first on PATH, the presets' variables."""
        path = ":".join([*(str(self.repo / p) for p in self.path), *self.host_path, env["PATH"]])
        return {**env, **self.env, "PATH": path}

    def search_path(self, worktree: Path, rest: str) -> str:
        """PATH inside the sandbox: the toolchain's folders in the worktree, the host programs', then ``rest``."""
        return ":".join([*(str(worktree.resolve() / p) for p in self.path), *self.host_path, rest])


def _venv_home(folder: Path) -> Path | None:
    """The prefix of a venv's base interpreter (``home = /x/bin`` in pyvenv.cfg -> /x)."""
    try:
        text = (folder / "pyvenv.cfg").read_text(encoding="utf-8")
    except OSError:
        return None
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == "home":
            home = Path(value.strip())
            return home.parent.resolve() if home.is_absolute() and home.exists() else None
    return None


def toolchain_mounts(toolchain: Toolchain, repo: Path, caches: Path | None = None) -> ToolchainMounts:
    """What the sandbox shows of ``toolchain`` for the repository at ``repo``; ToolchainMissing when a
    declared folder or program is not there. With ``caches`` (the state folder's `caches/`), the build
    caches of its presets' toolchains (`runtime.sandbox.caches`), where a root orchestrator's agents run as
    another uid (anywhere else a shared cache could be written through its links, so none is used)."""
    repo = repo.resolve()
    folders: list[tuple[Path, str]] = []
    expose: list[Path] = []
    for rel in toolchain.folders:
        source = repo / rel
        if not source.is_dir():
            hint = {".venv": " (python -m venv .venv, or uv sync)", "node_modules": " (npm ci)"}.get(rel, "")
            raise ToolchainMissing(f"{toolchain.where(rel)}: toolchain folder `{rel}` does not exist in {repo}: "
                                   f"create it{hint}, or remove it from the toolchain")
        folders.append((source.resolve(), rel))
        home = _venv_home(source)
        if home is not None:
            expose.append(home)
    host_path: list[str] = []
    env = dict(toolchain.env)
    for name in toolchain.programs:
        found = shutil.which(name)
        if found is None:
            raise ToolchainMissing(f"{toolchain.where(name)}: toolchain program `{name}` is not on this machine's PATH: "
                                   "install it, or remove it from the toolchain")
        # Its folder as PATH names it (cargo is a link to rustup beside it), and what it links to.
        folder = Path(os.path.abspath(found)).parent
        expose += [folder, Path(found).resolve()]
        host_path.append(str(folder))
    for probe in toolchain.probes:
        more, values = PROBES[probe](toolchain.where(probe))
        expose += more
        env.update(values)
    slots: list[CacheSlot] = []
    if caches is not None and agent_user() is not None:
        for probe in toolchain.probes:
            kind = BY_PROBE.get(probe)
            inside = env.get(kind.variable) if kind is not None else None
            # the preset's folder of the sandbox's private /tmp (a variable the repository set itself is its own)
            if kind is not None and inside is not None and inside.startswith("/tmp/"):
                slots.append(CacheSlot(kind.name, caches / kind.name, Path(inside)))
    # The worktree's own folders first on PATH ([worktree] path: what setup makes, a per-worktree environment).
    return ToolchainMounts(repo, tuple(folders), tuple(dict.fromkeys(expose)),
                           tuple(dict.fromkeys((*toolchain.worktree.path, *toolchain.path))),
                           tuple(dict.fromkeys(host_path)), env, tuple(slots))


def _go(where: str) -> tuple[list[Path], dict[str, str]]:
    """GOROOT and the module cache, as the host's go reports them."""
    try:
        out = subprocess.run(["go", "env", "GOROOT", "GOMODCACHE"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolchainMissing(f"{where}: `go env` failed: {exc}") from None
    lines = out.stdout.split("\n")
    if out.returncode != 0 or len(lines) < 2 or not lines[0] or not lines[1]:
        raise ToolchainMissing(f"{where}: `go env GOROOT GOMODCACHE` failed: {out.stderr.strip()[:200]}")
    goroot, modcache = Path(lines[0]), Path(lines[1])
    modcache.mkdir(parents=True, exist_ok=True)  # a module without dependencies may never have made one
    return [goroot, modcache], {"GOROOT": str(goroot), "GOMODCACHE": str(modcache)}


def _rust(where: str) -> tuple[list[Path], dict[str, str]]:
    """cargo's and rustup's homes (the toolchains, the registry), read-only."""
    home = Path.home()
    cargo = Path(os.environ.get("CARGO_HOME") or home / ".cargo")
    rustup = Path(os.environ.get("RUSTUP_HOME") or home / ".rustup")
    if not cargo.is_dir():
        raise ToolchainMissing(f"{where}: cargo's home {cargo} does not exist: install Rust (rustup), or set CARGO_HOME")
    found = [cargo] + ([rustup] if rustup.is_dir() else [])
    env = {"CARGO_HOME": str(cargo)} | ({"RUSTUP_HOME": str(rustup)} if rustup.is_dir() else {})
    return found, env


PROBES = {"go": _go, "rust": _rust}


def make_mount_points(mounts: ToolchainMounts | None, worktree: Path) -> None:
    """The empty folders in the worktree the toolchain is bound on (bubblewrap cannot create them in a
    read-only worktree). Empty folders are invisible to git, so they never show as changes."""
    if mounts is None:
        return
    for _, rel in mounts.folders:
        target = worktree / rel
        if os.path.lexists(target) and (target.is_symlink() or not target.is_dir()):
            raise ToolchainMissing(f"{target} is in the way of the toolchain folder `{rel}`: the worktree has a "
                                   "file or symlink there")
        target.mkdir(parents=True, exist_ok=True)
