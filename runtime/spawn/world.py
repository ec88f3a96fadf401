"""A repository's own world in every worktree (`[worktree]` of toolchain.toml, `runtime.manifests.toolchain`).

Before an agent's first attempt, its fresh worktree gets what git does not hold but the repository needs:

1. ``include``: files and folders git ignores (the version file hatch-vcs or setuptools-scm writes at install
   time), copied from the main checkout;
2. ``setup``: the repository's own set-up commands (a dependency install into a per-worktree environment,
   code generation), run in the worktree inside the sandbox, with their time and output recorded. They
   reach the network only through an egress proxy of their own that lets through ``setup-domains`` (the
   package registries) and audits each request; the agent never gets that egress. Every setup command must
   leave what git tracks as it was and make nothing git would take as part of the change.

What the two leave (the included paths and what setup made that git ignores) is the tree's **world**: kept
in the state folder (`worlds/<key>/`) and laid over every copy verify runs commands over, the work's and the
base's, from there: never from the agent's worktree, where the agent may have changed it. The key is the
base commit, the `[worktree]` table and the included files' contents, so a second agent (or a retry's new
spawn) on the same base copies the world instead of running setup again; it is computed once under a lock.
A world that names the path of the worktree it was made in (a virtualenv's scripts name their interpreter
by it) is kept for that path alone: the agent's own `runtime again`, and every verify of its work.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from runtime.audit.records import Egress, SetupStep, WorldSetup, record_of
from runtime.errors import AgentFailed
from runtime.sandbox.scratch import World, lay_over
from runtime.spawn.setup_record import SetupCommand, SetupRecord
from runtime.workspace.git import Git, GitError
from runtime.workspace.tree import remove_tree

if TYPE_CHECKING:
    from runtime.audit.log import AuditLog
    from runtime.audit.records import AuditRecord
    from runtime.lang.jsontypes import JSONObject
    from runtime.manifests.toolchain import Worktree
    from runtime.sandbox.bwrap import SandboxSpec
    from runtime.sandbox.identity import AgentUser
    from runtime.sandbox.supervise import Limits
    from runtime.sandbox.toolchain import ToolchainMounts
    from runtime.spawn.pipeline import SpawnRun

WORLD_VERSION = 1


def world_key(git: Git, base: str, spec: Worktree) -> str:
    """What the world depends on: the base commit, the `[worktree]` table, the included files' bytes."""
    h = hashlib.sha256(json.dumps([WORLD_VERSION, base, asdict(spec)], sort_keys=True, default=list).encode())
    for rel in spec.include:
        path = git.root / rel
        for file in sorted([path] if path.is_file() else (p for p in path.rglob("*") if p.is_file())):
            h.update(f"{file.relative_to(git.root)}\0".encode())
            with contextlib.suppress(OSError):
                h.update(file.read_bytes())
    return h.hexdigest()[:32]


def _status(git: Git) -> tuple[set[str], set[str], set[str]]:
    """The tree's ignored entries, untracked entries and changed tracked files (`git status`)."""
    out = git.run("status", "--porcelain=v1", "-z", "--ignored=matching", "--untracked-files=normal").stdout
    ignored, untracked, changed = set(), set(), set()
    items = out.split(b"\0")
    k = 0
    while k < len(items):
        entry = items[k]
        k += 1
        if len(entry) < 4:
            continue
        code, path = entry[:2], os.fsdecode(entry[3:]).rstrip("/")
        if code == b"!!":
            ignored.add(path)
        elif code == b"??":
            untracked.add(path)
        else:
            changed.add(path)
            if code[:1] in (b"R", b"C"):
                k += 1  # the rename's source follows
    return ignored, untracked, changed


def _covered(path: str, entries: set[str]) -> bool:
    return any(path == e or path.startswith(e + "/") or e.startswith(path + "/") for e in entries)


@dataclass(frozen=True)
class WorldSite:
    """Where a world is made or laid: a tree of the repository (an agent's worktree, a checkout of a merge the
    orchestrator checks), and what making it there needs. ``sandbox``: the tree's own sandbox, from which
    setup's is made (the whole tree writable, the egress relay's socket folder bound in)."""

    git: Git  # the main checkout
    tree: Path
    base: str  # the commit the tree holds (the world's key)
    spec: Worktree
    state_root: Path
    sandbox: SandboxSpec | None
    home: Path
    toolchain: ToolchainMounts | None
    toolchain_env: tuple[tuple[str, str], ...]  # the presets' no-download variables: not setup's
    limits: Limits
    logs: Path  # where each setup command's output goes
    audit: AuditLog | None = None
    agent: str | None = None
    user: AgentUser | None = None


def setup_sandbox(site: WorldSite, egress_folder: Path | None) -> SandboxSpec | None:
    """The tree's sandbox, for setup: the whole tree writable (its `.git` and control files still not), the
    egress relay's folder bound in, the toolchain's no-download variables left out (setup downloads)."""
    if site.sandbox is None:
        return None
    spec = replace(site.sandbox, writable=[site.tree], file_folders=[], read_only_worktree=False,
                   extra_binds_ro=[*site.sandbox.extra_binds_ro, *([egress_folder] if egress_folder else [])],
                   env=dict(site.sandbox.env))
    for name, _ in site.toolchain_env:
        spec.env.pop(name, None)
    return spec


@dataclass(frozen=True)
class TreeWorld:
    """What making a world in a tree the orchestrator checks out itself (a merge it re-checks, a plan's
    integration) needs, but the tree: `site` adds it."""

    git: Git
    spec: Worktree
    state_root: Path
    toolchain_env: tuple[tuple[str, str], ...]
    limits: Limits
    logs: Path
    audit: AuditLog | None = None
    agent: str | None = None

    def site(self, tree: Path, base: str, sandbox: SandboxSpec | None, home: Path,
             toolchain: ToolchainMounts | None) -> WorldSite:
        return WorldSite(self.git, tree, base, self.spec, self.state_root, sandbox, home, toolchain, self.toolchain_env,
                         self.limits, self.logs, self.audit, self.agent, sandbox.user if sandbox is not None else None)

    async def laid(self, tree: Path, base: str, sandbox: SandboxSpec | None, home: Path,
                   toolchain: ToolchainMounts | None) -> World:
        """The world made in (or laid over) ``tree``, a checkout of ``base`` (`runtime.verify.commands.WorldMaker`)."""
        return (await world_at(self.site(tree, base, sandbox, home, toolchain)))[0]


def tree_world(run: SpawnRun, logs: str) -> TreeWorld | None:
    """The world of the trees a spawn's orchestrator checks out itself (its merge's re-check), or None."""
    from runtime.sandbox.budget import check_limits

    spec = run.catalog.toolchain.worktree
    if not spec:
        return None
    return TreeWorld(run.git, spec, run.state.root, run.catalog.toolchain.env, check_limits(run.agent.limits, run.policy),
                     run.state.run(run.agent_id) / logs, run.audit, run.agent_id)


async def prepare_world(run: SpawnRun) -> tuple[World | None, SetupRecord | None]:
    """The agent's worktree's world, made or taken from the cache; None when the repository declares none."""
    spec = run.catalog.toolchain.worktree
    if not spec:
        return None, None
    from runtime.sandbox.agent import agent_sandbox
    from runtime.sandbox.budget import check_limits
    from runtime.spawn.agent_process import declared_env

    sandbox = (agent_sandbox(run.policy, run.worktree, run.home, [run.run_ro], declared_env(run.task),
                             toolchain=run.toolchain, submodules=run.submodules) if run.options.use_sandbox else None)
    site = WorldSite(run.git, run.worktree, run.base, spec, run.state.root, sandbox, run.home, run.toolchain,
                     run.catalog.toolchain.env, check_limits(run.agent.limits, run.policy),
                     run.state.run(run.agent_id) / "setup", run.audit, run.agent_id, _user(run))
    return await world_at(site)


async def world_at(site: WorldSite) -> tuple[World, SetupRecord]:
    """The world of ``site``'s tree, laid in it: from the cache when one serves it, else made there."""
    spec = site.spec
    key = await anyio.to_thread.run_sync(world_key, site.git, site.base, spec)
    worlds = site.state_root / "worlds"
    folder = worlds / key
    from filelock import FileLock

    worlds.mkdir(parents=True, exist_ok=True)
    # Taken in a worker thread and given back in the loop's: not the thread-local kind, which a release from
    # another thread than the acquiring one leaves held (and the next agent on the base waiting for good).
    lock = FileLock(str(folder) + ".lock", thread_local=False)
    await anyio.to_thread.run_sync(lambda: lock.acquire(timeout=spec.setup_timeout_s * 2 + 60))
    try:
        started = time.perf_counter()
        # A world that holds no path of the tree it was made in serves every tree of the base; one that does (a
        # venv's scripts name their interpreter by its path) serves only a tree at that path: the agent's own
        # `runtime again`, and every verify of its work.
        for cached in (folder, worlds / f"{key}-{_path_key(site.tree)}"):
            record_path = cached / "record.json"
            if record_path.is_file():
                done = SetupRecord.from_json(json.loads(record_path.read_text(encoding="utf-8")))
                world = World(cached / "files", done.entries)
                await anyio.to_thread.run_sync(world.lay_over, site.tree, site.user)
                record = replace(done, cached=True, duration_s=round(time.perf_counter() - started, 3))
                _audit(site, WorldSetup(key=key, cached=True, shared=done.shared, entries=done.entries))
                return world, record
        return await _make(site, folder, key, started)
    finally:
        lock.release()


def _audit(site: WorldSite, record: AuditRecord) -> None:
    if site.audit is not None:
        site.audit.append(record, site.agent)


def _path_key(tree: Path) -> str:
    return hashlib.sha256(os.fsencode(tree.resolve())).hexdigest()[:12]


def _names_path(folder: Path, path: Path, limit: int = 256 * 1024 * 1024) -> bool:
    """Whether any file under ``folder`` holds ``path`` (its bytes), reading at most ``limit`` bytes in all:
    past that, it is taken to (the world then serves only its own path, which is always right)."""
    needle, read = os.fsencode(path.resolve()), 0
    for file in (p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
        try:
            data = file.read_bytes()
        except OSError:
            continue
        read += len(data)
        if needle in data or read > limit:
            return True
    for link in (p for p in folder.rglob("*") if p.is_symlink()):
        if os.fsencode(os.readlink(link)).startswith(needle):
            return True
    return False


def _user(run: SpawnRun) -> AgentUser | None:
    from runtime.sandbox.identity import agent_user

    return agent_user() if run.options.use_sandbox else None


async def _make(site: WorldSite, folder: Path, key: str, started: float) -> tuple[World, SetupRecord]:
    from runtime.spawn.sockets import remove_socket_folder, socket_folder
    from runtime.verify.commands import CommandLog, command_runner

    spec = site.spec
    tree = Git(site.tree)
    if spec.include:
        copied = await anyio.to_thread.run_sync(lay_over, site.git.root, spec.include, site.tree, site.user)
        if copied.missing:
            raise AgentFailed("setup", f"[worktree] include: {copied.missing[0][0]}: {copied.missing[0][1]} in the "
                                       f"main checkout {site.git.root}")
    before_ignored, before_untracked, _ = await anyio.to_thread.run_sync(_status, tree)
    commands: list[SetupCommand] = []
    log = CommandLog(site.logs, site.audit.redactor if site.audit is not None else None)
    egress = sock = None
    try:
        if spec.setup and spec.setup_domains:
            from runtime.sandbox.egress import EgressProxy, EgressRules

            sock = socket_folder(site.state_root)

            def audit(record: JSONObject) -> None:
                _audit(site, record_of(Egress.kind, {"phase": "setup", **record}))

            rules = EgressRules(spec.setup_domains, spec.setup_addresses, spec.setup_ports)
            egress = EgressProxy(sock / "egress.sock", rules, audit=audit).start()
            if site.user is not None:
                from runtime.sandbox.launch import hand_over

                hand_over(sock, site.user)
        sandbox = setup_sandbox(site, sock)
        limits = replace(site.limits, timeout_s=float(spec.setup_timeout_s))
        runner = command_runner(site.tree, sandbox, site.home, site.toolchain, limits=limits, log=log, where="setup",
                                egress=str(egress.socket_path) if egress is not None else None)
        for command in spec.setup:
            at = time.perf_counter()
            code, output = await runner(command, float(spec.setup_timeout_s))
            commands.append(SetupCommand(command, code, round(time.perf_counter() - at, 3),
                                         str(sorted(site.logs.glob("*.log"))[-1]) if site.logs.is_dir() else ""))
            if code != 0:
                tail = output.strip().splitlines()[-1][:300] if output.strip() else ""
                raise AgentFailed("setup", f"[worktree] setup `{command}` exited with code {code}"
                                           f"{': ' + tail if tail else ''} (its output: {commands[-1].log})")
    finally:
        if egress is not None:
            egress.close()
        if sock is not None:
            remove_socket_folder(site.state_root, sock)
    ignored, untracked, changed = await anyio.to_thread.run_sync(_status, tree)
    if changed:
        raise AgentFailed("setup", f"[worktree] setup changed {sorted(changed)[0]}, which git tracks: setup may only "
                                   "make what git ignores")
    fresh = sorted(untracked - before_untracked)
    if fresh:
        raise AgentFailed("setup", f"[worktree] setup made {fresh[0]}, which git does not ignore (it would be taken as "
                                   "the agent's change): make it somewhere .gitignore names")
    # The toolchain's folders are mount points the sandbox made in the tree (bound from the main checkout):
    # never setup's.
    mounts = {rel for _, rel in site.toolchain.folders} if site.toolchain is not None else set()
    made = sorted(p for p in ignored - before_ignored if not _covered(p, set(spec.include))
                  and not any(p == m or p.startswith(m + "/") for m in mounts))
    entries = tuple(dict.fromkeys([*spec.include, *made]))
    staging = folder.with_name(folder.name + f".new-{os.getpid()}")
    await anyio.to_thread.run_sync(remove_tree, staging)
    staging.mkdir(parents=True)
    (staging / "files").mkdir()
    copied = await anyio.to_thread.run_sync(lay_over, site.tree, entries, staging / "files", None)
    if copied.missing:
        raise AgentFailed("setup", f"what setup made could not be kept: {copied.missing[0][0]}: {copied.missing[0][1]}")
    shared = not await anyio.to_thread.run_sync(_names_path, staging / "files", site.tree)
    if not shared:
        folder = folder.with_name(f"{key}-{_path_key(site.tree)}")
    record = SetupRecord(key, False, round(time.perf_counter() - started, 3), entries, tuple(commands), shared)
    (staging / "record.json").write_text(json.dumps(record.to_json(), indent=1) + "\n", encoding="utf-8")
    await anyio.to_thread.run_sync(remove_tree, folder)
    os.replace(staging, folder)  # the cache holds a whole world or none
    _audit(site, WorldSetup(key=key, cached=False, shared=shared, entries=entries,
                            commands=tuple(SetupStep(command=c.command, exit_code=c.exit_code, duration_s=c.duration_s,
                                                     log=c.log) for c in commands),
                            duration_s=record.duration_s))
    return World(folder / "files", entries), record


def check_included(git: Git, spec: Worktree, where: str) -> None:
    """Before anything is made: every `include` is in the main checkout, and is something git ignores (what git
    tracks comes with the worktree already)."""
    from runtime.errors import ManifestError

    for rel in spec.include:
        if not (git.root / rel).exists():
            raise ManifestError(where, spec.line(rel), f"[worktree] include `{rel}` is not in the main checkout "
                                                       f"{git.root}: make it (install the project once), or drop it")
        try:
            tracked = git.run("ls-files", "--", rel).stdout.strip()
        except GitError:
            tracked = b""
        if tracked:
            raise ManifestError(where, spec.line(rel), f"[worktree] include `{rel}` is tracked by git, so every "
                                                       "worktree has it already: include only what git ignores")
