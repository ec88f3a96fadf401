"""The command kinds' gatherers and ``judge_commands``: each command run, and the base's run of a command
that failed, only where the task asks for ``baseline``; tests-green's plan run on the work and on the base
through the test runners the caller supplies."""

from __future__ import annotations

import json

import anyio

from runtime.verify.gather import COMMAND_TIMEOUT_S, CommandGathering, RunBaseTests, RunCommand, RunTests, judge_commands
from runtime.verify.kinds.baseline import BaseRun
from runtime.verify.kinds.checks_green import CheckRun, CheckRuns
from runtime.verify.kinds.kind import BaseRunRef, TestSide
from runtime.verify.kinds.registry import KINDS
from runtime.verify.kinds.runners.plan import TestPlan
from runtime.verify.kinds.runners.results import RunnerReport, StepRun, TestCase, TestRun
from runtime.verify.kinds.tests_green import PlanInfo, TestsEvidence


def _runner(answers: dict[str, tuple[int, str]], asked: list[tuple[str, float]]) -> RunCommand:
    async def run(command: str, timeout_s: float) -> tuple[int, str]:
        asked.append((command, timeout_s))
        return answers[command]
    return run


def gathered(kind: str, params: dict, run_command: RunCommand, at_base: RunCommand | None = None):
    """A command kind's evidence, gathered by its kind's gatherer over the given runners."""
    return anyio.run(KINDS[kind].gather, KINDS[kind].read_params(params), CommandGathering(run_command, at_base))


def judged(kind: str, params: dict, run_command: RunCommand, at_base: RunCommand | None = None):
    return anyio.run(judge_commands, kind, params, run_command, at_base)


def test_the_command_kinds_are_the_ones_that_run_commands():
    # (and the reviewer, after them, once: never on a merge)
    assert {name for name, kind in KINDS.items() if kind.runs_commands} == {"tests-green", "checks-green", "review"}
    assert {name for name, kind in KINDS.items() if not kind.on_merge} == {"review"}


def test_checks_run_each_command_and_only_a_failing_one_again_on_the_base():
    here: list = []
    there: list = []
    evidence = gathered("checks-green", {"commands": ["lint", "types"], "baseline": True},
                        _runner({"lint": (1, "a.py:1: W"), "types": (0, "ok")}, here),
                        _runner({"lint": (1, "a.py:2: W")}, there))
    assert evidence == CheckRuns(results=[
        CheckRun(command="lint", exit_code=1, output="a.py:1: W", base=BaseRun(exit_code=1, output="a.py:2: W")),
        CheckRun(command="types", exit_code=0, output="ok")])
    assert here == [("lint", COMMAND_TIMEOUT_S), ("types", COMMAND_TIMEOUT_S)]
    assert there == [("lint", COMMAND_TIMEOUT_S)]


def _tests(run: TestRun, asked: list) -> RunTests:
    async def run_tests(plan: TestPlan, side: TestSide) -> TestRun:
        asked.append(plan)
        return run
    return run_tests


def _base_tests(run: TestRun, asked: list) -> RunBaseTests:
    async def at_base(plan: TestPlan) -> tuple[TestRun, BaseRunRef]:
        asked.append(plan)
        return run, REF
    return at_base


REF = BaseRunRef(key="k", base="abc123", ran_at=1.0, cached=False)


def _pytest_run(*outcomes: tuple[str, str]) -> TestRun:
    code = int(any(o == "failed" for _, o in outcomes))
    report = RunnerReport(runner="pytest", command="pytest", exit_code=code, complete=True,
                          tests=[TestCase.model_validate({"id": i, "outcome": o}) for i, o in outcomes])
    return TestRun(steps=[StepRun(command="pytest", exit_code=code, output="", report=report)])


WORK = _pytest_run(("t.py::a", "passed"), ("t.py::b", "passed"))
BASE = _pytest_run(("t.py::a", "passed"), ("t.py::b", "failed"))


def test_tests_green_runs_the_plan_on_the_work_and_the_base_and_never_a_bare_command():
    commands: list = []
    here: list = []
    there: list = []
    gathering = CommandGathering(_runner({}, commands), None, _tests(WORK, here), _base_tests(BASE, there))
    evidence = anyio.run(KINDS["tests-green"].gather, KINDS["tests-green"].read_params({"command": "pytest", "min-count": 1}), gathering)
    assert evidence == TestsEvidence(plan=PlanInfo(command="pytest", source="the task's test command",
                                                   steps=["pytest  [pytest]"]), work=WORK, base=BASE, base_run=REF,
                                     checks=evidence.checks)
    assert evidence.checks.files == {}  # a merged tree's run reads no file to copy: no checks there
    assert [p.command for p in here] == ["pytest"] and there == here and commands == []


def test_tests_green_reads_npm_test_through_the_package_json_it_is_given():
    here: list = []
    gathering = CommandGathering(_runner({}, []), None, _tests(WORK, here), None,
                                 json.dumps({"scripts": {"test": "vitest run"}}))
    evidence = anyio.run(KINDS["tests-green"].gather, KINDS["tests-green"].read_params({"command": "npm test", "min-count": 1}), gathering)
    assert [p.runners for p in here] == [["vitest"]]
    assert evidence.base is None and evidence.base_run is None and "package.json" in evidence.plan.source


def test_tests_green_without_a_test_runner_is_an_error_not_a_pass():
    asked: list = []
    result = judged("tests-green", {"command": "pytest", "min-count": 1}, _runner({"pytest": (0, "3 passed")}, asked))
    assert result.status == "error" and "cannot run a test plan" in result.feedback
    assert asked == []


def test_tests_green_by_exit_code_asks_the_base_only_for_a_failure_with_baseline():
    params = {"command": "make test", "min-count": 1, "results": "exit-code", "baseline": True}
    there: list = []
    evidence = gathered("tests-green", params, _runner({"make test": (2, "FAIL")}, []),
                        _runner({"make test": (2, "FAIL")}, there))
    assert evidence.base_exit == BaseRun(exit_code=2, output="FAIL") and there == [("make test", COMMAND_TIMEOUT_S)]
    there.clear()
    evidence = gathered("tests-green", {**params, "baseline": False}, _runner({"make test": (2, "FAIL")}, []),
                        _runner({"make test": (2, "FAIL")}, there))
    assert evidence.base_exit is None and there == []
    evidence = gathered("tests-green", params, _runner({"make test": (0, "ok")}, []), _runner({}, there))
    assert evidence.base_exit is None and there == []


# ---------------------------------------------------------------- judge_commands


def test_judge_commands_passes_a_check_failing_only_as_at_the_base():
    there: list = []
    result = judged("checks-green", {"commands": ["lint"], "baseline": True},
                    _runner({"lint": (1, "old.py:20:1: W1\n")}, []), _runner({"lint": (1, "old.py:2:1: W1\n")}, there))
    assert result.status == "passed" and result.evidence == {"checks": 1, "as-at-base": ["lint"]}
    assert there == [("lint", COMMAND_TIMEOUT_S)]


def test_judge_commands_without_baseline_never_asks_the_base_and_rejects_the_failure():
    there: list = []
    result = judged("checks-green", {"commands": ["lint"]},
                    _runner({"lint": (1, "old.py:20:1: W1\n")}, []), _runner({"lint": (1, "old.py:2:1: W1\n")}, there))
    assert result.status == "rejected" and "old.py:20:1: W1" in result.feedback
    assert there == []


def test_judge_commands_judges_the_tests_against_the_base_s_run():
    there: list = []
    result = anyio.run(judge_commands, "tests-green", {"command": "pytest", "min-count": 2}, _runner({}, []), None,
                       _tests(WORK, []), _base_tests(BASE, there))
    assert result.status == "passed", result.feedback
    assert result.tests is not None and result.tests.fixed == ["t.py::b"] and result.tests.base_run == "k"
    assert len(there) == 1
    gone = anyio.run(judge_commands, "tests-green", {"command": "pytest", "min-count": 1}, _runner({}, []), None,
                     _tests(_pytest_run(("t.py::a", "passed")), []), _base_tests(BASE, []))
    assert gone.status == "rejected" and "`t.py::b`" in gone.feedback


def test_judge_commands_turns_malformed_parameters_into_an_error():
    asked: list = []
    result = judged("tests-green", {"min-count": 1}, _runner({}, asked))
    assert result.status == "error" and "`command`" in result.feedback
    assert asked == []
