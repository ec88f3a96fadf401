"""Where attestations live: a git note on the commit under ``refs/notes/agent-runtime`` (pushed and fetched with
that ref, kept through merges of the commit, since the commit itself is kept), and a file in the run's folder.

Reading them back is `runtime.attest.verdict`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.attest.envelope import envelope, pae
from runtime.attest.signing import SigningKey, ensure_key, sign
from runtime.attest.statement import Predicate, Statement, statement

if TYPE_CHECKING:
    from runtime.workspace.git import Git

NOTES_REF = "refs/notes/agent-runtime"


@dataclass(frozen=True)
class Made:
    """An attestation as it was stored: its statement, the note's text, and the run folder's file."""

    statement: Statement
    text: str
    file: Path | None


def attest(git: Git, commit: str, name: str, predicate: Predicate, folder: Path | None,
           key: SigningKey | None = None) -> Made:
    """Sign a statement of ``commit`` (subject ``name``: its branch) and store it: the note, and
    ``<folder>/attestations/<commit>.intoto.json`` when a run folder is given."""
    key = key or ensure_key()
    tree = git.tree_of(commit)
    said = statement(commit, tree, name, predicate)
    body = said.to_json()
    signed = envelope(body, key.fingerprint, sign(key, pae("application/vnd.in-toto+json", body)))
    text = signed.to_text()
    git.add_note(NOTES_REF, commit, text)
    file = None
    if folder is not None:
        file = folder / "attestations" / f"{commit}.intoto.json"
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(text, encoding="utf-8")
    return Made(said, text, file)
