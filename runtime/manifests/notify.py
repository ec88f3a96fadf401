"""Who else is told when an agent waits for a person or a run ends: ``notify.toml`` in the project catalog.

    [notify]
    command = ["ntfy", "publish", "my-runs"]   # run with the event as JSON on its standard input
    on = ["waiting", "finished", "plan-finished"]   # which events (default: all three)
    timeout-s = 10                              # it is stopped after this long

The command is the person's own, from the repository's catalog (`.agent-runtime/`, which no agent can
write): a program and its arguments, never a shell line, found on PATH when a spawn or run starts (a
missing one is refused then, at its line). What it is given is data: one JSON object on stdin
(`runtime.spawn.notify` says which fields each event has), whose text an agent may have written.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from runtime.errors import ManifestError
from runtime.manifests.model import parse_model
from runtime.manifests.tomlsrc import TomlSource, read_toml
from runtime.model import Model

FILE = "notify.toml"
Event = Literal["waiting", "finished", "plan-finished"]
EVENTS: tuple[Event, ...] = ("waiting", "finished", "plan-finished")


class NotifySection(Model):
    command: list[str] = Field(min_length=1)
    on: list[Event] = Field(default_factory=lambda: list(EVENTS))
    timeout_s: int = Field(default=10, gt=0, le=300)


class NotifyFile(Model):
    notify: NotifySection


@dataclass(frozen=True)
class Notify:
    command: tuple[str, ...] = ()
    on: frozenset[str] = frozenset()
    timeout_s: int = 10
    where: str = ""  # file:line of the command, for messages

    def __bool__(self) -> bool:
        return bool(self.command)

    def wants(self, event: str) -> bool:
        return bool(self.command) and event in self.on

    def check(self) -> None:
        """The command's program is found (a spawn or run checks this before it makes anything)."""
        if self.command and shutil.which(self.command[0]) is None:
            raise ManifestError(self.where.rsplit(":", 1)[0], int(self.where.rsplit(":", 1)[1]),
                                f"[notify] command runs `{self.command[0]}`, which is not on PATH")


def notify_from_data(data: Any, src: TomlSource) -> Notify:
    parsed = parse_model(NotifyFile, data, src).notify
    if any(not part or "\0" in part for part in parsed.command):
        raise src.error(("notify", "command"), "[notify] command: every word is a non-empty string")
    return Notify(tuple(parsed.command), frozenset(parsed.on), parsed.timeout_s,
                  f"{src.path}:{src.line_of(('notify', 'command'))}")


def load_notify(path: Path, display: str) -> Notify:
    if not path.is_file():
        return Notify()
    data, src = read_toml(path, display)
    return notify_from_data(data, src)
