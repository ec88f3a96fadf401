"""report-fields called directly: which fields a report fills in, in any form."""

from __future__ import annotations

import json

import pytest

from runtime.verify.kinds.base import MalformedInput
from runtime.verify.kinds.registry import evaluate
from runtime.verify.kinds.report_fields import Report, ReportFieldsParams, filled_fields, report_fields


def test_filled_fields_of_a_json_report_are_its_keys_with_content_normalised():
    report = json.dumps({"Summary": "x", "files_changed": ["a"], "risks": "", "notes": [], "count": 0, "gone": None})
    assert filled_fields(report) == {"summary", "files changed", "count"}


def test_filled_fields_merge_json_blocks_headings_and_labels():
    report = "## Summary\nDone.\n\nRisks: none\n\n```json\n{\"tests-run\": 3}\n```\n"
    assert filled_fields(report) == {"summary", "risks", "tests run"}


def test_filled_fields_leave_out_empty_headings_and_labels():
    assert filled_fields("## Summary\n\n## Risks\n-\n") == set()
    assert filled_fields("Notes: ...\nTests: -\n") == set()


@pytest.mark.parametrize("field", ["Files changed", "files-changed", "FILES_CHANGED", "files  changed"])
def test_a_required_field_matches_in_any_spelling(field):
    result = report_fields(ReportFieldsParams.read({"fields": [field]}), Report(report="Files changed: a.py"))
    assert result.status == "passed"
    assert result.evidence == {"fields": 1}


def test_missing_fields_are_named_in_the_order_asked():
    result = report_fields(ReportFieldsParams.read({"fields": ["Risks", "Summary", "Tests"]}), Report(report="Summary: ok"))
    assert result.status == "rejected"
    assert result.evidence == {"fields": 3, "missing": ["Risks", "Tests"]}
    assert "missing 2 required field(s), or leaves them empty: `Risks`, `Tests`." in result.feedback


def test_no_fields_required_passes_any_report():
    assert report_fields(ReportFieldsParams.read({"fields": []}), Report(report="")).status == "passed"


def test_bad_inputs_are_malformed_naming_the_key():
    with pytest.raises(MalformedInput, match="parameter `fields` must be a list of strings"):
        report_fields(ReportFieldsParams.read({"fields": "Summary"}), Report(report=""))
    result = evaluate("report-fields", {"fields": []}, {"report": {"summary": "x"}})
    assert result.status == "error"
    assert result.feedback == "cannot check `report-fields`: the evidence is malformed: `report`: Input should be a valid string"
