"""A test runner the orchestrator knows how to start: how it is recognised in a command, which options make
it write its structured report, and how that report is read.

Each runner is one module of this package with one ``RUNNER`` value, listed once in
``runtime.verify.kinds.runners.registry``. A runner never decides anything: it reads what the runner wrote into
``TestCase`` values, and says when the report is missing, unreadable or unfinished.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from runtime.verify.kinds.runners.results import TestCase
from runtime.verify.kinds.runners.words import Simple, Word

# What a report may hold: a runner's report is read whole into memory, and a larger one is refused.
MAX_REPORT_BYTES = 64 * 1024 * 1024
MESSAGE_CHARS = 2000


@dataclass(frozen=True)
class ReportPaths:
    """Where a runner step writes and finds what the orchestrator gives it, as paths inside the sandbox:
    ``report``, the file its structured report goes to (in a folder only this step writes, outside the
    tree: a pipe the orchestrator reads as it comes, for a keyed runner); ``channel``, the orchestrator's
    socket a reporter of the runtime's sends its records to instead; ``key``, the file holding the run's key,
    which the reporter removes once read; ``support``, a read-only folder holding the runtime's reporter
    files; ``module``, the random name they go by there (a module the work could shadow must be named first)."""

    report: str
    support: str
    module: str
    channel: str = ""
    key: str = ""

    def support_file(self, suffix: str) -> str:
        return posixpath.join(self.support, self.module + suffix)


@dataclass(frozen=True)
class Reading:
    """What a report says: the tests, whether the runner finished, what configured it, and, when the report
    cannot be read, why."""

    tests: list[TestCase] = field(default_factory=list)
    complete: bool = False
    config: str = ""
    problem: str = ""


class Runner(Protocol):
    """One test runner (see the module's docstring)."""

    name: str
    # The step's own output is the report (a runner that prints its per-test lines and writes no file).
    output_is_report: bool
    # Its reporter is the runtime's: each record carries the run's key and its number, ``last_event`` ends it
    # (`runtime.verify.test_runs.keyed_stream`), and the orchestrator reads it as it is written: through its
    # socket (``channel`` "socket": the Python reporters), or a pipe at ``report`` ("fifo": node's destination).
    keyed: bool
    last_event: str
    channel: str

    def locate(self, argv: Sequence[str]) -> int | None:
        """Where in ``argv`` this runner's own options may be inserted (the index after its name, or after
        `-m NAME`); None when the command does not run this runner."""
        ...

    def instrument(self, command: Simple, at: int, paths: ReportPaths) -> Simple:
        """``command`` with what makes the runner write its report to ``paths.report``."""
        ...

    def sealed_stub(self, path: str, server: str, ident: str, paths: ReportPaths, esm: bool) -> bytes | None:
        """What stands at ``path`` in the tree for a sealed test file (`runtime.verify.sealed`): a call of the
        runtime's loader (in ``paths.support``) that asks the orchestrator's socket ``server`` for ``ident``'s
        source and runs it as the runner would run the file. None: this runner cannot load that file sealed,
        and it is laid as a file (``esm``: the package's JavaScript files are ES modules)."""
        ...

    def read(self, data: bytes, output: str, root: str) -> Reading:
        """The report's tests (``data``: the report file, or the step's output for a runner whose output
        is the report); ``root``: the tree's path in the sandbox, which file names are made relative to."""
        ...


def not_sealed(path: str, server: str, ident: str, paths: ReportPaths, esm: bool) -> bytes | None:
    """A runner that loads test files only from disk: nothing is sealed (`Runner.sealed_stub`)."""
    return None


def program(word: str) -> str:
    """A program word's name: `/usr/bin/python3.11` -> `python3.11`."""
    return posixpath.basename(word)


def is_python(word: str) -> bool:
    name = program(word)
    return name == "python" or (name.startswith("python") and name[6:].replace(".", "").isdigit())


def after_module(argv: Sequence[str], module: str) -> int | None:
    """The index after `-m MODULE` (or `-mMODULE`) in a Python command, else None."""
    for i, word in enumerate(argv):
        if word == "-m" and i + 1 < len(argv) and argv[i + 1] == module:
            return i + 2
        if word == f"-m{module}":
            return i + 1
    return None


def after_program(argv: Sequence[str], *names: str) -> int | None:
    """The index after the first word naming one of the programs ``names``, else None."""
    for i, word in enumerate(argv):
        if program(word) in names and not word.startswith("-"):
            return i + 1
    return None


def insert(command: Simple, at: int, words: Sequence[str], env: Sequence[tuple[str, str]] = ()) -> Simple:
    """``command`` with ``words`` added at ``at`` and each variable of ``env`` prepended to any value the
    sandbox gives it (a path list: `NAME=value${NAME:+:$NAME}`)."""
    out = list(command.words)
    out[at:at] = [Word.added(w) for w in words]
    assignments = list(command.assignments)
    for name, value in env:
        source = f"{name}={Word.added(value).source}${{{name}:+:${name}}}"
        assignments.append(Word(f"{name}={value}", source))
    return Simple(tuple(assignments), tuple(out))


def relative(path: str, root: str) -> str:
    """A file the runner named (absolute, or relative to the tree) as a path relative to the tree."""
    if not path:
        return ""
    if os.path.isabs(path):
        rel = posixpath.relpath(path, root)
        return path if rel.startswith("../") else rel
    return posixpath.normpath(path)


def cut(text: str) -> str:
    return text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS] + " [...]"
