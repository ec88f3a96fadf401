"""A replay of legitimate agent calls (tests/gate/data/agent_calls.jsonl) through edit-local in strict mode.

Each line is a tool call of the kind real coding agents make, by family: the harness's session tools,
file tools, reading and searching, tests, lint and formatting, edits from the shell, and
`strict-refused`: calls that are legitimate but run the agent's own code or shell constructs the
gate cannot see (a script it wrote, `python -c`, loops, `npx`), which strict mode keeps refusing
(the sandboxed mode's to allow). Every other family is allowed; every refusal says what to do.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runtime.gate.decision import ALLOW, ASK, DENY
from runtime.gate.engine import decide
from runtime.gate.policy import Policy
from runtime.policy.build import build_policy
from tests.conftest import REPO
from tests.gate.test_refusals_say_what_to_do import NEXT_STEP, UNDECIDED

CALLS = [json.loads(line) for line in (Path(__file__).parent / "data/agent_calls.jsonl").read_text().splitlines()]
TASK = '''[task]
role = "edit-local"
goal = "Replay agent calls."

[scope]
files-whitelist = ["**"]

[verification]
test-command = "pytest -q"
check-commands = ["ruff check src"]

[body]
text = "x"
'''


@pytest.fixture(scope="module")
def replay(tmp_path_factory):
    root = (tmp_path_factory.mktemp("replay") / "wt")
    for folder in ("src/pkg", "tests/fixtures", "scripts", "docs", ".git"):
        (root / folder).mkdir(parents=True)
    (root / "src/pkg/mod.py").write_text("def f():\n    return 1\n")
    (root / "package.json").write_text(json.dumps({"scripts": {"test": "jest", "lint": "eslint src", "build": "tsc"}}))
    task = root.parent / "task.toml"
    task.write_text(TASK)
    root = root.resolve()
    return Policy(build_policy(REPO, None, task, root)), root


def _decide(replay, call):
    policy, root = replay
    tool_input = json.loads(json.dumps(call["input"]).replace("@ROOT@", str(root)))
    return decide(policy, call["tool"], tool_input, str(root))


def _id(call) -> str:
    return f"{call['family']}:{call['tool']}:{call['input'].get('command', '')[:40]}"


@pytest.mark.parametrize("call", [c for c in CALLS if c["family"] != "strict-refused"], ids=_id)
def test_legitimate_calls_are_allowed(replay, call):
    d = _decide(replay, call)
    assert d.verdict == ALLOW, d


@pytest.mark.parametrize("call", [c for c in CALLS if c["family"] == "strict-refused"], ids=_id)
def test_what_strict_mode_cannot_read_is_asked_saying_what_would_allow_it(replay, call):
    """Where no rule decides these, and nothing the gate reads in them is forbidden, a person is asked (a run
    nobody watches refuses at once), told what would allow it for good, or that nothing can; where they are
    written so the gate cannot judge them (`find .` walking into `.git`, a folder given to a formatter), the
    refusal says how to write them."""
    d = _decide(replay, call)
    assert d.verdict in (ASK, DENY) and NEXT_STEP.search(d.reason), d
    assert d.verdict == DENY or UNDECIDED.search(d.reason), d


def test_the_replay_covers_every_family():
    families = {c["family"] for c in CALLS}
    assert families == {"session", "files", "read", "tests", "lint", "edit", "strict-refused"}
    assert len(CALLS) >= 200
