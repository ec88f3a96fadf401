"""tests-protected: the base's tests stay as they were; new tests may be added beside them."""

from __future__ import annotations

import anyio
import pytest

from runtime.verify.kinds import tests_protected
from runtime.verify.kinds.findings import TEST_GLOBS, Finding, Findings
from runtime.verify.kinds.kind import Change
from runtime.verify.kinds.registry import evaluate
from runtime.verify.kinds.tests_protected import python_edits, text_edits
from tests.verify.kinds.test_tests_green import FakeGathering

PY = "tests/test_calc.py"
BASE_PY = '''import pytest
from calc import add, mean

LIMIT = 10


@pytest.fixture
def numbers():
    return [1, 2, 3]


def test_add():
    assert add(1, 2) == 3


def test_mean(numbers):
    assert mean(numbers) == 2


class TestCalc:
    def test_sub(self):
        assert add(1, -1) == 0
'''


def edits(after: str) -> list[Finding]:
    return python_edits(PY, BASE_PY, after)


def whats(findings: list[Finding]) -> list[str]:
    return [f.what for f in findings]


# ---------------------------------------------------------------- Python, read as code


@pytest.mark.parametrize("after", [
    BASE_PY + "\n\ndef test_add_zero():\n    assert add(0, 0) == 0\n",  # a new test function
    BASE_PY + "\n\nclass TestMore:\n    def test_x(self):\n        assert mean([2]) == 2\n",  # a new test class
    BASE_PY.replace("        assert add(1, -1) == 0\n",  # a new method
                    "        assert add(1, -1) == 0\n\n    def test_sub_zero(self):\n        assert add(0, -0) == 0\n"),
    BASE_PY + "\n\n@pytest.fixture\ndef empty():\n    return []\n",  # a new fixture
    BASE_PY + "\nEMPTY = []\nBIG: int = 10**9\n",  # new constants
    "import math\n" + BASE_PY,  # a new import of a new name
    '"""The calculator\'s tests."""\n' + BASE_PY,  # a docstring
    BASE_PY.replace("def test_add():", "# addition\ndef test_add():"),  # a comment
    BASE_PY.replace("def test_mean(numbers):\n    assert mean(numbers) == 2\n\n\n", "")
    + "\n\ndef test_mean(numbers):\n    assert mean(numbers) == 2\n",  # a base test moved down, unchanged
])
def test_adding_tests_fixtures_and_names_is_fine(after):
    assert edits(after) == []


def test_changing_a_base_test_s_body_is_a_finding_at_its_line():
    [finding] = edits(BASE_PY.replace("mean(numbers) == 2", "mean(numbers) == 2 or True"))
    assert finding == Finding(path=PY, line=16, what="`test_mean` of the base was changed")


def test_adding_a_skip_decorator_to_a_base_test_is_a_finding():
    [finding] = edits(BASE_PY.replace("def test_add():", "@pytest.mark.skip\ndef test_add():"))
    assert finding.what == "`test_add` of the base was changed"


def test_changing_a_base_fixture_is_a_finding():
    assert whats(edits(BASE_PY.replace("return [1, 2, 3]", "return [2, 2, 2]"))) == ["`numbers` of the base was changed"]


@pytest.mark.parametrize("after", [
    BASE_PY.replace("def test_add():", "def test_add_renamed():"),  # renamed
    BASE_PY.replace("def test_add():\n    assert add(1, 2) == 3\n", ""),  # deleted
])
def test_renaming_or_deleting_a_base_test_is_a_finding(after):
    assert whats(edits(after)) == ["`test_add` of the base was removed or renamed"]


def test_a_method_of_a_base_test_class_is_named_by_its_class():
    assert whats(edits(BASE_PY.replace("add(1, -1) == 0", "True"))) == ["`TestCalc.test_sub` of the base was changed"]
    assert whats(edits(BASE_PY.replace("    def test_sub(self):\n        assert add(1, -1) == 0\n", "    pass\n"))) == [
        "`TestCalc.test_sub` of the base was removed or renamed"]


def test_redefining_a_base_test_later_in_the_file_is_a_finding_at_the_new_definition():
    [finding] = edits(BASE_PY + "\n\ndef test_add():\n    pass\n")
    assert finding.what == "`test_add` is defined again, replacing the base's" and finding.line == 25


@pytest.mark.parametrize("added,text", [
    ("LIMIT = 0", "LIMIT = 0"),  # a base constant rebound
    ("add = lambda a, b: 3", "add = lambda a, b: 3"),  # an imported name rebound
    ("test_add = None", "test_add = None"),  # a base test rebound
    ("LIMIT += 1", "LIMIT += 1"),
    ("pytest.skip('later', allow_module_level=True)", "pytest.skip('later', allow_module_level=True)"),  # a call
    ("pytest.register_assert_rewrite('calc')", "pytest.register_assert_rewrite('calc')"),
])
def test_new_code_beside_the_base_s_tests_is_a_finding_quoting_it(added, text):
    [finding] = edits(BASE_PY + "\n" + added + "\n")
    assert finding.what.startswith("new code runs in the base's test file beside its tests")
    assert finding.text == text and finding.line == 24 + added.count("\n")


def test_changing_a_base_class_s_bases_is_a_finding():
    assert whats(edits(BASE_PY.replace("class TestCalc:", "class TestCalc(object):"))) == [
        "the class `TestCalc` of the base was changed"]


def test_changing_a_base_statement_is_a_finding():
    found = whats(edits(BASE_PY.replace("LIMIT = 10", "LIMIT = 11")))
    assert "a statement of the base was changed or removed" in found


def test_a_test_file_that_no_longer_parses_is_a_finding_at_its_line():
    [finding] = edits(BASE_PY + "\ndef broken(:\n")
    assert finding.what == "the test file no longer parses" and finding.line == 24


def test_a_new_import_that_rebinds_a_base_name_is_a_finding():
    assert edits(BASE_PY + "\nfrom fakecalc import mean\n")


def test_a_new_function_that_rebinds_an_imported_name_is_a_finding():
    assert edits(BASE_PY + "\n\ndef mean(xs):\n    return 2\n")


def test_a_new_assignment_to_a_module_attribute_is_a_finding():
    assert edits(BASE_PY + "\nimport calc\ncalc.mean = lambda xs: 2\n")


# ---------------------------------------------------------------- other languages, read as text

JS_PATH = "test/calc.test.js"
JS = '''const { add } = require("../src/calc");

test("adds", () => {
  expect(add(1, 2)).toBe(3);
});

describe("calc", () => {
  it("adds negatives", () => {
    expect(add(-1, -2)).toBe(-3);
  });
});
'''
GO_PATH = "calc_test.go"
GO = '''package calc

import "testing"

func TestAdd(t *testing.T) {
\tif Add(1, 2) != 3 {
\t\tt.Fatal("bad")
\t}
}
'''
RS_PATH = "tests/calc.rs"
RS = '''use calc::*;

mod tests {
    use super::*;

    #[test]
    fn adds() {
        assert_eq!(add(1, 2), 3);
    }
}
'''
NEW_IT = '  it("adds zero", () => {\n    expect(add(0, 0)).toBe(0);\n  });\n'


@pytest.mark.parametrize("path,before,after", [
    (JS_PATH, JS, JS + '\ntest("adds zero", () => {\n  expect(add(0, 0)).toBe(0);\n});\n'),
    (JS_PATH, JS, JS + '\ndescribe("more", () => {\n' + NEW_IT + '});\n'),
    (GO_PATH, GO, GO + '\nfunc TestSub(t *testing.T) {\n\tif Sub(2, 1) != 1 {\n\t\tt.Fatal("bad")\n\t}\n}\n'),
    (RS_PATH, RS, RS.replace("    }\n}\n",
                             "    }\n\n    #[test]\n    fn adds_zero() {\n        assert_eq!(add(0, 0), 0);\n    }\n}\n")),
    (JS_PATH, JS, JS.replace("  expect(add(1, 2)).toBe(3);\n", "  // the simplest case\n  expect(add(1, 2)).toBe(3);\n")),
    (GO_PATH, GO, GO.replace("\tif Add", "\t/* addition */\n\tif Add")),
])
def test_inserting_new_tests_or_comments_is_fine(path, before, after):
    assert text_edits(path, before, after) == []


@pytest.mark.parametrize("after", [
    JS.replace("  });\n});\n", "  });\n" + NEW_IT + "});\n"),  # at its end
    JS.replace('describe("calc", () => {\n', 'describe("calc", () => {\n' + NEW_IT),  # at its start
])
def test_inserting_a_new_it_inside_a_top_level_describe_is_fine(after):
    assert text_edits(JS_PATH, JS, after) == []


@pytest.mark.parametrize("path,before,after,line,text", [
    (JS_PATH, JS, JS.replace("  expect(add(1, 2)).toBe(3);\n", "  return;\n  expect(add(1, 2)).toBe(3);\n"), 4, "return;"),
    (JS_PATH, JS, JS.replace("    expect(add(-1, -2)).toBe(-3);\n",
                             "    expect(add(-1, -2)).toBe(-3);\n    it('x', () => {});\n"),
     10, "it('x', () => {});"),
    (GO_PATH, GO, GO.replace("func TestAdd(t *testing.T) {\n", "func TestAdd(t *testing.T) {\n\tt.Skip()\n"), 6, "t.Skip()"),
    (RS_PATH, RS, RS.replace("        assert_eq!(add(1, 2), 3);\n", "        return;\n        assert_eq!(add(1, 2), 3);\n"),
     8, "return;"),
])
def test_inserting_a_line_inside_an_existing_test_is_a_finding_at_its_line(path, before, after, line, text):
    [finding] = text_edits(path, before, after)
    assert finding.what == "lines were inserted inside an existing block of the base's test file (a test's body)"
    assert (finding.path, finding.line, finding.text) == (path, line, text)


def test_modifying_a_line_of_a_base_test_is_a_finding():
    [finding] = text_edits(JS_PATH, JS, JS.replace("toBe(3)", "toBe(4)"))
    assert finding.what == "lines 4-4 of the base's test file were changed or removed"
    assert finding.line == 4 and finding.text == "expect(add(1, 2)).toBe(3);"
    [finding] = text_edits(GO_PATH, GO, GO.replace("!= 3", "!= 4"))
    assert finding.line == 6 and finding.text == "if Add(1, 2) != 3 {"


def test_deleting_lines_of_a_base_test_is_a_finding():
    [finding] = text_edits(JS_PATH, JS, JS.replace("  expect(add(1, 2)).toBe(3);\n", ""))
    assert finding.what == "lines 4-4 of the base's test file were changed or removed" and finding.line == 0


# ---------------------------------------------------------------- the judge


def _findings(*paths: str) -> dict:
    return {"findings": [{"path": p, "line": 3, "what": "`test_mean` of the base was changed"} for p in paths]}


def test_no_finding_passes_with_no_edit():
    result = evaluate("tests-protected", {"globs": ["tests/**"], "may-change": []}, {"findings": []})
    assert result.status == "passed" and result.edits == [] and result.feedback == "the base's tests are unchanged"


def test_findings_are_rejected_naming_each_path_and_line():
    result = evaluate("tests-protected", {"globs": ["tests/**"], "may-change": []}, _findings(PY, "tests/test_io.py"))
    assert result.status == "rejected"
    assert f"- `{PY}:3`: `test_mean` of the base was changed" in result.feedback
    assert "`tests/test_io.py:3`" in result.feedback and "Restore them as they were" in result.feedback
    assert result.evidence == {"files": 2} and result.edits == []


def test_may_change_lets_paths_through_and_reports_them_as_edits():
    params = {"globs": ["tests/**"], "may-change": [PY]}
    allowed = evaluate("tests-protected", params, _findings(PY))
    assert allowed.status == "passed" and allowed.edits == [PY] and PY in allowed.feedback
    mixed = evaluate("tests-protected", params, _findings(PY, "tests/test_io.py"))
    assert mixed.status == "rejected" and mixed.edits == [PY]
    assert "tests/test_io.py" in mixed.feedback and f"`{PY}:3`" not in mixed.feedback


# ---------------------------------------------------------------- the gatherer


def gather(gathering: FakeGathering, globs: list[str] | None = None) -> list[Finding]:
    params = {"globs": list(TEST_GLOBS) if globs is None else globs, "may-change": []}
    found = anyio.run(tests_protected.gather, tests_protected.KIND.read_params(params), gathering)
    assert isinstance(found, Findings)
    return found.findings


def test_gather_ignores_added_test_files_and_files_that_are_no_tests():
    fake = FakeGathering(base={"src/calc.py": "x = 1\n", PY: BASE_PY},
                         work={"src/calc.py": "x = 2\n", PY: BASE_PY, "tests/test_new.py": "def test_x():\n    pass\n"})
    assert gather(fake) == []


def test_gather_finds_a_deleted_and_a_renamed_base_test_file():
    fake = FakeGathering(base={PY: BASE_PY, "tests/test_io.py": "def test_io():\n    pass\n"},
                         work={"tests/test_io_renamed.py": "def test_io():\n    pass\n"},
                         renames={"tests/test_io_renamed.py": "tests/test_io.py"})
    assert {(f.path, f.what) for f in gather(fake)} == {
        (PY, "a test file of the base was deleted"),
        ("tests/test_io.py", "a test file of the base was renamed to `tests/test_io_renamed.py`"),
    }


def test_gather_reads_a_modified_python_test_as_code_and_others_as_text():
    fake = FakeGathering(base={PY: BASE_PY, JS_PATH: JS},
                         work={PY: BASE_PY.replace("== 3", "== 4"), JS_PATH: JS.replace("toBe(3)", "toBe(4)")})
    assert [(f.path, f.line, f.what) for f in gather(fake)] == [
        (JS_PATH, 4, "lines 4-4 of the base's test file were changed or removed"),
        (PY, 12, "`test_add` of the base was changed"),
    ]


def test_gather_follows_the_globs_it_is_given():
    fake = FakeGathering(base={"checks/calc_check.py": "x = 1\n"}, work={"checks/calc_check.py": "x = 2\n"})
    assert gather(fake) == []
    assert {f.path for f in gather(fake, ["checks/**"])} == {"checks/calc_check.py"}
    assert gather(fake, []) == []


def test_gather_reports_a_base_test_it_cannot_read_or_that_changed_kind():
    unreadable = FakeGathering(base={PY: BASE_PY}, work={}, listed=[Change(PY, "modified")])
    assert whats(gather(unreadable)) == ["a test file of the base was changed"]
    replaced = FakeGathering(base={PY: BASE_PY}, work={PY: BASE_PY}, listed=[Change(PY, "typechange")])
    assert whats(gather(replaced)) == ["a test file of the base was replaced (typechange)"]
