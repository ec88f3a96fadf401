"""What the memory holds, as its readers see it, and the checks every value passes before a write.

``Entry`` is an accepted result or a curated fact; ``Learning`` a reviewer's
text waiting for (or past) curation. The ``valid_*`` functions raise
``TypeError`` or ``ValueError`` naming the field: a caller's mistake, not a
store failure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal, TypeAlias

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONDict

MAX_TEXT = 65536
MAX_NAME = 256
MAX_TAGS = 32
MAX_LIMIT = 1000
MAX_QUERY_WORDS = 32

_TAG_RE = re.compile(r"[^\s\x00-\x1f\x7f]{1,64}")
_COMMIT_RE = re.compile(r"[0-9a-f]{7,64}")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
_WORD_RE = re.compile(r"\w+")


@dataclass(frozen=True)
class Entry:
    """One accepted result or one fact, as the planner reads it.

    For a result, ``title`` is the subtask's goal and ``body`` its summary;
    ``subtask_id``, ``role``, ``branch`` and ``commit`` are set. For a fact,
    ``title`` is empty and ``body`` is the fact; ``learning_id`` names the
    learning it was promoted from (None when added directly). ``score`` is
    set by ``search`` (higher is more relevant), None elsewhere.
    """

    id: int
    kind: Literal["result", "fact"]
    title: str
    body: str
    tags: tuple[str, ...]
    source: str
    run_id: str | None
    created_at: str
    subtask_id: str | None = None
    role: str | None = None
    branch: str | None = None
    commit: str | None = None
    learning_id: int | None = None
    score: float | None = None

    def to_dict(self) -> JSONDict:
        data: JSONDict = asdict(self)
        data["tags"] = list(self.tags)
        return data


# A learning's status: pending until curated, then promoted or discarded (the store's table checks it too).
LearningStatus: TypeAlias = Literal["pending", "promoted", "discarded"]


@dataclass(frozen=True)
class Learning:
    """A reviewer's ``learn`` text: pending until curated, then promoted (``fact_id``) or discarded."""

    id: int
    run_id: str
    text: str
    source: str
    status: LearningStatus
    created_at: str
    curated_at: str | None
    curated_by: str | None
    reason: str | None
    fact_id: int | None




def now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def valid_name(field: str, value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{field} must be a string, not {type(value).__name__}")
    if not value.strip() or value != value.strip() or len(value) > MAX_NAME or _CONTROL_RE.search(value):
        raise ValueError(f"{field} must be 1 to {MAX_NAME} characters, without surrounding spaces "
                         f"or control characters: {value!r}")
    return value


def valid_text(field: str, value: object, *, empty: bool = False) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{field} must be a string, not {type(value).__name__}")
    if (not empty and not value.strip()) or len(value) > MAX_TEXT or "\x00" in value:
        raise ValueError(f"{field} must be {'' if empty else 'non-empty '}text of at most "
                         f"{MAX_TEXT} characters, without NUL")
    return value


def tag_list(tags: object) -> list[str]:
    if isinstance(tags, (str, bytes)):
        raise TypeError("tags must be a list of strings, not one string")
    if not isinstance(tags, Iterable):
        raise TypeError(f"tags must be a list of strings, not {type(tags).__name__}")
    out: list[str] = []
    for tag in tags:
        if not isinstance(tag, str):
            raise TypeError(f"a tag must be a string, not {type(tag).__name__}")
        if tag not in out:
            out.append(tag)
    return out


def valid_tags(tags: object) -> tuple[str, ...]:
    out = tag_list(tags)
    for tag in out:
        if not _TAG_RE.fullmatch(tag):
            raise ValueError(f"a tag is 1 to 64 characters without spaces or control characters: {tag!r}")
    if len(out) > MAX_TAGS:
        raise ValueError(f"at most {MAX_TAGS} tags, got {len(out)}")
    return tuple(sorted(out))


def valid_limit(limit: object) -> int:
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be an integer from 1 to {MAX_LIMIT}: {limit!r}")
    return limit


def match_expression(query: str) -> str | None:
    """The FTS5 expression for a free-text query: its words, quoted, joined with OR (None if none).

    Quoting every word keeps FTS5's own syntax (``-``, ``:``, ``NEAR``, ``*``,
    quotes, column filters) out of the planner's hands: a query is only words.
    """
    if not isinstance(query, str):
        raise TypeError(f"query must be a string, not {type(query).__name__}")
    words: list[str] = []
    for word in _WORD_RE.findall(query.lower()):
        if word not in words:
            words.append(word)
    if not words:
        return None
    return " OR ".join(f'"{w}"' for w in words[:MAX_QUERY_WORDS])


def valid_commit(commit: object) -> str:
    if not isinstance(commit, str) or not _COMMIT_RE.fullmatch(commit):
        raise ValueError(f"commit must be a lowercase hex commit id (7 to 64 digits): {commit!r}")
    return commit
