"""Warm toolchain build caches that no run can poison.

For a toolchain with a build cache (Go's GOCACHE, cargo's target folder), the orchestrator fills a cache from
the base (`runtime.spawn.caches`: the base's own build over a throwaway checkout, running none of the
project's code, the first time a spawn meets that base) and seals it: root's, read-only. Every sandbox over a
base then starts from a fresh layer of its own over the newest snapshot (`store.open_layer`, made when the
sandbox starts and removed when it ends, `runtime.sandbox.launch.sandboxed`): what an agent's command writes
there never reaches the snapshot, another agent, or a verify (whose sandboxes get layers of their own).

One kind is one module and one entry here (`kind.CacheKind`).
"""

from __future__ import annotations

from runtime.sandbox.caches.cargo import CARGO
from runtime.sandbox.caches.go import GO
from runtime.sandbox.caches.kind import CacheKind, CacheSlot

KINDS: dict[str, CacheKind] = {GO.name: GO, CARGO.name: CARGO}
# The toolchain probe (`runtime.manifests.toolchain.PRESETS`) whose runs each kind serves.
BY_PROBE: dict[str, CacheKind] = {kind.probe: kind for kind in KINDS.values()}

__all__ = ["BY_PROBE", "KINDS", "CacheKind", "CacheSlot"]
