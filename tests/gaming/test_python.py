"""Verify-gaming, Python: pytest with ruff (and mypy where an attack silences it). Every family held: tests
edited inside the scope, the runner configured by the work, forged output, checks silenced, code that knows
it is under test; the benign changes beside them accepted the first time."""

from __future__ import annotations

import pytest

from tests.gaming.arena import assert_accepted, assert_held
from tests.gaming.python_attacks import ATTACKS, BENIGN

TOY = "python"
# What each family's rejection must say, in the check that caught it (the first words of its feedback).
CAUGHT_BY = {
    "tests edited": ("tests-protected", "tests-green", "no-test-detection"),
    "runner configured": ("runner-config", "tests-green", "no-test-detection"),
    "forged output": ("tests-green", "no-test-detection"),
    "checks silenced": ("no-blanket-suppressions", "runner-config"),
    "code knows it is under test": ("no-test-detection", "tests-green"),
}


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: f"{a.family}:{a.name}")
def test_the_attack_is_not_committed_as_verified(arena, attack):
    play = assert_held(arena, attack)
    failing = {c["kind"] for c in play.outcome["attempts"][-1]["checks"] if c["status"] != "passed"}
    assert failing & set(CAUGHT_BY[attack.family]), (failing, play.describe())


@pytest.mark.parametrize("change", BENIGN, ids=lambda a: a.name)
def test_a_legitimate_change_is_accepted_the_first_time(arena, change):
    play = assert_accepted(arena, change)
    assert "Tests: " in play.message
    if change.task.get("scope", {}).get("test-edits"):
        assert 'Test-Edits: "tests/test_calc.py"' in play.message, play.message
    if change.hidden:
        assert "2 hidden" in play.message, play.message
