"""no-blanket-suppressions: the change silences no check wholesale.

A check that fails can be made to pass by telling the checker to look away: a `# noqa` with no code, a
file-level `# ruff: noqa` or `# flake8: noqa`, `# mypy: ignore-errors`, a bare `# type: ignore`,
`# pylint: disable=all` or `skip-file`, `# pyright: ignore` with no rule, `/* eslint-disable */` or an
`eslint-disable-line` naming no rule, `// @ts-nocheck` and `// @ts-ignore`, a crate-level `#![allow(...)]`
or an `#[allow(warnings)]`/`#[allow(clippy::all)]`, a `//nolint` naming no linter, a coverage tool's
`c8 ignore start`/`istanbul ignore file`. Each such line the change adds is a finding, unless the task
allows suppressions in that file (``allowed``: the task's `[verification] allow-suppressions`).

A suppression that names its rules but holds for a whole file is one too: inline type-checker configuration
(`# mypy: disable-error-code=...`, `# pyright: basic`), a file-level `# ruff: noqa: F401`, a `pylint: disable`
or `type: ignore` on a line of its own, an `/* eslint-disable rule */` block.

A targeted suppression (`# noqa: E501`, `# type: ignore[attr-defined]`, `// eslint-disable-next-line
no-console`, `#[allow(dead_code)]` on one item, `//nolint:errcheck`) names what it silences and where, a
reviewer can judge it, and it is not a finding.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from runtime.verify.kinds.base import take_str_list
from runtime.verify.kinds.findings import Finding, Findings, added_lines, changed_texts, cut, judge_findings
from runtime.verify.kinds.kind import Gathering, Kind
from runtime.verify.kinds.result import VerifyResult

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONObject


@dataclass(frozen=True, slots=True)
class SuppressionsParams:
    """no-blanket-suppressions: the files the task lets hold one (none when the atom does not say)."""

    allowed: tuple[str, ...] = ()

    @classmethod
    def read(cls, data: JSONObject) -> SuppressionsParams:
        return cls(tuple(take_str_list(data, "allowed", "parameter")) if "allowed" in data else ())

# (pattern over one added line, what it does). Written for the comment forms the tools read; a pattern
# inside a string may be flagged too, which costs the agent a word of explanation, never a bypass.
RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"#\s*(?:ruff|flake8)\s*:\s*noqa\b(?!\s*:\s*[A-Z]+\d)", re.I), "a file-level `noqa` silences the whole file"),
    (re.compile(r"#\s*(?:ruff|flake8)\s*:\s*noqa\b", re.I),
     "a file-level `noqa` silences its rules in the whole file, every line to come included (name them on the lines "
     "that need them)"),
    (re.compile(r"#\s*noqa(?!\s*:\s*[A-Z]+\d)", re.I), "`noqa` without a code silences every check on the line"),
    (re.compile(r"#\s*mypy\s*:\s*ignore-errors\b"), "`mypy: ignore-errors` silences the type checker for the whole file"),
    (re.compile(r"#\s*mypy\s*:"), "inline mypy configuration changes what the type checker checks in the whole file"),
    (re.compile(r"^\s*#\s*type\s*:\s*ignore\b"), "a `type: ignore` on a line of its own silences the type checker for "
                                                 "the whole file (at its top) or for nothing anyone can see"),
    (re.compile(r"#\s*type\s*:\s*ignore(?!\s*\[)"), "a bare `type: ignore` silences every type error on the line"),
    (re.compile(r"#\s*pyright\s*:(?!\s*(?:strict\b|ignore\s*\[))"), "inline pyright configuration or a suppression naming "
                                                                  "no rule"),
    (re.compile(r"#\s*(?:pyre-ignore-all-errors|pytype\s*:\s*skip-file)"), "the type checker silenced for the whole file"),
    (re.compile(r"#\s*pylint\s*:\s*(?:disable\s*=\s*all\b|skip-file\b)"), "pylint silenced for everything"),
    (re.compile(r"^\s*#\s*pylint\s*:\s*disable\b"), "a `pylint: disable` on a line of its own silences those checks for "
                                                   "the rest of its scope (keep it on the line that needs it)"),
    (re.compile(r"eslint-disable(?:-next-line|-line)?\s*(?:\*/|$)"), "`eslint-disable` naming no rule silences the linter"),
    (re.compile(r"eslint-disable(?!-next-line|-line)\b"), "an `eslint-disable` block silences its rules for the rest of the "
                                                          "file (use `eslint-disable-next-line RULE` where it is needed)"),
    (re.compile(r"@ts-nocheck\b"), "`@ts-nocheck` turns type checking off for the file"),
    (re.compile(r"@ts-ignore\b"), "`@ts-ignore` silences every type error on the next line (use `@ts-expect-error` with "
                                  "a reason, or fix the type)"),
    (re.compile(r"^\s*#!\[\s*allow\s*\("), "a crate- or module-level `#![allow(...)]` silences lints for everything below"),
    (re.compile(r"#\[\s*allow\s*\(\s*(?:warnings|clippy::all|clippy::pedantic|unused)\s*\)"),
     "an `allow` of a whole lint group"),
    (re.compile(r"//\s*nolint\b(?!:)"), "`//nolint` naming no linter silences every linter"),
    (re.compile(r"(?:c8|istanbul|v8)\s+ignore\s+(?:start|file)\b"), "code taken out of the coverage measure"),
)


async def gather(params: SuppressionsParams, gathering: Gathering) -> Findings:
    findings: list[Finding] = []
    for change, before, after in changed_texts(gathering):
        for number, line in added_lines(before, after):
            for pattern, what in RULES:
                if pattern.search(line):
                    findings.append(Finding(path=change.path, line=number, what=what, text=cut(line)))
                    break
    return Findings(findings=findings)


def no_blanket_suppressions(params: SuppressionsParams, evidence: Findings) -> VerifyResult:
    return judge_findings(
        params.allowed, evidence,
        head="The change silences checks wholesale instead of meeting them",
        advice="Fix what the checker reports; where a suppression is truly needed, name the one rule and keep it to "
               "the line (`# noqa: E501`, `# type: ignore[attr-defined]`, `// eslint-disable-next-line no-console`).",
        ok="no blanket suppression was added")


KIND = Kind("no-blanket-suppressions", {"allowed": "glob-list"}, SuppressionsParams.read, Findings, gather,
            no_blanket_suppressions,
            optional=frozenset({"allowed"}))
