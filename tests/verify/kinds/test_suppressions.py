"""no-blanket-suppressions: a line the change adds that silences a check wholesale is a finding; a targeted
suppression, or one the base already had, is not."""

from __future__ import annotations

import anyio
import pytest

from runtime.verify.kinds import suppressions
from runtime.verify.kinds.findings import Finding
from runtime.verify.kinds.registry import evaluate
from runtime.verify.kinds.suppressions import RULES
from tests.verify.kinds.test_tests_green import FakeGathering


def gather(base: dict[str, str], work: dict[str, str], renames: dict[str, str] | None = None) -> list[Finding]:
    fake = FakeGathering(base=base, work=work, renames=renames or {})
    return anyio.run(suppressions.gather, suppressions.KIND.read_params({"allowed": []}), fake).findings


BLANKET = [
    ("src/calc.py", "import os  # noqa", "`noqa` without a code silences every check on the line"),
    ("src/calc.py", "import os  # NOQA", "`noqa` without a code silences every check on the line"),
    ("src/calc.py", "# ruff: noqa", "a file-level `noqa` silences the whole file"),
    ("src/calc.py", "# flake8: noqa", "a file-level `noqa` silences the whole file"),
    ("src/calc.py", "# mypy: ignore-errors", "`mypy: ignore-errors` silences the type checker for the whole file"),
    ("src/calc.py", "x = f()  # type: ignore", "a bare `type: ignore` silences every type error on the line"),
    ("src/calc.py", "x = f()  # pyright: ignore", "inline pyright configuration or a suppression naming no rule"),
    ("src/calc.py", "# pyright: basic", "inline pyright configuration or a suppression naming no rule"),
    ("src/calc.py", "# ruff: noqa: F401", "a file-level `noqa` silences its rules in the whole file, every line to come "
                                          "included (name them on the lines that need them)"),
    ("src/calc.py", '# mypy: disable-error-code="assignment"',
     "inline mypy configuration changes what the type checker checks in the whole file"),
    ("src/calc.py", "# type: ignore[assignment]", "a `type: ignore` on a line of its own silences the type checker for "
                                                  "the whole file (at its top) or for nothing anyone can see"),
    ("src/calc.py", "# pyre-ignore-all-errors", "the type checker silenced for the whole file"),
    ("src/calc.py", "# pylint: disable=invalid-name", "a `pylint: disable` on a line of its own silences those checks "
                                                     "for the rest of its scope (keep it on the line that needs it)"),
    ("src/app.js", "/* eslint-disable no-console */", "an `eslint-disable` block silences its rules for the rest of "
                                                      "the file (use `eslint-disable-next-line RULE` where it is needed)"),
    ("src/calc.py", "# pylint: disable=all", "pylint silenced for everything"),
    ("src/calc.py", "# pylint: skip-file", "pylint silenced for everything"),
    ("src/app.js", "/* eslint-disable */", "`eslint-disable` naming no rule silences the linter"),
    ("src/app.js", "foo() // eslint-disable-line", "`eslint-disable` naming no rule silences the linter"),
    ("src/app.js", "// eslint-disable-next-line", "`eslint-disable` naming no rule silences the linter"),
    ("src/app.ts", "// @ts-nocheck", "`@ts-nocheck` turns type checking off for the file"),
    ("src/app.ts", "// @ts-ignore", "`@ts-ignore` silences every type error on the next line (use `@ts-expect-error` "
                                    "with a reason, or fix the type)"),
    ("src/lib.rs", "#![allow(dead_code)]", "a crate- or module-level `#![allow(...)]` silences lints for everything below"),
    ("src/lib.rs", "#[allow(warnings)]", "an `allow` of a whole lint group"),
    ("src/lib.rs", "#[allow(clippy::all)]", "an `allow` of a whole lint group"),
    ("calc.go", "x() //nolint", "`//nolint` naming no linter silences every linter"),
    ("src/app.js", "/* c8 ignore start */", "code taken out of the coverage measure"),
    ("src/app.js", "/* istanbul ignore file */", "code taken out of the coverage measure"),
]


@pytest.mark.parametrize("path,line,what", BLANKET)
def test_a_blanket_suppression_the_change_adds_is_a_finding_at_its_line(path, line, what):
    [finding] = gather({path: "a = 1\nb = 2\n"}, {path: f"a = 1\n{line}\nb = 2\n"})
    assert finding == Finding(path=path, line=2, what=what, text=line)


def test_every_rule_is_exercised():
    hit = set()
    for _, line, _ in BLANKET:
        hit |= {i for i, (pattern, _) in enumerate(RULES) if pattern.search(line)}
    assert hit == set(range(len(RULES)))


@pytest.mark.parametrize("path,line", [
    ("src/calc.py", "import os  # noqa: F401"),
    ("src/calc.py", "x = 1  # noqa: E501"),
    ("src/calc.py", "x = f()  # type: ignore[attr-defined]"),
    ("src/calc.py", "x = f()  # pyright: ignore[reportGeneralTypeIssues]"),
    ("src/calc.py", "# pyright: strict"),
    ("src/calc.py", "x = f()  # pylint: disable=invalid-name"),
    ("src/app.js", "// eslint-disable-next-line no-console"),
    ("src/app.ts", "// @ts-expect-error the library's types are wrong"),
    ("src/lib.rs", "#[allow(dead_code)]"),
    ("calc.go", "x() //nolint:errcheck"),
    ("src/app.js", "/* istanbul ignore next */"),
])
def test_a_targeted_suppression_is_not_a_finding(path, line):
    assert gather({path: "a = 1\n"}, {path: f"a = 1\n{line}\n"}) == []


def test_a_suppression_the_base_already_had_is_not_a_finding():
    base = "import os  # noqa\nx = 1  # type: ignore\n\ndef f():\n    return 1\n"
    assert gather({"src/calc.py": base}, {"src/calc.py": base.replace("return 1", "return 2")}) == []


def test_a_renamed_file_keeps_its_base_suppressions_unflagged():
    text = "# ruff: noqa\nx = 1\n"
    assert gather({"src/old.py": text}, {"src/new.py": text + "y = 2\n"}, renames={"src/new.py": "src/old.py"}) == []


def test_a_new_file_is_read_whole_and_line_numbers_are_the_work_file_s():
    base = "a = 1\nb = 2\nc = 3\n"
    work = "import os  # noqa\na = 1\n# mypy: ignore-errors\nb = 2\nc = 3\nd = f()  # type: ignore\n"
    assert [(f.path, f.line) for f in gather({"src/calc.py": base}, {"src/calc.py": work})] == [
        ("src/calc.py", 1), ("src/calc.py", 3), ("src/calc.py", 6)]
    assert [(f.path, f.line) for f in gather({}, {"src/new.py": "x = 1\n\n# flake8: noqa\n"})] == [("src/new.py", 3)]


def test_a_changed_line_that_keeps_its_suppression_counts_as_added():
    # the line is new text: the suppression now covers other code than at the base
    [finding] = gather({"src/calc.py": "x = f()  # type: ignore\n"}, {"src/calc.py": "x = g()  # type: ignore\n"})
    assert finding.line == 1


def test_deleted_files_are_not_read():
    assert gather({"src/calc.py": "import os  # noqa\n"}, {}) == []


# ---------------------------------------------------------------- the judge


FOUND = {"findings": [
    {"path": "src/calc.py", "line": 3, "what": "`noqa` without a code silences every check on the line",
     "text": "import os  # noqa"},
    {"path": "src/generated/models.py", "line": 1, "what": "a file-level `noqa` silences the whole file", "text": "# ruff: noqa"},
]}


def test_the_judge_rejects_naming_path_line_and_the_line_itself():
    result = evaluate("no-blanket-suppressions", {"allowed": []}, FOUND)
    assert result.status == "rejected" and result.evidence == {"findings": 2}
    assert "- `src/calc.py:3`: `noqa` without a code silences every check on the line (`import os  # noqa`)" in result.feedback
    assert "`src/generated/models.py:1`" in result.feedback
    assert "# noqa: E501" in result.feedback  # the advice: name the rule


def test_the_allowed_globs_let_their_files_through():
    some = evaluate("no-blanket-suppressions", {"allowed": ["src/generated/**"]}, FOUND)
    assert some.status == "rejected" and "src/generated" not in some.feedback and "`src/calc.py:3`" in some.feedback
    every = evaluate("no-blanket-suppressions", {"allowed": ["src/**"]}, FOUND)
    assert every.status == "passed" and every.feedback == "no blanket suppression was added (2 the task allows)"


def test_no_finding_passes():
    assert evaluate("no-blanket-suppressions", {"allowed": []}, {"findings": []}).status == "passed"
