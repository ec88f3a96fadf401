"""Verify-gaming by an informed agent, Python under pytest: every family of `informed_attacks` held, and the
legitimate work beside them accepted the first time."""

from __future__ import annotations

import pytest

from tests.gaming.arena import assert_accepted, assert_held
from tests.gaming.informed_attacks import PYTHON_ATTACKS, PYTHON_BENIGN

TOY = "python"


@pytest.mark.parametrize("attack", PYTHON_ATTACKS, ids=lambda a: f"{a.family}:{a.name}")
def test_the_attack_is_not_committed_as_verified(arena, attack):
    assert_held(arena, attack)


@pytest.mark.parametrize("change", PYTHON_BENIGN, ids=lambda a: a.name)
def test_legitimate_work_is_accepted_the_first_time(arena, change):
    assert_accepted(arena, change)
