"""Verify-gaming by an informed agent, node's runner: the assertion module reached by a computed name, the
caller's line read from a stack, held; legitimate work accepted the first time."""

from __future__ import annotations

import pytest

from tests.gaming.arena import assert_accepted, assert_held
from tests.gaming.informed_attacks import NODE_ATTACKS, NODE_BENIGN

TOY = "npm"


@pytest.mark.parametrize("attack", NODE_ATTACKS, ids=lambda a: f"{a.family}:{a.name}")
def test_the_attack_is_not_committed_as_verified(arena, attack):
    assert_held(arena, attack)


@pytest.mark.parametrize("change", NODE_BENIGN, ids=lambda a: a.name)
def test_legitimate_work_is_accepted_the_first_time(arena, change):
    assert_accepted(arena, change)
