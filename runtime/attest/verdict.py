"""Checking attestations: of one commit, of a range, or of what a push brings (a server's `pre-receive` hook).

A commit's finding is one of:

- ``valid``: its note is a DSSE envelope signed by a key the trust root allows, whose statement names this very
  commit and tree, whose predicate says the work was verified (or the merge made by the orchestrator, of these
  parents), and whose facts agree with what the commit's own trailers say (`Agent-Id`, `Task-Sha256`);
- ``invalid``: it has a note, and something above does not hold (a tampered note, a commit rewritten after the
  fact and the note copied over, another key): always a refusal;
- ``unattested``: no note, but the commit says it is the runtime's (an `Agent-Id:` or `Run:` trailer, as every
  commit the orchestrator makes has): refused where attestations are required;
- ``plain``: no note and no such trailer (a person's commit): refused only where every commit must be attested.

Reading works in a bare repository and inside a `pre-receive` hook: there the pushed objects sit in a quarantine
that git names in the hook's environment, and the pushed notes are a new commit of the notes ref, before the ref
moves.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from pydantic import ValidationError

from runtime.attest.envelope import Envelope, EnvelopeError, signature_bytes
from runtime.attest.signing import SignatureError, TrustRoot
from runtime.attest.statement import Statement
from runtime.attest.store import NOTES_REF
from runtime.errors import FatalError
from runtime.workspace.git import HARDENING

ZERO = "0" * 40
_KEPT_ENV = ("GIT_QUARANTINE_PATH", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES")
_TRAILER = re.compile(r"^(Agent-Id|Run|Task-Sha256|Verified): ?(.*)$", re.MULTILINE)
MAX_NOTE_BYTES = 4 * 1024 * 1024


class Status(StrEnum):
    VALID = "valid"
    INVALID = "invalid"
    UNATTESTED = "unattested"
    PLAIN = "plain"


class Require(StrEnum):
    """What must be attested: nothing beyond what has a note (``none``), every commit that says it is the
    runtime's (``agent``), every commit (``all``)."""

    NONE = "none"
    AGENT = "agent"
    ALL = "all"


@dataclass(frozen=True)
class Finding:
    commit: str
    status: Status
    reason: str
    statement: Statement | None = None
    signer: str | None = None  # the principal the trust root names for the key that signed

    def passes(self, require: Require) -> bool:
        if self.status == Status.INVALID:
            return False
        if self.status == Status.UNATTESTED:
            return require == Require.NONE
        if self.status == Status.PLAIN:
            return require != Require.ALL
        return True


class Repo:
    """A repository read with git (a bare one too), keeping the hook environment's quarantine when there is one."""

    def __init__(self, path: str | os.PathLike[str] = ".") -> None:
        self.path = os.fspath(path)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in _KEPT_ENV}
        self.env.update(GIT_TERMINAL_PROMPT="0", GIT_CONFIG_NOSYSTEM="1", LC_ALL="C")

    def git(self, *args: str, input: bytes | None = None, ok: tuple[int, ...] = (0,)) -> bytes:
        proc = subprocess.run(["git", "-C", self.path, *HARDENING, *args], input=input if input is not None else b"",
                              capture_output=True, env=self.env, timeout=300, check=False)
        if proc.returncode not in ok:
            said = proc.stderr.decode("utf-8", errors="replace").strip().splitlines()
            raise FatalError(f"git {' '.join(args[:3])}: {said[-1] if said else f'exit {proc.returncode}'}")
        return proc.stdout

    def resolve(self, rev: str) -> str | None:
        out = self.git("rev-parse", "-q", "--verify", "--end-of-options", f"{rev}^{{commit}}", ok=(0, 1)).strip()
        return out.decode("ascii") if out else None


@dataclass(frozen=True)
class Commit:
    commit: str
    tree: str
    parents: tuple[str, ...]
    message: str

    def trailers(self) -> dict[str, str]:
        """The runtime's trailers in the message (the last of each name, as git's trailer rules read the end)."""
        return {m.group(1): m.group(2).strip() for m in _TRAILER.finditer(self.message)}

    @property
    def claims(self) -> bool:
        names = self.trailers()
        return "Agent-Id" in names or "Run" in names


def commits(repo: Repo, revs: Iterable[str], *, new_only: bool = False) -> list[Commit]:
    """The commits ``revs`` name (a commit, a range, `^excluded`...), newest first; ``new_only``: those no ref
    reaches yet."""
    args = list(revs)
    if not args:
        return []
    for rev in args:
        if rev.startswith("-"):
            raise FatalError(f"not a revision: {rev!r}")
    out = repo.git("log", "--no-color", "--format=%H%x00%T%x00%P%x00%B%x01", *args, *(["--not", "--all"] if new_only else []),
                   "--")
    found = []
    for chunk in out.decode("utf-8", errors="replace").split("\x01"):
        chunk = chunk.lstrip("\n")
        if not chunk:
            continue
        commit, tree, parents, message = chunk.split("\x00", 3)
        found.append(Commit(commit, tree, tuple(parents.split()), message))
    return found


def notes_at(repo: Repo, notes: str) -> dict[str, str]:
    """commit -> note blob, of the notes commit ``notes`` (a ref or a commit id); empty when there is none."""
    if repo.resolve(notes) is None:
        return {}
    found: dict[str, str] = {}
    for entry in repo.git("ls-tree", "-r", "-z", "--end-of-options", notes).split(b"\0"):
        meta, _, path = entry.partition(b"\t")
        parts = meta.split()
        if len(parts) == 3 and parts[1] == b"blob":
            found[path.replace(b"/", b"").decode("ascii", errors="replace")] = parts[2].decode("ascii")
    return found


def blobs(repo: Repo, ids: list[str]) -> dict[str, bytes]:
    """The bytes of each blob of ``ids`` (one `cat-file --batch`); one larger than a note can be is left out."""
    if not ids:
        return {}
    out = repo.git("cat-file", "--batch", input=("\n".join(ids) + "\n").encode("ascii"))
    found: dict[str, bytes] = {}
    at = 0
    for oid in ids:
        end = out.index(b"\n", at)
        header = out[at:end].split()
        at = end + 1
        if len(header) == 3 and header[1] == b"blob":
            size = int(header[2])
            if size <= MAX_NOTE_BYTES:
                found[oid] = out[at:at + size]
            at += size + 1
    return found


def judge(commit: Commit, note: bytes | None, trust: TrustRoot) -> Finding:
    """The finding on one commit, given its note's bytes (None: it has none)."""
    if note is None:
        if commit.claims:
            return Finding(commit.commit, Status.UNATTESTED, "the commit says it is the runtime's (its trailers name an "
                           "agent or a run) but carries no attestation")
        return Finding(commit.commit, Status.PLAIN, "not the runtime's commit, and no attestation")

    def invalid(why: str, said: Statement | None = None, signer: str | None = None) -> Finding:
        return Finding(commit.commit, Status.INVALID, why, said, signer)

    try:
        sealed = Envelope.parse(note)
        body = sealed.body
        signer = None
        problems = []
        for signature in sealed.signatures:
            try:
                signer = trust.check(sealed.signed_bytes(), signature_bytes(signature))
                break
            except (SignatureError, EnvelopeError) as exc:
                problems.append(str(exc))
        if signer is None:
            return invalid(f"its signature does not hold: {'; '.join(problems)}")
        said = Statement.model_validate_json(body)
    except EnvelopeError as exc:
        return invalid(f"its note is not an attestation: {exc}")
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "the statement"
        return invalid(f"its statement is not one this runtime reads: {where}: {first['msg']}")
    if said.commit != commit.commit:
        return invalid(f"the attestation is of commit {said.commit[:12]}, not of this one (a commit rewritten after "
                       "it was attested, its note copied over)", said, signer)
    if said.tree != commit.tree:
        return invalid(f"the attestation is of tree {said.tree[:12]}, not this commit's {commit.tree[:12]}", said, signer)
    facts = said.predicate
    trailers = commit.trailers()
    if facts.made == "work":
        if not facts.verified:
            return invalid("the attestation says the work was not verified", said, signer)
        if trailers.get("Verified") != "yes":
            return invalid("the commit does not say `Verified: yes`, which its attestation does", said, signer)
        if trailers.get("Agent-Id") != facts.agent_id:
            return invalid(f"the commit's Agent-Id ({trailers.get('Agent-Id')}) is not the attested agent "
                           f"({facts.agent_id})", said, signer)
        if facts.task is None or trailers.get("Task-Sha256") != facts.task.sha256:
            return invalid("the commit's Task-Sha256 is not the attested task's", said, signer)
    elif facts.merge is None or tuple(facts.merge.parents) != commit.parents:
        return invalid("the attested merge's parents are not this commit's", said, signer)
    return Finding(commit.commit, Status.VALID, "attested: " + _summary(said), said, signer)


def _summary(said: Statement) -> str:
    facts = said.predicate
    if facts.made == "merge" and facts.merge is not None:
        rechecked = f", {len(facts.merge.checks)} checks again on the merge" if facts.merge.checks else ""
        return f"the orchestrator's merge of {facts.merge.merged[:12]} into {facts.merge.into}{rechecked}"
    statuses = Counter(c.status for c in facts.checks)
    checks = ", ".join(f"{n} {status}" for status, n in sorted(statuses.items())) or "no"
    return f"verified work of agent {facts.agent_id} ({facts.role}), checks: {checks}"


def check(repo: Repo, revs: Iterable[str], trust: TrustRoot, notes: str = NOTES_REF, *,
          new_only: bool = False) -> list[Finding]:
    """The findings on the commits ``revs`` name (``new_only``: those no ref reaches yet), their notes read from
    ``notes``."""
    found = commits(repo, revs, new_only=new_only)
    noted = notes_at(repo, notes)
    texts = blobs(repo, sorted({noted[c.commit] for c in found if c.commit in noted}))
    return [judge(c, texts.get(noted[c.commit]) if c.commit in noted else None, trust) for c in found]


@dataclass(frozen=True)
class Update:
    old: str
    new: str
    ref: str


def pushed(lines: Iterable[str]) -> list[Update]:
    """A `pre-receive` hook's standard input: one ``old new ref`` per line."""
    out = []
    for number, line in enumerate(lines, 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 3:
            raise FatalError(f"<stdin>:{number}: not `old new ref`, as git gives a pre-receive hook")
        out.append(Update(*parts))
    return out


def check_push(repo: Repo, updates: list[Update], trust: TrustRoot, branches: str = "refs/heads/") -> list[Finding]:
    """The findings on the commits a push brings to the branches under ``branches``: those no ref reaches yet,
    their notes read from the pushed notes ref when the push moves it, else from the repository's."""
    notes = next((u.new for u in updates if u.ref == NOTES_REF and u.new != ZERO), NOTES_REF)
    tips = [u.new for u in updates if u.ref.startswith(branches) and u.new != ZERO]
    if not tips:
        return []
    return check(repo, tips, trust, notes, new_only=True)


def trust_root(key: Path | None) -> TrustRoot:
    """``key`` (an allowed_signers file or a public key), else this machine's own signing key."""
    from runtime.attest.signing import load_key

    if key is not None:
        return TrustRoot.read(key)
    own = load_key()
    if own is None:
        raise FatalError("no key to check signatures with: give --key (an allowed_signers file or a public key); "
                         "this machine has no signing key yet (it is made when the runtime first attests a commit)")
    return TrustRoot.of_key(own)
