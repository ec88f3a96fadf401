"""pytest: started with the runtime's plugin (`-p <random name>`, from a read-only folder put first on
PYTHONPATH), which writes each test's outcome as pytest decides it. Recognised as `pytest`, `py.test`, or
`-m pytest` after any wrapper (`python -m pytest`, `coverage run -m pytest`, `uv run pytest`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from runtime.verify.kinds.runners.base import Reading, ReportPaths, after_module, after_program, cut, insert, relative
from runtime.verify.kinds.runners.jsonlines import Unreadable, records, text
from runtime.verify.kinds.runners.results import TestCase
from runtime.verify.kinds.runners.words import Simple

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONObject

REPORT_VARIABLE = "AGENT_RUNTIME_TEST_REPORT"
KEY_VARIABLE = "AGENT_RUNTIME_REPORT_KEY"
SUPPORT_FILE = "pytest_report.py"  # in runtime/verify/kinds/runners/support, copied as `<module>.py`


class Pytest:
    name = "pytest"
    output_is_report = False
    keyed = True
    last_event = 'finish'
    channel = 'socket'

    def sealed_stub(self, path: str, server: str, ident: str, paths: ReportPaths, esm: bool) -> bytes | None:
        if not path.endswith(".py"):
            return None
        # The support folder is first on PYTHONPATH (`instrument`), where the loader goes by the random name.
        return (f"# A sealed test: the runtime serves its source to the test runner alone.\n"
                f"from {paths.module}_sealed import load\n\n"
                f"load(globals(), {server!r}, {ident!r})\n").encode()

    def locate(self, argv: Sequence[str]) -> int | None:
        return after_module(argv, "pytest") or after_program(argv, "pytest", "py.test")

    def instrument(self, command: Simple, at: int, paths: ReportPaths) -> Simple:
        return insert(command, at, ["-p", paths.module], env=[("PYTHONPATH", paths.support)]).with_assignment(
            REPORT_VARIABLE, paths.channel).with_assignment(KEY_VARIABLE, paths.key)

    def read(self, data: bytes, output: str, root: str) -> Reading:
        try:
            events = records(data)
        except Unreadable as exc:
            return Reading(problem=str(exc))
        phases: dict[str, list[JSONObject]] = {}
        errors: list[TestCase] = []
        config, complete = "", False
        for event in events:
            kind = event.get("event")
            if kind == "start":
                plugins = event.get("plugins")
                listed = ", ".join(str(p) for p in plugins) if isinstance(plugins, list) and plugins else "none"
                config = (f"rootdir {text(event, 'rootdir')}, inifile {text(event, 'inifile') or 'none'}, "
                          f"plugins: {listed}")
            elif kind == "report":
                phases.setdefault(text(event, "id"), []).append(event)
            elif kind == "collect-error":
                where = text(event, "id")
                errors.append(TestCase(id=where or "(collection)", outcome="error", file=relative(where, root),
                                       message=cut(text(event, "message"))))
            elif kind == "finish":
                complete = True
        tests = [_case(node, reports, root) for node, reports in phases.items()]
        return Reading(tests + errors, complete, config)


def _case(node: str, reports: list[JSONObject], root: str) -> TestCase:
    """One test from its setup, call and teardown reports, as pytest's own summary would count it."""
    outcome, message = "passed", ""
    for report in reports:
        when, result, xfail = report.get("when"), report.get("outcome"), report.get("xfail") is True
        if result == "failed":
            outcome = "failed" if when == "call" else "error"
            message = message or str(report.get("message", ""))
        elif result == "skipped" and outcome == "passed":
            outcome = "xfailed" if xfail else "skipped"
        elif result == "passed" and when == "call" and xfail and outcome == "passed":
            outcome = "xpassed"
    if outcome == "passed" and not any(r.get("when") == "call" for r in reports):
        # its setup passed and its call never reported: the process ended inside the test (`os._exit`)
        outcome, message = "error", "the test started and never finished (the process ended first)"
    return TestCase(id=node, outcome=outcome, file=relative(node.split("::", 1)[0], root), message=cut(message))  # type: ignore[arg-type]


RUNNER = Pytest()
