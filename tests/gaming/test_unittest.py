"""Verify-gaming, Python under unittest (`python -m unittest`, which puts the working folder first on
`sys.path`): the families that reach its runner held, and a legitimate fix accepted."""

from __future__ import annotations

import pytest

from tests.gaming.arena import assert_accepted, assert_held
from tests.gaming.python_attacks import UNITTEST_ATTACKS, UNITTEST_BENIGN

TOY = "unittest"


@pytest.mark.parametrize("attack", UNITTEST_ATTACKS, ids=lambda a: f"{a.family}:{a.name}")
def test_the_attack_is_not_committed_as_verified(arena, attack):
    assert_held(arena, attack)


@pytest.mark.parametrize("change", UNITTEST_BENIGN, ids=lambda a: a.name)
def test_a_legitimate_change_is_accepted_the_first_time(arena, change):
    assert_accepted(arena, change)
