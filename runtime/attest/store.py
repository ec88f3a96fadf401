"""Where attestations live: a git note on the commit under ``refs/notes/agent-runtime`` (pushed and fetched with
that ref, kept through merges of the commit, since the commit itself is kept), and a file in the run's folder.

Reading them back is `runtime.attest.verdict`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.attest.envelope import PAYLOAD_TYPE, envelope, pae
from runtime.attest.signing import SigningKey, ensure_key, sign_all
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


def signed_all(git: Git, subjects: list[tuple[str, str, Predicate]], key: SigningKey | None = None) -> list[Made]:
    """Signed statements of each (commit, name, predicate: the commit's subject name is its branch), not yet
    stored; one `ssh-keygen` for them all."""
    key = key or ensure_key()
    said = [statement(commit, git.tree_of(commit), name, predicate) for commit, name, predicate in subjects]
    bodies = [one.to_json() for one in said]
    signatures = sign_all(key, [pae(PAYLOAD_TYPE, body) for body in bodies])
    return [Made(one, envelope(body, key.fingerprint, sig).to_text(), None)
            for one, body, sig in zip(said, bodies, signatures, strict=True)]


def attest(git: Git, commit: str, name: str, predicate: Predicate, folder: Path | None,
           key: SigningKey | None = None) -> Made:
    """Sign a statement of ``commit`` and store it: the note, and ``<folder>/attestations/<commit>.intoto.json``
    when a run folder is given."""
    (made,) = signed_all(git, [(commit, name, predicate)], key)
    git.add_notes(NOTES_REF, [(commit, made.text)])
    return _filed(made, folder)


def attest_all(git: Git, made: list[Made], folder: Path | None) -> None:
    """Store signed statements together: one notes commit for them all (a plan's integrations, one git process
    per round of merges rather than one per merge)."""
    if made:
        git.add_notes(NOTES_REF, [(m.statement.commit, m.text) for m in made])
        for one in made:
            _filed(one, folder)


def _filed(made: Made, folder: Path | None) -> Made:
    if folder is None:
        return made
    file = folder / "attestations" / f"{made.statement.commit}.intoto.json"
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(made.text, encoding="utf-8")
    return Made(made.statement, made.text, file)
