"""Every test of this folder starts and ends with fresh scripted-model positions."""

from __future__ import annotations

import pytest

from runtime.models import scripted


@pytest.fixture(autouse=True)
def _fresh_positions():
    scripted.reset()
    yield
    scripted.reset()
