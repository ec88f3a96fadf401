"""Forms strict mode admits that it used to refuse, each beside the neighbour that stays refused.

Read-only listings (pip, npm ls, go env, go doc, the version of an interpreter), cargo's doc
and bench, pytest's emptied addopts, ruff's fixes to named files, and cp's sources read from anywhere
when they are plain files.
"""

from __future__ import annotations

import os

import pytest

from runtime.gate.decision import ALLOW, ASK, DENY
from runtime.gate.engine import decide


def _bash(policy, command, cwd):
    return decide(policy, "Bash", {"command": command}, str(cwd))


@pytest.mark.parametrize("allowed,refused,why", [
    ("pip list --format=json", "pip install requests", "changes dependencies"),
    ("pip show -f requests", "pip list --log /tmp/pip.log", "not an option this role allows"),
    ("pip3 freeze --all", "pip download requests", "its forms"),
    ("python -m pip show requests", "python -m pip install requests", "changes dependencies"),
    ("python3 -m pip list", "python3 -m pip list --python /tmp/evil/python", "not an option this role allows"),
    ("pip --version", "pip --version --log /tmp/x", "takes no options here"),
    ("pip list", "uv pip list", "no rule of role `edit-local` runs `uv`"),  # uv runs the environment's interpreter to ask it
    ("npm ls react @types/node", "npm ls --prefix /tmp react", "not an option this role allows"),
    ("npm ls --all --depth=1", "npm install react", "changes dependencies"),
    ("node --version", "node scripts/gen.js", "its forms: `node -v`, `node --version`"),
    ("rustc --version", "rustc src/main.rs", "its forms"),
    ("go env GOPATH GOFLAGS", "go env -w GOFLAGS=-mod=mod", "not an option this role allows"),
    ("go doc -short net/http.Server", "go doc -http=:6060", "not an option this role allows"),
    ("cargo doc --no-deps", "cargo doc --open", "not an option this role allows"),
    ("cargo bench --no-run", "cargo bench --config x", "not an option this role allows"),
    ("pytest -o addopts='' -q tests", "pytest -o addopts=-pevil tests", "must be one of '' (empty)"),
])
def test_a_read_only_or_contained_form_is_allowed_and_its_neighbour_is_not(policy_for, worktree, allowed, refused, why):
    policy = policy_for()
    assert _bash(policy, allowed, worktree).verdict == ALLOW, allowed
    d = _bash(policy, refused, worktree)
    # A dependency change is forbidden; a form or option no rule declares is undecided, so asked of a person.
    assert d.verdict == (DENY if why == "changes dependencies" else ASK) and why in d.reason, d


def test_the_explorer_lists_what_is_installed_too(policy_for, worktree):
    policy = policy_for("explorer")
    for command in ("pip list", "python3 -m pip show pytest", "npm ls react", "go env GOPATH", "node --version"):
        assert _bash(policy, command, worktree).verdict == ALLOW, command
    # Its rule for ruff declares no --fix: undecided, so a person is asked.
    assert _bash(policy, "ruff check --fix src/pkg/mod.py", worktree).verdict == ASK


@pytest.mark.parametrize("command,verdict,why", [
    ("ruff check --fix src/pkg/mod.py", ALLOW, ""),
    ("ruff check --fix --unsafe-fixes src/pkg/*.py", ALLOW, ""),
    ("ruff check --fix src/pkg", DENY, "is a folder; name the files to write"),
    ("ruff check --fix .", DENY, "is a folder; name the files to write"),
    ("ruff check --fix docs/x.py", DENY, "outside your write scope"),
    ("ruff check --fix --config /tmp/ruff.toml src/pkg/mod.py", ASK, "not an option this role allows"),
    ("ruff check --fix --add-noqa src/pkg/mod.py", ASK, "not an option this role allows"),
    ("ruff check src", ALLOW, ""),  # checking only, the folder is fine
])
def test_ruff_fixes_named_files_in_the_scope_only(policy_for, worktree, command, verdict, why):
    d = _bash(policy_for(), command, worktree)
    assert d.verdict == verdict and why in d.reason, d


def test_cp_reads_a_plain_file_from_anywhere_and_never_a_folder_or_link(policy_for, worktree, tmp_path):
    outside = tmp_path / "outside"
    (outside / "dir/.git").mkdir(parents=True)
    (outside / "sample.json").write_text("{}\n")
    os.symlink("/etc", outside / "link")
    policy = policy_for()
    d = _bash(policy, f"cp {outside}/sample.json tests/fixtures/", worktree)
    assert d.verdict == ALLOW, d
    assert _bash(policy, f"cp {outside}/missing.json tests/x.json", worktree).verdict == ALLOW  # cp fails
    for source in ("dir", "link"):
        d = _bash(policy, f"cp -r {outside}/{source} tests/fixtures/", worktree)
        assert d.verdict == DENY and "must be a plain file" in d.reason, source
    # The destination stays a write: outside the scope, or a name in a control folder, is refused.
    assert _bash(policy, f"cp {outside}/sample.json /tmp/x.json", worktree).verdict == DENY
    assert _bash(policy, f"cp {outside}/sample.json .git/hooks/", worktree).verdict == DENY
    # mv removes its sources: they stay writes.
    d = _bash(policy, f"mv {outside}/sample.json tests/fixtures/", worktree)
    assert d.verdict == DENY and "outside the worktree" in d.reason


# -- find removing what it finds ----------------------------------------------------------------


def _pycache(worktree):
    for folder in ("src/pkg/__pycache__", "tests/__pycache__"):
        (worktree / folder).mkdir(parents=True, exist_ok=True)
        (worktree / folder / "mod.cpython-311.pyc").write_bytes(b"\0")


@pytest.mark.parametrize("command", [
    "find src tests -name '*.pyc' -delete",
    "find src tests -name __pycache__ -type d -prune -exec rm -rf {} +",
    "find src tests -name '*.pyc' -type f -exec rm -f {} +",
    "find . -maxdepth 1 -name '*.egg-info' -exec rm -rf {} +",  # .git is looked at, not entered
    "find src -maxdepth 3 -iname '*.PYC' -exec rm {} ';'",
    "cd src && find . -type d -name __pycache__ -exec rm -r {} +",
])
def test_a_find_that_removes_what_it_finds_in_the_scope_is_allowed(policy_for, worktree, command):
    _pycache(worktree)
    d = _bash(policy_for(), command, worktree)
    assert d.verdict == ALLOW, d


def test_a_find_that_would_remove_a_path_the_role_may_not_write_is_refused(policy_for, worktree):
    _pycache(worktree)
    policy = policy_for()
    # find enters .git as any folder, where git makes files the gate cannot foresee (a lock of a git running
    # beside the agent): a removing find never walks into a control folder, whatever it holds now.
    for command in ("find . -name '*.pyc' -delete", "find .git -name '*.lock' -delete",
                    "find src/pkg/gitlink/ -name '*.lock' -delete", "cd .git && find . -name '*.lock' -delete"):
        d = _bash(policy, command, worktree)
        assert d.verdict == DENY and "start it in the folders you work in" in d.reason, command
    assert _bash(policy, "find src tests -name '*.pyc' -delete", worktree).verdict == ALLOW
    (worktree / "docs/old.md").write_text("x\n")  # outside the write scope
    assert _bash(policy, "find docs -name '*.md' -delete", worktree).verdict == DENY
    (worktree / ".git/config").write_text("[core]\n")
    os.link(worktree / ".git/config", worktree / "src/pkg/__pycache__/x.txt")
    # rm -r removes all a found folder holds: a name there is checked too (here a hard link to .git/config).
    d = _bash(policy, "find src -name __pycache__ -type d -exec rm -rf {} +", worktree)
    assert d.verdict == DENY and "x.txt" in d.reason
    # A link is found, not entered; through a trailing slash find enters what it points to, and so does the gate.
    assert _bash(policy, "find src -name config -delete", worktree).verdict == ALLOW
    d = _bash(policy, "find src/pkg/gitlink/ -name config -delete", worktree)
    assert d.verdict == DENY and "walk into `src/pkg/gitlink/`" in d.reason


@pytest.mark.parametrize("command,why", [
    ("find . -name '*.pyc' -o -name '*.pyo' -delete", "joined by and"),
    ("find . ! -name '*.py' -delete", "joined by and"),
    ("find -L . -name '*.pyc' -delete", "joined by and"),
    ("find . -newer setup.py -delete", "joined by and"),
    ("find . -name 'x[ab].pyc' -delete", "`*` and `?` only"),
    ("find src/* -name '*.pyc' -delete", "write the folders to search out"),
    ("find . -name '*.pyc' -exec rm {} + -delete", "one action"),
    ("find . -name '*.pyc' -exec timeout 5 rm {} +", "which the gate cannot check"),
    ("find . -name '*.pyc' -exec rm -i {} +", "not an option this role allows"),
])
def test_a_removing_find_the_gate_cannot_evaluate_is_refused_with_the_way_out(policy_for, worktree, command, why):
    d = _bash(policy_for(), command, worktree)
    # An option of rm no rule declares is undecided (asked); the rest is how find is written.
    assert d.verdict == (ASK if "rm -i" in command else DENY) and why in d.reason, d


def test_a_removing_find_walks_a_bounded_number_of_paths(policy_for, worktree, monkeypatch):
    from runtime.gate import find_deletes

    _pycache(worktree)
    monkeypatch.setattr(find_deletes, "MAX_ENTRIES", 5)
    d = _bash(policy_for(), "find src tests -name '*.pyc' -delete", worktree)
    assert d.verdict == DENY and "start find in a narrower folder" in d.reason


def test_a_role_without_rm_cannot_remove_through_find(policy_for, worktree):
    _pycache(worktree)
    policy = policy_for("explorer")
    assert _bash(policy, "find . -name '*.pyc' -delete", worktree).verdict == DENY
    assert _bash(policy, "find . -name '*.pyc' -exec rm {} +", worktree).verdict == DENY
