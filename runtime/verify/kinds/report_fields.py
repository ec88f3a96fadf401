"""report-fields: the agent's final report fills in every field the task asks for.

The orchestrator, or the next agent, reads these fields; a report without them
cannot be used. Evidence::

    {"report": "<the agent's final message>"}

The report is parsed (see ``report_text``): a field is present when it is a
key of the JSON report (or of a fenced ```json object), a ``Field: value``
line, or a ``## Field`` heading with content under it. Names compare
case-insensitively with ``-``, ``_`` and spaces alike. A field whose value has
no letter or digit (empty, ``-``, ``...``, ``[]``) counts as missing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from runtime.verify.kinds.base import take_str_list
from runtime.verify.kinds.kind import Evidence, Gathering, Kind
from runtime.verify.kinds.report_text import has_content, json_objects, normalise, sections
from runtime.verify.kinds.result import VerifyResult, passed, rejected

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONObject


@dataclass(frozen=True, slots=True)
class ReportFieldsParams:
    """report-fields: the fields the report must fill in."""

    fields: tuple[str, ...]

    @classmethod
    def read(cls, data: JSONObject) -> ReportFieldsParams:
        return cls(tuple(take_str_list(data, "fields", "parameter")))


class Report(Evidence):
    """report-fields, severity-grades: the agent's final report."""

    report: str


# Shared with severity-grades, whose parameters are of another record: it reads none of either.
async def gather(params: object, gathering: Gathering) -> Report:
    return Report(report=gathering.report)


def filled_fields(report: str) -> set[str]:
    """Normalised names of the fields the report fills in, in any form."""
    filled = {normalise(k) for obj in json_objects(report) for k, v in obj.items() if has_content(v)}
    filled |= {normalise(s.title) for s in sections(report) if s.has_content()}
    return filled


def report_fields(params: ReportFieldsParams, evidence: Report) -> VerifyResult:
    fields = params.fields
    report = evidence.report
    filled = filled_fields(report)
    missing = [f for f in fields if normalise(f) not in filled]
    if not missing:
        return passed(f"the report fills in all {len(fields)} required field(s)", {"fields": len(fields)})
    return rejected(
        f"Your final report is missing {len(missing)} required field(s), or leaves them empty: "
        f"{', '.join(f'`{f}`' for f in missing)}.\n"
        "Give each one a value, as a `Field: value` line or a `## Field` heading followed by its content.",
        {"fields": len(fields), "missing": missing},
    )


KIND = Kind("report-fields", {"fields": "str-list"}, ReportFieldsParams.read, Report, gather, report_fields)
