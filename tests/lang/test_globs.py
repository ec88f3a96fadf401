import re
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.lang.globs import check_glob, glob_to_regex, globs_to_regex, match_split, split_globs


def matches(glob: str, path: str) -> bool:
    return re.match(glob_to_regex(glob), path) is not None


def matches_by_hand(glob: str, path: str) -> bool:
    split = split_globs([glob])
    assert split is not None
    return match_split(split, path)


@pytest.mark.parametrize("glob,path", [
    ("src/**", "src/a.py"),
    ("src/**", "src/deep/er/a.py"),
    ("src", "src/a.py"),
    ("src/", "src/x/y"),
    ("src/*.py", "src/a.py"),
    ("**/*.py", "a/b/c.py"),
    ("**/Cargo.toml", "Cargo.toml"),
    ("**/Cargo.toml", "crates/x/Cargo.toml"),
    ("tests/test_?.py", "tests/test_a.py"),
    ("src/[ab].py", "src/a.py"),
    ("./docs/**", "docs/x.md"),
])
def test_glob_matches(glob, path):
    assert matches(glob, path)
    if "[" not in glob:
        assert matches_by_hand(glob, path)


@pytest.mark.parametrize("glob,path", [
    ("src/**", "src_evil/a.py"),
    ("src", "src_evil"),
    ("src/*.py", "src/deep/a.py"),
    ("src/*.py", "src/a.pyc"),
    ("tests/test_?.py", "tests/test_ab.py"),
    ("src/[!ab].py", "src/a.py"),
    ("**/Cargo.toml", "Cargo.toml.bak"),
    ("docs/**", "doc/x.md"),
])
def test_glob_does_not_match(glob, path):
    assert not matches(glob, path)
    if "[" not in glob:
        assert not matches_by_hand(glob, path)


@pytest.mark.parametrize("bad", ["/etc/**", "../x", "src/../etc", "a\\b", "", "src/a**", "src/[ab", "a\x00b", "C:/x"])
def test_invalid_globs_are_rejected(bad):
    with pytest.raises(ValueError):
        check_glob(bad)


# Components over a small alphabet, so globs and paths meet often: letters, `.`, a newline (a file name may
# hold one), the wildcards, `**`, and empty names in paths (`a//b`, a trailing `/`).
_GLOB_PART = st.one_of(st.just("**"), st.text(alphabet="ab.*?\n", min_size=1, max_size=4).filter(
    lambda p: "**" not in p and p not in (".", "..")))
_NAME = st.text(alphabet="ab.\n*?", max_size=4)


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.lists(_GLOB_PART, min_size=1, max_size=4).map("/".join), min_size=1, max_size=3),
       st.lists(_NAME, min_size=1, max_size=6).map("/".join))
def test_the_gate_s_hand_matching_means_what_the_regex_means(globs, path):
    """The gate matches scopes by hand, without `re`; the regexes verify and the compiler use are the
    reference. Over any globs and any path, the two agree."""
    split = split_globs(globs)
    assert split is not None
    assert match_split(split, path) == (re.match(globs_to_regex(globs), path) is not None), (globs, path)


def test_globs_with_a_class_are_left_to_the_regex():
    assert split_globs(["src/*.py", "src/[ab].py"]) is None


def test_the_hook_s_glob_matching_imports_no_regular_expressions():
    code = ("import sys; from runtime.gate.kinds.write_scope import GlobMatch; "
            "m = GlobMatch(['src/**', '**/Cargo.toml', 'proc/*/environ']); "
            "assert m.match('src/a.py') and m.match('x/Cargo.toml') and not m.match('docs/a'); "
            "print('re' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
