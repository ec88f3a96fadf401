"""review: a model reads the change against the task for what no check can prove (special-casing the inputs
the tests use, code that knows its tests, a comparison that lies, behaviour kept for the tests' calls), and what
it finds sends the work to a person: the outcome is `needs-review`, never a silent `ok`.

The reviewer is asked only where the task says so (`[verification] review = true`), after every other check
has run. It fails closed: a reviewer that cannot be reached or answers outside its schema sends the work to a
person too. Its words are a model's: they are a reason to look, never a verdict on their own.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from runtime.verify.kinds.base import MAX_LISTED, MalformedInput, listing
from runtime.verify.kinds.kind import Evidence, Gathering, Kind, ReviewVerdict
from runtime.verify.kinds.result import VerifyResult, passed, rejected

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONObject

MAX_DIFF_CHARS = 120_000


@dataclass(frozen=True, slots=True)
class ReviewParams:
    """review: whether the task asks for a review."""

    enabled: bool

    @classmethod
    def read(cls, data: JSONObject) -> ReviewParams:
        enabled = data.get("enabled")
        if not isinstance(enabled, bool):
            raise MalformedInput("parameter `enabled` must be a boolean")
        return cls(enabled)


class ReviewEvidence(Evidence):
    """What the reviewer said of the change: ``asked`` (the task asked for a review), its ``verdict`` (`ok`,
    `concerns`, or `unavailable`: it could not answer), its ``findings`` and, when unavailable, ``why``."""

    asked: bool
    verdict: ReviewVerdict
    findings: list[str] = []
    why: str = ""


def change_text(gathering: Gathering, limit: int = MAX_DIFF_CHARS) -> str:
    """The change as a unified diff against the base (text files; others named), cut at ``limit`` characters."""
    parts: list[str] = []
    size = 0
    for change in gathering.changes:
        old = change.old_path or change.path
        before = "" if change.kind == "added" else (gathering.base_text(old) or "")
        after = "" if change.kind == "deleted" else (gathering.text(change.path) or "")
        if change.kind not in ("added", "deleted") and before == after and change.kind != "renamed":
            continue
        diff = "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                            f"a/{old}", f"b/{change.path}"))
        part = diff or f"{change.kind}: {change.path} (no text to show)\n"
        if size + len(part) > limit:
            parts.append(f"[... the change goes on: {len(gathering.changes)} file(s) in all ...]\n")
            break
        parts.append(part)
        size += len(part)
    return "".join(parts)


async def gather(params: ReviewParams, gathering: Gathering) -> ReviewEvidence:
    if not params.enabled:
        return ReviewEvidence(asked=False, verdict="ok")
    reviewed = await gathering.review(change_text(gathering))
    return ReviewEvidence(asked=True, verdict=reviewed.verdict, findings=list(reviewed.findings), why=reviewed.why)


def review(params: ReviewParams, evidence: ReviewEvidence) -> VerifyResult:
    if not params.enabled or not evidence.asked:
        return passed("no review was asked")
    if evidence.verdict == "ok":
        return passed("the reviewer read the change and found nothing for a person to look at")
    if evidence.verdict == "unavailable":
        why = f"the reviewer could not answer ({evidence.why}): a person reads the change instead"
        return rejected(why, {"verdict": "unavailable"}, review=[why])
    findings = evidence.findings or ["the reviewer has concerns it did not name"]
    return rejected(f"The reviewer read the change against the task and asks a person to look ({len(findings)}):\n"
                    + listing(findings, MAX_LISTED), {"verdict": "concerns", "findings": len(findings)},
                    review=findings)


# After the other checks (with the command kinds), once: never on a merge's re-check or an import's.
KIND = Kind("review", {"enabled": "bool"}, ReviewParams.read, ReviewEvidence, gather, review, runs_commands=True,
            on_merge=False)
