"""What preparing a worktree's world did (`runtime.spawn.world`), as the run's record keeps it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from runtime.spawn import fields

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSON, JSONObject


class SetupCommandJSON(TypedDict):
    command: str
    exit_code: int
    duration_s: float
    log: str


class SetupJSON(TypedDict):
    """A `SetupRecord` as `state.json` and the world cache's `record.json` hold it."""

    key: str
    cached: bool
    duration_s: float
    entries: list[str]
    commands: list[SetupCommandJSON]
    shared: bool


@dataclass(frozen=True)
class SetupCommand:
    command: str
    exit_code: int
    duration_s: float
    log: str  # the file its output is in

    def to_json(self) -> SetupCommandJSON:
        return {"command": self.command, "exit_code": self.exit_code, "duration_s": self.duration_s, "log": self.log}

    @classmethod
    def from_json(cls, data: JSONObject) -> SetupCommand:
        fields.only(data, {"command", "exit_code", "duration_s", "log"}, "a setup command")
        return cls(fields.text(data, "command"), fields.integer(data, "exit_code"),
                   fields.number(data, "duration_s"), fields.text(data, "log"))


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

    def to_json(self) -> SetupJSON:
        return {"key": self.key, "cached": self.cached, "duration_s": self.duration_s, "entries": list(self.entries),
                "commands": [c.to_json() for c in self.commands], "shared": self.shared}

    @classmethod
    def from_json(cls, data: JSONObject) -> SetupRecord:
        duration = data.get("duration_s", 0.0)
        if not isinstance(duration, (int, float, str)):
            raise ValueError(f"`duration_s` must be a number, not {type(duration).__name__}")
        return cls(str(data.get("key", "")), bool(data.get("cached")), float(duration),
                   tuple(map(str, _items(data.get("entries")))),
                   tuple(SetupCommand.from_json(c) for c in fields.objects(data, "commands")),
                   bool(data.get("shared", True)))


def _items(value: JSON) -> list[JSON]:
    """An array's items (missing or empty: none)."""
    if not value:
        return []
    if not isinstance(value, list):
        raise ValueError(f"`entries` must be an array, not {type(value).__name__}")
    return value
