"""safety::no-secrets: credential stores are never read, by a file tool or any word of a command (through `~`,
globs and symlinks planted earlier); a repository's `.env` is asked; a search above a store is refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runtime.gate.decision import ALLOW, ASK, DENY
from runtime.gate.engine import decide
from runtime.gate.policy import Policy
from runtime.manifests.catalog import Catalog
from runtime.manifests.role import load_role
from runtime.policy.compile import compile_policy
from tests.conftest import REPO


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("secrets") / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh/id_ed25519").write_text("PRIVATE KEY\n")
    (home / ".aws").mkdir()
    (home / ".aws/credentials").write_text("[default]\n")
    (home / "notes.txt").write_text("hello\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        yield home.resolve()


@pytest.fixture(scope="module")
def repo(home) -> Path:
    root = home.parent / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src/app.py").write_text("x = 1\n")
    (root / ".env").write_text("TOKEN=1\n")
    (root / ".env.example").write_text("TOKEN=\n")
    os.symlink(home / ".ssh", root / "keys")  # planted by an earlier call
    return root.resolve()


_POLICIES: dict[tuple[Path, str], Policy] = {}


def _policy(repo: Path, role: str) -> Policy:
    if (repo, role) not in _POLICIES:
        catalog = Catalog(REPO)
        _POLICIES[repo, role] = Policy(compile_policy(load_role(catalog, role), None, repo, catalog,
                                                      audience="session" if role == "session" else "agent"))
    return _POLICIES[repo, role]


ROLES = ["session", "edit-local", "explorer", "read-only"]


STORES = [
    ("Read", {"file_path": "~/.ssh/id_ed25519"}),
    ("Read", {"file_path": "HOME/.aws/credentials"}),
    ("Read", {"file_path": "keys/id_ed25519"}),
    ("Read", {"file_path": "/proc/self/environ"}),
    ("Grep", {"pattern": "KEY", "path": "HOME"}),
    ("Grep", {"pattern": "KEY", "path": "/"}),
    ("Glob", {"pattern": "~/.ssh/*"}),
    ("Bash", {"command": "cat ~/.ssh/id_ed25519"}),
    ("Bash", {"command": "cat ~/.s*/id_*"}),
    ("Bash", {"command": "cat keys/id_ed25519"}),
    ("Bash", {"command": "head -n 1 HOME/.aws/credentials"}),
    ("Bash", {"command": "grep -r KEY keys"}),
    ("Bash", {"command": "cat /proc/self/environ"}),
]


@pytest.mark.parametrize("role,tool,inp", [(role, tool, inp) for role in ROLES for tool, inp in STORES
                                           if tool != "Bash" or role != "read-only"])  # read-only has no shell
def test_a_credential_store_is_never_read(repo, home, role, tool, inp):
    inp = {k: v.replace("HOME", str(home)) for k, v in inp.items()}
    d = decide(_policy(repo, role), tool, inp, str(repo))
    assert d.verdict == DENY and d.atom == "safety::no-secrets", d
    assert "never read" in d.reason


@pytest.mark.parametrize("tool,inp", [
    ("Read", {"file_path": ".env"}),
    ("Bash", {"command": "cat .env"}),
    ("Bash", {"command": "grep TOKEN src/../.env"}),
])
def test_a_repository_s_secrets_are_asked(repo, tool, inp):
    d = decide(_policy(repo, "session"), tool, inp, str(repo))
    assert d.verdict == ASK and d.undecided and d.atom == "safety::no-secrets", d


@pytest.mark.parametrize("tool,inp", [
    ("Read", {"file_path": ".env.example"}),
    ("Read", {"file_path": "HOME/notes.txt"}),
    ("Read", {"file_path": "/etc/hostname"}),
    ("Grep", {"pattern": "x", "path": "src"}),
    ("Grep", {"pattern": "x"}),
    ("Glob", {"pattern": "**/*.py"}),
    ("Bash", {"command": "cat src/app.py .env.example"}),
    ("Bash", {"command": "ls ~"}),
    ("Bash", {"command": "grep -rn x src"}),
])
def test_what_holds_no_secret_is_read_as_before(repo, home, tool, inp):
    inp = {k: v.replace("HOME", str(home)) for k, v in inp.items()}
    assert decide(_policy(repo, "session"), tool, inp, str(repo)).verdict == ALLOW


def test_an_unattended_run_refuses_what_a_person_would_be_asked(repo):
    from runtime.gate.decision import unattended

    d = unattended(decide(_policy(repo, "session"), "Read", {"file_path": ".env"}, str(repo)))
    assert d.verdict == DENY


def test_inside_the_sandbox_it_judges_nothing(repo):
    """The OS sandbox shows no credential store, and a process's environment there is the agent's own."""
    catalog = Catalog(REPO)
    from runtime.policy.document import SANDBOXED

    policy = Policy(compile_policy(load_role(catalog, "edit-local"), None, repo, catalog, mode=SANDBOXED),
                    assume_sandbox=True)
    d = decide(policy, "Bash", {"command": "cat /proc/self/environ"}, str(repo))
    assert d.verdict == ALLOW, d
