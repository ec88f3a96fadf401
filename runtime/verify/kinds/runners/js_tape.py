"""tape: the TAP it prints is the report (tape writes no file of its own): each `# name` starts a test, its
`ok`/`not ok` lines are its assertions, and the closing plan (`1..N`) must count them all. A test file
that prints lines of TAP's own form can pass as assertions; the plan's count and a name reported twice
are the only checks, as for any runner whose results are its output. Recognised as `tape`.

A test `{ skip: true }` is headed `# SKIP name`, one `{ todo: true }` `# TODO name` (its failures count for
nothing): both are skipped tests named `name`. A test whose assertions were all skipped (`t.skip`) is
skipped; one with any assertion that ran, and none failing, passed. A test file that does not load ends node
before tape prints anything: with no plan, the file node named is an error case."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from runtime.verify.kinds.runners.base import Reading, ReportPaths, after_program, cut, not_sealed
from runtime.verify.kinds.runners.js_report import load_failure
from runtime.verify.kinds.runners.results import TestCase
from runtime.verify.kinds.runners.words import Simple

_TEST = re.compile(r"^# (.+)$")
_ASSERT = re.compile(r"^(not ok|ok) (\d+)(?: (.*))?$")
_PLAN = re.compile(r"^1\.\.(\d+)$")
_TOTALS = ("tests ", "pass ", "fail ", "ok", "todo ", "skip ")
_DIRECTIVES = ("SKIP ", "TODO ")


class Tape:
    name = "tape"
    output_is_report = True
    keyed = False
    last_event = ''
    channel = 'file'
    sealed_stub = staticmethod(not_sealed)

    def locate(self, argv: Sequence[str]) -> int | None:
        return after_program(argv, "tape")

    def instrument(self, command: Simple, at: int, paths: ReportPaths) -> Simple:
        return command

    def read(self, data: bytes, output: str, root: str) -> Reading:
        tests: dict[str, _Test] = {}
        seen: dict[str, int] = {}
        current, asserts, plan = "", 0, None
        for raw in data.decode("utf-8", errors="replace").splitlines():
            line = raw.rstrip()
            if (m := _TEST.match(line)) and not m.group(1).startswith(_TOTALS):
                # tape heads a test `{ skip: true }` `# SKIP name` (and runs none of it), one `{ todo: true }`
                # `# TODO name` (whose failures count for nothing): the name is what follows
                head = m.group(1)
                directive, name = (head[:4], head[5:]) if head.startswith(_DIRECTIVES) else ("", head)
                seen[name] = seen.get(name, 0) + 1
                current = name if seen[name] == 1 else f"{name} #{seen[name]}"
                tests[current] = _Test(directive)
            elif m := _ASSERT.match(line):
                asserts += 1
                test = tests.setdefault(current or "(outside any test)", _Test(""))
                said = m.group(3) or ""
                if m.group(1) == "not ok":
                    if test.directive != "TODO":  # `# TODO` on an assertion of any other test is only its words
                        test.failures.append(said)
                elif said.upper().endswith("# SKIP") or "# SKIP " in said.upper():
                    test.skipped += 1
                else:
                    test.passed += 1
            elif m := _PLAN.match(line):
                plan = int(m.group(1))
        cases = [TestCase(id=name, outcome=test.outcome, message=cut("\n".join(test.failures)))  # type: ignore[arg-type]
                 for name, test in tests.items()]
        if plan is None and (crashed := load_failure(data.decode("utf-8", errors="replace"), root)) is not None:
            cases.append(crashed)  # no plan: node ended first, on an error it names (a test file that did not load)
        problem = "" if plan is None or plan == asserts else (
            f"the TAP plan counts {plan} assertions but {asserts} were printed: something printed lines of TAP's form")
        return Reading(cases, plan is not None, "tape, with the options of the test command", problem)


@dataclass
class _Test:
    directive: str  # "SKIP", "TODO" or ""
    passed: int = 0
    skipped: int = 0
    failures: list[str] = field(default_factory=list)

    @property
    def outcome(self) -> str:
        if self.failures:
            return "failed"
        if self.directive or (self.skipped and not self.passed):
            return "skipped"  # skipped whole, a todo, or every assertion skipped
        return "passed"


RUNNER = Tape()
