"""A real git server's `pre-receive` hook (docs/CI.md's, one line: `runtime attest verify --pre-receive --key FILE`)
refuses a push of an agent branch whose attestation is missing, tampered or signed by another key, and takes one
whose attestation holds, with the notes the same push brings."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from runtime.attest.signing import ensure_key
from runtime.attest.statement import Predicate, TaskFacts
from runtime.attest.store import NOTES_REF, attest
from runtime.workspace.git import Git
from tests.attest.support import person_repo
from tests.conftest import RUNTIME, require
from tests.support import git

TASK_SHA = "cd" * 32


@pytest.fixture
def server(tmp_path, monkeypatch):
    require(shutil.which("ssh-keygen") is not None, "ssh-keygen (openssh-client) is not installed")
    monkeypatch.setenv("RUNTIME_SIGNING_KEY", str(tmp_path / "keys" / "signing"))
    key = ensure_key()
    bare = tmp_path / "server.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "trunk", str(bare)], check=True)
    signers = tmp_path / "allowed_signers"
    signers.write_text(key.allowed_signers_line() + "\n")
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\nexec {RUNTIME} attest verify --pre-receive --key {signers}\n")
    hook.chmod(0o755)
    return bare


def _push(repo: Path, bare: Path, *refs: str) -> subprocess.CompletedProcess[str]:
    """`git push` as a person runs it: no GIT_* of the test runner, no -c that would reach the server's side."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(["git", "-C", str(repo), "push", str(bare), *refs], capture_output=True, text=True, env=env)


def _agent_branch(repo: Path, agent: str) -> str:
    git(repo, "checkout", "-q", "-b", f"agent/{agent}", "trunk")
    (repo / f"{agent}.txt").write_text(agent)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", f"agent {agent} (builder): work\n\nTask-Sha256: {TASK_SHA}\nAgent-Id: {agent}\nVerified: yes\n")
    git(repo, "checkout", "-q", "trunk")
    return git(repo, "rev-parse", f"agent/{agent}")


def _attest(repo: Path, commit: str, agent: str, key=None) -> None:
    predicate = Predicate(made="work", runtime="test", agent_id=agent, role="builder",
                          task=TaskFacts(path="task.toml", sha256=TASK_SHA, goal="work"), base="0" * 40, verified=True)
    attest(Git(repo), commit, f"agent/{agent}", predicate, None, key=key)


def _refs(bare: Path) -> str:
    return subprocess.run(["git", "-C", str(bare), "for-each-ref", "--format=%(refname)"], capture_output=True,
                          text=True, check=True).stdout


def test_a_push_is_refused_without_its_attestation_and_taken_with_it(tmp_path, server):
    repo = person_repo(tmp_path)
    assert _push(repo, server, "trunk").returncode == 0  # a person's commits: nothing to attest
    commit = _agent_branch(repo, "ag-1")
    _attest(repo, commit, "ag-1")
    refused = _push(repo, server, "agent/ag-1")  # the notes left behind
    assert refused.returncode != 0 and "pre-receive hook declined" in refused.stderr
    assert "unattested" in refused.stderr and commit[:12] in refused.stderr
    assert "refs/heads/agent/ag-1" not in _refs(server)
    taken = _push(repo, server, "agent/ag-1", NOTES_REF)
    assert taken.returncode == 0, taken.stderr
    assert "1 commit checked: 1 attested" in taken.stderr
    assert "refs/heads/agent/ag-1" in _refs(server)


def test_a_tampered_attestation_is_refused(tmp_path, server):
    repo = person_repo(tmp_path)
    commit = _agent_branch(repo, "ag-2")
    _attest(repo, commit, "ag-2")
    text = git(repo, "notes", f"--ref={NOTES_REF}", "show", commit)
    envelope = json.loads(text)
    statement = json.loads(base64.b64decode(envelope["payload"]))
    statement["predicate"]["checks"] = [{"atom": "quality::tests-green", "kind": "tests-green", "status": "passed"}]
    envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    (tmp_path / "forged.json").write_text(json.dumps(envelope))
    git(repo, "notes", f"--ref={NOTES_REF}", "add", "-f", "-F", str(tmp_path / "forged.json"), commit)
    refused = _push(repo, server, "agent/ag-2", NOTES_REF)
    assert refused.returncode != 0 and "INVALID" in refused.stderr and "signature does not hold" in refused.stderr
    assert "refs/heads/agent/ag-2" not in _refs(server) and NOTES_REF not in _refs(server)


def test_an_attestation_signed_by_another_key_is_refused(tmp_path, server):
    repo = person_repo(tmp_path)
    commit = _agent_branch(repo, "ag-3")
    _attest(repo, commit, "ag-3", key=ensure_key(tmp_path / "intruder" / "key"))
    refused = _push(repo, server, "agent/ag-3", NOTES_REF)
    assert refused.returncode != 0 and "does not allow" in refused.stderr
    assert "refs/heads/agent/ag-3" not in _refs(server)


def test_a_rewritten_commit_with_the_note_copied_is_refused(tmp_path, server):
    repo = person_repo(tmp_path)
    commit = _agent_branch(repo, "ag-4")
    _attest(repo, commit, "ag-4")
    git(repo, "checkout", "-q", "agent/ag-4")
    (repo / "ag-4.txt").write_text("changed after it was verified")
    git(repo, "commit", "-q", "-a", "--amend", "--no-edit")
    git(repo, "notes", f"--ref={NOTES_REF}", "copy", commit, "HEAD")
    git(repo, "checkout", "-q", "trunk")
    refused = _push(repo, server, "agent/ag-4", NOTES_REF)
    assert refused.returncode != 0 and f"of commit {commit[:12]}" in refused.stderr
