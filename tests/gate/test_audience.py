"""Deny reasons fit where they are read: a person's own session never hears of an orchestrator or a report.

The refusals walked are every atom's and every grammar's deny examples of the shipped catalog, judged
by the same policy once for a spawned agent and once for a person's session (`audience`), and the
hook itself as `runtime hook install` writes it for the main session.
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from runtime.gate.policy import Policy
from runtime.lang.audience import AGENT, SESSION, phrase
from runtime.policy.document import PolicyError, content_hash
from tests.conftest import RUNTIME
from tests.gate.test_refusals_say_what_to_do import NEXT_STEP, _atom_and_grammar_refusals  # noqa: F401

AGENT_ONLY = re.compile(r"orchestrator|your report|report what|runtime spawn|verified work", re.I)


def _as(policy: Policy, audience: str) -> Policy:
    doc = {k: v for k, v in policy.doc.items() if k != "hash"}
    doc["audience"] = audience
    return Policy({**doc, "hash": content_hash(doc)})


def test_every_phrase_has_a_session_form_without_the_orchestrator():
    from runtime.lang.audience import _PHRASES
    for key in _PHRASES:
        assert not AGENT_ONLY.search(phrase(SESSION, key)), key
        assert phrase(SESSION, key) != phrase(AGENT, key), key


def test_no_refusal_of_the_catalog_speaks_of_an_orchestrator_in_a_session(tmp_path, monkeypatch):
    import runtime.tooling.examples as examples

    made = []
    for factory in ("example_policy", "_program_policy"):
        original = getattr(examples, factory)

        def wrapped(*args, _original=original, **kwargs):
            policy = _as(_original(*args, **kwargs), SESSION)
            made.append(policy)
            return policy

        monkeypatch.setattr(examples, factory, wrapped)
    import tests.gate.test_refusals_say_what_to_do as walk
    monkeypatch.setattr(walk, "example_policy", examples.example_policy)
    monkeypatch.setattr(walk, "_program_policy", examples._program_policy)
    refusals = walk._atom_and_grammar_refusals()
    assert made and len(refusals) > 100
    for where, reason in refusals:
        assert not AGENT_ONLY.search(reason), f"{where}: {reason}"
        assert NEXT_STEP.search(reason) or "ask the person" in reason or "tell the person" in reason, f"{where}: {reason}"


def test_an_agent_still_hears_of_its_report():
    refusals = dict(_atom_and_grammar_refusals())
    git = next(r for w, r in refusals.items() if w.startswith("policy::no-git-ops"))
    assert "the orchestrator commits your verified work" in git


def test_an_unknown_audience_is_refused(tmp_path):
    doc = {"format": "agent-runtime-policy", "version": 2, "mode": "strict", "role": "x", "escalation": "fail-fast",
           "task": None, "root": str(tmp_path), "tools": ["Read"], "gates": [], "verify": [], "audience": "robots"}
    doc["hash"] = content_hash(doc)
    with pytest.raises(PolicyError, match="unknown policy audience"):
        Policy(doc)


def _hook(root, call: dict) -> tuple[int, str]:
    data = {"hook_event_name": "PreToolUse", "cwd": str(root), **call}
    proc = subprocess.run([RUNTIME, "check", "--on-allow", "defer", "--main-session", "session"], input=json.dumps(data),
                          capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "CLAUDE_PROJECT_DIR": str(root),
                                                               "RUNTIME_CACHE_DIR": str(root.parent / "cache")})
    return proc.returncode, proc.stdout


@pytest.mark.parametrize("call", [
    {"tool_name": "Bash", "tool_input": {"command": "curl https://example.com"}},
    {"tool_name": "Write", "tool_input": {"file_path": ".claude/settings.json", "content": "{}"}},
    {"tool_name": "Bash", "tool_input": {"command": "git status"}, "agent_type": "Explore"},
    {"tool_name": "Bash", "tool_input": {"command": "uv add requests"}},
])
def test_the_main_sessions_hook_speaks_to_a_person(tmp_path, call):
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    code, out = _hook(root, call)
    answer = json.loads(out)["hookSpecificOutput"]
    reason = answer["permissionDecisionReason"]
    # Refused (exit 2), or, where no rule decides (`uv`, `curl`), asked of the person (exit 0).
    assert (answer["permissionDecision"], code) in (("deny", 2), ("ask", 0)), (code, answer)
    assert not AGENT_ONLY.search(reason), reason
