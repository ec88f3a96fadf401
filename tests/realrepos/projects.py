"""The real projects of the suite: where each comes from, how it becomes a repository, and the changes made to it.

Seven projects nobody here wrote, each at a pinned version:

- more-itertools 10.2.0 (PyPI sdist): a 4,656-line module, tests run with `python -m unittest`
  (its tox.ini and Makefile), flake8 configured in setup.cfg;
- cachetools 5.5.0 (PyPI sdist): a src layout installed editable into its venv, an 859-line
  module, tests run with pytest (its tox.ini), flake8 configured in setup.cfg;
- @fastify/proxy-addr 5.1.0 (npm): a 331-line module, tests on node's own runner (`node --test`,
  which its `test:unit` script runs under a coverage tool), its two dependencies from npm;
- strsim 0.10.0 (Debian's librust-strsim-dev): a 1,005-line crate without dependencies, built and
  tested with the host's cargo as its CI does;
- google/uuid 1.3.0 (Debian's golang-github-google-uuid-dev): a Go module without dependencies,
  tested and vetted with the host's go;
- exceptiongroup 1.2.2 (PyPI sdist): a src layout whose package imports the version file flit_scm writes
  at install time and its repository ignores: `runtime init` declares it (`[worktree] include`);
- bleach 6.1.0 (PyPI sdist): tests that need its dependencies, which its tools venv does not hold: each
  worktree makes an environment of its own (`[worktree] setup`) from a package index on loopback.

For each: a bug planted in its large module (a one-line change the agent undoes) and a new function
with its test. The commands are the ones the project's own files name; `conftest.own_commands`
is where the suite decides which commands a task uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.realrepos.fetch import Download


@dataclass(frozen=True)
class Edit:
    """An edit the agent makes: `old` (unique in the file) becomes `new`; with `old` empty, a new file."""

    path: str
    old: str
    new: str

    def apply(self, text: str | None) -> str:
        if not self.old:
            assert text is None, f"{self.path} exists already"
            return self.new
        assert text is not None and text.count(self.old) == 1, f"{self.path}: the edit's anchor is not unique"
        return text.replace(self.old, self.new)


@dataclass(frozen=True)
class Change:
    """A change an agent makes: its edits, the files it may write, and its report."""

    goal: str
    edits: tuple[Edit, ...]
    scope: tuple[str, ...]
    summary: str

    @property
    def files(self) -> list[str]:
        return sorted({e.path for e in self.edits})

    @property
    def report(self) -> str:
        return f"Summary: {self.summary}\nFiles changed: {', '.join(self.files)}\n"


@dataclass(frozen=True)
class Project:
    name: str
    kind: str  # python | npm | rust | go: the toolchain a repository of it gets
    source: Download
    member: str  # the project's folder inside the downloaded archive
    test_command: str
    check_commands: tuple[str, ...]
    test_count_min: int
    runner: str  # a word the test command of `runtime init`'s task template must hold
    bug: Edit  # applied to the base: `old` is the right line, `new` the planted bug
    feature: Change
    python_wheels: tuple[Download, ...] = ()
    python_install: tuple[str, ...] = ()  # what goes into its .venv (`-e .` for an editable install)
    npm_tools: tuple[str, ...] = ()  # devDependencies its test script runs (`c8@10.1.2`), installed by npm
    npm_deps: tuple[Download, ...] = ()  # unpacked into node_modules/<name>
    drop: tuple[str, ...] = ()  # what the archive adds to the project's own tree (sdist metadata)
    ignore: tuple[str, ...] = ()  # lines the repository's .gitignore needs for its toolchain
    force_add: tuple[str, ...] = ()  # files committed although .gitignore names them (Cargo.lock)
    programs: tuple[str, ...] = field(default=())  # host programs its toolchain needs
    editable_src: str = ""  # a folder of the project its venv imports from (`pip install -e .`'s .pth)
    # Packages its worktrees install for themselves ([worktree] setup), from a package index on loopback.
    world_wheels: tuple[Download, ...] = ()

    def downloads(self) -> tuple[Download, ...]:
        return (self.source, *self.python_wheels, *self.npm_deps, *self.world_wheels)

    @property
    def fix(self) -> Change:
        """The agent's fix of the planted bug: one line back to what the project had."""
        return Change(goal=f"Fix the bug in {self.bug.path}.", edits=(Edit(self.bug.path, self.bug.new, self.bug.old),),
                      scope=(self.bug.path,), summary=f"undid a one-line bug in {self.bug.path}.")


# pytest and flake8 for the Python projects' venvs, with everything they need (and setuptools and
# wheel, which an editable install of a setuptools project builds with), all pure-Python wheels.
PYTHON_WHEELS = (
    Download("pypi", "pytest", "8.3.4", "50e16d954148559c9a74109af1eaf0c945ba2d8f30f0a3d3335edde19788b6f6", wheel=True),
    Download("pypi", "pluggy", "1.5.0", "44e1ad92c8ca002de6377e165f3e0f1be63266ab4d554740532335b9d75ea669", wheel=True),
    Download("pypi", "iniconfig", "2.0.0", "b6a85871a79d2e3b22d2d1b94ac2824226a63c6b741c88f7ae975f18b6778374", wheel=True),
    Download("pypi", "packaging", "24.2", "09abb1bccd265c01f4a3aa3f7a7db064b36514d2cba19a2f694fe6150451a759", wheel=True),
    Download("pypi", "flake8", "7.1.1", "597477df7860daa5aa0fdd84bf5208a043ab96b8e96ab708770ae0364dd03213", wheel=True),
    Download("pypi", "mccabe", "0.7.0", "6c2d30ab6be0e4a46919781807b4f0d834ebdd6c6e3dca0bda5a15f863427b6e", wheel=True),
    Download("pypi", "pycodestyle", "2.12.1", "46f0fb92069a7c28ab7bb558f05bfc0110dac69a0cd23c61ea0040283a9d78b3",
             wheel=True),
    Download("pypi", "pyflakes", "3.2.0", "84b5be138a2dfbb40689ca07e2152deb896a65c3a3e24c251c5c62489568074a", wheel=True),
    Download("pypi", "setuptools", "75.6.0", "ce74b49e8f7110f9bf04883b730f4765b774ef3ef28f722cce7c273d253aaf7d",
             wheel=True),
    Download("pypi", "wheel", "0.45.1", "708e7481cc80179af0e556bbf0cc00b8444c7321e2700b8d8580231d13017248", wheel=True),
)
PYTHON_TOOLS = ("pytest==8.3.4", "flake8==7.1.1")


ILEN_CAPPED = '''def ilen_capped(iterable, limit):
    """Return the number of items in *iterable*, counting no more than
    *limit* of them.

        >>> ilen_capped(range(10), 3)
        3
        >>> ilen_capped(range(2), 3)
        2

    Unlike :func:`ilen`, this stops consuming *iterable* after *limit* items.

    """
    return ilen(islice(iterable, limit))


'''

ILEN_CAPPED_TESTS = '''class IlenCappedTests(TestCase):
    def test_capped(self):
        self.assertEqual(mi.ilen_capped(range(10), 3), 3)

    def test_short(self):
        self.assertEqual(mi.ilen_capped(iter([1, 2]), 3), 2)

    def test_stops_consuming(self):
        it = iter(range(10))
        mi.ilen_capped(it, 4)
        self.assertEqual(next(it), 4)


'''

MORE_ITERTOOLS = Project(
    name="more-itertools",
    kind="python",
    source=Download("pypi", "more-itertools", "10.2.0",
                    "8fccb480c43d3e99a00087634c06dd02b0d50fbf088b380de5a41a015ec239e1"),
    member="more-itertools-10.2.0",
    test_command="python -m unittest -v",  # tox.ini's, and the Makefile's `test`
    check_commands=("flake8 --exclude .venv,venv,docs/conf.py .",),  # the Makefile's `check`
    test_count_min=700,
    runner="unittest",
    bug=Edit("more_itertools/more.py", "    counter = count()\n", "    counter = count(1)\n"),
    feature=Change(
        goal="Add more_itertools.ilen_capped(iterable, limit), with its stub and its tests.",
        edits=(
            Edit("more_itertools/more.py", "    'ilen',\n", "    'ilen',\n    'ilen_capped',\n"),
            Edit("more_itertools/more.py", "def iterate(func, start):\n", ILEN_CAPPED + "def iterate(func, start):\n"),
            Edit("more_itertools/more.pyi", "def ilen(iterable: Iterable[_T]) -> int: ...\n",
                 "def ilen(iterable: Iterable[_T]) -> int: ...\n"
                 "def ilen_capped(iterable: Iterable[_T], limit: int) -> int: ...\n"),
            Edit("tests/test_more.py", "class IterateTests(TestCase):\n", ILEN_CAPPED_TESTS + "class IterateTests(TestCase):\n"),
        ),
        scope=("more_itertools/more.py", "more_itertools/more.pyi", "tests/test_more.py"),
        summary="added ilen_capped, which counts at most limit items, with its stub and tests."),
    python_wheels=PYTHON_WHEELS,
    python_install=PYTHON_TOOLS,
    drop=("PKG-INFO",),
)

FREESIZE = '''    @property
    def freesize(self):
        """The size still free in the cache."""
        return self.maxsize - self.currsize

    @staticmethod
    def getsizeof(value):
'''

FREESIZE_TESTS = '''import unittest

from cachetools import Cache, LRUCache


class FreeSizeTest(unittest.TestCase):
    def test_freesize(self):
        cache = Cache(maxsize=3)
        self.assertEqual(3, cache.freesize)
        cache[1] = 1
        self.assertEqual(2, cache.freesize)

    def test_getsizeof(self):
        cache = LRUCache(maxsize=10, getsizeof=len)
        cache["a"] = "abcd"
        self.assertEqual(6, cache.freesize)
'''

CACHETOOLS = Project(
    name="cachetools",
    kind="python",
    source=Download("pypi", "cachetools", "5.5.0", "2cc24fb4cbe39633fb7badd9db9ca6295d766d9c2995f245725a46715d050f2a"),
    member="cachetools-5.5.0",
    test_command="pytest",  # tox.ini's py.test, without tox's --basetemp and coverage
    check_commands=("flake8 src tests",),  # tox.ini's flake8, on the project's own folders
    test_count_min=200,
    runner="pytest",
    bug=Edit("src/cachetools/__init__.py", "        if size > maxsize:\n", "        if size >= maxsize:\n"),
    feature=Change(
        goal="Add Cache.freesize, the size still free, with its tests.",
        edits=(
            Edit("src/cachetools/__init__.py", "    @staticmethod\n    def getsizeof(value):\n", FREESIZE),
            Edit("tests/test_freesize.py", "", FREESIZE_TESTS),
        ),
        scope=("src/cachetools/__init__.py", "tests/test_freesize.py"),
        summary="added Cache.freesize, maxsize less currsize, with its tests."),
    # tox.ini's deps: its test command is `py.test --cov=cachetools`, which needs pytest-cov (coverage is the
    # CPython 3.11 x86-64 wheel pip picks here)
    python_wheels=(*PYTHON_WHEELS,
        Download("pypi", "pytest-cov", "6.0.0", "eee6f1b9e61008bd34975a4d5bab25801eb31898b032dd55addc93e96fcaaa35",
                 wheel=True),
        Download("pypi", "coverage", "7.6.12", "e695df2c58ce526eeab11a2e915448d3eb76f75dffe338ea613c1201b33bab2f",
                 wheel=True)),
    python_install=(*PYTHON_TOOLS, "pytest-cov==6.0.0", "-e", "."),
    drop=("PKG-INFO", "src/cachetools.egg-info"),
    ignore=("__pycache__/", "*.egg-info/", ".venv/", ".coverage", ".pytest_cache/"),  # its repository's, and the venv
)

IS_TRUSTED = """/**
 * Check whether `addr` is trusted by `trust`.
 *
 * @param {String} addr
 * @param {Function|Array|String} trust
 * @public
 */

function isTrusted (addr, trust) {
  if (typeof trust !== 'function') {
    trust = compile(trust)
  }

  return trust(addr, 0)
}

/**
 * Compile argument into trust function.
"""

IS_TRUSTED_TESTS = """'use strict'

const { test } = require('node:test')
const proxyaddr = require('..')

test('isTrusted trusts an address in a named range', function (t) {
  t.assert.strictEqual(proxyaddr.isTrusted('127.0.0.1', 'loopback'), true)
})

test('isTrusted does not trust an address outside the ranges', function (t) {
  t.assert.strictEqual(proxyaddr.isTrusted('10.0.0.1', ['loopback', '192.168.0.0/16']), false)
})

test('isTrusted takes a trust function', function (t) {
  t.assert.strictEqual(proxyaddr.isTrusted('10.0.0.1', () => true), true)
})
"""

PROXY_ADDR = Project(
    name="proxy-addr",
    kind="npm",
    source=Download("npm", "@fastify/proxy-addr", "5.1.0", "da23aa2f3bd9b3e1f5881287ac3e46363055b63d1add4c059f88515b35d26856"),
    member="package",
    # Its `test` script runs `test:unit` (`c8 --100 node --test`: node's own runner under a coverage tool)
    # and `test:typescript` (tsd), whose tools are installed as its developers' `npm install` would. Its
    # lint is eslint with neostandard, a TypeScript toolchain of some 400 packages, left out to keep the
    # fetch small: `runtime init` sees eslint missing and leaves `npm run lint` out of the task it writes,
    # and node's own syntax check stands in for it where the suite names the commands itself.
    test_command="node --test",
    check_commands=("node --check index.js",),
    test_count_min=60,
    runner="npm test",
    bug=Edit("index.js", "  loopback: ['127.0.0.1/8', '::1/128'],\n", "  loopback: ['127.0.0.1/32', '::1/128'],\n"),
    feature=Change(
        goal="Add proxyaddr.isTrusted(addr, trust), with its tests.",
        edits=(
            Edit("index.js", "module.exports.compile = compile\n",
                 "module.exports.compile = compile\nmodule.exports.isTrusted = isTrusted\n"),
            Edit("index.js", "/**\n * Compile argument into trust function.\n", IS_TRUSTED),
            Edit("test/is-trusted.test.js", "", IS_TRUSTED_TESTS),
        ),
        scope=("index.js", "test/is-trusted.test.js"),
        summary="added isTrusted, which checks one address against a trust argument, with its tests."),
    npm_deps=(
        Download("npm", "@fastify/forwarded", "3.0.0", "d70171ba1ea6a24ddfba81eb753c4bc758a396ceeb7ebc3b1e53b5d4f647b7c8"),
        Download("npm", "ipaddr.js", "2.2.0", "effc21a40acab3802e61b4a869821eef549d4d9bd5a6ad6f643bacaaf11aa71a"),
    ),
    npm_tools=("c8@10.1.2", "tsd@0.32.0", "@types/node@22.10.2"),
    ignore=("node_modules/", "coverage/"),  # c8's output, which fastify's repositories ignore
    programs=("node",),
)

NORMALIZED_HAMMING = """/// Calculates a normalized score of the Hamming distance between two strings:
/// 1.0 for equal strings, 0.0 when they differ at every position. Returns an
/// error if the strings have different lengths.
///
/// ```
/// use strsim::normalized_hamming;
///
/// assert_eq!(Ok(0.5), normalized_hamming("abcd", "abxy"));
/// ```
pub fn normalized_hamming(a: &str, b: &str) -> Result<f64, StrSimError> {
    let len = a.chars().count();
    let distance = hamming(a, b)?;
    if len == 0 {
        return Ok(1.0);
    }
    Ok(1.0 - (distance as f64) / (len as f64))
}

/// Calculates the Jaro similarity between two sequences. The returned value
"""

NORMALIZED_HAMMING_TESTS = """extern crate strsim;

use strsim::{normalized_hamming, StrSimError};

#[test]
fn normalized_hamming_works() {
    assert_eq!(Ok(0.5), normalized_hamming("abcd", "abxy"));
    assert_eq!(Ok(1.0), normalized_hamming("", ""));
    assert_eq!(Err(StrSimError::DifferentLengthArgs), normalized_hamming("a", "ab"));
}
"""

STRSIM = Project(
    name="strsim",
    kind="rust",
    source=Download("debian", "librust-strsim-dev", "0.10.0-1",
                    "6b676122f64f7c2d3d130db4e367b4fdaaf7c61b65a024110cbe99814471a3a1"),
    member="usr/share/cargo/registry/strsim-0.10.0",
    test_command="cargo test --verbose",  # its CI's
    check_commands=("cargo build --verbose",),
    test_count_min=30,
    runner="cargo test",
    bug=Edit("src/lib.rs", "            (Some(x), Some(y)) => if x != y { count += 1 },\n",
             "            (Some(x), Some(y)) => if x == y { count += 1 },\n"),
    feature=Change(
        goal="Add strsim::normalized_hamming, with its tests.",
        edits=(
            Edit("src/lib.rs", "/// Calculates the Jaro similarity between two sequences. The returned value\n",
                 NORMALIZED_HAMMING),
            Edit("tests/normalized_hamming.rs", "", NORMALIZED_HAMMING_TESTS),
        ),
        scope=("src/lib.rs", "tests/normalized_hamming.rs"),
        summary="added normalized_hamming, the Hamming distance scaled to 0..1, with its tests."),
    drop=(".cargo-checksum.json",),  # Debian's record of the crate's files, not part of the crate
    force_add=("Cargo.lock",),  # the README: commit it, cargo would write it
    programs=("cargo",),
)

IS_NIL = """// IsNil reports whether uuid is the Nil UUID (all zeros).
func (uuid UUID) IsNil() bool {
	return uuid == (UUID{})
}

// Version returns the version of uuid.
"""

IS_NIL_TESTS = """package uuid

import "testing"

func TestIsNil(t *testing.T) {
	if !(UUID{}).IsNil() {
		t.Error("the zero UUID is not nil")
	}
	if MustParse("f47ac10b-58cc-0372-8567-0e02b2c3d479").IsNil() {
		t.Error("a parsed UUID is nil")
	}
}
"""

UUID = Project(
    name="uuid",
    kind="go",
    source=Download("debian", "golang-github-google-uuid-dev", "1.3.0-1",
                    "f79ead959ee04842fcb410347e7023a3c4c357c17f77b9bb13cff30ef4353351"),
    member="usr/share/gocode/src/github.com/google/uuid",
    # -v: without it go test prints one line per package, and verify reads no count of tests.
    test_command="go test -v ./...",
    check_commands=("go vet ./...",),
    test_count_min=20,
    runner="go test",
    bug=Edit("uuid.go", "\treturn Version(uuid[6] >> 4)\n", "\treturn Version(uuid[6] >> 3)\n"),
    feature=Change(
        goal="Add UUID.IsNil, with its test.",
        edits=(
            Edit("uuid.go", "// Version returns the version of uuid.\n", IS_NIL),
            Edit("isnil_test.go", "", IS_NIL_TESTS),
        ),
        scope=("uuid.go", "isnil_test.go"),
        summary="added UUID.IsNil, with its test."),
    programs=("go",),
)

FLATTEN = '''"""The leaves of an exception group: every exception in it that is not a group itself."""

from __future__ import annotations

import sys

if sys.version_info < (3, 11):
    from ._exceptions import BaseExceptionGroup


def flatten(group: BaseExceptionGroup) -> list[BaseException]:
    """The exceptions of ``group`` and of every group inside it, depth first, groups left out."""
    leaves: list[BaseException] = []
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            leaves.extend(flatten(exc))
        else:
            leaves.append(exc)
    return leaves
'''

FLATTEN_TESTS = '''import sys

from exceptiongroup import flatten

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup, ExceptionGroup


def test_flatten_nested():
    inner = ExceptionGroup("inner", [ValueError(1), KeyError(2)])
    group = BaseExceptionGroup("outer", [inner, SystemExit(3)])
    assert [type(e) for e in flatten(group)] == [ValueError, KeyError, SystemExit]


def test_flatten_flat():
    group = ExceptionGroup("flat", [TypeError("a")])
    assert [str(e) for e in flatten(group)] == ["a"]
'''

EXCEPTIONGROUP = Project(
    name="exceptiongroup",
    kind="python",
    # flit_scm writes src/exceptiongroup/_version.py at install time (`write_to`), its repository ignores it,
    # and the package imports it unguarded: a worktree without it fails every test with an ImportError.
    source=Download("pypi", "exceptiongroup", "1.2.2", "47c2edf7c6738fafb49fd34290706d1a1a2f4d1c6df275526b62cbb4aa5393cc"),
    member="exceptiongroup-1.2.2",
    test_command="pytest",  # tox.ini's `python -m pytest {posargs}`
    check_commands=(),
    test_count_min=80,
    runner="pytest",
    bug=Edit("src/exceptiongroup/_suppress.py", "            if rest is None:\n", "            if rest is not None:\n"),
    feature=Change(
        goal="Add exceptiongroup.flatten(group), the leaves of a group, with its tests.",
        edits=(
            Edit("src/exceptiongroup/__init__.py", '    "catch",\n', '    "catch",\n    "flatten",\n'),
            Edit("src/exceptiongroup/__init__.py", "from ._catch import catch\n",
                 "from ._catch import catch\nfrom ._flatten import flatten\n"),
            Edit("src/exceptiongroup/_flatten.py", "", FLATTEN),
            Edit("tests/test_flatten.py", "", FLATTEN_TESTS),
        ),
        scope=("src/exceptiongroup/__init__.py", "src/exceptiongroup/_flatten.py", "tests/test_flatten.py"),
        summary="added flatten, the leaves of an exception group, with its tests."),
    python_wheels=PYTHON_WHEELS,
    python_install=PYTHON_TOOLS,
    editable_src="src",  # `pip install -e .` as its developers make it: a .pth to src, and the version file
    drop=("PKG-INFO",),
    ignore=("src/exceptiongroup/_version.py", ".venv/", "__pycache__/", ".pytest_cache/"),
)

LINKIFY_EMAILS_TESTS = '''from bleach import linkify


def test_linkify_parse_email_mailto():
    assert linkify("mail me: a@example.com", parse_email=True) == (
        'mail me: <a href="mailto:a@example.com">a@example.com</a>'
    )


def test_linkify_without_parse_email_leaves_it():
    assert linkify("mail me: a@example.com") == "mail me: a@example.com"
'''

BLEACH = Project(
    name="bleach",
    kind="python",
    # Its tests need its dependencies (six, webencodings, for its vendored html5lib), which the repository's
    # tools venv does not hold: each worktree gets an environment of its own, made by `[worktree] setup` from a
    # package index (a registry on loopback here, reached through setup's egress proxy).
    source=Download("pypi", "bleach", "6.1.0", "0a31f1837963c41d46bbf1331b8778e1308ea0791db03cc4e7357b97cf42a8fe"),
    member="bleach-6.1.0",
    test_command="pytest -v",  # tox.ini's `pytest {posargs:-v}`
    check_commands=("flake8 bleach tests",),
    test_count_min=400,
    runner="pytest",
    bug=Edit("bleach/linkifier.py", '                if self.parse_email:\n', '                if not self.parse_email:\n'),
    feature=Change(
        goal="Add tests of linkify's parse_email, in tests/test_linkify_emails.py.",
        edits=(Edit("tests/test_linkify_emails.py", "", LINKIFY_EMAILS_TESTS),),
        scope=("tests/test_linkify_emails.py",),
        summary="added tests of linkify's parse_email."),
    python_wheels=PYTHON_WHEELS,
    python_install=PYTHON_TOOLS,
    world_wheels=(
        Download("pypi", "six", "1.16.0", "8abb2f1d86890a2dfb989f9a77cfcfd3e47c2a354b01111771326f8aa26e0254", wheel=True),
        Download("pypi", "webencodings", "0.5.1", "a0af1213f3c2226497a97e2b3aa01a7e4bee4f403f95be16fc9acd2947514a78",
                 wheel=True),
    ),
    drop=("PKG-INFO", "bleach.egg-info"),
    ignore=(".venv/", ".wt/", "__pycache__/", ".pytest_cache/", "*.egg-info/"),
)

PROJECTS = (MORE_ITERTOOLS, CACHETOOLS, PROXY_ADDR, STRSIM, UUID, EXCEPTIONGROUP, BLEACH)
BY_NAME = {p.name: p for p in PROJECTS}
