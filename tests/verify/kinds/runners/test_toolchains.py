"""What a real-runner test does when its toolchain is missing: fails under CI, skips elsewhere."""

from __future__ import annotations

import pytest

from tests.js_runners import JS_PACKAGES, need

ABSENT = "no-such-toolchain-for-the-runner-tests"


def test_a_missing_toolchain_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=ABSENT):
        need(ABSENT)


def test_a_missing_toolchain_skips_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=ABSENT):
        need(ABSENT)


def test_the_js_runners_are_pinned_to_exact_versions() -> None:
    assert all(p.rsplit("@", 1)[1].replace(".", "").isdigit() for p in JS_PACKAGES)
