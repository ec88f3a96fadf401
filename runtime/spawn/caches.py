"""Filling the toolchain's build caches from a base (`runtime.sandbox.caches`), beside the first agent on it.

A spawn whose repository has a cache kind (a Go or Rust preset) and a root orchestrator starts a fill when
it starts, if no spawn has filled that base yet: the kind's build (`CacheKind.fill`) over a throwaway
checkout of the base (made safe by `CacheKind.prepare`), in a sandbox of its own whose only writable cache is
the fill's folder. The agent does not wait for it: a sandbox started before the seal builds in its private
/tmp as it would without a cache; every one started after starts warm. A fill that fails, or is cut short,
seals what it built (each entry is a whole result of its inputs) or nothing, and says so in
`bases/<base>` of the kind's folder; the base is not filled again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio

from runtime.sandbox.budget import default_check_limits
from runtime.sandbox.caches import KINDS, CacheSlot, store
from runtime.sandbox.caches.cargo import Unsafe
from runtime.sandbox.caches.kind import FillSite
from runtime.sandbox.identity import agent_user
from runtime.sandbox.toolchain import ToolchainMounts
from runtime.verify.commands import tree_runner
from runtime.workspace.git import Git

FILL_TIMEOUT_S = 900.0
FILL_DISK_MB = store.CAP_BYTES // (1024 * 1024)


async def warm(git: Git, base: str, toolchain: ToolchainMounts | None) -> None:
    """Fill each of the toolchain's caches from ``base`` that no spawn has filled yet."""
    if toolchain is None:
        return
    for slot in toolchain.caches:
        if await anyio.to_thread.run_sync(store.filled, slot, base):
            continue
        try:
            await _fill(git, base, toolchain, slot)
        except Exception as exc:  # noqa: BLE001 - a cache is never the spawn's failure: it goes on cold
            await anyio.to_thread.run_sync(store.mark, slot, base, f"failed: {type(exc).__name__}: {exc}")


async def _fill(git: Git, base: str, toolchain: ToolchainMounts, slot: CacheSlot) -> None:
    kind, user = KINDS[slot.kind], agent_user()
    if user is None:
        return
    with store.filling(slot) as mine:
        if not mine or store.filled(slot, base):
            return  # another spawn fills now (this one goes on without), or has just filled it
        fill = await anyio.to_thread.run_sync(store.begin_fill, slot, kind, user)
        sealed = False
        try:
            started = time.monotonic()
            own = dataclasses.replace(toolchain, caches=(dataclasses.replace(slot, filling=fill),))
            limits = dataclasses.replace(default_check_limits(), disk_mb=float(FILL_DISK_MB))
            with tempfile.TemporaryDirectory(prefix="runtime-cache-fill-") as tmp:
                home = Path(tmp) / "home"
                home.mkdir()
                trees: list[Path] = []

                def prepare(tree: Path) -> None:
                    trees.append(tree)
                    kind.prepare(tree)

                try:
                    with tree_runner(git, base, home, True, toolchain=own, limits=limits, prepare=prepare) as run:
                        code, output = await run(kind.fill, FILL_TIMEOUT_S)
                except Unsafe as exc:
                    await anyio.to_thread.run_sync(store.mark, slot, base, f"not filled: {exc}")
                    return
            took = time.monotonic() - started
            note = f"sealed: `{kind.fill}` exited {code} in {took:.1f} s\n{output[-2000:]}"
            with anyio.CancelScope(shield=True):
                site = FillSite(trees[0], (*toolchain.expose, slot.inside))
                await anyio.to_thread.run_sync(store.seal, slot, kind, fill, base, site, note)
                sealed = True
        finally:
            if not sealed:
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(store.remove, fill)


@contextlib.asynccontextmanager
async def warming(git: Git, base: str, toolchain: ToolchainMounts | None) -> AsyncIterator[None]:
    """`warm` beside the block, cut short when the block ends; the block's own exception is raised as it was
    (not in a group)."""
    if toolchain is None or not toolchain.caches:
        yield
        return
    caught: BaseException | None = None
    async with anyio.create_task_group() as group:
        group.start_soon(warm, git, base, toolchain)
        try:
            yield
        except BaseException as exc:  # noqa: BLE001 - raised again below, outside the group
            caught = exc
        group.cancel_scope.cancel()
    if caught is not None:
        raise caught
