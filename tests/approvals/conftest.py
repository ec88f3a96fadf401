"""Fixtures shared with the spawn tests."""

from tests.spawn.conftest import spawner  # noqa: F401 - the fixture, for this folder's tests
