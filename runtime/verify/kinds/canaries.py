"""Tamper checks: tests laid into the run of the base's tests that the code under test cannot tell apart from
the suite, made fresh for each run, whose outcomes must agree with what they are.

The code under test runs in the runner's process and can reach whatever reports its outcomes. What it cannot
know is which tests are checks: their names are random, their sources are sealed (served to the runner's
loader alone, `runtime.verify.sealed`, where the runner can load them so) and they differ every run. For one
or two test files of the base (those with tests the base fails first: the ones a forger must flip), a check
file beside the original holds:

- the original file's tests again, under another file name (``as``: each must end as its original does; a
  forger that knows the base's files or the failing tests' places leaves these alone);
- a test that must fail and one that must pass (``fails``, ``passes``: a forger that turns every failure into
  a pass, or drops what it does not know, turns these too);
- for pytest, the negation of up to three of the original's test functions (``opposite``: it passes exactly
  when the original's body fails an assertion, so the two can never both pass: a forger that turns the
  original's failure into a pass leaves its negation passing beside it).

A check that disagrees is tampering (`runtime.verify.kinds.tests_green`), except a copy that fails where its original
passes, which honest code also does when it behaves otherwise the second time (state kept between calls) and
which is judged as a failing test. Runners the runtime cannot lay checks into (jest, vitest, mocha, tape, go,
cargo) and commands that select tests by name or stop at the first failure run without checks, and the
verdict says so.
"""

from __future__ import annotations

import ast
import copy
import posixpath
import secrets
import string
from collections.abc import Callable, Collection
from typing import Literal

from runtime.verify.kinds.kind import Evidence
from runtime.verify.kinds.runners.plan import Step, TestPlan
from runtime.verify.kinds.runners.results import BROKEN, GREEN, TestCase, TestRun

MAX_FILES = 2
MAX_NEGATED = 3
# Options that select tests by name or stop a run early: a check would not run, or would stop the run.
_PYTEST_SELECTING = ("-k", "-m", "--deselect", "-x", "--exitfirst", "--maxfail", "--lf", "--last-failed", "--sw",
                     "--stepwise", "--stepwise-skip", "--co", "--collect-only", "--pdb", "--trace", "-l")
_NODE_SELECTING = ("--test-name-pattern", "--test-only", "--test-skip-pattern")


class TamperCheck(Evidence):
    """One check laid into a run: its test's id, what its outcome must be (``fails``, ``passes``, ``as`` the test
    ``of``, ``opposite`` of the test ``of``) and the file that holds it."""

    id: str
    expect: Literal["fails", "passes", "as", "opposite"]
    of: str = ""
    file: str


class Laid(Evidence):
    """The checks of one run: the files laid (relative path -> source) and their checks; ``none``: why a run has
    none."""

    files: dict[str, str] = {}
    checks: list[TamperCheck] = []
    none: str = ""


def plan_checks(plan: TestPlan, base: TestRun, source: Callable[[str], bytes | None], taken: Collection[str],
                skip: Callable[[str], bool], esm: bool = False) -> Laid:
    """Checks for a run of ``plan`` on the base's test side: ``base`` is the base's run (which tests each file
    holds, which fail), ``source`` reads a base file, ``taken`` are paths in use, ``skip`` says which files may
    not be copied (the task's test edits: the run holds the work's version of those)."""
    files: dict[str, str] = {}
    checks: list[TamperCheck] = []
    why: list[str] = []
    for report in base.reports():
        kind = report.runner
        if kind not in ("pytest", "node --test"):
            why.append(f"{kind} runs without tamper checks")
            continue
        step = _step_of(plan, report.command, kind)
        selecting = _selects(step, kind) if step is not None else f"its step of `{plan.command}` was not found"
        if selecting:
            why.append(f"{kind}: {selecting}")
            continue
        suffixes = (".py",) if kind == "pytest" else (".js", ".cjs", ".mjs")
        by_file: dict[str, list[TestCase]] = {}
        for case in report.tests:
            if case.file and case.file.endswith(suffixes) and case.id != case.file and not skip(case.file):
                by_file.setdefault(case.file, []).append(case)
        chosen = sorted(by_file, key=lambda f: (-sum(c.outcome in BROKEN for c in by_file[f]), -len(by_file[f]), f))
        made = 0
        for original in chosen:
            if made >= MAX_FILES:
                break
            data = source(original)
            if data is None:
                continue
            text = data.decode("utf-8", errors="replace")
            path = _beside(original, {*taken, *files})
            laid = _python(original, path, text, by_file[original]) if kind == "pytest" else \
                _node(original, path, text, by_file[original], esm)
            if laid is None:
                continue
            files[path] = laid[0]
            checks += laid[1]
            made += 1
    if not files:
        return Laid(none="; ".join(why) or "the base ran no test file the checks could copy")
    return Laid(files=files, checks=checks)


def violations(checks: list[TamperCheck], run: TestRun) -> tuple[list[str], list[str]]:
    """What the run's report says against its checks: (tampering, copies that fail where their original passes).
    A check file the runner did not collect or could not load says nothing (it may lie outside what the command
    collects; it imports what its original imports, which the work may have broken); one it loaded must hold
    every check."""
    cases = run.cases()
    # a file the runner loaded: one whose tests it reports (a file that failed to load reports itself alone)
    present = {c.file for c in cases.values() if c.id != c.file and c.id != "(collection)"}
    tampered: list[str] = []
    differing: list[str] = []
    for check in checks:
        if check.file not in present:
            continue
        case = cases.get(check.id)
        original = cases.get(check.of) if check.of else None
        if check.expect == "fails":
            if case is None or case.outcome in GREEN or case.outcome == "skipped":
                tampered.append(f"a test that must fail was reported {case.outcome if case else 'missing'}")
        elif check.expect == "passes":
            if case is None or case.outcome not in GREEN:
                tampered.append(f"a test that must pass was reported {case.outcome if case else 'missing'}")
        elif original is None:
            continue  # its original did not run (it was renamed, removed, not collected): nothing to hold it to
        elif case is None:
            tampered.append(f"a copy of `{check.of}` was collected with its file and is missing from the report")
        elif check.expect == "opposite":
            # honest: `xfailed` where the original passes, `failed` where it fails; never passed
            if case.outcome in GREEN or (case.outcome in BROKEN and original.outcome in GREEN):
                tampered.append(f"`{check.of}` was reported {original.outcome}, and its negation {case.outcome}, which "
                                "cannot both be true")
        elif (case.outcome in GREEN) != (original.outcome in GREEN) and original.outcome in GREEN:
            differing.append(check.of)
    return tampered, differing


def _step_of(plan: TestPlan, command: str, runner: str) -> Step | None:
    steps = [s for s in plan.steps if s.runner == runner]
    return steps[0] if len(steps) == 1 else next((s for s in steps if s.command.render() in command), None)


def _selects(step: Step, runner: str) -> str:
    """Why checks cannot run in ``step``: it selects tests by name, names test files or stops at a failure."""
    argv = step.command.argv[step.at:]
    options = _PYTEST_SELECTING if runner == "pytest" else _NODE_SELECTING
    for word in argv:
        name = word.split("=", 1)[0]
        if name in options or (runner == "pytest" and word.startswith(("-k", "-m")) and len(word) > 2
                               and not word.startswith("--")):
            return f"the command selects tests or stops early (`{word}`), so no tamper check is laid"
        if not word.startswith("-") and ("::" in word or word.endswith((".py", ".js", ".cjs", ".mjs"))):
            return f"the command names its test files (`{word}`), so no tamper check is laid"
    return ""


def _beside(original: str, taken: Collection[str]) -> str:
    """A new file beside ``original``, named as its runner collects it (`test_calc.py` ->
    `test_calc_<random>.py`, `calc_test.py` -> `calc_<random>_test.py`, `calc.test.js` -> `calc_<random>.test.js`)."""
    folder, name = posixpath.split(original)
    while True:
        word = "".join(secrets.choice(string.ascii_lowercase) for _ in range(8))
        stem, dot, rest = name.partition(".")
        if stem.endswith("_test"):
            made = f"{stem[:-5]}_{word}_test{dot}{rest}"
        else:
            made = f"{stem}_{word}{dot}{rest}"
        path = posixpath.join(folder, made)
        if path not in taken:
            return path


def _word() -> str:
    return "".join(secrets.choice(string.ascii_lowercase) for _ in range(10))


def _python(original: str, path: str, text: str, cases: list[TestCase]) -> tuple[str, list[TamperCheck]] | None:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    # Only the tests the base fails are a forger's to flip, and only theirs are checked: a test that passes at
    # the base may read its own place (a traceback's file and function), which a copy or a negation changes.
    failed = [c for c in cases if c.outcome == "failed" and c.id.startswith(original + "::")]
    checks = [TamperCheck(id=path + c.id[len(original):], expect="as", of=c.id, file=path) for c in failed]
    marks = f"_checks_{_word()}"
    # The checks expected to fail are xfail(strict): an honest run ends them `xfailed` and its exit status is
    # the suite's own (a coverage threshold still decides it); a forged pass is `passed` or `failed`.
    expect_fail = f"@{marks}.mark.xfail(strict=True, raises=AssertionError, reason='')\n"
    added: list[str] = [f"import pytest as {marks}\n"]
    fail, hold = f"test_{_word()}", f"test_{_word()}"
    a = secrets.randbelow(10**6)
    added.append(f"{expect_fail}def {fail}():\n    assert {a} == {a + 1}\n")
    added.append(f"def {hold}():\n    assert {a} == {a}\n")
    checks += [TamperCheck(id=f"{path}::{fail}", expect="fails", file=path),
               TamperCheck(id=f"{path}::{hold}", expect="passes", file=path)]
    names = {c.id[len(original) + 2:].split("[", 1)[0] for c in failed}
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names and _negatable(n)]
    for fn in sorted(functions, key=lambda n: n.lineno)[:MAX_NEGATED]:
        name = f"test_{_word()}"
        added.append(_negation(fn, name, expect_fail))
        for case in failed:
            test = case.id[len(original) + 2:]
            if test == fn.name or test.startswith(fn.name + "["):
                checks.append(TamperCheck(id=f"{path}::{name}{test[len(fn.name):]}", expect="opposite", of=case.id,
                                          file=path))
    return text.rstrip("\n") + "\n\n\n" + "\n\n".join(added), checks


def _negatable(fn: ast.FunctionDef) -> bool:
    """A plain test function whose negation means something: not a generator, no `*args`, no mark that skips it
    or expects it to fail."""
    if fn.args.vararg or fn.args.kwarg or fn.args.posonlyargs:
        return False
    if any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)) for n in ast.walk(fn)):
        return False
    marks = " ".join(ast.unparse(d) for d in fn.decorator_list)
    return not any(word in marks for word in ("skip", "xfail", "usefixtures"))


def _negation(fn: ast.FunctionDef, name: str, expect_fail: str) -> str:
    """``fn`` as a test that raises exactly when its body passes (its fixtures and marks kept), expected to fail
    (``expect_fail``): an honest run ends it `xfailed` where the original passes and `failed` where it fails."""
    params = [a.arg for a in fn.args.args] + [a.arg for a in fn.args.kwonlyargs]
    body = copy.copy(fn)
    body.name, body.decorator_list, body.returns = "_body", [], None
    call = ", ".join(f"{p}={p}" for p in params)
    decorators = expect_fail + "".join(f"@{ast.unparse(d)}\n" for d in fn.decorator_list)
    inner = "\n".join("    " + line for line in ast.unparse(body).splitlines())
    return (f"{decorators}def {name}({', '.join(params)}):\n{inner}\n"
            f"    try:\n        _body({call})\n    except AssertionError:\n        return\n"
            f"    raise AssertionError('{name}')\n")


def _node(original: str, path: str, text: str, cases: list[TestCase], esm: bool) -> tuple[str, list[TamperCheck]]:
    separator = " > "
    checks = [TamperCheck(id=path + c.id[len(original):], expect="as", of=c.id, file=path)
              for c in cases if c.id.startswith(original + separator) and c.outcome == "failed"]
    fail, hold = f"{_word()} {_word()}", f"{_word()} {_word()}"
    a = secrets.randbelow(10**6)
    module = original.endswith(".mjs") or (not original.endswith(".cjs") and (esm or "require(" not in text))
    if module:
        t, s = f"t{_word()}", f"s{_word()}"
        head = f"import {{ test as {t} }} from 'node:test'\nimport {s} from 'node:assert'\n"
    else:
        t, s = "require('node:test').test", "require('node:assert')"
        head = ""
    # the test that must fail is a `todo`: node reports its failure and the run's exit status stays the suite's
    added = (f"{head}{t}('{fail}', {{ todo: true }}, () => {{ {s}.strictEqual({a}, {a + 1}) }})\n"
             f"{t}('{hold}', () => {{ {s}.strictEqual({a}, {a}) }})\n")
    checks += [TamperCheck(id=f"{path}{separator}{fail}", expect="fails", file=path),
               TamperCheck(id=f"{path}{separator}{hold}", expect="passes", file=path)]
    return text.rstrip("\n") + "\n\n" + added, checks
