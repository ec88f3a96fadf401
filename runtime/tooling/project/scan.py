"""Read a repository's declarations of its own commands, as data: nothing of the repository is run.

Each reader adds what its file declares to a ``Scan``: commands found (in the
order of the files below, which is also the order of preference when a task
needs one test command), and the named things other commands refer to (tox
environments, nox sessions, hatch and pdm scripts, make targets, npm scripts,
pre-commit hooks), so ``translate`` can replace ``tox -e lint`` by what the
environment runs. A file that is there but cannot be read as its format is
an error naming its line: init writes nothing from a repository it misread.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime.errors import ManifestError
from runtime.tooling.project.found import Raw

MAX_BYTES = 2 * 1024 * 1024  # no declaration file is larger; a larger one is not read


@dataclass
class Scan:
    root: Path
    entries: list[Raw] = field(default_factory=list)
    tox_envs: dict[str, list[Raw]] = field(default_factory=dict)
    tox_envlist: list[str] = field(default_factory=list)
    nox_sessions: dict[str, list[Raw]] = field(default_factory=dict)
    scripts: dict[str, list[Raw]] = field(default_factory=dict)  # `hatch:ENV:NAME`, `hatch:NAME`, `pdm:NAME`
    make_targets: dict[str, list[Raw]] = field(default_factory=dict)
    npm_scripts: dict[str, str] = field(default_factory=dict)
    hooks: dict[str, list[Raw]] = field(default_factory=dict)  # pre-commit hook id -> its commands
    read: list[str] = field(default_factory=list)  # the files read, for the summary


def read_text(root: Path, name: str) -> str | None:
    """A file of the repository as text, or None when absent. Never follows a symlink out of the repository."""
    path = root / name
    if not path.is_file():
        return None
    real = path.resolve()
    if not real.is_relative_to(root.resolve()):
        raise ManifestError(name, 1, f"is a link to {real}, outside the repository: not read")
    if real.stat().st_size > MAX_BYTES:
        raise ManifestError(name, 1, f"is larger than {MAX_BYTES // (1024 * 1024)} MiB: not read")
    try:
        return real.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ManifestError(name, 1, f"is not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def parse_toml(text: str, file: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"line (\d+)", str(exc))
        line = getattr(exc, "lineno", None) or (int(found.group(1)) if found else 1)
        raise ManifestError(file, line, f"not TOML this runtime can read: {str(exc).split(' (at')[0]}") from None


def line_of(text: str, needle: str, start: int = 1) -> int:
    """The first line at or after ``start`` holding ``needle`` (its first 40 characters), else ``start``."""
    probe = needle.strip()[:40]
    for n, line in enumerate(text.splitlines()[start - 1:], start):
        if probe and probe in line:
            return n
    return start


def python_targets(root: Path) -> list[str]:
    """What a type checker is given when its configuration names no files: `src`, else the packages at the root."""
    if (root / "src").is_dir():
        return ["src"]
    skip = {"tests", "test", "docs", "doc", "examples", "build", "dist"}
    packages = sorted(p.name for p in root.iterdir()
                      if p.is_dir() and not p.name.startswith(".") and p.name not in skip and (p / "__init__.py").is_file())
    return packages or ["."]
