"""severity-grades: every finding in a review report carries exactly one severity grade.

Whoever acts on a review triages by grade; an ungraded finding, or one graded
twice, cannot be triaged. Evidence::

    {"report": "<the agent's final message>"}

Findings are, in order of preference:

- the items of a JSON ``findings`` array (whole report or fenced ```json
  object); an object item needs a ``severity`` value equal to one grade;
- the items of a Markdown "Findings" section (a heading or a ``Findings:``
  line): its sub-headings if it has any, else its top-level list items.

A Markdown finding is graded by a grade written as a marker, case-insensitive:
``[HIGH]``, ``(HIGH)``, ``**HIGH**``, `` `HIGH` ``, ``HIGH:`` or ``HIGH -`` at the
start, ``severity: high``, ``HIGH severity``. A grade inside another word
(``highlight``, ``low-level``) is no marker. Markers on the finding's own line
decide; only when it has none do the lines under it count. A report with no
findings section, or an empty one, passes: there is nothing to grade.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from runtime.verify.kinds.base import listing, take_str_list
from runtime.verify.kinds.kind import Kind
from runtime.verify.kinds.report_fields import Report, gather
from runtime.verify.kinds.report_text import Section, code_lines, heading_levels, heading_title, json_objects, normalise, sections
from runtime.verify.kinds.result import VerifyResult, passed, rejected

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSON, JSONObject

_ITEM = re.compile(r"^(\s*)(?:[-*+]|\d+[.)])\s+(.*)$")
_LABEL_KEYS = ("title", "summary", "description", "message", "name")
SHOWN_CHARS = 80


@dataclass(frozen=True)
class Finding:
    head: str  # the finding's own line: its heading, its list item's text, or a JSON summary
    body: str = ""  # the lines under it
    severity: JSON = None  # a JSON finding's `severity` value (None: it has none)
    from_json: bool = False

    @property
    def label(self) -> str:
        text = " ".join((self.head or self.body).split())
        return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


@dataclass(frozen=True, slots=True)
class GradesParams:
    """severity-grades: the grades a finding may carry, one each."""

    grades: tuple[str, ...]

    @classmethod
    def read(cls, data: JSONObject) -> GradesParams:
        return cls(tuple(take_str_list(data, "grades", "parameter")))


def severity_grades(params: GradesParams, evidence: Report) -> VerifyResult:
    grades = params.grades
    report = evidence.report
    findings = findings_in(report)
    if not findings:
        return passed("no findings", {"findings": 0})
    problems = [f"`{f.label}`: {problem}" for f in findings if (problem := grade_problem(f, grades))]
    if not problems:
        return passed(f"all {len(findings)} finding(s) carry one grade", {"findings": len(findings)})
    shown = ", ".join(grades)
    return rejected(
        f"{len(problems)} of your {len(findings)} finding(s) do not carry exactly one severity grade ({shown}):\n"
        f"{listing(problems)}\n"
        f"Start each finding with one grade, for example `- [{grades[0] if grades else 'GRADE'}] what is wrong and where`.",
        {"findings": len(findings), "ungraded": len(problems)},
    )


def findings_in(report: str) -> list[Finding]:
    for obj in json_objects(report):
        for key, value in obj.items():
            if normalise(key) == "findings" and isinstance(value, list):
                return [_json_finding(item) for item in value]
    findings: list[Finding] = []
    for section in sections(report):
        if normalise(section.title).split(" ")[0] == "findings":  # also "Findings (3)"
            findings += _markdown_findings(section)
    return findings


def grade_problem(finding: Finding, grades: Sequence[str]) -> str | None:
    """Why a finding does not carry exactly one of the grades, or ``None``."""
    if finding.from_json:
        if finding.severity is None:
            return "no `severity` value"
        matching = [g for g in grades if str(finding.severity).strip().casefold() == g.casefold()]
        return None if matching else f"severity `{finding.severity}` is not one of the grades"
    found = marked_grades(finding.head, grades) or marked_grades(f"{finding.head}\n{finding.body}", grades)
    if len(found) == 1:
        return None
    return f"several grades ({', '.join(found)})" if found else "no severity grade"


def marked_grades(text: str, grades: Sequence[str]) -> list[str]:
    return [g for g in grades if any(marker.search(text) for marker in _markers(g))]


@lru_cache(maxsize=64)
def _markers(grade: str) -> list[re.Pattern[str]]:
    g = re.escape(grade)
    return [re.compile(p, re.I | re.M) for p in (
        rf"[\[(]\s*{g}\s*[\])]",
        rf"(?<![\w*`])(\*\*|__|\*|_|`){g}\1(?![\w*`])",
        rf"^\W*?{g}(?:\s*:|\s+[-–—|]\s)",
        rf"\bseverity\b\s*[:=\-–—]?\s*(?:\*\*|__|`)?{g}(?!\w)",
        rf"(?<!\w){g}\s+severity\b",
    )]


def _json_finding(item: JSON) -> Finding:
    if isinstance(item, str):
        return Finding(item)
    if not isinstance(item, dict):
        return Finding(json.dumps(item), from_json=True)
    severity = next((v for k, v in item.items() if normalise(k) == "severity"), None)
    summary = next((item[k] for k in _LABEL_KEYS if isinstance(item.get(k), str)), json.dumps(item, default=str))
    # An object without `severity` is ungraded: its other text is not searched for a marker.
    return Finding(summary, severity=severity, from_json=True)


def _markdown_findings(section: Section) -> list[Finding]:
    lines = list(section.body)
    in_code = code_lines(lines)
    levels = heading_levels(lines, in_code)
    if any(levels):
        top = min(level for level in levels if level)
        starts = [i for i, level in enumerate(levels) if level == top]
        heads = [heading_title(lines[i]) for i in starts]
    else:
        items = [(i, m) for i, line in enumerate(lines) if not in_code[i] and (m := _ITEM.match(line))]
        top_indent = min((len(m[1]) for _, m in items), default=0)
        starts = [i for i, m in items if len(m[1]) == top_indent]
        heads = [m[2] for i, m in items if len(m[1]) == top_indent]
    ends = starts[1:] + [len(lines)]
    return [Finding(head, "\n".join(lines[start + 1:end])) for head, start, end in zip(heads, starts, ends, strict=False)]


KIND = Kind("severity-grades", {"grades": "str-list"}, GradesParams.read, Report, gather, severity_grades)
