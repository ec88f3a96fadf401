"""go test: started with `-json` (one event per test action, from the go command's test2json), its
standard output written to the report file. Recognised as `go test`.

The runtime runs each step as `<step> 2>&1`, which comes after the step's own `>report`, so what the go
command prints on standard error (a build's compiler errors before Go 1.24) lands in the report too, and
before Go 1.24 a package that did not build is a plain `FAIL <package> [build failed]` line there: lines
that are not JSON are the go command's own text, read for the packages they name, never a reason to
refuse the report. From Go 1.24 a build's output comes as `build-output` events keyed by `ImportPath`, and
the package's `fail` names it in `FailedBuild`.

Before Go 1.20 test2json reads the test binary's output as text, so a test that prints `--- PASS: TestX`
reports TestX passed: a test whose results outnumber its starts makes the report's problem, and its worst
result stands (a printed pass never covers a real failure). A test that prints both lines, `=== RUN` and
`--- PASS`, for a test that never ran cannot be told from a real one before Go 1.20."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from runtime.verify.kinds.runners.base import Reading, ReportPaths, cut, insert, not_sealed, program
from runtime.verify.kinds.runners.jsonlines import text
from runtime.verify.kinds.runners.results import TestCase
from runtime.verify.kinds.runners.words import Simple, Word

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONObject

MAX_OUTPUT_LINES = 40
_FINAL = {"pass": "passed", "fail": "failed", "skip": "skipped"}
_RANK = {"pass": 0, "skip": 1, "fail": 2}
_FAILED_PACKAGE = re.compile(r"^FAIL\s+(\S+) \[[a-z ]+ failed\]\s*$")  # `FAIL pkg [build failed]`, `[setup failed]`
_BUILD_HEAD = re.compile(r"^# (\S+)")  # `# example.com/pkg [example.com/pkg.test]`


class GoTest:
    name = "go test"
    output_is_report = False
    keyed = False
    last_event = ''
    channel = 'file'
    sealed_stub = staticmethod(not_sealed)

    def locate(self, argv: Sequence[str]) -> int | None:
        for i, word in enumerate(argv[:-1]):
            if program(word) == "go" and argv[i + 1] == "test":
                return i + 2
        return None

    def instrument(self, command: Simple, at: int, paths: ReportPaths) -> Simple:
        out = insert(command, at, [] if "-json" in command.argv else ["-json"])
        # standard output (the events) to the report, in a group of its own, so that the `2>&1` after the
        # step keeps standard error (a build's errors) in the step's output: `{ go test -json ... >REPORT; }`
        report = Word(">" + paths.report + ";", ">" + Word.added(paths.report).source + ";")
        return Simple((), (Word("{", "{"), *out.assignments, *out.words, report, Word("}", "}")))

    def read(self, data: bytes, output: str, root: str) -> Reading:
        events, plain = _events(data)
        # what go printed on standard error (the step's output: a build's `# pkg` and the compiler's lines),
        # read with the report's own plain lines
        plain = [line for line in _events(output.encode("utf-8", errors="replace"))[1]] + plain
        finals: dict[str, list[str]] = {}
        runs: dict[str, int] = {}
        lines: dict[str, list[str]] = {}
        packages: dict[str, str] = {}
        failed_build: dict[str, str] = {}
        builds: dict[str, list[str]] = {}  # a build's output (Go 1.24's events, or the text before), by import path
        for event in events:
            action, package, test = text(event, "Action"), text(event, "Package"), text(event, "Test")
            if not package:
                if action == "build-output":
                    builds.setdefault(text(event, "ImportPath").split(" ")[0], []).append(text(event, "Output"))
                continue
            if not test:
                if action in ("pass", "fail", "skip"):
                    packages[package] = action
                    if event.get("FailedBuild"):
                        failed_build[package] = text(event, "FailedBuild").split(" ")[0]
                elif action == "output" and package not in packages:
                    lines.setdefault(package, []).append(text(event, "Output"))
                continue
            key = f"{package}::{test}"
            if action == "run":
                runs[key] = runs.get(key, 0) + 1
            elif action in _FINAL:
                finals.setdefault(key, []).append(action)
            elif action == "output":
                lines.setdefault(key, []).append(text(event, "Output"))
        _read_plain(plain, packages, builds)
        tests: list[TestCase] = []
        forged: list[str] = []
        for key in dict.fromkeys([*runs, *finals]):
            ended = finals.get(key, [])
            outcome = _FINAL[max(ended, key=_RANK.__getitem__)] if ended else "error"
            message = "" if outcome == "passed" else "".join(lines.get(key, [])[-MAX_OUTPUT_LINES:])
            if not ended:
                message = "the test started and never finished (its test binary ended first)\n" + message
            elif len(ended) > runs.get(key, 0):
                forged.append(key.split("::", 1)[1])
                if not runs.get(key):
                    outcome = "error"  # a result for a test that never started: only printed
                message = ("go test read more results of this test than it started: something printed lines of "
                           "go test's own form\n" + "".join(lines.get(key, [])[-MAX_OUTPUT_LINES:]))
            tests.append(TestCase(id=key, outcome=outcome, message=cut(message)))  # type: ignore[arg-type]
        for package, action in packages.items():
            if action == "fail" and not any(t.id.startswith(package + "::") for t in tests):
                # a package whose tests never ran (it did not build, its TestMain failed)
                build = builds.get(failed_build.get(package, package), [])
                said = "".join([*build, *lines.get(package, [])][-MAX_OUTPUT_LINES:])
                tests.append(TestCase(id=f"{package}::(package)", outcome="error",
                                      message=cut(said or "".join(plain[-MAX_OUTPUT_LINES:]))))
        problem = ""
        if forged:
            problem = (f"go test read more results than starts for {', '.join(sorted(forged)[:5])}: something printed "
                       "lines of go test's own form")
        complete = bool(packages) and all(key in finals for key in runs)
        return Reading(tests, complete, "go test, with the options of the test command", problem)


def _events(data: bytes) -> tuple[list[JSONObject], list[str]]:
    """The report's events, and its lines that are no event (the go command's own text), in order."""
    events: list[JSONObject] = []
    plain: list[str] = []
    for line in data.decode("utf-8", errors="replace").splitlines(keepends=True):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if isinstance(record, dict):
            events.append(record)
        else:
            plain.append(line if line.endswith("\n") else line + "\n")
    return events, plain


def _read_plain(plain: list[str], packages: dict[str, str], builds: dict[str, list[str]]) -> None:
    """The go command's own text: a package that did not build (`FAIL pkg [build failed]`) fails, and the
    compiler's lines under `# pkg` are that package's build output."""
    current = ""
    for line in plain:
        if m := _FAILED_PACKAGE.match(line):
            packages.setdefault(m.group(1), "fail")
            current = ""
        elif m := _BUILD_HEAD.match(line):
            current = m.group(1)
            builds.setdefault(current, []).append(line)
        elif current:
            builds[current].append(line)


RUNNER = GoTest()
