"""LazyPattern: a regex compiled on its first use, once, with its flags."""

from __future__ import annotations

import re

import pytest

from runtime.lang.lazy_re import LazyPattern


def test_nothing_is_compiled_before_first_use(monkeypatch):
    def refuse(*args):
        raise AssertionError("compiled too early")

    monkeypatch.setattr(re, "compile", refuse)
    LazyPattern(r"(unbalanced")  # an invalid pattern costs nothing until used


def test_the_pattern_is_compiled_once(monkeypatch):
    calls = []
    real = re.compile
    monkeypatch.setattr(re, "compile", lambda *args: calls.append(args) or real(*args))
    pattern = LazyPattern(r"a+", re.I)
    assert pattern.match("AAb")[0] == "AA"
    assert pattern.search("xAa")[0] == "Aa"
    assert pattern.match("b") is None
    assert calls == [(r"a+", re.I)]


@pytest.mark.parametrize("text,match,search", [
    ("abc", "ab", "ab"),
    ("xabc", None, "ab"),
    ("xyz", None, None),
])
def test_match_anchors_at_the_start_and_search_does_not(text, match, search):
    pattern = LazyPattern("ab")
    assert (m[0] if (m := pattern.match(text)) else None) == match
    assert (m[0] if (m := pattern.search(text)) else None) == search


def test_flags_apply():
    assert LazyPattern("^b", re.M).search("a\nb") is not None
    assert LazyPattern("^b").search("a\nb") is None


def test_an_invalid_pattern_fails_on_first_use():
    pattern = LazyPattern("(")
    with pytest.raises(re.error):
        pattern.search("x")


def test_it_holds_no_instance_dict():
    with pytest.raises(AttributeError):
        LazyPattern("a").extra = 1  # type: ignore[attr-defined]
