"""tests-green: the task's tests pass, judged test by test against the base's run of the same tests.

The orchestrator starts the runner itself (``runtime.verify.kinds.runners``): the task's command (or the base's
package.json script it names) is read into steps, each known runner started with the options that make it
write its structured report outside anything the work can write. The output's text is never evidence:
what counts is each test's identity and outcome, read from the report, compared with the base's run of the
same plan (cached per base commit). Judged, in order:

- each runner must have finished and written a report that reads (a run the code under test ended early,
  `os._exit` after a fake summary, a crash, is rejected with its output);
- a step without a runner (`tsd` in an npm test script) must exit 0;
- every test the base ran must still run and pass, not fail, be skipped or xfailed, deselected, renamed or
  gone, unless the task names it (``tests-removed``: id patterns); a test the base skipped may stay
  skipped;
- every test that fails now fails the work; with ``baseline`` (`[verification] baseline = true`) a test
  that fails at the base too is the repository's, not the change's, and is let through (never a hidden
  test, which is the oracle);
- hidden tests (``hidden-tests``, laid over the tree for verify alone) must all run and pass;
- at least ``min-count`` tests pass; new tests count in addition to the base's, never instead.

A command no known runner reads is judged by its exit code alone only where the task says so
(``results = "exit-code"``): a preflight refuses any other task before its agent runs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Literal

from runtime.verify.kinds.base import MAX_LISTED, MAX_QUOTED_LINES, compile_globs, quoted, tail, take_int, take_str, take_str_list
from runtime.verify.kinds.baseline import BaseRun, as_at_base, wanted
from runtime.verify.kinds.canaries import Laid, TamperCheck, plan_checks, violations
from runtime.verify.kinds.doctests import doctest_findings
from runtime.verify.kinds.findings import TEST_GLOBS, Finding, where
from runtime.verify.kinds.kind import BaseRunRef, Evidence, Gathering, Kind, TestSide
from runtime.verify.kinds.result import VerifyResult, error, passed, rejected
from runtime.verify.kinds.runners.plan import TestPlan, plan_tests
from runtime.verify.kinds.runners.results import BROKEN, GREEN, NOT_RUN, TestCase, TestRun
from runtime.verify.kinds.summary import TestsSummary
from runtime.verify.kinds.test_side import LOCKED_GLOBS, MODULE_GLOBS, base_side, new_side

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONDict, JSONObject

TAIL_LINES = 25
PER_TEST_LINES = 12
EXIT_CODE: Literal["exit-code"] = "exit-code"
PER_TEST: Literal["per-test"] = "per-test"


@dataclass(frozen=True, slots=True)
class TestsGreenParams:
    """tests-green: the task's test command and the fewest tests that must pass; how its results are read
    (`results`: per test, unless the task says `exit-code`); whether a failure the base shares is let through
    (``baseline``); the ids of the base's tests the task lets go (``tests-removed``); whether the task has
    hidden tests (the compiled policy says only that, never which); the base's test files the task lets change
    (``test-edits``) and where the tests are (``test-globs``, the ecosystems' conventions when it does not say)."""

    __test__ = False
    command: str
    min_count: int
    results: Literal["per-test", "exit-code"] = "per-test"
    baseline: bool = False
    tests_removed: tuple[str, ...] = ()
    hidden_tests: bool = False
    test_edits: tuple[str, ...] = ()
    test_globs: tuple[str, ...] = TEST_GLOBS

    @classmethod
    def read(cls, data: JSONObject) -> TestsGreenParams:
        command = take_str(data, "command", "parameter")
        min_count = take_int(data, "min-count", "parameter")
        return cls(command, min_count,
                   # an unknown mode is read as the default, the stricter one
                   EXIT_CODE if data.get("results", PER_TEST) == EXIT_CODE else PER_TEST,
                   wanted(data),
                   tuple(take_str_list(data, "tests-removed", "parameter")) if "tests-removed" in data else (),
                   data.get("hidden-tests", "") not in ("", None),
                   # an empty or absent value: none may change
                   tuple(take_str_list(data, "test-edits", "parameter")) if data.get("test-edits") else (),
                   tuple(take_str_list(data, "test-globs", "parameter")) if "test-globs" in data else TEST_GLOBS)


class PlanInfo(Evidence):
    """The plan as the orchestrator read it: the task's command, where its steps come from, the steps, and
    why it could not be read, if it could not."""

    command: str
    source: str
    steps: list[str]
    opaque: str = ""


class TestsEvidence(Evidence):
    """tests-green: the plan; ``work``, its run of the base's tests on the base's test side (with the hidden
    tests and the tamper ``checks`` laid into it); ``new``, its run of the work's new tests (none when the work
    added none); the base's run of it and which run that was. ``first``: an earlier run of the base's tests whose
    checks disagreed, run again once to tell a flaky test from a forged report. In the exit-code mode, ``base``
    may hold the base's run of the command alone (``base-exit``)."""

    __test__ = False
    plan: PlanInfo
    work: TestRun
    new: TestRun | None = None
    base: TestRun | None = None
    base_run: BaseRunRef | None = None
    base_exit: BaseRun | None = None
    checks: Laid = Laid()
    first: TestRun | None = None
    first_checks: list[TamperCheck] = []
    doctests: list[Finding] = []  # the base's doctests the work changed (`runtime.verify.kinds.doctests`)


def info(plan: TestPlan) -> PlanInfo:
    return PlanInfo(command=plan.command, source=plan.source, steps=[s.describe() for s in plan.steps],
                    opaque=plan.opaque)


async def gather(params: TestsGreenParams, gathering: Gathering) -> TestsEvidence:
    command = params.command
    plan = plan_tests(command, gathering.package_json())
    if params.results == EXIT_CODE:
        run = await gathering.run(command)
        work = TestRun.model_validate({"steps": [{"command": command, "exit-code": run.exit_code, "output": run.output}]})
        base_exit = None
        if run.exit_code != 0 and params.baseline and (again := await gathering.run_at_base(command)) is not None:
            base_exit = BaseRun(exit_code=again.exit_code, output=again.output)
        return TestsEvidence(plan=info(plan), work=work, base_exit=base_exit)
    if plan.opaque:
        return TestsEvidence(plan=info(plan), work=TestRun(steps=[]))
    at_base = await gathering.run_tests_at_base(plan)
    base, ref = at_base if at_base is not None else (None, None)
    test = compile_globs(params.test_globs)
    edits = compile_globs(params.test_edits)
    changes = list(gathering.changes)
    side = base_side(changes, test, edits, gathering.base_source, gathering.base_files(LOCKED_GLOBS))

    def lay() -> Laid:
        if base is None:
            return Laid(none="no run of the base to lay checks after")
        taken = {p for c in changes for p in (c.path, c.old_path) if p}
        def unfit(path: str) -> bool:  # only the base's own test files, as the run holds them, are copied
            return (edits is not None and bool(edits.match(path))) or test is None or not test.match(path)

        return plan_checks(plan, base, gathering.base_source, taken, unfit, esm=_esm(gathering.package_json()))

    extra = new_side(changes, test, edits, gathering.base_files(MODULE_GLOBS), plan)
    side = replace(side, plain=extra is None, esm=_esm(gathering.package_json()))
    laid = lay()
    work = await gathering.run_tests(plan, _with(side, laid))
    first, first_checks = None, []
    if tampering(work, laid.checks):
        # Once more with fresh checks: a flaky test fails one run, a forger forges both.
        first, first_checks, laid = work, laid.checks, lay()
        work = await gathering.run_tests(plan, _with(side, laid))
    new = await gathering.run_tests(plan, extra) if extra is not None else None
    doctests = doctest_findings(command, gathering, test, edits)
    return TestsEvidence(plan=info(plan), work=work, new=new, base=base, base_run=ref, checks=laid, first=first,
                         first_checks=first_checks, doctests=doctests)


def _with(side: TestSide, laid: Laid) -> TestSide:
    return replace(side, checks=tuple((path, text.encode()) for path, text in laid.files.items()))


def _esm(package_json: str | None) -> bool:
    try:
        data = json.loads(package_json or "{}")
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("type") == "module"


def tampering(run: TestRun, checks: list[TamperCheck]) -> list[str]:
    """Why ``run``'s report cannot be the runner's own: its records (a key or an order not the runner's, an end
    that is not the process's), its sealed files (asked for twice: read before the runner), its tamper checks."""
    out = []
    for step in run.steps:
        if step.report is not None and step.report.tampered:
            out.append(f"{step.report.runner}: {step.report.tampered}")
        for path, asked in step.sealed.items():
            if path == "?":
                out.append(f"something asked the sealed tests' server for files it does not serve ({asked} time(s))")
            elif asked > 1:
                out.append(f"the sealed test file `{path}` was asked for {asked} times: something read it before its runner")
    out += violations(checks, run)[0]
    return out


def tests_green(params: TestsGreenParams, evidence: TestsEvidence) -> VerifyResult:
    command, min_count = params.command, params.min_count
    if params.results == EXIT_CODE:
        return _by_exit_code(command, params.baseline, evidence)
    plan = evidence.plan
    if plan.opaque:
        return error(f"per-test results cannot be read from `{command}`: {plan.opaque}. Name a runner the runtime "
                     "reads (pytest, python -m unittest, go test, cargo test, node --test, jest, vitest, mocha, tape, "
                     "or an npm script that runs one), or set `[verification] test-results = \"exit-code\"`")
    removed = params.tests_removed
    hidden_expected = params.hidden_tests
    work, fresh = evidence.work, evidence.new
    forged = tampering(work, evidence.checks.checks)
    if forged:
        first = tampering(evidence.first, evidence.first_checks) if evidence.first is not None else []
        return rejected("The test run's report disagrees with what the run held, in a way no failing code produces: "
                        "something in the test process changed what the runner reported. This is tampering, and it is "
                        "recorded as such:\n" + "\n".join(f"- {why}" for why in dict.fromkeys(first + forged)),
                        {"runners": [r.runner for r in work.reports()]}, tampering=list(dict.fromkeys(first + forged)))
    broken_runs = _broken_runs(work, evidence.base, params.baseline)
    if fresh is not None:
        broken_runs += [f"{line} (the run of the new tests)"
                        for line in _broken_runs(fresh, evidence.base, params.baseline, empty_ok=True)]
    if broken_runs:
        return rejected("The tests did not run to their end, so nothing about them can be trusted:\n"
                        + "\n".join(broken_runs), {"runners": [r.runner for r in work.reports()]})
    laid = set(evidence.checks.files)
    now = {i: c for i, c in work.cases().items() if c.file not in laid}
    before = evidence.base.cases() if evidence.base is not None else {}
    added = {i: c for i, c in fresh.cases().items() if i not in before} if fresh is not None else {}
    for test_id, new_case in added.items():
        now.setdefault(test_id, new_case)
    hidden = set(work.hidden) | (set(evidence.base.hidden) if evidence.base is not None else set())
    tolerate = params.baseline
    problems: list[str] = []
    failing = [c for c in now.values() if c.outcome in BROKEN]
    excused = [c for c in failing if tolerate and c.id not in hidden and before.get(c.id) is not None
               and before[c.id].outcome in BROKEN]
    failing = [c for c in failing if c not in excused and (c.id in hidden or not _named(c.id, removed))]
    if failing:
        problems.append(_listed(f"{len(failing)} test(s) fail", failing, quote=True, hidden=hidden))
    gone: list[str] = []
    skipped_now: list[TestCase] = []
    for test_id, was in before.items():
        if _named(test_id, removed) or test_id in {c.id for c in excused}:
            continue
        case = now.get(test_id)
        if case is None:
            if not (was.outcome in BROKEN and _file_level(was) and _has_tests_of(was, now)):
                gone.append(test_id)
        elif case.outcome in NOT_RUN and was.outcome not in NOT_RUN:
            skipped_now.append(case)
    if gone:
        problems.append(_ids(f"{len(gone)} test(s) the base ran no longer run (deleted, renamed, deselected or no "
                             "longer collected); restore them: a test the task does not name is not the change's to "
                             "remove", gone))
    if skipped_now:
        problems.append(_ids(f"{len(skipped_now)} test(s) the base ran are now skipped or expected to fail; remove the "
                             "skip or xfail and make them pass", [c.id for c in skipped_now]))
    differing = [i for i in violations(evidence.checks.checks, work)[1] if i in now and now[i].outcome in GREEN]
    if differing:
        problems.append(_ids(f"{len(differing)} test(s) of the base pass, and fail when the same test runs again in "
                             "the same run: the code answers differently the second time it is asked (state kept "
                             "between calls) or knows which test calls it", differing))
    if evidence.doctests:
        problems.append("doctests of the base were changed (a doctest is a test: its expectation is not the change's "
                        "to edit):\n" + "\n".join(f"  - `{where(f)}`: {f.what} (`{f.text}`)" for f in evidence.doctests[:MAX_LISTED]))
    hidden_now = [now[i] for i in sorted(hidden) if i in now]
    if hidden_expected and not hidden_now:
        problems.append("the task's hidden tests did not run: the work must keep the tree so that the test command "
                        "collects tests added where the repository keeps its tests")
    hidden_not_run = [c for c in hidden_now if c.outcome in NOT_RUN]
    if hidden_not_run:  # the oracle is never excused: skipped is not passed
        problems.append(_ids(f"{len(hidden_not_run)} hidden test(s) did not run (skipped)", [c.id for c in hidden_not_run]))
    green = [c for c in now.values() if c.outcome in GREEN]
    short = world = None
    if len(green) < min_count:
        short = f"only {len(green)} test(s) passed, but at least {min_count} must run and pass"
        problems.append(short)
        base_green = sum(1 for c in before.values() if c.outcome in GREEN)
        broken = [c for c in before.values() if c.outcome in BROKEN]
        uncounted = any(_file_level(c) for c in broken)  # a file whose tests did not collect: how many, unknown
        if broken and base_green < min_count and len(green) >= base_green and (
                uncounted or min_count <= base_green + len(broken)):
            # Tests of the base fail (or do not collect) in a fresh worktree, so it passes fewer than the count,
            # while the change keeps every test the base passes: the missing ones are the world's (files the
            # checkout the count was taken in has and git ignores, a build step), never the change's. (A count
            # above every test the base has asks for new ones: that is the change's.) Said alone, when nothing
            # else is wrong: a failing test is the change's to fix first.
            world = (f"{short}; the base itself passes only {base_green} of them in a fresh worktree, so the shortfall "
                     "is not the change's: a worktree lacks what the checkout the count was taken in has (files git "
                     "ignores, made by a build step). `runtime init --probe` names them and the `[worktree]` lines "
                     "that give every worktree them")
    at_base = [c for c in failing if before.get(c.id) is not None and before[c.id].outcome in BROKEN]
    if at_base and len(at_base) == len(failing):
        problems.append(f"{len(at_base)} of the failing tests fail at the base too, in a fresh worktree: if they pass "
                        "in the checkout, the worktree lacks what they need (`runtime init --probe` names it)")
    summary = _summary(evidence, now, before, removed, hidden_now, excused)
    details: JSONDict = {"passed": len(green), "base-tests": len(before), "runners": [r.runner for r in work.reports()]}
    if world is not None and problems == [short]:
        return error(world, details, summary)
    if problems:
        return rejected(f"The tests are not green. Fix the code, not the tests, and run `{command}` again:\n"
                        + "\n".join(f"- {p}" for p in problems), details, summary)
    fixed = [i for i, was in before.items() if was.outcome in BROKEN and now.get(i) is not None and now[i].outcome in GREEN]
    new = [i for i in now if i not in before and i not in hidden]
    parts = [f"{len(green)} test(s) passed ({min_count} required)",
             f"the base's {len(before)} test(s) all still pass or are named by the task, run on the base's own test "
             "side" if before else "the base ran no test"]
    if fixed:
        parts.append(f"{len(fixed)} the base failed now pass")
    if new:
        parts.append(f"{len(new)} new")
    if hidden_now:
        parts.append(f"{sum(1 for c in hidden_now if c.outcome in GREEN)} hidden test(s) pass")
    if excused:
        parts.append(f"{len(excused)} fail as they do at the base ({', '.join(c.id for c in excused[:5])}), nothing new")
    if evidence.checks.checks:
        parts.append(f"{len(evidence.checks.checks)} tamper check(s) held")
    return passed("; ".join(parts), details, summary)


def _broken_runs(work: TestRun, base: TestRun | None, tolerate: bool, empty_ok: bool = False) -> list[str]:
    """Each step that failed without a per-test verdict to show for it: a runner whose report is missing,
    unreadable or unfinished, or a step without a runner that failed (with ``tolerate``, not where the base's
    same step failed the same way). ``empty_ok``: the run of the new tests, a part of the suite: a runner that
    collected no test (the work added only fixtures) or failed a threshold over the suite (coverage) with no test
    failing is no failure there."""
    out = []
    at_base = {s.command: s for s in base.steps} if base is not None else {}
    for step in work.steps:
        report = step.report
        if report is None:
            same = at_base.get(step.command)
            if step.exit_code != 0 and tolerate and same is not None and \
                    as_at_base(step.exit_code, step.output, (same.exit_code, same.output)):
                continue
            if step.exit_code != 0:
                out.append(f"- `{step.command}` exited with code {step.exit_code}:\n{_tail(step.output)}")
            continue
        if report.problem or not report.complete:
            why = report.problem or "the runner never reported its end (the process ended first: a crash, `os._exit`, " \
                                    "a build that failed, a test that stopped the run)"
            out.append(f"- {report.runner} (`{step.command}`, exit code {step.exit_code}): {why}\n{_tail(step.output)}")
        elif empty_ok and not any(c.outcome in BROKEN for c in report.tests):
            continue  # a part of the suite: no test collected, or a threshold over the whole suite (coverage)
        elif not report.tests and (same := at_base.get(step.command)) is not None and same.report is not None \
                and not same.report.tests and same.exit_code == step.exit_code:
            continue  # the base ran no test here either (the step names the work's new test files alone)
        elif step.exit_code != 0 and not any(c.outcome in BROKEN for c in report.tests):
            out.append(f"- {report.runner} (`{step.command}`) exited with code {step.exit_code} though no test failed "
                       f"(a collection error, a coverage threshold, a usage error):\n{_tail(step.output)}")
    return out


def _file_level(case: TestCase) -> bool:
    """A failure of a whole file or package rather than of one test: it could not be collected or built."""
    return (case.id == case.file or case.id.endswith("::(package)") or case.id == "(collection)"
            or case.id.startswith("unittest.loader._FailedTest."))


def _has_tests_of(case: TestCase, now: dict[str, TestCase]) -> bool:
    """Whether the work runs tests of the file or package ``case`` failed to collect (its failure is fixed,
    not its tests gone)."""
    if case.id.endswith("::(package)"):
        package = case.id[: -len("(package)")]
        return any(i.startswith(package) for i in now)
    if case.id.startswith("unittest.loader._FailedTest."):
        module = case.id[len("unittest.loader._FailedTest."):]
        return any(i.startswith(module + ".") for i in now)
    return bool(case.file) and any(c.file == case.file for c in now.values())


def _tail(output: str) -> str:
    lines = tail(output, TAIL_LINES)
    return quoted(lines) if lines else "    (it printed nothing)"


def _named(test_id: str, patterns: Sequence[str]) -> bool:
    return any(fnmatchcase(test_id, p) for p in patterns)


def _ids(head: str, ids: list[str]) -> str:
    shown = [f"  - `{i}`" for i in ids[:MAX_LISTED]]
    more = [f"  - ... and {len(ids) - MAX_LISTED} more"] if len(ids) > MAX_LISTED else []
    return "\n".join([head + ":", *shown, *more])


def _listed(head: str, cases: list[TestCase], *, quote: bool, hidden: set[str] | None = None) -> str:
    lines = [head + ":"]
    budget = MAX_QUOTED_LINES
    for case in cases[:MAX_LISTED]:
        if hidden and case.id in hidden:  # the oracle's expectations are not told
            lines.append(f"  - a hidden test ({case.outcome})")
            continue
        lines.append(f"  - `{case.id}` ({case.outcome})")
        if quote and case.message and budget > 0:
            text = case.message.strip().splitlines()[-PER_TEST_LINES:][:budget]
            budget -= len(text)
            lines.append(quoted(text))
    if len(cases) > MAX_LISTED:
        lines.append(f"  - ... and {len(cases) - MAX_LISTED} more")
    return "\n".join(lines)


def _summary(evidence: TestsEvidence, now: dict[str, TestCase], before: dict[str, TestCase], removed: Sequence[str],
             hidden: list[TestCase], excused: list[TestCase]) -> TestsSummary:
    ref = evidence.base_run
    return TestsSummary(
        mode=PER_TEST, command=evidence.plan.command, source=evidence.plan.source,
        steps=evidence.plan.steps,
        runners=[r.runner for r in evidence.work.reports()],
        config=[f"{r.runner}: {r.config}" for r in evidence.work.reports() if r.config],
        base=ref.base if ref else "", base_run=ref.key if ref else "", base_cached=bool(ref and ref.cached),
        base_ran_at=ref.ran_at if ref else 0.0,
        passed=sum(1 for c in now.values() if c.outcome in GREEN), base_tests=len(before),
        still_pass=sum(1 for i, c in before.items() if c.outcome in GREEN and now.get(i) is not None
                       and now[i].outcome in GREEN),
        fixed=[i for i, c in before.items() if c.outcome in BROKEN and now.get(i) is not None and now[i].outcome in GREEN],
        new=sum(1 for i in now if i not in before), removed=[i for i in before if _named(i, removed)],
        hidden=len([c for c in hidden if c.outcome in GREEN]), failing_as_at_base=[c.id for c in excused],
        tamper_checks=len(evidence.checks.checks), tamper_none=evidence.checks.none, rerun=evidence.first is not None,
        new_run=len(evidence.new.cases()) if evidence.new is not None else 0)


def _by_exit_code(command: str, baseline: bool, evidence: TestsEvidence) -> VerifyResult:
    run = evidence.work
    summary = TestsSummary(mode=EXIT_CODE, command=command, source=evidence.plan.source, steps=[command])
    code = run.exit_code
    if code == 0:
        return passed(f"`{command}` exited with code 0 (judged by its exit code only: the task sets "
                      "`test-results = \"exit-code\"`, so no test was counted)", {"exit-code": 0}, summary)
    base = evidence.base_exit
    if base is not None and baseline and as_at_base(code, run.output, (base.exit_code, base.output)):
        return passed(f"`{command}` fails only as it does at the base (exit code {code}), nothing new",
                      {"exit-code": code}, summary)
    return rejected(f"The tests are not green: `{command}` exited with code {code}. Fix the cause and run it again.\n"
                    f"End of the output:\n{_tail(run.output)}", {"exit-code": code}, summary)


KIND = Kind("tests-green", {"command": "command", "min-count": "int", "baseline": "bool", "results": "test-results",
                            "tests-removed": "str-list", "hidden-tests": "test-source", "test-edits": "glob-list",
                            "test-globs": "glob-list"},
            TestsGreenParams.read, TestsEvidence, gather, tests_green, runs_commands=True,
            optional=frozenset({"baseline", "results", "tests-removed", "hidden-tests", "test-edits", "test-globs"}),
            private=frozenset({"hidden-tests"}))
