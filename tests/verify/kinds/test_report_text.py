"""report_text: a report read as structure (JSON objects, headings, labels), never searched as a string."""

from __future__ import annotations

import json

import pytest

from runtime.verify.kinds.report_text import (
    LABEL_LEVEL,
    Section,
    code_lines,
    has_content,
    heading_levels,
    heading_title,
    json_objects,
    normalise,
    sections,
)


@pytest.mark.parametrize("name,expected", [
    ("Files changed", "files changed"),
    ("files-changed", "files changed"),
    ("FILES_CHANGED", "files changed"),
    ("  **Files  changed**: ", "files changed"),
    ("`tests_run`", "tests run"),
    ("a--b__c", "a b c"),
    ("", ""),
])
def test_normalise_folds_case_separators_and_emphasis(name, expected):
    assert normalise(name) == expected


@pytest.mark.parametrize("value,content", [
    ("done", True), ("3", True), ("", False), ("-", False), ("...", False), ("  —  ", False),
    ([], False), ([""], True), ({}, False), ({"a": 1}, True),
    (None, False), (0, True), (False, True), (1.5, True),
])
def test_has_content(value, content):
    assert has_content(value) is content


def test_json_objects_reads_a_whole_report_object():
    assert json_objects('{"summary": "x"}') == [{"summary": "x"}]


@pytest.mark.parametrize("report", ['["a", "b"]', '"text"', "42", "null"])
def test_json_objects_ignores_a_whole_report_that_is_not_an_object(report):
    assert json_objects(report) == []


def test_json_objects_reads_every_fenced_json_block_and_skips_broken_ones():
    report = ("Intro\n```json\n{\"a\": 1}\n```\ntext\n```JSON\n{\"b\": 2}\n```\n"
              "```json\n{broken\n```\n```json\n[1, 2]\n```\n```\n{\"plain\": 3}\n```\n")
    assert json_objects(report) == [{"a": 1}, {"b": 2}]


def test_json_objects_of_plain_text_is_empty():
    assert json_objects("## Summary\nDone.") == []


def test_code_lines_flags_fences_and_what_is_between_them():
    assert code_lines(["x", "```", "y", "```", "z"]) == [False, True, True, True, False]
    assert code_lines(["  ```python", "# c", "  ```", "~~~", "d"]) == [True, True, True, True, True]
    assert code_lines(["~~~", "d", "~~~", "e"]) == [True, True, True, False]


def test_a_fence_closes_only_a_block_of_its_own_kind_and_length():
    assert code_lines(["```", "~~~", "Summary: x", "```", "e"]) == [True, True, True, True, False]
    assert code_lines(["````", "```", "in", "````", "out"]) == [True, True, True, True, False]
    assert code_lines(["```", "``` not a close", "in", "```", "out"]) == [True, True, True, True, False]


@pytest.mark.parametrize("line,level", [
    ("# Title", 1), ("###### Deep", 6), ("   ## Indented three", 2), ("    ## four spaces is code", 0),
    ("####### seven", 0), ("#NoSpace", 0), ("plain", 0), ("## Closed ##", 2),
])
def test_heading_levels(line, level):
    assert heading_levels([line], [False]) == [level]


def test_heading_levels_ignore_lines_in_code():
    assert heading_levels(["# a", "# b"], [False, True]) == [1, 0]


@pytest.mark.parametrize("line,title", [("## Summary", "Summary"), ("### Risks ###", "Risks"), ("# Two  words  ", "Two  words")])
def test_heading_title(line, title):
    assert heading_title(line) == title


def test_sections_of_headings_run_to_the_next_heading_of_the_same_or_higher_level():
    report = "# Top\nintro\n## A\na1\n### A.1\ndeep\n## B\nb1\n# Next\n"
    found = {s.title: s for s in sections(report)}
    assert found["Top"].level == 1 and found["Top"].body == ("intro", "## A", "a1", "### A.1", "deep", "## B", "b1")
    assert found["A"].body == ("a1", "### A.1", "deep")
    assert found["A.1"].body == ("deep",)
    assert found["B"].body == ("b1",)
    assert found["Next"].body == ()


def test_a_label_with_an_inline_value_holds_nothing_below():
    [label] = [s for s in sections("Summary: added retries\nmore prose\n")]
    assert label == Section("Summary", LABEL_LEVEL, "added retries", ())


@pytest.mark.parametrize("line,title,inline", [
    ("**Files changed:** `a.py`", "Files changed", "`a.py`"),
    ("**Risks**: none", "Risks", "none"),
    ("- Tests run: 14", "Tests run", "14"),
    ("3. Open questions: two", "Open questions", "two"),
    ("__Summary__: ok", "Summary", "ok"),
])
def test_label_forms(line, title, inline):
    [label] = sections(line)
    assert (label.title, label.level, label.inline) == (title, LABEL_LEVEL, inline)


@pytest.mark.parametrize("line", ["1 thing: x", "http://example.com", "no colon here", "x" * 70 + ": y"])
def test_lines_that_are_not_labels(line):
    assert sections(line) == []


def test_a_word_in_a_sentence_before_a_colon_is_not_its_own_label():
    [label] = sections("Here is a summary of what I did: retries")
    assert normalise(label.title) == "here is a summary of what i did"


def test_an_empty_label_takes_the_lines_below_up_to_the_next_top_label_or_heading():
    report = "Open questions:\n  - one?\n- Nested: kept\nRisks: none\n"
    found = {s.title: s for s in sections(report)}
    assert found["Open questions"].inline == ""
    assert found["Open questions"].body == ("  - one?", "- Nested: kept")
    assert found["Open questions"].has_content()
    assert found["Risks"].inline == "none"


def test_an_empty_label_stops_at_a_heading():
    found = {s.title: s for s in sections("Notes:\nline\n## Next\nbody\n")}
    assert found["Notes"].body == ("line",)


def test_lines_in_code_blocks_are_neither_headings_nor_labels():
    report = "```\n# not a heading\nSummary: not a label\n```\n"
    assert sections(report) == []


def test_section_has_content_needs_a_letter_or_digit():
    assert not Section("x", 2, "", ("", "-", "  ...")).has_content()
    assert Section("x", 2, "", ("", "ok")).has_content()
    assert Section("x", LABEL_LEVEL, "1", ()).has_content()


def test_a_json_report_is_not_read_as_labels():
    report = json.dumps({"summary": "x"})
    assert sections(report) == []
