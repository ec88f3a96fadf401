"""Verify-gaming by an informed agent, doctests: a doctest the base had is a test of the base."""

from __future__ import annotations

import pytest

from tests.gaming.arena import assert_accepted, assert_held
from tests.gaming.informed_attacks import DOCTEST_ATTACKS, DOCTEST_BENIGN

TOY = "doctest"


@pytest.mark.parametrize("attack", DOCTEST_ATTACKS, ids=lambda a: f"{a.family}:{a.name}")
def test_the_attack_is_not_committed_as_verified(arena, attack):
    assert_held(arena, attack)


@pytest.mark.parametrize("change", DOCTEST_BENIGN, ids=lambda a: a.name)
def test_legitimate_work_is_accepted_the_first_time(arena, change):
    assert_accepted(arena, change)
