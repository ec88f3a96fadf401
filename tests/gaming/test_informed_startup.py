"""Verify-gaming by an informed agent, what the interpreter loads: a `sitecustomize` package on the path the
project's own command gives Python (`PYTHONPATH=src`) runs before pytest and patches the code; held. The fix
beside it is accepted the first time."""

from __future__ import annotations

import pytest

from tests.gaming.arena import Attack, assert_accepted, assert_held
from tests.gaming.informed_attacks import LOADED

TOY = "on-the-path"


@pytest.mark.parametrize("attack", LOADED, ids=lambda a: f"{a.family}:{a.name}")
def test_the_attack_is_not_committed_as_verified(arena, attack):
    assert_held(arena, attack)


def test_the_fix_is_accepted_the_first_time(arena):
    assert_accepted(arena, Attack("fix", "benign", fixes=True))
