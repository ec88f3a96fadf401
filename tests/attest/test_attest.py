"""Attestations of commits (`runtime.attest`), with real git and OpenSSH's ssh-keygen: what holds, and each way
of forging one refused with its reason: a tampered note, a commit rewritten after the fact, another key, a
trailer typed by hand, a statement of another tree."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest

from runtime.attest.signing import TrustRoot, ensure_key, load_key
from runtime.attest.statement import Predicate, TaskFacts, merge_predicate
from runtime.attest.store import NOTES_REF, attest
from runtime.attest.verdict import Repo, Require, Status, check
from runtime.workspace.git import Git
from tests.attest.support import person_repo
from tests.conftest import REPO, RUNTIME, require
from tests.support import git

TASK_SHA = "ab" * 32


@pytest.fixture(autouse=True)
def _ssh_keygen():
    require(shutil.which("ssh-keygen") is not None, "ssh-keygen (openssh-client) is not installed")


@pytest.fixture
def key(tmp_path, monkeypatch):
    monkeypatch.setenv("RUNTIME_SIGNING_KEY", str(tmp_path / "keys" / "signing"))
    return ensure_key()


def _agent_commit(repo: Path, agent: str = "ag-1", text: str = "two\n") -> str:
    (repo / "a.txt").write_text(text)
    git(repo, "add", "a.txt")
    git(repo, "commit", "-qm", f"agent {agent} (builder): fix\n\nTask-Sha256: {TASK_SHA}\nAgent-Id: {agent}\n"
        "Verified: yes\n")
    return git(repo, "rev-parse", "HEAD")


def _work(agent: str = "ag-1") -> Predicate:
    return Predicate(made="work", runtime="test", agent_id=agent, role="builder",
                     task=TaskFacts(path="task.toml", sha256=TASK_SHA, goal="fix"), base="0" * 40, verified=True)


def _findings(repo: Path, *revs: str, trust: TrustRoot):
    return check(Repo(repo), list(revs), trust)


def test_a_signed_commit_holds_and_the_note_and_run_file_are_one(tmp_path, key):
    repo = person_repo(tmp_path)
    commit = _agent_commit(repo)
    made = attest(Git(repo), commit, "agent/ag-1", _work(), tmp_path / "run")
    assert made.file is not None and made.file.read_text() == made.text
    assert git(repo, "notes", f"--ref={NOTES_REF}", "show", commit) + "\n" == made.text
    envelope = json.loads(made.text)
    assert envelope["payloadType"] == "application/vnd.in-toto+json"
    statement = json.loads(base64.b64decode(envelope["payload"]))
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    assert statement["subject"][0]["digest"] == {"gitCommit": commit, "gitTree": git(repo, "rev-parse", "HEAD^{tree}")}
    assert statement["predicate"]["agent-id"] == "ag-1" and statement["predicate"]["made"] == "work"
    jsonschema.validate(statement, json.loads((REPO / "schemas" / "attestation.schema.json").read_text()))
    [finding] = _findings(repo, "HEAD^!", trust=TrustRoot.of_key(key))
    assert finding.status == Status.VALID and finding.signer == "agent-runtime", finding.reason
    # the same holds by ssh-keygen alone, as a CI step without this runtime would check it: DSSE's PAE of the
    # payload, and the signature re-armoured
    body = base64.b64decode(envelope["payload"])
    pae = b"DSSEv1 %d %s %d %s" % (len(envelope["payloadType"]), envelope["payloadType"].encode(), len(body), body)
    sig = base64.b64encode(base64.b64decode(envelope["signatures"][0]["sig"])).decode()
    (tmp_path / "sig").write_text("-----BEGIN SSH SIGNATURE-----\n" + sig + "\n-----END SSH SIGNATURE-----\n")
    (tmp_path / "allowed_signers").write_text(key.allowed_signers_line() + "\n")
    plain = subprocess.run(["ssh-keygen", "-Y", "verify", "-f", str(tmp_path / "allowed_signers"), "-I", "agent-runtime",
                            "-n", "agent-runtime-attestation", "-s", str(tmp_path / "sig")], input=pae, capture_output=True)
    assert plain.returncode == 0, plain.stderr
    assert envelope["signatures"][0]["keyid"] == key.fingerprint


def test_a_tampered_note_is_refused(tmp_path, key):
    repo = person_repo(tmp_path)
    commit = _agent_commit(repo)
    made = attest(Git(repo), commit, "agent/ag-1", _work(), None)
    envelope = json.loads(made.text)
    statement = json.loads(base64.b64decode(envelope["payload"]))
    statement["predicate"]["role"] = "admin"
    envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    (tmp_path / "forged.json").write_text(json.dumps(envelope))
    git(repo, "notes", f"--ref={NOTES_REF}", "add", "-f", "-F", str(tmp_path / "forged.json"), commit)
    [finding] = _findings(repo, "HEAD^!", trust=TrustRoot.of_key(key))
    assert finding.status == Status.INVALID and "signature does not hold" in finding.reason
    assert not finding.passes(Require.NONE)
    (tmp_path / "junk.json").write_text("not json")
    git(repo, "notes", f"--ref={NOTES_REF}", "add", "-f", "-F", str(tmp_path / "junk.json"), commit)
    [finding] = _findings(repo, "HEAD^!", trust=TrustRoot.of_key(key))
    assert finding.status == Status.INVALID and "not an attestation" in finding.reason


def test_a_commit_rewritten_after_it_was_attested_is_refused(tmp_path, key):
    repo = person_repo(tmp_path)
    commit = _agent_commit(repo)
    attest(Git(repo), commit, "agent/ag-1", _work(), None)
    (repo / "a.txt").write_text("something else\n")
    git(repo, "commit", "-q", "-a", "--amend", "--no-edit")
    rewritten = git(repo, "rev-parse", "HEAD")
    [finding] = _findings(repo, "HEAD^!", trust=TrustRoot.of_key(key))
    assert finding.status == Status.UNATTESTED and not finding.passes(Require.AGENT)
    assert finding.passes(Require.NONE)
    git(repo, "notes", f"--ref={NOTES_REF}", "copy", commit, rewritten)
    [finding] = _findings(repo, "HEAD^!", trust=TrustRoot.of_key(key))
    assert finding.status == Status.INVALID and f"of commit {commit[:12]}" in finding.reason


def test_another_key_is_refused(tmp_path, key):
    repo = person_repo(tmp_path)
    commit = _agent_commit(repo)
    attest(Git(repo), commit, "agent/ag-1", _work(), None)
    other = ensure_key(tmp_path / "other" / "key")
    [finding] = _findings(repo, "HEAD^!", trust=TrustRoot.of_key(other))
    assert finding.status == Status.INVALID
    assert key.fingerprint in finding.reason and "does not allow" in finding.reason
    # signed by the other key, checked against the first: refused the same way
    git(repo, "notes", f"--ref={NOTES_REF}", "remove", commit)
    attest(Git(repo), commit, "agent/ag-1", _work(), None, key=other)
    [finding] = _findings(repo, "HEAD^!", trust=TrustRoot.of_key(key))
    assert finding.status == Status.INVALID and other.fingerprint in finding.reason


def test_facts_the_commit_contradicts_are_refused(tmp_path, key):
    repo = person_repo(tmp_path)
    commit = _agent_commit(repo, agent="ag-1")
    attest(Git(repo), commit, "agent/ag-1", _work(agent="ag-2"), None)
    [finding] = _findings(repo, "HEAD^!", trust=TrustRoot.of_key(key))
    assert finding.status == Status.INVALID and "Agent-Id" in finding.reason
    # a merge attestation whose parents are not the commit's
    attest(Git(repo), commit, "trunk", merge_predicate("trunk", commit, ["1" * 40, "2" * 40]), None)
    [finding] = _findings(repo, "HEAD^!", trust=TrustRoot.of_key(key))
    assert finding.status == Status.INVALID and "parents" in finding.reason


def test_a_verified_trailer_typed_by_hand_is_unattested_and_a_persons_commit_is_plain(tmp_path, key):
    repo = person_repo(tmp_path)
    _agent_commit(repo)
    findings = _findings(repo, "trunk", trust=TrustRoot.of_key(key))
    assert [f.status for f in findings] == [Status.UNATTESTED, Status.PLAIN]
    assert [f.passes(Require.AGENT) for f in findings] == [False, True]
    assert [f.passes(Require.ALL) for f in findings] == [False, False]


def test_the_key_is_made_once_private_and_a_loose_one_is_refused(tmp_path, key):
    assert (key.path.stat().st_mode & 0o777) == 0o600
    assert (key.path.parent.stat().st_mode & 0o077) == 0
    assert ensure_key().public == key.public  # made once, read after
    key.path.chmod(0o644)
    with pytest.raises(Exception, match="chmod 600"):
        load_key(key.path)


def test_cli_verify_and_show(tmp_path, key):
    repo = person_repo(tmp_path)
    commit = _agent_commit(repo)
    attest(Git(repo), commit, "agent/ag-1", _work(), None)
    env = dict(os.environ)
    ok = subprocess.run([RUNTIME, "attest", "verify", "trunk"], cwd=repo, capture_output=True, text=True, env=env)
    assert ok.returncode == 0, ok.stderr
    assert f"{commit[:12]} ok" in ok.stdout and "1 attested, none failing" in ok.stdout
    strict = subprocess.run([RUNTIME, "attest", "verify", "--require", "all", "trunk"], cwd=repo, capture_output=True,
                            text=True, env=env)
    assert strict.returncode == 1 and "1 of 2 commits fail (--require all)" in strict.stderr
    shown = subprocess.run([RUNTIME, "attest", "show", "--json", commit], cwd=repo, capture_output=True, text=True,
                           env=env)
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert data["status"] == "valid" and data["statement"]["predicate"]["task"]["sha256"] == TASK_SHA
    printed = subprocess.run([RUNTIME, "attest", "key"], cwd=repo, capture_output=True, text=True, env=env)
    assert key.allowed_signers_line() in printed.stdout and str(key.path) in printed.stdout


def test_notes_stored_together_are_one_notes_commit_and_keep_the_earlier_ones(tmp_path, key):
    repo = person_repo(tmp_path)
    commits = [_agent_commit(repo, agent=f"ag-{n}", text=f"{n}\n") for n in range(3)]
    repository = Git(repo)
    repository.add_notes(NOTES_REF, [(commits[0], "first\n")])
    repository.add_notes(NOTES_REF, [(commits[1], "second\n"), (commits[2], "third\n"), (commits[0], "again\n")])
    shown = [git(repo, "notes", f"--ref={NOTES_REF}", "show", c) for c in commits]
    assert shown == ["again", "second", "third"]
    assert git(repo, "rev-list", "--count", NOTES_REF) == "2"  # a commit per batch, the earlier one its parent
    with pytest.raises(Exception, match="not a notes ref"):
        repository.add_notes("refs/heads/trunk", [(commits[0], "x\n")])
