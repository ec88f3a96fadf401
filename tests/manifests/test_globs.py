import re

import pytest

from runtime.manifests.globs import check_glob, glob_to_regex


def matches(glob: str, path: str) -> bool:
    return re.match(glob_to_regex(glob), path) is not None


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


@pytest.mark.parametrize("bad", ["/etc/**", "../x", "src/../etc", "a\\b", "", "src/a**", "src/[ab", "a\x00b", "C:/x"])
def test_invalid_globs_are_rejected(bad):
    with pytest.raises(ValueError):
        check_glob(bad)
