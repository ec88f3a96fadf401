"""cargo test: libtest's per-test lines, read from the step's own output (`test NAME ... ok|FAILED|ignored`,
under cargo's `Running <binary>` or `Doc-tests <crate>`), with each binary's `running N tests` and
`test result:` summary checked against the lines read. libtest's JSON format needs a nightly compiler, so
the text is the report; a test that writes lines of libtest's own form past the capture is caught by the
count and by a test named twice with two outcomes. Started with `--no-fail-fast`, so every binary runs,
and with libtest's quiet format taken out, whose dots name no test. Recognised as `cargo test`."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from runtime.verify.kinds.runners.base import Reading, ReportPaths, cut, not_sealed, program
from runtime.verify.kinds.runners.results import Outcome, TestCase
from runtime.verify.kinds.runners.words import Simple, Word

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_RUNNING = re.compile(r"^\s+Running (?:`([^`]+)`|\S+(?: \S+)* \((\S+)\))\s*$")
_DOCTESTS = re.compile(r"^\s+Doc-tests (\S+)\s*$")
_COUNT = re.compile(r"^running (\d+) tests?$")
_LINE = re.compile(r"^test (.+?) \.\.\. (ok|FAILED|ignored(?:, .*)?)$")
_RESULT = re.compile(r"^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored; (\d+) measured;")
_FAILURE_HEAD = re.compile(r"^---- (.+?) std(?:out|err) ----$")
_HASH = re.compile(r"-[0-9a-f]{16}$")
_DOC_LINE = re.compile(r" \(line (\d+)\)")
_SHOULD_PANIC = re.compile(r" - should panic$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
QUIET = ("-q", "--quiet")


class CargoTest:
    name = "cargo test"
    output_is_report = True
    keyed = False
    last_event = ''
    channel = 'file'
    sealed_stub = staticmethod(not_sealed)

    def locate(self, argv: Sequence[str]) -> int | None:
        for i, word in enumerate(argv[:-1]):
            if program(word) == "cargo":
                rest = [w for w in argv[i + 1:] if not w.startswith("+")]  # `cargo +stable test`
                if rest and rest[0] == "test":
                    return argv.index("test", i + 1) + 1
        return None

    def instrument(self, command: Simple, at: int, paths: ReportPaths) -> Simple:
        words = list(command.words)
        split = next((n for n, w in enumerate(words) if n >= at and w.value == "--"), len(words))
        head = [w for w in words[:split] if w.value not in QUIET]
        tail = _harness(words[split + 1:]) if split < len(words) else []
        if "--no-fail-fast" not in (w.value for w in head):
            head.insert(at, Word.added("--no-fail-fast"))
        return command.with_words(head + ([Word.added("--"), *tail] if tail else []))

    def read(self, data: bytes, output: str, root: str) -> Reading:
        return read_libtest(data.decode("utf-8", errors="replace"))


def _harness(words: list[Word]) -> list[Word]:
    """libtest's options without a format that names no test."""
    out: list[Word] = []
    skip = False
    for w in words:
        if skip:
            skip = False
            continue
        if w.value in QUIET or w.value.startswith("--format="):
            continue
        if w.value == "--format":
            skip = True
            continue
        out.append(w)
    return out


def read_libtest(text: str) -> Reading:
    """The tests of cargo's output. A test's id is its binary's name and its path (`demo::tests::adds`;
    `doc-tests demo::src/lib.rs - add` for a documentation example): libtest's `- should panic` and a
    documentation example's line number are not part of it (the line moves with any edit above it), and the
    examples of one item are told apart by the order of their lines (`#2`, `#3`), never by the order they
    finished in, which changes from run to run."""
    found: list[_Found] = []
    messages: dict[tuple[str, str], list[str]] = {}
    target, problem = "", ""
    expected: int | None = None
    section: set[str] = set()
    failure: tuple[str, str] | None = None
    open_sections, sections = 0, 0

    def forged(what: str) -> None:
        nonlocal problem
        problem = problem or f"{target or 'a test binary'}: {what}: something printed lines of libtest's own form"

    for raw in _ANSI.sub("", text).replace("\r\n", "\n").split("\n"):
        line = raw.rstrip()
        if m := _RUNNING.match(line):
            program_word = _program(m.group(1) or m.group(2))
            if not (target.startswith("doc-tests ") and program(program_word) == "rustdoc"):  # `--verbose`'s rustdoc
                target = _HASH.sub("", program(program_word))
            failure = None
        elif m := _DOCTESTS.match(line):
            target, failure = f"doc-tests {m.group(1)}", None
        elif m := _COUNT.match(line):
            if expected is not None:
                forged("a binary's tests started again before they ended")
            expected, section, failure = int(m.group(1)), set(), None
            open_sections, sections = open_sections + 1, sections + 1
        elif m := _LINE.match(line):
            if expected is None:
                forged(f"`{line}` came outside any binary's tests")
                continue
            name = m.group(1)
            if name in section:
                forged(f"libtest named `{name}` twice")
            section.add(name)
            word = m.group(2)
            outcome = "passed" if word == "ok" else "failed" if word == "FAILED" else "skipped"
            found.append(_Found(target, name, outcome, sections))  # type: ignore[arg-type]
        elif (m := _RESULT.match(line)) and expected is not None:
            counted = sum(int(m.group(n)) for n in (1, 2, 3))
            read = sum(1 for f in found if f.section == sections)
            if not (counted == expected == read):
                forged(f"libtest counted {counted} of {expected} tests but {read} result lines were read")
            expected, open_sections = None, open_sections - 1
        elif m := _FAILURE_HEAD.match(line):
            failure = (target, m.group(1))
        elif failure is not None:
            if line in ("failures:", "successes:"):
                failure = None
            else:
                messages.setdefault(failure, []).append(line)
    tests = [TestCase(id=test_id, outcome=f.outcome, message=cut("\n".join(messages.get((f.target, f.name), [])).strip())
                      if f.outcome == "failed" else "")
             for f, test_id in zip(found, _ids(found), strict=True)]
    return Reading(tests, open_sections == 0 and bool(found or "running 0 tests" in text), "cargo test, with libtest's "
                   "options of the test command", problem)


class _Found(NamedTuple):
    target: str
    name: str  # as libtest printed it
    outcome: Outcome
    section: int


def _program(command: str) -> str:
    """The program of the command cargo says it runs (`--verbose` may put variables before it)."""
    words = command.split()
    return next((w for w in words if not _ASSIGNMENT.match(w)), words[0] if words else "")


def _ids(found: list[_Found]) -> list[str]:
    """Each result's id, in the order of ``found`` (see ``read_libtest``)."""
    ids: list[str] = []
    examples: dict[str, list[tuple[int, int]]] = {}  # a documentation item's id -> (line, index in found)
    for n, f in enumerate(found):
        if f.target.startswith("doc-tests "):
            at = _DOC_LINE.search(f.name)
            base = f"{f.target}::{_DOC_LINE.sub('', f.name, count=1)}"
            examples.setdefault(base, []).append((int(at.group(1)) if at else 0, n))
            ids.append(base)
        else:
            ids.append(f"{f.target}::{_SHOULD_PANIC.sub('', f.name)}")
    for base, where in examples.items():
        lines = sorted({line for line, _ in where})
        for line, n in where:
            rank = lines.index(line) + 1
            ids[n] = base if rank == 1 else f"{base} #{rank}"
    # a library and a binary of one name: two binaries' tests of one path are two tests; one binary naming a
    # test twice (a forged line, which makes the report's problem) is the one test, its worst outcome standing
    binaries: dict[str, list[int]] = {}
    for n, test_id in enumerate(ids):
        sections = binaries.setdefault(test_id, [])
        if found[n].section not in sections:
            sections.append(found[n].section)
        rank = sections.index(found[n].section) + 1
        if rank > 1:
            ids[n] = f"{test_id} #{rank}"
    return ids


RUNNER = CargoTest()
