"""The two sides of the work's tests: the run of the base's tests lays the base's test side back over the
work's copy (the task's test edits kept), and the run of the new tests leaves out the base's unchanged test
modules."""

from __future__ import annotations

import re

from runtime.verify.kinds.base import compile_globs
from runtime.verify.kinds.findings import TEST_GLOBS
from runtime.verify.kinds.kind import Change
from runtime.verify.kinds.runners.plan import plan_tests
from runtime.verify.kinds.test_side import base_side, new_side

TEST = compile_globs(list(TEST_GLOBS))
BASE = {"tests/test_calc.py": b"base calc tests", "tests/conftest.py": b"base conftest", "tests/data/x.json": b"{}",
        "tests/test_other.py": b"other", "src/calc.py": b"code"}


def source(path: str) -> bytes | None:
    return BASE.get(path)


CHANGES = [Change("tests/test_calc.py", "modified"), Change("tests/test_new.py", "added"),
           Change("tests/__init__.py", "added"), Change("tests/data/x.json", "deleted"), Change("src/calc.py", "modified"),
           Change("tests/test_moved.py", "renamed", old_path="tests/test_other.py")]


def test_the_base_s_tests_run_on_the_base_s_test_side():
    side = base_side(CHANGES, TEST, None, source, list(BASE))
    assert dict(side.files) == {"tests/test_calc.py": b"base calc tests", "tests/test_new.py": None,
                                "tests/__init__.py": None, "tests/data/x.json": b"{}", "tests/test_moved.py": None,
                                "tests/test_other.py": b"other"}
    assert "src/calc.py" not in dict(side.files)  # the work's production code is judged
    assert set(side.locked) == {"tests/test_calc.py", "tests/conftest.py", "tests/data/x.json", "tests/test_other.py"}


def test_a_file_the_task_lets_change_keeps_the_work_s_version():
    side = base_side(CHANGES, TEST, re.compile(r"tests/test_calc\.py$"), source, list(BASE))
    assert "tests/test_calc.py" not in dict(side.files)


def test_the_new_tests_run_without_the_base_s_unchanged_test_modules():
    side = new_side(CHANGES, TEST, None, ["tests/test_calc.py", "tests/test_other.py", "tests/test_kept.py"],
                    plan_tests("pytest tests"))
    assert side is not None and dict(side.files) == {"tests/test_kept.py": None}


def test_a_module_the_command_names_stays_in_the_run_of_the_new_tests():
    side = new_side([Change("tests/test_new.py", "added")], TEST, None, ["tests/test_kept.py"],
                    plan_tests("pytest tests/test_kept.py tests/test_new.py"))
    assert side is not None and side.files == ()


def test_go_and_cargo_compile_a_package_s_tests_together_so_nothing_is_left_out():
    side = new_side([Change("calc_extra_test.go", "added")], TEST, None, ["calc_test.go"], plan_tests("go test ./..."))
    assert side is not None and side.files == ()


def test_no_new_test_means_no_run_of_new_tests():
    assert new_side([Change("src/calc.py", "modified"), Change("tests/test_calc.py", "deleted")], TEST, None, [],
                    plan_tests("pytest")) is None
    assert new_side([Change("tests/test_calc.py", "modified")], TEST, re.compile(r"tests/test_calc\.py$"), [],
                    plan_tests("pytest")) is None
