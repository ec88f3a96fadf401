"""mocha: started with its json reporter writing to the report (`--reporter json --reporter-option
output=<report>`, mocha 10 on) in place of any reporter the command names. Recognised as `mocha` or `_mocha`.

mocha writes its report once every test has run, and stops whole, before any test, when a test file does not
load (`Exception during run`): the step makes the report empty before mocha starts, so such a run still
leaves one, which reads as unfinished, with the file mocha named in its output as an error case."""

from __future__ import annotations

import json
from collections.abc import Sequence

from runtime.verify.kinds.runners.base import Reading, ReportPaths, after_program, cut, not_sealed, relative
from runtime.verify.kinds.runners.js_report import load_failure
from runtime.verify.kinds.runners.results import TestCase
from runtime.verify.kinds.runners.words import Simple, Word

SEPARATOR = " > "
_CONFIG = "mocha, with the options of the test command and the base's configuration"
_REPORTER_OPTIONS = ("--reporter", "-R", "--reporter-option", "--reporter-options", "-O")


class Mocha:
    name = "mocha"
    output_is_report = False
    keyed = False
    last_event = ''
    channel = 'file'
    sealed_stub = staticmethod(not_sealed)

    def locate(self, argv: Sequence[str]) -> int | None:
        return after_program(argv, "mocha", "_mocha")

    def instrument(self, command: Simple, at: int, paths: ReportPaths) -> Simple:
        words: list[Word] = list(command.words[:at])
        rest = list(command.words[at:])
        skip = False
        for w in rest:
            if skip:
                skip = False
                continue
            if w.value in _REPORTER_OPTIONS:
                skip = True
                continue
            if any(w.value.startswith(o + "=") for o in _REPORTER_OPTIONS):
                continue
            words.append(w)
        added = [Word.added(v) for v in ("--reporter", "json", "--reporter-option", f"output={paths.report}")]
        words[at:at] = added
        # the report made empty before mocha starts (opened and closed at once: mocha's standard output and
        # error stay the step's), so a mocha that stops before its reporter writes still leaves one to read
        report = Word.added(paths.report).source
        return command.with_words([*words, Word(f"3>>{paths.report}", f"3>>{report}"), Word("3>&-", "3>&-")])

    def read(self, data: bytes, output: str, root: str) -> Reading:
        if not data.strip():
            # mocha stopped before its reporter wrote (a test file that did not load stops it whole: `Exception
            # during run`; a test that ended the process): no test ran to the end
            crashed = load_failure(output, root, after="Exception during run")
            return Reading([crashed] if crashed else [], False, _CONFIG)
        try:
            report = json.loads(data.decode("utf-8", errors="replace"))
        except ValueError:
            return Reading(problem="the report is not JSON")
        if not isinstance(report, dict) or not isinstance(report.get("tests"), list):
            return Reading(problem="the report has no `tests` list")
        failed = {_key(t) for t in report.get("failures", []) if isinstance(t, dict)}
        pending = {_key(t) for t in report.get("pending", []) if isinstance(t, dict)}
        tests: list[TestCase] = []
        seen: dict[str, int] = {}
        cases = [t for t in report["tests"] if isinstance(t, dict)]
        # a hook that failed is listed among the failures alone: it is a failure of its own
        cases += [t for t in report.get("failures", []) if isinstance(t, dict) and _key(t) not in {_key(c) for c in cases}]
        for case in cases:
            file = relative(str(case.get("file") or ""), root)
            test_id = SEPARATOR.join(p for p in (file, str(case.get("fullTitle") or case.get("title") or "")) if p)
            seen[test_id] = seen.get(test_id, 0) + 1
            if seen[test_id] > 1:
                test_id += f" #{seen[test_id]}"
            key = _key(case)
            err = case.get("err")
            err = err if isinstance(err, dict) else {}
            outcome = "failed" if key in failed else "skipped" if key in pending else "passed"
            tests.append(TestCase(id=test_id, outcome=outcome, file=file,  # type: ignore[arg-type]
                                  message=cut(str(err.get("message") or "")) if outcome == "failed" else ""))
        stats = report.get("stats")
        complete = isinstance(stats, dict) and "end" in stats
        return Reading(tests, complete, _CONFIG)


def _key(case: dict[str, object]) -> tuple[str, str]:
    return str(case.get("file") or ""), str(case.get("fullTitle") or case.get("title") or "")


RUNNER = Mocha()
