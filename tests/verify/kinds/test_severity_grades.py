"""severity-grades, its parts called directly: where findings are, and how a grade is marked."""

from __future__ import annotations

import json

import pytest

from runtime.verify.kinds.base import MalformedInput
from runtime.verify.kinds.registry import evaluate
from runtime.verify.kinds.report_fields import Report
from runtime.verify.kinds.severity_grades import (
    SHOWN_CHARS,
    Finding,
    GradesParams,
    findings_in,
    grade_problem,
    marked_grades,
    severity_grades,
)

GRADES = ["HIGH", "MEDIUM", "LOW"]


# ---------------------------------------------------------------- markers


@pytest.mark.parametrize("text", [
    "[HIGH] SQL injection", "(high) SQL injection", "[ High ] x", "**HIGH** x", "__high__ x", "*High* x", "_HIGH_ x",
    "`HIGH` x", "HIGH: x", "high - x", "HIGH | x", "HIGH — x", "Severity: high", "severity=HIGH", "severity **HIGH**",
    "x (severity high)", "High severity issue", "  **HIGH:** x",
])
def test_a_grade_written_as_a_marker_is_found(text):
    assert marked_grades(text, GRADES) == ["HIGH"]


@pytest.mark.parametrize("text", [
    "Highlight color is off", "Low-level errors", "the high road", "HIGHER load", "highly", "slow path",
    "x-HIGH-y", "a HIGH: b", "HIGH-x",
])
def test_a_grade_that_is_not_a_marker_is_not_found(text):
    assert marked_grades(text, GRADES) == []


def test_several_markers_are_all_found_in_grade_order():
    assert marked_grades("[LOW] or [HIGH]?", GRADES) == ["HIGH", "LOW"]


def test_grades_with_regex_characters_are_literal():
    assert marked_grades("[P0+] outage", ["P0+", "P1"]) == ["P0+"]
    assert marked_grades("[P00] outage", ["P0+"]) == []


# ---------------------------------------------------------------- grade_problem


def test_a_finding_graded_once_on_its_own_line_has_no_problem():
    assert grade_problem(Finding("[HIGH] crash"), GRADES) is None


def test_the_body_counts_only_when_the_head_has_no_marker():
    assert grade_problem(Finding("crash on empty input", "Severity: LOW"), GRADES) is None
    assert grade_problem(Finding("[HIGH] crash", "once rated [LOW]"), GRADES) is None
    assert grade_problem(Finding("crash", "[LOW] and [HIGH] in the notes"), GRADES) == "several grades (HIGH, LOW)"


def test_an_ungraded_finding_has_no_grade():
    assert grade_problem(Finding("crash", "no marker here"), GRADES) == "no severity grade"


@pytest.mark.parametrize("severity,problem", [
    ("high", None), (" Medium ", None), ("LOW", None),
    (None, "no `severity` value"),
    ("critical", "severity `critical` is not one of the grades"),
    (3, "severity `3` is not one of the grades"),
])
def test_a_json_finding_is_judged_by_its_severity_value_only(severity, problem):
    assert grade_problem(Finding("[HIGH] in the title", severity=severity, from_json=True), GRADES) == problem


# ---------------------------------------------------------------- findings_in


def test_json_findings_come_first_and_take_their_label_from_title_summary_and_the_like():
    report = "```json\n" + json.dumps({"Findings": [
        {"title": "T", "severity": "HIGH"},
        {"message": "M", "Severity": "low"},
        {"code": 7},
        "a plain string finding [LOW]",
        42,
    ]}) + "\n```\n## Findings\n- markdown is not read when JSON has findings\n"
    found = findings_in(report)
    assert [f.head for f in found] == ["T", "M", '{"code": 7}', "a plain string finding [LOW]", "42"]
    assert [f.severity for f in found] == ["HIGH", "low", None, None, None]
    assert [f.from_json for f in found] == [True, True, True, False, True]


def test_a_json_object_without_a_findings_list_falls_back_to_markdown():
    report = "```json\n{\"findings\": \"none\"}\n```\n## Findings\n- [LOW] typo\n"
    assert [f.head for f in findings_in(report)] == ["[LOW] typo"]


def test_markdown_findings_are_top_level_list_items_with_their_continuation():
    report = "## Findings (2)\n- [HIGH] one\n  detail of one\n  - sub item\n- [LOW] two\n\n## Notes\n- not a finding\n"
    found = findings_in(report)
    assert [f.head for f in found] == ["[HIGH] one", "[LOW] two"]
    assert found[0].body == "  detail of one\n  - sub item"


def test_numbered_items_are_findings():
    assert [f.head for f in findings_in("Findings:\n1. [LOW] a\n2) [HIGH] b\n")] == ["[LOW] a", "[HIGH] b"]


def test_subheadings_of_the_findings_section_are_the_findings():
    report = "# Review\n## Findings\n### First\nbody 1\n- list in body\n### Second\nbody 2\n"
    found = findings_in(report)
    assert [(f.head, f.body) for f in found] == [("First", "body 1\n- list in body"), ("Second", "body 2")]


def test_a_report_without_a_findings_section_has_no_findings():
    assert findings_in("## Summary\n- [HIGH] listed elsewhere\n") == []


def test_a_finding_label_is_cut_and_whitespace_collapsed():
    assert Finding("a  b\n c").label == "a b c"
    long = Finding("x" * 200).label
    assert len(long) == SHOWN_CHARS and long.endswith("...")
    assert Finding("", "from the body").label == "from the body"


# ---------------------------------------------------------------- the evaluator


def test_the_rejection_suggests_the_first_grade():
    result = severity_grades(GradesParams.read({"grades": ["P0", "P1"]}), Report(report="## Findings\n- no grade\n"))
    assert result.status == "rejected"
    assert "`- [P0] what is wrong and where`" in result.feedback
    assert "(P0, P1)" in result.feedback
    assert result.evidence == {"findings": 1, "ungraded": 1}


def test_all_graded_passes_with_the_count():
    result = severity_grades(GradesParams.read({"grades": GRADES}), Report(report="## Findings\n- [LOW] a\n- [HIGH] b\n"))
    assert result.status == "passed" and result.evidence == {"findings": 2}


def test_empty_grades_reject_every_finding_with_a_placeholder_example():
    result = severity_grades(GradesParams.read({"grades": []}), Report(report="## Findings\n- [HIGH] a\n"))
    assert result.status == "rejected"
    assert "`- [GRADE] what is wrong and where`" in result.feedback


def test_bad_inputs_are_malformed():
    with pytest.raises(MalformedInput, match="parameter `grades` is missing"):
        severity_grades(GradesParams.read({}), {"report": ""})
    result = evaluate("severity-grades", {"grades": GRADES}, {"report": None})
    assert result.status == "error" and "the evidence is malformed: `report`" in result.feedback
