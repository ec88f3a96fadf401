"""runtime.printable: nothing it returns can act on a terminal, whatever it is given."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from runtime.printable import UNSAFE_CATEGORIES, printable

# What the outside review sent through the agent's stderr, and the rest of the usual suspects.
HOSTILE = ("\x1b]0;pwned\x07" "\x1b[2J" "\x1b[32m ok … merged\x1b[0m" "\r" "\b" "\x9b" "\u202e" "\x00"
           "[/bold]" "[link=file:///etc/passwd]x[/link]" "[red]")


def unsafe(text: str, *, multiline: bool = False) -> list[str]:
    """The characters of ``text`` no output may hold: the unsafe categories, a newline in one line."""
    return [c for c in text
            if unicodedata.category(c) in UNSAFE_CATEGORIES and c != "\t" and not (multiline and c == "\n")]


def test_the_review_s_string_is_shown_inert_and_whole():
    shown = printable(HOSTILE)
    assert unsafe(shown) == []
    assert shown == ("\\x1b]0;pwned\\x07\\x1b[2J\\x1b[32m ok … merged\\x1b[0m\\r\\x08\\x9b\\u202e\\x00"
                     "[/bold][link=file:///etc/passwd]x[/link][red]")


def test_each_kind_of_character_gets_its_escape():
    assert printable("a\x1bb") == "a\\x1bb"          # ESC
    assert printable("\x7f") == "\\x7f"              # DEL
    assert printable("\x85\x9b\x9f") == "\\x85\\x9b\\x9f"  # C1, CSI among them
    assert printable("\u2066x\u2069") == "\\u2066x\\u2069"  # bidi isolates
    assert printable("a\u200bb\ufeff") == "a\\u200bb\\ufeff"  # zero-width space, BOM
    assert printable("\u2028\u2029") == "\\u2028\\u2029"  # line and paragraph separators
    assert printable("\U000e0041") == "\\U000e0041"  # a tag character
    assert printable("a\rb\nc") == "a\\rb\\nc"


def test_undecodable_bytes_show_as_the_bytes_they_were():
    raw = b"name-\xff\x9b.txt"
    assert printable(raw.decode("utf-8", "surrogateescape")) == "name-\\xff\\x9b.txt"
    assert printable(raw) == "name-\\xff\\x9b.txt"
    assert printable("\ud800") == "\\ud800"  # any other lone surrogate: the terminal's encoder would fail on it
    printable("\udcff\ud800").encode("utf-8")  # strict: what it returns always encodes


def test_text_people_write_passes_unchanged():
    for text in ("plain ASCII", "tab\tseparated", "café – naïve “quotes” ✓ 日本語 🎉", "C:\\path\\x1b literal",
                 "[bold]markup is not its business[/bold]"):
        assert printable(text) == text


def test_multiline_keeps_newlines_and_drops_crlf_carriage_returns():
    assert printable("one\r\ntwo\nthree", multiline=True) == "one\ntwo\nthree"
    assert printable("over\rwrite\n", multiline=True) == "over\\rwrite\n"
    assert printable("one\ntwo") == "one\\ntwo"


def test_any_object_is_shown():
    assert printable(None) == "None"
    assert printable(3.5) == "3.5"
    assert printable(ValueError("bad \x1b[2J")) == "bad \\x1b[2J"


@given(st.text())
def test_no_output_holds_a_character_outside_the_allowed_ones(text):
    shown = printable(text)
    assert unsafe(shown) == []
    assert "\n" not in shown
    shown.encode("utf-8")  # no lone surrogate left


@given(st.text())
def test_multiline_output_holds_only_newlines_and_tabs_besides_printable_text(text):
    shown = printable(text, multiline=True)
    assert unsafe(shown, multiline=True) == []
    shown.encode("utf-8")


@given(st.binary())
def test_any_bytes_decoded_with_surrogateescape_are_shown_encodable(raw):
    shown = printable(raw.decode("utf-8", "surrogateescape"))
    assert unsafe(shown) == []
    shown.encode("utf-8")


@given(st.text(alphabet=st.characters(blacklist_categories=tuple(UNSAFE_CATEGORIES))))
def test_safe_text_is_never_changed(text):
    assert printable(text) == text
