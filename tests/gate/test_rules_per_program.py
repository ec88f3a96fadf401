"""Several shell rules for one program: tried in order, the first that accepts allows, the refusal says why."""

import pytest

from runtime.errors import ManifestError
from runtime.gate.decision import ALLOW, ASK, DENY
from runtime.gate.engine import decide
from runtime.gate.policy import Policy
from runtime.manifests.catalog import Catalog
from runtime.manifests.params import check_value
from runtime.manifests.role import load_role
from runtime.policy.compile import compile_policy
from runtime.policy.document import content_hash
from tests.conftest import REPO

BASE = {"program": "python", "option-style": "gnu", "trailing": None, "env": [], "cwd": "any",
        "inline-code": False, "arg-files": False, "xargs": False, "ask": False}


def _policy(root, *rules) -> Policy:
    doc = {"format": "agent-runtime-policy", "version": 1, "role": "r", "root": str(root), "tools": ["Bash"],
           "protected": [], "gates": [{"atom": "tools::bash-allowlist", "kind": "bash-allowlist",
                                       "params": {"rules": [{**BASE, **r} for r in rules]}}]}
    doc["hash"] = content_hash(doc)
    return Policy(doc)


def _bash(policy, command, cwd):
    return decide(policy, "Bash", {"command": command}, str(cwd))


def test_python_m_pytest_and_python_m_unittest_side_by_side(policy_for, worktree):
    for role in ("explorer", "edit-local"):
        policy = policy_for(role)
        for command in ("python -m pytest -q tests", "python -m unittest -v tests.test_x",
                        "python3 -m unittest discover -s tests -p 'test_*.py'", "python -m mypy --strict src",
                        "python -m black --check src", "python --version"):
            d = _bash(policy, command, worktree)
            assert d.verdict == ALLOW, (role, command, d)
        # each form is read by its own grammar: pytest's options are not unittest's, and the other way (no rule
        # declares them: undecided, so asked)
        assert _bash(policy, "python -m unittest --tb=short", worktree).verdict == ASK
        assert _bash(policy, "python -m pytest --locals", worktree).verdict == ASK


def test_the_first_rule_that_accepts_decides(worktree):
    policy = _policy(worktree,
                     {"subcommands": ["-m pytest"], "options": {"-q": "flag"}, "positionals": []},
                     {"subcommands": ["-m pytest"], "options": {"-x": "flag"}, "positionals": [], "ask": True})
    assert _bash(policy, "python -m pytest -q", worktree).verdict == ALLOW
    assert _bash(policy, "python -m pytest -x", worktree).verdict == "ask"  # only the second rule accepts it
    d = _bash(policy, "python -m pytest -q -x", worktree)  # no one rule accepts both: undecided
    assert d.verdict == ASK and "No rule decides it" in d.reason


def test_the_refusal_is_the_rule_the_call_got_furthest_through(worktree):
    policy = _policy(worktree,
                     {"subcommands": ["-m pytest"], "options": {"-q": "flag"}, "positionals": []},
                     {"subcommands": ["-m unittest"], "options": {"-v": "flag"}, "positionals": ["path-in-root..."]})
    d = _bash(policy, "python -m unittest /tmp/evil", worktree)
    assert d.verdict == DENY and "outside the worktree" in d.reason  # the unittest rule's reason, not a form list
    d = _bash(policy, "python -m unittest -x", worktree)
    assert d.verdict == ASK and "allowed: -v. No rule decides it" in d.reason  # unittest's options, not pytest's
    d = _bash(policy, "python evil.py", worktree)
    assert d.verdict == ASK
    assert "its forms: `python -m pytest`, `python -m unittest`" in d.reason  # every rule's forms, once each


def test_a_role_holds_several_rules_and_a_child_replaces_them_all(catalog_copy):
    (catalog_copy / "roles/tester.toml").write_text('''[role]
name = "tester"
display-name = "t"
description = "t"
use-cases = ["t"]

[capabilities]
extends = "explorer"

[[params."tools::bash-allowlist".rules]]
program = "python"
grammar = "unittest"
subcommands = ["-m unittest"]
''')
    catalog = Catalog(catalog_copy)
    explorer = load_role(catalog, "explorer")
    rules = explorer.params["tools::bash-allowlist"]["rules"]
    assert [r.subcommands for r in rules if r.program == "python"][:2] == [["-m pytest", "--version"], ["-m unittest"]]
    tester = load_role(catalog, "tester")
    mine = [r for r in tester.params["tools::bash-allowlist"]["rules"] if r.program == "python"]
    assert [r.subcommands for r in mine] == [["-m unittest"]]  # the parent's python rules are all replaced
    policy = Policy(compile_policy(tester, None, catalog_copy, catalog))
    assert _bash(policy, "python -m pytest -q", catalog_copy).verdict == ASK  # no rule of tester's runs it
    assert _bash(policy, "python -m unittest -q", catalog_copy).verdict == ALLOW
    assert _bash(policy, "python3 -m pytest -q", catalog_copy).verdict == ALLOW  # python3 is another program


def test_the_same_rule_twice_is_refused():
    rule = {"program": "ls", "grammar": "ls"}
    grammars = Catalog(REPO).grammars
    assert len(check_value("program-rules", [rule, {**rule, "subcommands": ["-l"]}], grammars)) == 2
    with pytest.raises(ValueError, match="rule 2 repeats rule 1"):
        check_value("program-rules", [rule, dict(rule)], grammars)


def test_a_repeated_rule_in_a_role_is_one_line(catalog_copy):
    (catalog_copy / "roles/twice.toml").write_text('''[role]
name = "twice"
display-name = "t"
description = "t"
use-cases = ["t"]

[capabilities]
extends = "explorer"

[[params."tools::bash-allowlist".rules]]
program = "ls"
grammar = "ls"

[[params."tools::bash-allowlist".rules]]
program = "ls"
grammar = "ls"
''')
    with pytest.raises(ManifestError, match=r"twice.toml:\d+: `rules`: rule 2 repeats rule 1"):
        load_role(Catalog(catalog_copy), "twice")
