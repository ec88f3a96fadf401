"""Curation: pending learnings become facts (with provenance) or are discarded, once.

A reviewer's ``learn`` text is kept as a pending learning
(``MemoryWriter.add_pending_learning``); it is not a fact, and neither
``facts()`` nor ``search()`` returns it. A curator (a model with a strict
schema, or a person) decides per learning:

- ``promote``: a fact is added, by default with the learning's text (``texts``
  may give the curator's rewording), the learning's run as its ``run_id`` and
  a ``learning_id`` linking it to its origin; the learning becomes
  ``promoted``.
- ``discard``: the learning becomes ``discarded`` (``reasons`` may say why) and
  is kept, for the record.

All decisions of one call are applied in one transaction: an unknown id, an
unknown verdict, or a learning already curated refuses the whole call and
changes nothing. The store backs this up: a curated learning's status cannot
change again, and a fact can only be made from a pending learning.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal, TypeAlias

from runtime.memory.errors import CurationError
from runtime.memory.records import LearningStatus, now, valid_name, valid_tags, valid_text
from runtime.memory.writer import MemoryWriter

# A curator's decision on one learning. Literal rather than an enum: `runtime memory curate` prints a `Curated`
# as its dataclass shows itself, where an enum member would read `<...: 'promote'>`.
Verdict: TypeAlias = Literal["promote", "discard"]
VERDICTS: tuple[Verdict, ...] = ("promote", "discard")


@dataclass(frozen=True)
class Curated:
    """What one decision did: the learning, its verdict and, when promoted, the new fact's entry id."""

    learning_id: int
    verdict: Verdict
    fact_id: int | None


def _ids(field: str, mapping: Mapping[int, object] | None, allowed: set[int]) -> dict[int, object]:
    if mapping is None:
        return {}
    extra = sorted(set(mapping) - allowed)
    if extra:
        raise ValueError(f"{field} names learnings that are not promoted here: {extra}")
    return dict(mapping)


def curate(writer: MemoryWriter, decisions: Mapping[int, str], *,
           texts: Mapping[int, str] | None = None,
           tags: Mapping[int, Iterable[str]] | None = None,
           reasons: Mapping[int, str] | None = None,
           curator: str = "curator") -> list[Curated]:
    """Apply ``decisions`` ({learning id: "promote" | "discard"}); returns what each did, by id.

    ``texts`` and ``tags`` apply to promoted learnings (the fact's text and
    tags), ``reasons`` to any; ``curator`` is recorded as the fact's
    ``source`` and the learning's ``curated_by``.
    """
    if type(writer) is not MemoryWriter:
        raise TypeError("curate needs the MemoryWriter of the meta-validation step")
    if not isinstance(decisions, Mapping):
        raise TypeError("decisions must map learning ids to 'promote' or 'discard'")
    verdicts: dict[int, Verdict] = {}
    for learning_id, verdict in decisions.items():
        if not isinstance(learning_id, int) or isinstance(learning_id, bool):
            raise TypeError(f"a learning id is an integer: {learning_id!r}")
        known = next((v for v in VERDICTS if v == verdict), None)
        if known is None:
            raise ValueError(f"learning {learning_id}: the verdict is 'promote' or 'discard', "
                             f"not {verdict!r}")
        verdicts[learning_id] = known
    promoted = {i for i, v in verdicts.items() if v == "promote"}
    fact_texts = {i: valid_text(f"texts[{i}]", t) for i, t in _ids("texts", texts, promoted).items()}
    fact_tags = {i: valid_tags(t) for i, t in _ids("tags", tags, promoted).items()}
    why = {i: valid_text(f"reasons[{i}]", r) for i, r in _ids("reasons", reasons, set(decisions)).items()}
    curator = valid_name("curator", curator)
    if not decisions:
        return []

    order = sorted(decisions)
    done: list[Curated] = []
    with writer._transaction() as conn:
        marks = ", ".join("?" * len(order))
        rows = {row["id"]: row for row in conn.execute(
            f"SELECT id, run_id, text, status, curated_at FROM learnings WHERE id IN ({marks})", order)}
        unknown = [i for i in order if i not in rows]
        if unknown:
            raise CurationError(f"{writer.path}: no such learning: {', '.join(map(str, unknown))}")
        for i in order:
            if rows[i]["status"] != "pending":
                raise CurationError(f"{writer.path}: learning {i} was already curated "
                                    f"({rows[i]['status']} at {rows[i]['curated_at']}); "
                                    "a learning is curated once")
        when = now()
        for i in order:
            verdict = verdicts[i]
            fact_id = None
            if verdict == "promote":
                fact_id = writer._insert_fact(conn, fact_texts.get(i, rows[i]["text"]), fact_tags.get(i, ()),
                                              curator, rows[i]["run_id"], i)
            status: LearningStatus = "promoted" if verdict == "promote" else "discarded"
            cur = conn.execute(
                "UPDATE learnings SET status = ?, curated_at = ?, curated_by = ?, reason = ? "
                "WHERE id = ? AND status = 'pending'", (status, when, curator, why.get(i), i))
            if cur.rowcount != 1:
                raise CurationError(f"{writer.path}: learning {i} changed while being curated")
            done.append(Curated(i, verdict, fact_id))
    return done
