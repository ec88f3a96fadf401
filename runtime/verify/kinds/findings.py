"""What the static kinds share: a finding at a file's line, the lines a change added, and which files are the
repository's tests.

A finding names a path, a line (0: the whole file) and what is wrong in words the agent can act on. The
gatherers of the static kinds compute findings from the change (they read files through ``Gathering``); their
judges only filter them by what the task allows, so an atom's examples can state findings directly.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from runtime.verify.kinds.base import MAX_LISTED, compile_globs, listing
from runtime.verify.kinds.kind import Change, Evidence, Gathering
from runtime.verify.kinds.result import VerifyResult, passed, rejected

# Where a repository keeps its tests, by the conventions of the ecosystems the runtime reads: test folders,
# pytest's and go's file names, the JavaScript runners' suffixes, fixtures beside them.
TEST_GLOBS = (
    "tests/**", "test/**", "**/tests/**", "**/test/**", "testing/**", "spec/**", "**/spec/**", "**/__tests__/**",
    "**/testdata/**", "**/test_*.py", "**/*_test.py", "**/conftest.py", "**/*_test.go", "**/*.test.*", "**/*.spec.*",
    "test_*.py", "*_test.py", "conftest.py", "*_test.go", "*.test.*", "*.spec.*",
)


class Finding(Evidence):
    """One thing the change did that a static kind judges: where (``line`` 0 for the whole file) and what."""

    path: str
    line: int = 0
    what: str
    text: str = ""  # the line itself, cut


class Findings(Evidence):
    """A static kind's evidence: what its gatherer found in the change."""

    findings: list[Finding]


# The folders tests live in (a conftest.py there is part of the tests; anywhere else it configures the run).
TEST_FOLDERS = ("tests/**", "test/**", "**/tests/**", "**/test/**", "testing/**", "spec/**", "**/spec/**",
                "**/__tests__/**")


def where(finding: Finding) -> str:
    return f"{finding.path}:{finding.line}" if finding.line else finding.path


def added_lines(before: str | None, after: str) -> list[tuple[int, str]]:
    """(line number in ``after``, text) of each line the change added (every line of a new file)."""
    new = after.splitlines()
    if before is None:
        return list(enumerate(new, 1))
    out = []
    matcher = difflib.SequenceMatcher(None, before.splitlines(), new, autojunk=False)
    for op, _, _, j1, j2 in matcher.get_opcodes():
        if op in ("insert", "replace"):
            out += [(j + 1, new[j]) for j in range(j1, j2)]
    return out


def changed_texts(gathering: Gathering) -> list[tuple[Change, str | None, str]]:
    """(change, the base's text, the work's text) of every added, modified or renamed small text file."""
    out = []
    for change in gathering.changes:
        if change.kind == "deleted" or change.escapes:
            continue
        text = gathering.text(change.path)
        if text is None:
            continue
        before = None if change.kind == "added" else gathering.base_text(change.old_path or change.path)
        out.append((change, before, text))
    return out


def cut(text: str, limit: int = 160) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + "..."


def judge_findings(allow: Sequence[str], evidence: Findings, *, head: str, advice: str, ok: str) -> VerifyResult:
    """Rejected with every finding outside the globs ``allow`` (the task's word), else passed."""
    allowed = compile_globs(allow)
    left = [f for f in evidence.findings if allowed is None or not allowed.match(f.path)]
    if not left:
        let = len(evidence.findings) - len(left)
        return passed(ok + (f" ({let} the task allows)" if let else ""), {"findings": 0})
    items = [f"`{where(f)}`: {f.what}" + (f" (`{f.text}`)" if f.text else "") for f in left]
    return rejected(f"{head} ({len(left)}):\n{listing(items, MAX_LISTED)}\n{advice}", {"findings": len(left)})


def matches(globs: Sequence[str], path: str) -> bool:
    rx = compile_globs(list(globs))
    return rx is not None and rx.match(path) is not None
