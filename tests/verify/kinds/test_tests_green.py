"""tests-green: the work's run compared with the base's, test by test (the plan, the judge, the gatherer).

The judge is called directly on typed evidence; the gatherer through a fake ``Gathering`` that records
what it was asked. No runner is started here: the runners and their reports have tests of their own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field

import anyio
import pytest

from runtime.lang.globs import globs_to_regex
from runtime.verify.kinds import tests_green
from runtime.verify.kinds.baseline import BaseRun
from runtime.verify.kinds.canaries import Laid, TamperCheck
from runtime.verify.kinds.findings import Finding
from runtime.verify.kinds.kind import BaseRunRef, Change, CommandRun, TestSide
from runtime.verify.kinds.registry import evaluate
from runtime.verify.kinds.runners.plan import TestPlan
from runtime.verify.kinds.runners.results import RunnerReport, StepRun, TestCase, TestRun
from runtime.verify.kinds.tests_green import PlanInfo, TestsEvidence, TestsGreenParams
from runtime.verify.kinds.tests_green import tests_green as judged  # not `tests_green`: pytest would collect it


def judge(params, evidence):
    """The judge on parameters as the compiled policy holds them."""
    return judged(TestsGreenParams.read(params), evidence)

# ---------------------------------------------------------------- a fake Gathering (the static kinds' tests use it too)


@dataclass
class FakeGathering:
    """``runtime.verify.kinds.kind.Gathering`` over two trees held as {path: text}: the base's and the work's.
    The changes are the difference of the two (``renames``: {new path: old path}), unless given. Commands
    and test plans answer from tables, and every call is recorded in ``asked``."""

    base: dict[str, str] = field(default_factory=dict)
    work: dict[str, str] = field(default_factory=dict)
    renames: dict[str, str] = field(default_factory=dict)
    listed: list[Change] | None = None
    report: str = ""
    commands: dict[str, tuple[int, str]] = field(default_factory=dict)
    base_commands: dict[str, tuple[int, str]] | None = None
    tests: TestRun | None = None
    base_tests: tuple[TestRun, BaseRunRef] | None = None
    package: str | None = None
    asked: list[tuple[str, object]] = field(default_factory=list)
    sides: list[TestSide] = field(default_factory=list)

    @property
    def changes(self) -> Sequence[Change]:
        if self.listed is not None:
            return self.listed
        old_names = set(self.renames.values())
        out = []
        for path in sorted(set(self.base) | set(self.work)):
            if path in self.renames:
                out.append(Change(path, "renamed", old_path=self.renames[path]))
            elif path in old_names and path not in self.work:
                continue
            elif path not in self.base:
                out.append(Change(path, "added"))
            elif path not in self.work:
                out.append(Change(path, "deleted"))
            elif self.base[path] != self.work[path]:
                out.append(Change(path, "modified"))
        return out

    def text(self, path: str) -> str | None:
        return self.work.get(path)

    def size(self, path: str) -> int | None:
        return len(self.work[path].encode()) if path in self.work else None

    def base_text(self, path: str) -> str | None:
        return self.base.get(path)

    def source(self, path: str) -> bytes | None:
        return self.work[path].encode() if path in self.work else None

    def base_source(self, path: str) -> bytes | None:
        old = self.renames.get(path, path)
        return self.base[old].encode() if old in self.base else None

    def base_texts(self, paths: Iterable[str]) -> dict[str, str | None]:
        return {p: self.base[self.renames.get(p, p)] for p in paths if self.renames.get(p, p) in self.base}

    def base_sizes(self, paths: Iterable[str]) -> dict[str, int]:
        return {p: len(text.encode()) for p, text in self.base_texts(paths).items() if text is not None}

    def base_files(self, globs: Collection[str]) -> list[str]:
        pattern = globs_to_regex(list(globs))
        return [p for p in sorted(self.base) if pattern and re.match(pattern, p)]

    async def run(self, command: str) -> CommandRun:
        self.asked.append(("run", command))
        return CommandRun(*self.commands[command])

    async def run_at_base(self, command: str) -> CommandRun | None:
        self.asked.append(("run_at_base", command))
        return None if self.base_commands is None else CommandRun(*self.base_commands[command])

    async def run_tests(self, plan: TestPlan, side: TestSide) -> TestRun:
        self.asked.append(("run_tests", plan))
        self.sides.append(side)
        assert self.tests is not None, "the gatherer ran tests the fake has no run for"
        return self.tests

    async def run_tests_at_base(self, plan: TestPlan) -> tuple[TestRun, BaseRunRef] | None:
        self.asked.append(("run_tests_at_base", plan))
        return self.base_tests

    def package_json(self) -> str | None:
        return self.package


# ---------------------------------------------------------------- evidence builders

PYTEST = "pytest -q"
PLAN = PlanInfo(command=PYTEST, source="the task's test command", steps=["pytest -q  [pytest]"])
REF = BaseRunRef(key="k-123", base="0123456789abcdef0123", ran_at=1700000000.0, cached=True)
ADD, MEAN, NET = "tests/test_calc.py::test_add", "tests/test_calc.py::test_mean", "tests/test_net.py::test_fetch"


def case(test_id: str, outcome: str = "passed", message: str = "", file: str | None = None) -> TestCase:
    """A test; its file is a pytest id's part before `::` unless given."""
    if file is None:
        file = test_id.split("::")[0] if "::" in test_id else ""
    return TestCase.model_validate({"id": test_id, "outcome": outcome, "file": file, "message": message})


def step(*cases: TestCase, runner: str = "pytest", command: str = PYTEST, exit_code: int | None = None,
         complete: bool = True, problem: str = "", output: str = "") -> StepRun:
    """A runner's step; its exit code is 1 when a test broke, else 0, unless given."""
    if exit_code is None:
        exit_code = 1 if any(c.outcome in ("failed", "error") for c in cases) else 0
    report = RunnerReport(runner=runner, command=command, exit_code=exit_code, complete=complete, problem=problem,
                          config="rootdir: /work" if runner == "pytest" else "", tests=list(cases))
    return StepRun(command=command, exit_code=exit_code, output=output, report=report)


def plain(command: str, exit_code: int = 0, output: str = "") -> StepRun:
    """A step no runner reads: judged by its exit code."""
    return StepRun(command=command, exit_code=exit_code, output=output)


def run(*cases: TestCase, hidden: Sequence[str] = ()) -> TestRun:
    return TestRun(steps=[step(*cases)], hidden=list(hidden))


def evidence(work: TestRun, base: TestRun | None = None, plan: PlanInfo = PLAN) -> TestsEvidence:
    return TestsEvidence(plan=plan, work=work, base=base, base_run=REF if base is not None else None)


def verdict(work: TestRun, base: TestRun | None = None, plan: PlanInfo = PLAN, **params: object):
    given = {"command": PYTEST, "min-count": 1}
    given.update({k.replace("_", "-"): v for k, v in params.items()})
    return judge(given, evidence(work, base, plan))


# ---------------------------------------------------------------- green


def test_every_base_test_passing_with_fixed_and_new_ones_passes_and_the_summary_counts_them():
    base = run(case(ADD), case("tests/test_calc.py::test_sub"), case(MEAN, "failed"),
               case("tests/test_calc.py::test_io", "skipped"))
    work = run(case(ADD), case("tests/test_calc.py::test_sub"), case(MEAN), case("tests/test_calc.py::test_io", "skipped"),
               case("tests/test_calc.py::test_mean_empty"), case("tests/test_stats.py::test_median"))
    result = verdict(work, base)
    assert result.status == "passed", result.feedback
    assert "5 test(s) passed (1 required)" in result.feedback
    assert "1 the base failed now pass" in result.feedback and "2 new" in result.feedback
    assert result.evidence == {"passed": 5, "base-tests": 4, "runners": ["pytest"]}
    summary = result.tests
    assert summary is not None and summary.mode == "per-test"
    assert (summary.passed, summary.base_tests, summary.still_pass, summary.fixed, summary.new) == (5, 4, 2, [MEAN], 2)
    assert summary.removed == [] and summary.failing_as_at_base == [] and summary.hidden == 0
    assert summary.runners == ["pytest"] and summary.config == ["pytest: rootdir: /work"]
    assert (summary.base, summary.base_run, summary.base_cached) == (REF.base, "k-123", True)


def test_a_test_the_base_skipped_may_stay_skipped():
    result = verdict(run(case(ADD), case(MEAN, "skipped")), run(case(ADD), case(MEAN, "skipped")))
    assert result.status == "passed", result.feedback


def test_without_a_base_run_every_test_is_new():
    result = verdict(run(case(ADD), case(MEAN)))
    assert result.status == "passed", result.feedback
    assert "the base ran no test" in result.feedback
    assert result.tests is not None and result.tests.new == 2 and result.tests.base == ""


# ---------------------------------------------------------------- the base's tests must stay


@pytest.mark.parametrize("work_ids", [
    [ADD],  # deleted or deselected
    [ADD, "tests/test_calc.py::test_mean_renamed"],  # renamed
])
def test_a_base_test_that_no_longer_runs_is_rejected_naming_it(work_ids):
    result = verdict(run(*(case(i) for i in work_ids)), run(case(ADD), case(MEAN)), min_count=0)
    assert result.status == "rejected"
    assert "1 test(s) the base ran no longer run" in result.feedback
    assert f"`{MEAN}`" in result.feedback and f"`{ADD}`" not in result.feedback


def test_passing_more_tests_does_not_make_up_for_a_gone_one():
    work = run(case(ADD), *(case(f"tests/test_new.py::test_{n}") for n in range(10)))
    result = verdict(work, run(case(ADD), case(MEAN, "failed")), min_count=5)
    assert result.status == "rejected" and f"`{MEAN}`" in result.feedback


@pytest.mark.parametrize("outcome", ["skipped", "xfailed"])
@pytest.mark.parametrize("at_base", ["passed", "failed"])
def test_a_base_test_now_skipped_or_xfailed_is_rejected(outcome, at_base):
    result = verdict(run(case(ADD), case(MEAN, outcome)), run(case(ADD), case(MEAN, at_base)))
    assert result.status == "rejected"
    assert "now skipped or expected to fail" in result.feedback and f"`{MEAN}`" in result.feedback


def test_a_failing_test_is_rejected_quoting_its_message():
    failed = case(MEAN, "failed", message="def test_mean():\n>       assert mean([1, 2]) == 1.5\nE       assert 3 == 1.5")
    errored = case(NET, "error", message="fixture 'server' not found")
    result = verdict(run(case(ADD), failed, errored), run(case(ADD), case(MEAN), case(NET)))
    assert result.status == "rejected"
    assert "2 test(s) fail" in result.feedback
    assert f"`{MEAN}` (failed)" in result.feedback and "    E       assert 3 == 1.5" in result.feedback
    assert f"`{NET}` (error)" in result.feedback and "fixture 'server' not found" in result.feedback
    assert f"`{ADD}`" not in result.feedback
    assert result.feedback.startswith("The tests are not green. Fix the code, not the tests, and run `pytest -q` again")


def test_a_new_test_that_fails_is_rejected():
    result = verdict(run(case(ADD), case("tests/test_new.py::test_x", "failed")), run(case(ADD)))
    assert result.status == "rejected" and "`tests/test_new.py::test_x` (failed)" in result.feedback


def test_a_long_failure_list_is_bounded():
    work = run(*(case(f"tests/test_x.py::test_{n}", "failed", message="assert False\n" * 20) for n in range(300)))
    result = verdict(work)
    assert result.status == "rejected"
    assert "300 test(s) fail" in result.feedback and "and 280 more" in result.feedback
    assert len(result.feedback.splitlines()) < 120


# ---------------------------------------------------------------- baseline and hidden tests


def test_a_test_failing_at_the_base_too_is_rejected_without_baseline():
    result = verdict(run(case(ADD), case(NET, "failed")), run(case(ADD), case(NET, "failed")))
    assert result.status == "rejected" and f"`{NET}` (failed)" in result.feedback


def test_with_baseline_a_test_failing_at_the_base_too_is_let_through_and_recorded():
    result = verdict(run(case(ADD), case(NET, "failed"), case(MEAN)), run(case(ADD), case(NET, "failed"), case(MEAN, "failed")),
                     baseline=True)
    assert result.status == "passed", result.feedback
    assert f"1 fail as they do at the base ({NET})" in result.feedback
    assert result.tests is not None and result.tests.failing_as_at_base == [NET] and result.tests.fixed == [MEAN]


def test_with_baseline_a_test_that_passed_at_the_base_and_fails_now_is_rejected():
    result = verdict(run(case(ADD), case(NET, "failed")), run(case(ADD), case(NET)), baseline=True)
    assert result.status == "rejected" and f"`{NET}` (failed)" in result.feedback


def test_with_baseline_a_hidden_test_failing_at_the_base_too_is_never_excused():
    hidden = "tests/test_hidden.py::test_goal"
    result = verdict(run(case(ADD), case(hidden, "failed"), hidden=[hidden]),
                     run(case(ADD), case(hidden, "failed"), hidden=[hidden]), baseline=True, hidden_tests="<set>")
    assert result.status == "rejected"
    assert "a hidden test (failed)" in result.feedback and hidden not in result.feedback  # the oracle is not told


def test_the_baseline_parameter_must_be_a_boolean():
    result = evaluate("tests-green", {"command": PYTEST, "min-count": 1, "baseline": "yes"}, evidence(run(case(ADD))))
    assert result.status == "error" and "`baseline` must be a boolean" in result.feedback


def test_hidden_tests_that_run_and_pass_are_counted():
    hidden = "tests/test_hidden.py::test_goal"
    result = verdict(run(case(ADD), case(hidden), hidden=[hidden]), run(case(ADD), case(hidden, "failed"), hidden=[hidden]),
                     hidden_tests="<set>")
    assert result.status == "passed", result.feedback
    assert "1 hidden test(s) pass" in result.feedback
    assert result.tests is not None and result.tests.hidden == 1


def test_hidden_tests_that_did_not_run_are_rejected():
    result = verdict(run(case(ADD)), run(case(ADD)), hidden_tests="<set>")
    assert result.status == "rejected"
    assert "the task's hidden tests did not run" in result.feedback


def test_a_hidden_test_that_is_skipped_is_rejected():
    goal, other = "tests/test_hidden.py::test_goal", "tests/test_hidden.py::test_other"
    work = run(case(ADD), case(goal, "skipped"), case(other), hidden=[goal, other])
    result = verdict(work, run(case(ADD), case(goal, "skipped"), case(other, "failed"), hidden=[goal, other]),
                     hidden_tests="<set>")
    assert result.status == "rejected"
    assert f"`{goal}`" in result.feedback


# ---------------------------------------------------------------- tests the task names


def test_base_tests_the_task_names_as_removed_may_go():
    base = run(case(ADD), case("tests/test_legacy.py::test_old_api"), case("tests/test_legacy.py::test_old_cli"))
    result = verdict(run(case(ADD)), base, tests_removed=["tests/test_legacy.py::*"])
    assert result.status == "passed", result.feedback
    assert result.tests is not None
    assert result.tests.removed == ["tests/test_legacy.py::test_old_api", "tests/test_legacy.py::test_old_cli"]


def test_the_removed_patterns_let_only_the_named_tests_go():
    base = run(case(ADD), case("tests/test_legacy.py::test_old_api"), case(MEAN))
    result = verdict(run(case(ADD)), base, tests_removed=["tests/test_legacy.py::*"])
    assert result.status == "rejected"
    assert f"`{MEAN}`" in result.feedback and "test_old_api" not in result.feedback


# ---------------------------------------------------------------- collection errors


@pytest.mark.parametrize("broken,file,fixed", [
    ("tests/test_new.py", "tests/test_new.py", "tests/test_new.py::test_parse"),  # pytest: the file could not be imported
    ("example.com/app/store::(package)", "", "example.com/app/store::TestSave"),  # go: the package did not build
    ("unittest.loader._FailedTest.tests.test_mod", "", "tests.test_mod.ModTest.test_x"),  # unittest: the module
])
def test_a_collection_error_at_the_base_fixed_in_the_work_is_not_a_gone_test(broken, file, fixed):
    base = run(case(ADD), case(broken, "error", file=file))
    result = verdict(run(case(ADD), case(fixed, file=file)), base)
    assert result.status == "passed", result.feedback
    assert result.tests is not None and result.tests.new == 1


def test_a_collection_error_whose_file_has_no_test_in_the_work_is_gone():
    base = run(case(ADD), case("tests/test_new.py", "error", file="tests/test_new.py"))
    result = verdict(run(case(ADD)), base)
    assert result.status == "rejected" and "`tests/test_new.py`" in result.feedback


def test_a_failing_test_of_the_base_that_disappears_is_gone_not_fixed():
    base = run(case(ADD), case(MEAN, "failed"))
    result = verdict(run(case(ADD), case("tests/test_calc.py::test_other")), base)
    assert result.status == "rejected"
    assert "no longer run" in result.feedback and f"`{MEAN}`" in result.feedback


# ---------------------------------------------------------------- runs that did not end


def test_a_report_that_never_reached_its_end_is_rejected():
    work = TestRun(steps=[step(case(ADD), complete=False, output="2 passed in 0.01s")])
    result = verdict(work, run(case(ADD)))
    assert result.status == "rejected"
    assert result.feedback.startswith("The tests did not run to their end")
    assert "never reported its end" in result.feedback and "2 passed in 0.01s" in result.feedback
    assert result.tests is None


def test_a_report_with_a_problem_is_rejected_with_it():
    work = TestRun(steps=[step(problem="the report is not valid JSON", exit_code=0, output="boom")])
    result = verdict(work, run(case(ADD)))
    assert result.status == "rejected"
    assert "did not run to their end" in result.feedback and "the report is not valid JSON" in result.feedback


def test_a_plain_step_that_fails_is_rejected_with_its_output():
    work = TestRun(steps=[plain("tsd", 2, "index.test-d.ts:3:1 error"), step(case(ADD), runner="jest", command="jest")])
    result = verdict(work, plan=PlanInfo(command="npm test", source="x", steps=["tsd", "jest  [jest]"]), command="npm test")
    assert result.status == "rejected"
    assert "`tsd` exited with code 2" in result.feedback and "index.test-d.ts:3:1 error" in result.feedback


def test_a_plain_step_that_exits_zero_is_fine():
    work = TestRun(steps=[plain("tsd"), step(case(ADD), runner="jest", command="jest")])
    result = verdict(work, plan=PlanInfo(command="npm test", source="x", steps=["tsd", "jest  [jest]"]), command="npm test")
    assert result.status == "passed", result.feedback


def test_a_runner_that_exits_nonzero_with_no_failing_test_is_rejected():
    output = "10 passed in 0.4s\nERROR: Coverage failure: total of 91 is less than fail-under=100\n"
    work = TestRun(steps=[step(case(ADD), case(MEAN), exit_code=1, output=output)])
    result = verdict(work, run(case(ADD), case(MEAN)))
    assert result.status == "rejected"
    assert "exited with code 1 though no test failed" in result.feedback
    assert "Coverage failure" in result.feedback


def test_a_plain_step_that_fails_as_at_the_base_is_let_through_with_baseline_and_the_runner_after_it_judged():
    """Every step runs, whatever the one before did: a lint step failing as it does at the base does not hide
    the tests after it, and with baseline it is the repository's failure, not the change's."""
    lint = plain("eslint .", 1, "x.js:3 no-unused-vars")
    work = TestRun(steps=[lint, *run(case(ADD), case(MEAN)).steps])
    base = TestRun(steps=[lint, *run(case(ADD), case(MEAN, "failed")).steps])
    assert verdict(work, base, command="npm test", baseline=True).status == "passed"
    rejected = verdict(work, base, command="npm test")
    assert rejected.status == "rejected" and "`eslint .` exited with code 1" in rejected.feedback


# ---------------------------------------------------------------- min-count


def test_too_few_passing_tests_are_rejected_with_both_numbers():
    result = verdict(run(case(ADD), case(MEAN)), run(case(ADD), case(MEAN)), min_count=3)
    assert result.status == "rejected"
    assert "only 2 test(s) passed, but at least 3 must run and pass" in result.feedback


def test_a_shortfall_the_base_has_in_a_fresh_worktree_is_the_world_s_not_the_change_s():
    """The count was taken in a checkout where every test passes; in a fresh worktree two of the base's own tests
    fail (a file git ignores is missing): the work keeps every test the base passes, and the verdict says the
    shortfall is the world's (an error, which no retry of the agent mends), never the change's."""
    base = run(case(ADD), case(MEAN), case("tests/test_i18n.py::test_fr", "error"), case("tests/test_i18n.py::test_de", "error"))
    work_tests = [case(ADD), case(MEAN), case("tests/test_i18n.py::test_fr", "error"),
                  case("tests/test_i18n.py::test_de", "error")]
    result = verdict(run(*work_tests), base, min_count=4, baseline=True)
    assert result.status == "error", result.feedback
    assert "the base itself passes only 2 of them in a fresh worktree, so the shortfall is not the change's" in result.feedback
    assert "`runtime init --probe` names them" in result.feedback
    # Without baseline the failing tests stay a problem, said with where they fail too.
    strict = verdict(run(*work_tests), base, min_count=4)
    assert strict.status == "rejected"
    assert "2 of the failing tests fail at the base too, in a fresh worktree" in strict.feedback
    # A count above the base's own tests asks for new ones: the change's, whatever fails at the base.
    more = verdict(run(case(ADD), case(MEAN)), run(case(ADD), case(MEAN)), min_count=3)
    assert more.status == "rejected" and "not the change's" not in more.feedback
    above = verdict(run(*work_tests), base, min_count=10, baseline=True)
    assert above.status == "rejected" and "not the change's" not in above.feedback
    # A file whose tests did not collect at all (how many, unknown): the world's too.
    uncollected = run(case(ADD), case("tests/test_i18n.py", "error", file="tests/test_i18n.py"))
    world = verdict(uncollected, uncollected, min_count=30, baseline=True)
    assert world.status == "error" and "not the change's" in world.feedback
    # A change that loses a test the base passes is the change's, whatever the world.
    lost = verdict(run(case(ADD), case(MEAN, "failed"), *work_tests[2:]), base, min_count=4, baseline=True)
    assert lost.status == "rejected" and "1 test(s) fail" in lost.feedback


def test_new_tests_that_are_skipped_do_not_count_toward_the_minimum():
    work = run(case(ADD), *(case(f"tests/test_new.py::test_{n}", "skipped") for n in range(5)))
    result = verdict(work, run(case(ADD)), min_count=2)
    assert result.status == "rejected" and "only 1 test(s) passed" in result.feedback


def test_zero_required_and_zero_ran_passes():
    assert verdict(TestRun(steps=[step()]), min_count=0).status == "passed"


# ---------------------------------------------------------------- plans and modes


def test_an_opaque_plan_in_the_per_test_mode_is_an_error():
    plan = PlanInfo(command="make test", source="x", steps=["make test"], opaque="no test runner the runtime can read was found")
    result = verdict(TestRun(steps=[]), plan=plan, command="make test")
    assert result.status == "error"
    assert "per-test results cannot be read from `make test`" in result.feedback
    assert "no test runner the runtime can read was found" in result.feedback
    assert 'test-results = "exit-code"' in result.feedback


def exit_evidence(code: int, output: str = "", base: tuple[int, str] | None = None) -> TestsEvidence:
    plan = PlanInfo(command="make test", source="the task's test command", steps=["make test"], opaque="no runner")
    return TestsEvidence(plan=plan, work=TestRun(steps=[plain("make test", code, output)]),
                         base_exit=None if base is None else BaseRun(exit_code=base[0], output=base[1]))


def exit_verdict(code: int, output: str = "", base: tuple[int, str] | None = None, baseline: bool = False):
    params = {"command": "make test", "min-count": 1, "results": "exit-code", "baseline": baseline}
    return judge(params, exit_evidence(code, output, base))


def test_exit_code_mode_passes_a_zero_exit_saying_it_counted_no_test():
    result = exit_verdict(0, "ok")
    assert result.status == "passed"
    assert "exit code only" in result.feedback
    assert result.tests is not None and result.tests.mode == "exit-code" and result.tests.steps == ["make test"]
    assert result.tests.trailer() == "`make test` exit code 0 only (no per-test results)"


def test_exit_code_mode_rejects_a_nonzero_exit_quoting_the_end_of_the_output():
    output = "\n".join(f"line {n}" for n in range(100)) + "\nmake: *** [test] Error 2"
    result = exit_verdict(2, output)
    assert result.status == "rejected"
    assert "`make test` exited with code 2" in result.feedback and "make: *** [test] Error 2" in result.feedback
    assert "line 0\n" not in result.feedback


def test_exit_code_mode_with_baseline_passes_a_failure_exactly_as_at_the_base():
    result = exit_verdict(2, "FAIL net\n", (2, "FAIL net\n"), baseline=True)
    assert result.status == "passed"
    assert "fails only as it does at the base (exit code 2)" in result.feedback


def test_exit_code_mode_with_baseline_rejects_a_failure_the_base_does_not_have():
    assert exit_verdict(2, "FAIL net\nFAIL calc\n", (2, "FAIL net\n"), baseline=True).status == "rejected"
    assert exit_verdict(1, "FAIL net\n", (2, "FAIL net\n"), baseline=True).status == "rejected"


def test_exit_code_mode_without_baseline_never_excuses_the_base_s_failure():
    assert exit_verdict(2, "FAIL net\n", (2, "FAIL net\n"), baseline=False).status == "rejected"


def test_malformed_parameters_are_an_error_naming_the_key():
    assert "`command`" in evaluate("tests-green", {"min-count": 1}, evidence(run(case(ADD)))).feedback
    result = evaluate("tests-green", {"command": PYTEST, "min-count": "1"}, evidence(run(case(ADD))))
    assert result.status == "error" and "`min-count` must be an integer" in result.feedback


def test_plain_data_evidence_is_validated_into_the_model():
    data = {"plan": {"command": PYTEST, "source": "s", "steps": []},
            "work": {"steps": [{"command": PYTEST, "exit-code": 0, "output": "", "report": {
                "runner": "pytest", "command": PYTEST, "exit-code": 0, "complete": True,
                "tests": [{"id": ADD, "outcome": "passed"}]}}]}}
    assert evaluate("tests-green", {"command": PYTEST, "min-count": 1}, data).status == "passed"
    data["work"]["steps"][0]["report"]["tests"][0]["outcome"] = "flaky"
    result = evaluate("tests-green", {"command": PYTEST, "min-count": 1}, data)
    assert result.status == "error" and "the evidence is malformed" in result.feedback


# ---------------------------------------------------------------- gather


def test_gather_runs_the_plan_read_through_the_base_s_package_json_on_the_work_and_the_base():
    work, base = run(case(ADD)), run(case(ADD), case(MEAN, "failed"))
    package = json.dumps({"scripts": {"test": "jest --ci", "build": "tsc"}})
    fake = FakeGathering(tests=work, base_tests=(base, REF), package=package)
    gathered = anyio.run(tests_green.gather, TestsGreenParams.read({"command": "npm test", "min-count": 1}), fake)
    assert [what for what, _ in fake.asked] == ["run_tests_at_base", "run_tests"]  # the base first: the checks copy it
    plans = [plan for _, plan in fake.asked]
    assert all(isinstance(p, TestPlan) and p.command == "npm test" and p.runners == ["jest"] for p in plans)
    assert plans[0] == plans[1]
    assert gathered == TestsEvidence(plan=PlanInfo(command="npm test", source=plans[0].source, steps=["jest --ci  [jest]"]),
                                     work=work, base=base, base_run=REF, checks=gathered.checks)
    assert gathered.checks.files == {} and gathered.checks.none  # no check laid, and why
    assert [side.name for side in fake.sides] == ["base-tests"]
    assert "package.json" in gathered.plan.source


def test_gather_without_a_base_run_gives_the_work_s_run_alone():
    fake = FakeGathering(tests=run(case(ADD)))
    gathered = anyio.run(tests_green.gather, TestsGreenParams.read({"command": PYTEST, "min-count": 1}), fake)
    assert gathered.base is None and gathered.base_run is None and gathered.work == run(case(ADD))
    assert gathered.plan.steps == ["pytest -q  [pytest]"]


def test_gather_of_an_opaque_plan_in_the_per_test_mode_runs_nothing():
    fake = FakeGathering()
    gathered = anyio.run(tests_green.gather, TestsGreenParams.read({"command": "make test", "min-count": 1}), fake)
    assert fake.asked == [] and gathered.plan.opaque and gathered.work == TestRun(steps=[])


def test_gather_in_the_exit_code_mode_runs_the_command_and_with_baseline_the_base_where_it_failed():
    params = {"command": "make test", "min-count": 1, "results": "exit-code", "baseline": True}
    fake = FakeGathering(commands={"make test": (2, "FAIL net")}, base_commands={"make test": (2, "FAIL net")})
    gathered = anyio.run(tests_green.gather, TestsGreenParams.read(params), fake)
    assert fake.asked == [("run", "make test"), ("run_at_base", "make test")]
    assert gathered.work.exit_code == 2 and gathered.work.output == "FAIL net"
    assert gathered.base_exit == BaseRun(exit_code=2, output="FAIL net") and gathered.base is None
    assert judge(params, gathered).status == "passed"


@pytest.mark.parametrize("code,baseline", [(0, True), (2, False)])
def test_gather_in_the_exit_code_mode_asks_the_base_only_for_a_failure_with_baseline(code, baseline):
    params = {"command": "make test", "min-count": 1, "results": "exit-code", "baseline": baseline}
    fake = FakeGathering(commands={"make test": (code, "")}, base_commands={"make test": (code, "")})
    gathered = anyio.run(tests_green.gather, TestsGreenParams.read(params), fake)
    assert fake.asked == [("run", "make test")] and gathered.base_exit is None


def test_the_kind_runs_commands_and_keeps_the_hidden_tests_private():
    kind = tests_green.KIND
    assert kind.runs_commands and kind.private == frozenset({"hidden-tests"})
    assert kind.optional == frozenset({"baseline", "results", "tests-removed", "hidden-tests", "test-edits", "test-globs"})


# ---------------------------------------------------------------- the base's tests apart, tamper checks

def _checked(work: TestRun, base: TestRun, checks: list[TamperCheck], files: dict[str, str], *,
             first: TestRun | None = None, new: TestRun | None = None, **params: object):
    given = {"command": PYTEST, "min-count": 1}
    given.update({k.replace("_", "-"): v for k, v in params.items()})
    ev = TestsEvidence(plan=PLAN, work=work, base=base, base_run=REF, new=new,
                       checks=Laid(files=files, checks=checks), first=first, first_checks=checks if first else [])
    return judge(given, ev)


CHECK_FILE = "tests/test_calc_abcdefgh.py"
CHECKS = [TamperCheck(id=f"{CHECK_FILE}::test_x", expect="fails", file=CHECK_FILE),
          TamperCheck(id=f"{CHECK_FILE}::test_y", expect="passes", file=CHECK_FILE),
          TamperCheck(id=f"{CHECK_FILE}::test_mean", expect="as", of=MEAN, file=CHECK_FILE),
          TamperCheck(id=f"{CHECK_FILE}::test_z", expect="opposite", of=MEAN, file=CHECK_FILE)]


def _with_checks(mean: str, fail: str = "xfailed", copy: str | None = None, negation: str | None = None) -> TestRun:
    """An honest run's checks: the one that must fail xfailed, the negation xfailed where the test passes."""
    return run(case(ADD), case(MEAN, mean), case(f"{CHECK_FILE}::test_x", fail), case(f"{CHECK_FILE}::test_y"),
               case(f"{CHECK_FILE}::test_mean", copy or mean),
               case(f"{CHECK_FILE}::test_z", negation or ("xfailed" if mean == "passed" else "failed")))


def test_checks_that_hold_pass_and_are_counted_apart_from_the_tests():
    result = _checked(_with_checks("passed"), run(case(ADD), case(MEAN, "failed")), CHECKS, {CHECK_FILE: ""})
    assert result.status == "passed", result.feedback
    assert "4 tamper check(s) held" in result.feedback and result.tests is not None
    assert result.tests.passed == 2 and result.tests.tamper_checks == 4 and result.tests.new == 0  # checks are no tests


def test_a_failing_test_that_must_fail_reported_passed_is_tampering_even_after_a_second_run():
    forged = _with_checks("passed", fail="passed", negation="passed")
    result = _checked(forged, run(case(ADD), case(MEAN, "failed")), CHECKS, {CHECK_FILE: ""}, first=forged)
    assert result.status == "rejected" and result.tampering
    assert "This is tampering" in result.feedback
    assert "a test that must fail was reported passed" in result.tampering
    assert any("its negation passed" in t for t in result.tampering)


def test_a_first_run_s_disagreement_a_second_run_does_not_repeat_is_no_tampering():
    flaky = _with_checks("passed", fail="passed")
    result = _checked(_with_checks("passed"), run(case(ADD), case(MEAN, "failed")), CHECKS, {CHECK_FILE: ""}, first=flaky)
    assert result.status == "passed" and not result.tampering and result.tests is not None and result.tests.rerun


def test_a_copy_failing_where_its_original_passes_is_a_failing_test_not_tampering():
    result = _checked(_with_checks("passed", copy="failed"), run(case(ADD), case(MEAN, "failed")), CHECKS, {CHECK_FILE: ""})
    assert result.status == "rejected" and not result.tampering
    assert "fail when the same test runs again" in result.feedback and MEAN in result.feedback


def test_a_report_the_orchestrator_cannot_take_as_its_runner_s_is_tampering():
    ran = step(case(ADD), case(MEAN))
    assert ran.report is not None
    work = TestRun(steps=[ran.model_copy(update={"report": ran.report.model_copy(
        update={"tampered": "records follow the report's end"})})])
    result = _checked(work, run(case(ADD), case(MEAN, "failed")), [], {})
    assert result.status == "rejected" and result.tampering == ["pytest: records follow the report's end"]


def test_a_sealed_file_asked_for_twice_is_tampering():
    work = TestRun(steps=[step(case(ADD), case(MEAN)).model_copy(update={"sealed": {"tests/test_hidden.py": 2}})])
    result = _checked(work, run(case(ADD), case(MEAN, "failed")), [], {})
    assert result.tampering and "asked for 2 times" in result.tampering[0]


def test_the_new_tests_are_judged_in_their_own_run_and_counted():
    new = run(case(ADD), case("tests/test_more.py::test_two"), case("tests/test_more.py::test_three", "failed"))
    result = _checked(run(case(ADD), case(MEAN)), run(case(ADD), case(MEAN, "failed")), [], {}, new=new)
    assert result.status == "rejected" and "tests/test_more.py::test_three" in result.feedback
    good = run(case(ADD), case("tests/test_more.py::test_two"))
    result = _checked(run(case(ADD), case(MEAN)), run(case(ADD), case(MEAN, "failed")), [], {}, new=good)
    assert result.status == "passed" and result.tests is not None and result.tests.new == 1 and result.tests.passed == 3


def test_a_run_of_new_tests_that_collects_none_is_no_failure():
    empty = TestRun(steps=[step(exit_code=5)])
    result = _checked(run(case(ADD), case(MEAN)), run(case(ADD), case(MEAN, "failed")), [], {}, new=empty)
    assert result.status == "passed", result.feedback


def test_a_doctest_of_the_base_the_work_changed_is_rejected():
    finding = Finding(path="src/calc.py", what="a doctest of the base in `mean` was changed or removed",
                      text=">>> mean([2.0]) -> 2.0")
    ev = TestsEvidence(plan=PLAN, work=run(case(ADD), case(MEAN)), base=run(case(ADD), case(MEAN, "failed")),
                       base_run=REF, doctests=[finding])
    result = judge({"command": PYTEST, "min-count": 1}, ev)
    assert result.status == "rejected" and "doctests of the base were changed" in result.feedback


def test_gather_lays_the_base_s_test_side_and_runs_the_new_tests_apart():
    base_files = {"tests/test_calc.py": "def test_add():\n    assert 1\n", "src/calc.py": "x = 1\n"}
    work_files = {**base_files, "tests/test_calc.py": "def test_add():\n    assert 1 == 1\n",
                  "tests/test_new.py": "def test_new():\n    pass\n", "src/calc.py": "x = 2\n"}
    fake = FakeGathering(base=base_files, work=work_files, tests=run(case(ADD)), base_tests=(run(case(ADD)), REF))
    gathered = anyio.run(tests_green.gather, TestsGreenParams.read({"command": "pytest -q tests", "min-count": 1}), fake)
    first, second = fake.sides
    assert first.name == "base-tests" and dict(first.files) == {"tests/test_calc.py": base_files["tests/test_calc.py"].encode(),
                                                              "tests/test_new.py": None}
    assert first.checks and "tests/test_calc.py" in first.locked
    assert second.name == "new-tests" and gathered.new is not None


def test_a_step_naming_only_the_work_s_new_test_file_is_judged_in_the_run_of_the_new_tests():
    """`pytest tests/test_new.py`: the base has no such file (its run collects nothing), and neither has the run of
    the base's tests, which set the work's new files aside: nothing is broken there; the new tests are judged
    in their own run."""
    missing = TestRun(steps=[step(exit_code=4, output="ERROR: file or directory not found: tests/test_new.py")])
    new = run(case("tests/test_new.py::test_two"))
    result = _checked(missing, missing, [], {}, new=new)
    assert result.status == "passed", result.feedback
    assert result.tests is not None and result.tests.passed == 1 and result.tests.new == 1
