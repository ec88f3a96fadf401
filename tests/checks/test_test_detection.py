"""no-test-detection: code the change adds that knows it is under test, or that steers the test run."""

from __future__ import annotations

import anyio
import pytest

from runtime.checks import test_detection
from runtime.checks.findings import Finding
from runtime.checks.registry import evaluate
from tests.checks.test_tests_green import FakeGathering

NAMES_TESTS = "names the tests' files (code that reads them knows what they expect)"
EXIT = "ends the process before the test runner can report (its summary would be whatever was printed before)"
BASE = {"py": "import sys\n\n\ndef mean(xs):\n    return sum(xs) / len(xs)\n",
        "js": "const add = (a, b) => a + b;\nmodule.exports = { add };\n",
        "go": "package calc\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n",
        "rs": "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n"}


def gather(base: dict[str, str], work: dict[str, str], **params: object) -> list[Finding]:
    fake = FakeGathering(base=base, work=work)
    given = {"allowed": [], **{k.replace("_", "-"): v for k, v in params.items()}}
    return anyio.run(test_detection.gather, given, fake).findings


def added(path: str, line: str) -> list[Finding]:
    """The findings of ``line`` added at the end of a small file of ``path``'s language."""
    base = BASE[path.rsplit(".", 1)[-1]]
    return gather({path: base}, {path: base + line + "\n"})


CODE = [
    ("src/calc.py", 'if "pytest" in sys.modules:', "detects the test runner"),
    ("src/calc.py", "if sys.modules.get('_pytest'):", "detects the test runner"),
    ("src/calc.py", "import pytest", "imports the test runner"),
    ("src/calc.py", "from unittest import mock", "imports the test runner"),
    ("src/calc.py", 'testing = os.environ.get("PYTEST_CURRENT_TEST")', "reads the test runner's variables"),
    ("src/calc.py", "caller = inspect.stack()[1]", "reads its callers' frames (which test calls it, what the test expects)"),
    ("src/calc.py", "expected = sys._getframe(1).f_locals['expected']",
     "reads its callers' frames (which test calls it, what the test expects)"),
    ("src/calc.py", 'source = open("tests/test_calc.py").read()', NAMES_TESTS),
    ("lib/app.js", "const spec = fs.readFileSync('./test/app.test.js', 'utf8');", NAMES_TESTS),
    ("calc.go", 'data, _ := os.ReadFile("calc_test.go")', "names the tests' files"),
    ("src/calc.py", "builtins.round = lambda x, n=0: 2", "replaces a builtin"),
    ("src/calc.py", "os._exit(0)", EXIT),
    ("src/calc.py", "atexit.register(report)", "runs code when the process exits, after the tests"),
    ("src/app.js", "if (process.env.JEST_WORKER_ID) {", "reads a variable the test runner sets"),
    ("src/app.js", "if (typeof describe === 'function') {", "detects the test runner's globals"),
    ("src/app.js", "process.exit(0);", EXIT),
    ("lib/app.js", "const test = require('node:test');", "imports the test runner or its assertions"),
    ("lib/app.js", "const caller = new Error().stack;", "reads its callers' stack (which test calls it)"),
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
    assert gather({path: base}, {path: base.replace("a + b", "b + a").replace("len(xs)", "max(len(xs), 1)")}) == []


@pytest.mark.parametrize("path,line", [
    ("src/calc.py", "x = 1"),
    ("src/calc.py", "import os"),
    ("src/calc.md", "import pytest"),  # no language the kind reads
    ("src/app.js", "const env = process.env.HOME;"),
    ("calc.go", 'import "strings"'),
    ("src/lib.rs", "#[cfg(test)]"),
])
def test_ordinary_code_is_not_a_finding(path, line):
    base = BASE.get(path.rsplit(".", 1)[-1], "text\n")
    assert gather({path: base}, {path: base + line + "\n"}) == []


CLASS = "class Money:\n    def __init__(self, cents):\n        self.cents = cents\n"


@pytest.mark.parametrize("method", ["__eq__(self, other)", "__ne__(self, other)", "__hash__(self)"])
def test_a_comparison_returning_a_constant_is_a_finding(method):
    value = "False" if "ne" in method else "True" if "eq" in method else "0"
    work = CLASS + f"\n    def {method}:\n        return {value}\n"
    [finding] = gather({"src/money.py": CLASS}, {"src/money.py": work})
    assert finding.line == 5 and finding.what.startswith("a comparison that returns a constant")


def test_a_constant_comparison_after_a_docstring_is_a_finding():
    work = CLASS + '\n    def __eq__(self, other):\n        """Equal."""\n        return True\n'
    assert [f.line for f in gather({"src/money.py": CLASS}, {"src/money.py": work})] == [5]


def test_a_real_comparison_is_not_a_finding():
    work = CLASS + "\n    def __eq__(self, other):\n        return self.cents == other.cents\n"
    assert gather({"src/money.py": CLASS}, {"src/money.py": work}) == []


def test_a_base_comparison_changed_to_return_a_constant_is_a_finding():
    base = CLASS + "\n    def __eq__(self, other):\n        return self.cents == other.cents\n"
    [finding] = gather({"src/money.py": base}, {"src/money.py": base.replace("return self.cents == other.cents", "return True")})
    assert finding.line == 6


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
    [finding] = gather({}, {path: line + "\n"})
    assert (finding.path, finding.line, finding.what) == (path, 1, what)


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
    assert [f.what for f in gather({}, work)] == ["imports the test runner"]
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
    from runtime.checks.test_detection import PYTHON, TESTS

    assert [what for where, pattern, what in PYTHON if where in (TESTS, "both") and pattern.search(line)] == []
