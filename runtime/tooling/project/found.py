"""Commands found in a repository, where each came from, and what kind of command each is."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONObject

KINDS = ("test", "lint", "type", "format")


@dataclass(frozen=True)
class Origin:
    file: str  # relative to the repository's root
    line: int
    what: str = ""  # the tox environment, nox session, script or target that holds it

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"

    def describe(self) -> str:
        return f"{self}" + (f" ({self.what})" if self.what else "")


@dataclass(frozen=True)
class Raw:
    """A command as a repository's file writes it, before translation."""

    text: str
    origin: Origin
    hint: str | None = None  # a kind suggested by the name of what holds it (tox env `lint`, script `typecheck`)
    dialect: str = "shell"  # tox, hatch, pdm, nox or shell: which placeholders it may hold
    group: str = ""  # the hatch environment whose scripts a bare script name refers to
    # Why its reader could not read the command as the file means it (a tox replacement with no value, a YAML
    # escape it does not know): then ``text`` is only what the file wrote, for the person, and never run.
    why: str = ""


@dataclass(frozen=True)
class Found:
    """A command the repository runs, as the agent and verify will run it."""

    command: str
    kind: str  # one of KINDS
    origin: Origin
    written: str  # as the file wrote it
    check: bool = True  # fit for a task's checks; False for what rewrites files (a formatter's writing form)
    family: str = ""  # the same suite or tool however called (`pytest`, `python -m pytest`): one per task
    dropped: tuple[str, ...] = ()  # options of the written command left out (a report verify never reads)


@dataclass(frozen=True)
class Skipped:
    """A command of the repository's that init could not turn into one the agent may run, and why."""

    written: str
    origin: Origin
    why: str


class Allowance(StrEnum):
    """Whether the project's role lets the agent run a found command, and by what."""

    EDIT_LOCAL = "edit-local"  # already allowed, by the role it extends
    RULE = "rule"  # a new rule of the project's role allows it
    REFUSED = "refused"


@dataclass
class Outcome:
    """What became of each found command."""

    found: Found
    status: Allowance
    reason: str = ""  # why refused, or why left out of the task
    in_task: str = ""  # "test" or "check" when the task template runs it
    doubled: bool = False  # left out of the task: the test command runs it already
    rule: JSONObject | None = field(default=None)  # the new shell rule that allows it, as the role file gets it


# The program's kind, or a dict of its first word to kinds (`cargo test`, `ruff format`).
PROGRAMS: dict[str, str | dict[str, str]] = {
    "pytest": "test", "py.test": "test", "unittest": "test", "nose2": "test", "doctest": "test", "jest": "test",
    "vitest": "test", "mocha": "test", "ava": "test", "tap": "test", "trial": "test",
    "flake8": "lint", "pylint": "lint", "pyflakes": "lint", "pycodestyle": "lint", "pydocstyle": "lint",
    "codespell": "lint", "bandit": "lint", "eslint": "lint", "stylelint": "lint", "shellcheck": "lint",
    "yamllint": "lint", "vulture": "lint", "check-manifest": "lint", "staticcheck": "lint", "tabnanny": "lint",
    "mypy": "type", "pyright": "type", "basedpyright": "type", "pytype": "type", "tsc": "type", "ty": "type",
    "black": "format", "isort": "format", "prettier": "format", "autopep8": "format", "yapf": "format",
    "rustfmt": "format",
    "ruff": {"check": "lint", "format": "format"},
    "cargo": {"test": "test", "nextest": "test", "clippy": "lint", "fmt": "format"},
    "go": {"test": "test", "vet": "lint"},
    "golangci-lint": {"run": "lint"},
    "coverage": {"run": "test"},
}

_HINTS = (
    ("type", re.compile(r"(^|[-_:])(types?|typing|typecheck|type-check|typescript|tsd|mypy|pyright|tsc)($|[-_:])")),
    ("format", re.compile(r"(^|[-_:])(format|fmt|black|isort|prettier|style-check)($|[-_:])")),
    ("lint", re.compile(r"(^|[-_:])(lint|linters?|flake8|pylint|ruff|style|pep8|check|codespell|quality)($|[-_:])")),
    ("test", re.compile(r"(^|[-_:])(tests?|unit|unittests?|py\d*|pypy\d*|cov|coverage|integration)($|[-_:])")),
)


def hint_of(name: str) -> str | None:
    """The kind a tox environment, nox session, script or make target suggests by its name."""
    lowered = name.lower()
    for kind, pattern in _HINTS:
        if pattern.search(lowered):
            return kind
    return None


def classify(words: list[str]) -> tuple[str | None, str]:
    """The kind of a translated command (its words, variables first) and its family, or None when it is
    none of the four."""
    rest = list(words)
    while rest and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", rest[0]):
        rest = rest[1:]
    if rest[:3] == ["uv", "run", "--no-sync"]:
        rest = rest[3:]
    if not rest:
        return None, ""
    program, args = rest[0], rest[1:]
    if program == "npm" and args[:1] in (["test"], ["t"]):
        return "test", "npm test"
    if program == "npm" and len(args) >= 2 and args[0] in ("run", "run-script"):
        hinted = "test" if args[1] == "test" else hint_of(args[1])
        return (hinted, f"npm run {args[1]}") if hinted else (None, "")
    if re.match(r"^python[0-9.]*$", program) and len(args) >= 2 and args[0] == "-m":
        program, args = args[1], args[2:]
    if program == "coverage" and args[:2] == ["run", "-m"] and len(args) > 2:
        return ("test", args[2]) if PROGRAMS.get(args[2]) == "test" else (None, "")
    kind = PROGRAMS.get(program)
    if isinstance(kind, dict):
        sub = next((a for a in args if not a.startswith("-")), "")
        found = kind.get(sub)
        return (found, f"{program} {sub}") if found else (None, "")
    if kind is not None:
        return kind, "pytest" if program == "py.test" else program
    return None, ""
