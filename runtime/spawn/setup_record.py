"""What preparing a worktree's world did (`runtime.spawn.world`), as the run's record keeps it."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class SetupCommand:
    command: str
    exit_code: int
    duration_s: float
    log: str  # the file its output is in


@dataclass(frozen=True)
class SetupRecord:
    """What preparing the world did for a run (`RunRecord.setup`): from the cache or not, how long, each
    command's end, and the world's entries."""

    key: str
    cached: bool
    duration_s: float
    entries: tuple[str, ...] = ()
    commands: tuple[SetupCommand, ...] = ()
    shared: bool = True  # it holds no path of its worktree, so it serves every worktree of the base

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "entries": list(self.entries), "commands": [asdict(c) for c in self.commands]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SetupRecord:
        return cls(str(data.get("key", "")), bool(data.get("cached")), float(data.get("duration_s", 0.0)),
                   tuple(map(str, data.get("entries") or [])),
                   tuple(SetupCommand(**c) for c in data.get("commands") or []), bool(data.get("shared", True)))
