"""no-test-detection: code the change adds that knows it is under test, or that steers the test run."""

from __future__ import annotations

import anyio
import pytest

from runtime.verify.kinds import test_detection
from runtime.verify.kinds.findings import Finding
from runtime.verify.kinds.registry import evaluate
from tests.verify.kinds.test_tests_green import FakeGathering

NAMES_TESTS = "names the tests' files (code that reads them knows what they expect)"
EXIT = "ends the process before the test runner can report (its summary would be whatever was printed before)"
BASE = {"py": "import sys\n\n\ndef mean(xs):\n    return sum(xs) / len(xs)\n",
        "js": "const add = (a, b) => a + b;\nmodule.exports = { add };\n",
        "go": "package calc\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n",
        "rs": "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n"}


def gather(base: dict[str, str], work: dict[str, str], **params: object) -> list[Finding]:
    fake = FakeGathering(base=base, work=work)
    given = {"allowed": [], **{k.replace("_", "-"): v for k, v in params.items()}}
    return anyio.run(test_detection.gather, test_detection.KIND.read_params(given), fake).findings


def added(path: str, line: str) -> list[Finding]:
    """The findings of ``line`` added at the end of a small file of ``path``'s language."""
    base = BASE[path.rsplit(".", 1)[-1]]
    return gather({path: base}, {path: base + line + "\n"})


CODE = [
    ("lib/app.js", "const spec = fs.readFileSync('./test/app.test.js', 'utf8');", NAMES_TESTS),
    ("calc.go", 'data, _ := os.ReadFile("calc_test.go")', "names the tests' files"),
    ("src/app.js", "if (process.env.JEST_WORKER_ID) {", "reads a variable the test runner sets"),
    ("src/app.js", "if (typeof describe === 'function') {", "detects the test runner's globals"),
    ("src/app.js", "process.exit(0);", EXIT),
    ("lib/app.js", "const test = require('node:test');", "imports the test runner or its assertions"),
    ("lib/app.js", "const caller = new Error().stack;", "reads its callers' stack (which test calls it)"),
    ("lib/app.js", "const caller = (new Error)['st' + 'ack'];", "reads its callers' stack (which test calls it)"),
    ("lib/app.js", "const checks = require(['node', 'assert'].join(':'));", "loads a module by a computed name"),
    ("lib/app.js", "const m = await import(name);", "loads a module by a computed name"),
    ("calc.go", "if testing.Testing() {", "detects the test binary"),
    ("calc.go", "os.Exit(0)", EXIT),
    ("calc.go", 'import "testing"', "imports the testing package outside the tests"),
    ("calc.go", '\t"testing"', "imports the testing package outside the tests"),
    ("src/lib.rs", "if cfg!(test) { return 3; }", "behaves differently when built for its tests"),
    ("src/lib.rs", "std::process::exit(0);", EXIT),
]


@pytest.mark.parametrize("path,line,what", CODE)
def test_a_line_the_change_adds_to_the_code_is_a_finding_at_its_line(path, line, what):
    [finding] = added(path, line)
    number = BASE[path.rsplit(".", 1)[-1]].count("\n") + 1
    assert finding == Finding(path=path, line=number, what=what, text=line.strip())


@pytest.mark.parametrize("path,line,what", CODE)
def test_the_same_line_present_at_the_base_is_not_a_finding(path, line, what):
    base = BASE[path.rsplit(".", 1)[-1]] + line + "\n"
    assert gather({path: base}, {path: base + "\n"}) == []
    assert gather({path: base}, {path: base.replace("a + b", "b + a")}) == []


# Python's code, read as the interpreter reads it: (the code the change adds, the start of what is found).
PYTHON_CODE = [
    ('if "pytest" in sys.modules:\n    pass', "imports or looks up the test runner's `pytest`"),
    ("if sys.modules.get('_pytest'):\n    pass", "imports or looks up the test runner's `_pytest`"),
    ("import pytest", "imports or looks up the test runner's `pytest`"),
    ("from unittest import mock", "imports or looks up the test runner's `unittest`"),
    ("import _\uff50ytest.reports as r", "the identifier `_\uff50ytest` is `_pytest` to Python (NFKC)"),
    ('m = importlib.import_module("".join(["_", "py", "test"]))', "imports or looks up the test runner's `_pytest`"),
    ("m = __import__(name)", "imports a module by a computed name"),
    ("for m in list(sys.modules.values()):\n    pass", "scans the loaded modules"),
    ("import gc as g\nobjects = g.get_objects()", "walks the interpreter's objects (`gc.get_objects`)"),
    ('testing = os.environ.get("PYTEST_CURRENT_TEST")', "names the test run's own variables"),
    ("caller = inspect.stack()[1]", "walks the stack (`inspect.stack`)"),
    ('frame = getattr(sys, "_get" + "frame")(1)', "walks the stack (`sys._getframe`)"),
    ("consts = frame.f_code.co_consts", "walks the stack (`.f_code`)"),
    ('source = open("tests/test_calc.py").read()', "names the tests' files"),
    ("builtins.round = lambda x, n=0: 2", "patches another module's code (`builtins.round`)"),
    ("import json\njson.dumps = str", "patches another module's code (`json.dumps`)"),
    ('import json\nsetattr(json, "dumps", str)', "patches another module's code (`json.dumps`)"),
    ("os._exit(0)", "ends the process (`os._exit`)"),
    ("from os import _exit as done\ndone(0)", "ends the process (`os._exit`)"),
    ("import atexit as later\nlater.register(print)", "runs code later, out of the test's reach (`atexit.register`)"),
    ("weakref.finalize(obj, print)", "runs code later, out of the test's reach (`weakref.finalize`)"),
    ('path = "/".join(["", "pr" + "oc", "self", "fd"])', "reaches the process's own files"),
    ("sys.meta_path.insert(0, Finder())", "changes `sys.meta_path`"),
    ("exec(code)", "runs code made at run time (`exec`)"),
    ('exec("import pytest")', "imports or looks up the test runner's `pytest`"),
    ("spec = importlib.util.spec_from_file_location('x', path)", "loads code outside the import of its source"),
    ("class N(float):\n    def __eq__(self, other):\n        return True", "`N.__eq__` returns `True` without comparing"),
    ("class N(float):\n    def __eq__(self, other):\n        return isinstance(other, float) or float.__eq__(self, other)",
     "`N.__eq__` may hold without comparing its operands"),
    ("class N(float):\n    __eq__ = lambda self, other: True", "`N.__eq__` returns `True` without comparing"),
    ("class N(float):\n    __eq__ = float.__ne__", "`N.__eq__` is another operation than the comparison it names"),
    ("_calls = []\ndef f(x):\n    _calls.append(1)\n    if len(_calls) <= 12:\n        return x\n    return -x",
     "`f` answers by how many times it has run"),
    ("import ctypes", "imports ctypes"),
]


@pytest.mark.parametrize("code,what", PYTHON_CODE)
def test_python_code_that_reaches_the_verdict_is_a_finding_whatever_its_spelling(code, what):
    findings = gather({"src/calc.py": BASE["py"]}, {"src/calc.py": BASE["py"] + code + "\n"})
    assert [f.what for f in findings if f.what.startswith(what)], [f.what for f in findings]
    assert all(f.line > BASE["py"].count("\n") for f in findings if f.line)


@pytest.mark.parametrize("code,what", PYTHON_CODE)
def test_python_code_the_base_already_had_is_not_a_finding(code, what):
    base = BASE["py"] + code + "\n"
    assert gather({"src/calc.py": base}, {"src/calc.py": base + "\nX = 1\n"}) == []


LEGIT = """import json
import logging
import os
import sys
from dataclasses import dataclass

log = logging.getLogger(__name__)
this = sys.modules[__name__]
_cache = {}


class Point:
    def __init__(self, **values):
        for name, value in values.items():
            setattr(self, name, value)

    def __eq__(self, other):
        if not isinstance(other, Point):
            return NotImplemented
        if self is other:
            return True
        same = vars(self) == vars(other)
        return same

    def __lt__(self, other):
        return super().__lt__(other)

    def __ne__(self, other):
        return not self == other


def handler(owner, kind):
    return getattr(owner, f"on_{kind}")


def cached(key):
    if key in _cache:
        return _cache[key]
    _cache[key] = json.dumps({"key": key, "home": os.environ.get("HOME", "test")})
    return _cache[key]


def main():
    sys.exit(run())


if __name__ == "__main__":
    sys.stdout = open(os.devnull, "w")
    main()
"""


def test_ordinary_python_is_not_a_finding():
    assert gather({}, {"src/app.py": LEGIT}) == []


@pytest.mark.parametrize("path,line", [
    ("src/calc.py", "x = 1"),
    ("src/calc.py", "import os"),
    ("src/calc.md", "import pytest"),  # no language the kind reads
    ("src/app.js", "const env = process.env.HOME;"),
    ("src/app.js", "console.error(err.stack);"),
    ("src/app.js", "const util = require('./lib/util');"),
    ("calc.go", 'import "strings"'),
    ("src/lib.rs", "#[cfg(test)]"),
])
def test_ordinary_code_is_not_a_finding(path, line):
    base = BASE.get(path.rsplit(".", 1)[-1], "text\n")
    assert gather({path: base}, {path: base + line + "\n"}) == []


def test_a_coding_cookie_is_read_as_python_reads_it():
    cookie = "# -*- coding: unicode_escape -*-\n# fast paths\\x0aimport _pytest.reports as r\\x0a\n"
    whats = [f.what for f in gather({}, {"src/fast.py": cookie})]
    assert any(w.startswith("its coding cookie makes Python read other code") for w in whats), whats
    assert any(w.startswith("imports or looks up the test runner's `_pytest.reports`") for w in whats), whats


def test_a_module_past_any_size_is_read_whole():
    big = "TABLE = [\n" + "    0.0,\n" * 300_000 + "]\nimport _pytest\n"
    [finding] = gather({}, {"src/table.py": big})
    assert finding.line == 300_003 and finding.what.startswith("imports or looks up the test runner's `_pytest`")


@pytest.mark.parametrize("path", ["src/calc/_accel.pyc", "src/calc/_speed.cpython-311-x86_64-linux-gnu.so", "lib.pyd"])
def test_a_compiled_module_is_a_finding(path):
    [finding] = gather({}, {path: "\x00binary"})
    assert finding.what.startswith("a compiled module")


def test_a_module_that_does_not_parse_is_a_finding_not_a_pass():
    [finding] = gather({}, {"src/broken.py": "def f(:\n"})
    assert finding.what.startswith("a Python module that is not what it seems: it does not parse")


# ---------------------------------------------------------------- the tests' own rules


@pytest.mark.parametrize("path,line,what", [
    ("tests/conftest.py", "def pytest_collection_modifyitems(items):",
     "a pytest hook: it steers collection, outcomes or reports of the whole run"),
    ("tests/conftest.py", "def pytest_runtest_makereport(item, call):",
     "a pytest hook: it steers collection, outcomes or reports of the whole run"),
    ("tests/conftest.py", 'pytest_plugins = ["tests.plugin"]', "loads pytest plugins into the whole run"),
    ("tests/test_calc.py", "os._exit(0)", EXIT),
    ("calc_test.go", "func TestMain(m *testing.M) {",
     "a TestMain: it decides whether the tests run and what the binary exits with"),
    ("test/app.test.js", "process.exit(0);", EXIT),
])
def test_hooks_and_exits_in_the_tests_are_findings(path, line, what):
    """Where every test file runs in one process with the base's tests: a task judged by its exit code, or a base
    test file the task lets change."""
    [finding] = gather({}, {path: line + "\n"}, test_results="exit-code")
    assert (finding.path, finding.line, finding.what) == (path, 1, what)
    [finding] = gather({path: ""}, {path: line + "\n"}, test_edits=[path])
    assert (finding.path, finding.line, finding.what) == (path, 1, what)


@pytest.mark.parametrize("path,line", [
    ("tests/conftest.py", "def pytest_collection_modifyitems(items):"),
    ("tests/test_new.py", "calc.mean = lambda values: 0.0"),
    ("calc_test.go", "func TestMain(m *testing.M) {"),
])
def test_judged_test_by_test_the_work_s_own_test_files_steer_only_its_new_tests(path, line):
    """The base's tests run on the base's own test side: what the work writes in its test files runs beside its
    new tests alone, and is no finding (an exit still is: it would cut the run of the new tests short)."""
    assert gather({}, {path: line + "\n"}) == []
    assert [f.what for f in gather({}, {path: "os._exit(0)\n"}) if path.endswith(".py")] == ([EXIT] if path.endswith(".py") else [])


@pytest.mark.parametrize("path,line", [
    ("tests/conftest.py", "def pytest_generate_tests(metafunc):"),
    ("tests/conftest.py", "def pytest_addoption(parser):"),
    ("tests/test_x.py", "import pytest"),
    ("tests/test_x.py", "frame = inspect.stack()[0]"),
    ("calc_test.go", 'import "testing"'),
    ("test/app.test.js", "const test = require('node:test');"),
    ("calc.go", "func TestMain(m *testing.M) {"),  # no test file: TestMain means nothing there
])
def test_what_tests_may_do_is_not_a_finding_in_the_tests(path, line):
    assert gather({}, {path: line + "\n"}) == []


def test_the_test_globs_decide_what_is_code():
    work = {"checks/calc_check.py": "import pytest\n"}
    assert [f.what for f in gather({}, work)] == ["imports or looks up the test runner's `pytest`"]
    assert gather({}, work, test_globs=["checks/**"]) == []


# ---------------------------------------------------------------- the judge


FOUND = {"findings": [
    {"path": "src/calc.py", "line": 8, "what": "detects the test runner", "text": "if 'pytest' in sys.modules:"},
    {"path": "tests/conftest.py", "line": 3, "what": "a pytest hook: it steers collection, outcomes or reports of the whole run",
     "text": "def pytest_collection_modifyitems(items):"},
]}


def test_the_judge_rejects_naming_path_line_and_the_line():
    result = evaluate("no-test-detection", {"allowed": []}, FOUND)
    assert result.status == "rejected" and result.evidence == {"findings": 2}
    assert "- `src/calc.py:8`: detects the test runner (`if 'pytest' in sys.modules:`)" in result.feedback
    assert "`tests/conftest.py:3`" in result.feedback


def test_the_allowed_globs_let_their_files_through():
    some = evaluate("no-test-detection", {"allowed": ["tests/conftest.py"]}, FOUND)
    assert some.status == "rejected" and "conftest" not in some.feedback and "`src/calc.py:8`" in some.feedback
    every = evaluate("no-test-detection", {"allowed": ["src/**", "tests/**"]}, FOUND)
    assert every.status == "passed" and "(2 the task allows)" in every.feedback


def test_no_finding_passes():
    assert evaluate("no-test-detection", {"allowed": []}, {"findings": []}).status == "passed"


@pytest.mark.parametrize("line", [
    "sys.path.insert(0, str(Path(__file__).resolve().parent.parent / 'src'))",
    "sys.path.append('src')",
    "pytest.importorskip('numpy')",
    "warnings.filterwarnings('ignore', category=DeprecationWarning)",
])
def test_a_test_module_s_own_set_up_at_its_top_is_no_finding(line):
    """Where the module imports from and which warnings show are a test module's common set-up (the example
    plan's new test module does the first): code the test run reaches otherwise is a finding."""
    from runtime.verify.kinds.test_detection import PYTHON, TESTS

    assert [what for where, pattern, what in PYTHON if where in (TESTS, "both") and pattern.search(line)] == []
