"""unittest: `python -m unittest ARGS` run as `python <the runtime's launcher> ARGS`, which runs unittest's own
`main` exactly as `-m unittest` does (discovery, arguments, exit code) and writes each test's outcome.
Recognised as `-m unittest` after any wrapper (`python -m unittest -v`, `coverage run -m unittest`)."""

from __future__ import annotations

from collections.abc import Sequence

from runtime.verify.kinds.runners.base import Reading, ReportPaths, after_module, cut, not_sealed
from runtime.verify.kinds.runners.jsonlines import Unreadable, records, text
from runtime.verify.kinds.runners.py_pytest import KEY_VARIABLE, REPORT_VARIABLE
from runtime.verify.kinds.runners.results import TestCase
from runtime.verify.kinds.runners.words import Simple, Word

SUPPORT_FILE = "unittest_report.py"  # copied as `<module>_unittest.py`
SUFFIX = "_unittest.py"
_FAILED_IMPORT = "unittest.loader._FailedTest."
_RANK = {"passed": 0, "xpassed": 0, "skipped": 1, "xfailed": 1, "failed": 2, "error": 3}


class Unittest:
    name = "unittest"
    output_is_report = False
    keyed = True
    last_event = 'finish'
    channel = 'socket'
    sealed_stub = staticmethod(not_sealed)

    def locate(self, argv: Sequence[str]) -> int | None:
        return after_module(argv, "unittest")

    def instrument(self, command: Simple, at: int, paths: ReportPaths) -> Simple:
        words = list(command.words)
        # `-m unittest` (two words, or one `-munittest`) becomes the launcher's path
        start = at - 2 if words[at - 1].value == "unittest" and words[at - 2].value == "-m" else at - 1
        words[start:at] = [Word.added(paths.support_file(SUFFIX))]
        return command.with_words(words).with_assignment(REPORT_VARIABLE, paths.channel).with_assignment(
            KEY_VARIABLE, paths.key)

    def read(self, data: bytes, output: str, root: str) -> Reading:
        try:
            events = records(data)
        except Unreadable as exc:
            return Reading(problem=str(exc))
        tests: dict[str, TestCase] = {}
        complete = False
        for event in events:
            if event.get("event") == "report":
                outcome = text(event, "outcome")
                if outcome in _RANK:
                    test_id = text(event, "id")
                    seen = tests.get(test_id)
                    # a test whose subtests failed is reported once for each: one test, its worst outcome
                    message = text(event, "message")
                    if seen is not None:
                        outcome = max(outcome, seen.outcome, key=_RANK.__getitem__)
                        message = "\n".join(m for m in (seen.message, message) if m)
                    tests[test_id] = TestCase(id=test_id, outcome=outcome, file=_file_of(test_id),  # type: ignore[arg-type]
                                              message=cut(message))
            elif event.get("event") == "finish":
                complete = True
        return Reading(list(tests.values()), complete, "unittest's own discovery and arguments")

def _file_of(test_id: str) -> str:
    """`tests.test_more.IterateTests.test_x` -> `tests/test_more.py`, by unittest's naming (module, class,
    method): a guess for a module of one part less or more, which only the hidden tests' check reads. A
    module that did not import is unittest's `unittest.loader._FailedTest.<module>`: that module's file."""
    if test_id.startswith(_FAILED_IMPORT):
        return test_id[len(_FAILED_IMPORT):].replace(".", "/") + ".py"
    parts = test_id.split(".")
    return "/".join(parts[:-2]) + ".py" if len(parts) > 2 else ""


RUNNER = Unittest()
