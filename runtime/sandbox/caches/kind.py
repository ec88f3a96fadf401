"""What one kind of toolchain build cache is (`runtime.sandbox.caches`): the shared type its modules implement."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


class CacheKind(Protocol):
    """One toolchain's build cache, as the orchestrator fills, seals and lays it out for a sandbox."""

    # The registry's name, and the toolchain probe (`runtime.manifests.toolchain.PRESETS`) whose runs it serves.
    name: str
    probe: str
    # The variable that tells the tool where its cache is: the preset sets it to a folder of the sandbox's
    # private /tmp, where the run's layer is shown.
    variable: str
    # The base's build, as a bash command over a throwaway checkout of the base, which runs none of the
    # project's code: what it writes is what every later sandbox over the base starts from.
    fill: str

    def prepare(self, tree: Path) -> None:
        """Make the fill's checkout (``tree``, the orchestrator's own throwaway) safe to build."""
        ...

    def prune(self, folder: Path, site: FillSite) -> None:
        """Take out of a filled cache what must not be shared before it is sealed."""
        ...

    def linked(self, rel: str, size: int) -> bool:
        """Whether a run's layer hard-links the sealed file at ``rel`` (of ``size`` bytes) or copies it: a
        file the tool may rewrite in place must be a copy (the sealed file is read-only to the run)."""
        ...


@dataclass(frozen=True)
class FillSite:
    """Where a fill's sandbox ran: ``tree``, the checkout of the base it built (writable, like every run's
    tree); ``fixed``, what it showed read-only that no run can change (the toolchain's folders) and the
    cache itself, all else of its private /tmp being the run's own."""

    tree: Path
    fixed: tuple[Path, ...]


@dataclass(frozen=True)
class CacheSlot:
    """A sandbox's use of one cache: the kind's folder in the state folder (its sealed snapshots, runs'
    layers, fills in progress) and where the sandbox shows it (the preset's value of the kind's variable).
    ``filling``: a fill's own folder, shown as it is (the fill's sandbox alone); otherwise each sandbox start
    gets a fresh layer over the newest snapshot (`runtime.sandbox.caches.store.open_layer`)."""

    kind: str
    folder: Path
    inside: Path
    filling: Path | None = None
