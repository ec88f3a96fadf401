"""Shared fixtures of the sandbox suite."""

from __future__ import annotations

import pytest

from runtime.sandbox.bwrap import bwrap_path
from tests.conftest import require


@pytest.fixture
def bwrap() -> str:
    """The bubblewrap executable (a test that needs it fails under CI when it is missing)."""
    path = bwrap_path()
    require(path is not None, "bubblewrap (bwrap) is not installed")
    return path
