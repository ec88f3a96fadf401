"""pytest and unittest run for real on small projects, as the orchestrator starts them (the runtime's plugin or
launcher from a support folder under a random name), their reports read back test by test."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from runtime.verify.commands import NO_BINDS, Binds
from runtime.verify.kinds.runners.plan import plan_tests
from runtime.verify.test_runs import run_plan as real_run_plan
from tests.verify.kinds.runners.harness import environment, green, run, write

pytestmark = pytest.mark.slow

PYTEST_PROJECT = {
    "pytest.ini": "[pytest]\n",
    "conftest.py": """
        import pytest

        @pytest.fixture
        def answer():
            return 42
    """,
    "tests/test_one.py": """
        import pytest

        def test_passes(answer):
            assert answer == 42

        def test_fails():
            assert 1 + 1 == 3, "sum is wrong"

        @pytest.mark.skip(reason="not now")
        def test_skipped():
            pass

        @pytest.mark.xfail(reason="known")
        def test_xfail():
            assert False

        @pytest.mark.xfail(reason="known")
        def test_xpass():
            pass

        @pytest.mark.parametrize("n", [1, 2])
        def test_param(n):
            assert n == 1

        @pytest.fixture
        def broken():
            raise RuntimeError("fixture broke")

        def test_setup_error(broken):
            pass

        class TestGroup:
            def test_method(self):
                pass
    """,
    "tests/test_two.py": """
        def test_other():
            pass
    """,
}
PYTEST_EXPECTED = {
    "tests/test_one.py::test_passes": "passed",
    "tests/test_one.py::test_fails": "failed",
    "tests/test_one.py::test_skipped": "skipped",
    "tests/test_one.py::test_xfail": "xfailed",
    "tests/test_one.py::test_xpass": "xpassed",
    "tests/test_one.py::test_param[1]": "passed",
    "tests/test_one.py::test_param[2]": "failed",
    "tests/test_one.py::test_setup_error": "error",
    "tests/test_one.py::TestGroup::test_method": "passed",
    "tests/test_two.py::test_other": "passed",
}


@pytest.fixture
def pytest_project(tmp_path: Path) -> Path:
    return write(tmp_path / "proj", PYTEST_PROJECT)


@pytest.mark.parametrize("command", ["pytest", "pytest -q", "python -m pytest", "python -m pytest -v tests"])
def test_pytest_reports_each_test_s_outcome(pytest_project: Path, python_env: dict[str, str], command: str) -> None:
    ran = run(command, pytest_project, python_env)
    green(ran, PYTEST_EXPECTED)
    assert ran.code == 1
    assert "rootdir" in ran.reading.config and "pytest.ini" in ran.reading.config  # type: ignore[union-attr]
    cases = ran.cases
    assert cases["tests/test_one.py::test_fails"].file == "tests/test_one.py"
    assert "sum is wrong" in cases["tests/test_one.py::test_fails"].message
    assert "fixture broke" in cases["tests/test_one.py::test_setup_error"].message


def test_pytest_through_the_runtime_s_own_run_plan(pytest_project: Path, python_env: dict[str, str],
                                                   tmp_path: Path) -> None:
    """The same step through `runtime.verify.test_runs.run_plan`, with a command runner that is plain bash."""

    async def bash(command: str, timeout_s: float, /, *, binds: Binds = NO_BINDS) -> tuple[int, str]:
        done = await anyio.run_process(["bash", "-c", f"{command} 2>&1"], cwd=pytest_project, check=False,
                                       env=environment(python_env))
        return done.returncode, done.stdout.decode()

    result = anyio.run(real_run_plan, plan_tests("pytest -q"), bash, pytest_project, tmp_path / "reports", None)
    [report] = result.reports()
    assert report.problem == "" and report.complete
    assert {t.id: t.outcome for t in report.tests} == PYTEST_EXPECTED
    assert not (tmp_path / "reports").exists()  # removed after


def test_pytest_a_glob_is_expanded_by_bash(pytest_project: Path, python_env: dict[str, str]) -> None:
    write(pytest_project, {"tests/other_check.py": "def test_not_collected():\n    pass\n"})
    ran = run("pytest tests/test_*.py", pytest_project, python_env)
    assert " tests/test_*.py" in ran.command  # reached bash as written
    green(ran, PYTEST_EXPECTED)


def test_pytest_deselected_tests_are_absent(pytest_project: Path, python_env: dict[str, str]) -> None:
    ran = run('pytest -k "not param and not xpass" tests', pytest_project, python_env)
    green(ran, {k: v for k, v in PYTEST_EXPECTED.items() if "param" not in k and "xpass" not in k})


def test_pytest_a_file_that_does_not_import_is_an_error_case(tmp_path: Path, python_env: dict[str, str]) -> None:
    root = write(tmp_path / "proj", {
        "pytest.ini": "[pytest]\n",
        "tests/test_ok.py": "def test_fine():\n    pass\n",
        "tests/test_syntax.py": "def test_broken(:\n    pass\n",
    })
    ran = run("pytest", root, python_env)
    # pytest stops before running anything when collection fails: the file's error alone, the run complete
    green(ran, {"tests/test_syntax.py": "error"})
    case = ran.cases["tests/test_syntax.py"]
    assert case.file == "tests/test_syntax.py" and "SyntaxError" in case.message
    assert ran.code == 2
    # told to go on past it, pytest runs the rest
    green(run("pytest --continue-on-collection-errors", root, python_env),
          {"tests/test_ok.py::test_fine": "passed", "tests/test_syntax.py": "error"})


def test_pytest_under_xdist_the_controller_alone_writes(pytest_project: Path, python_env: dict[str, str]) -> None:
    ran = run("pytest -n 2 -p no:cacheprovider", pytest_project, python_env)
    green(ran, PYTEST_EXPECTED)
    assert ran.data is not None
    events = [json.loads(line) for line in ran.data.decode().splitlines()]
    assert [e["event"] for e in events].count("start") == 1
    assert [e["event"] for e in events].count("finish") == 1
    calls = [e["id"] for e in events if e["event"] == "report" and e["when"] == "call"]
    assert sorted(calls) == sorted(set(calls))  # no test reported twice
    assert "xdist" in ran.reading.config  # type: ignore[union-attr]


def test_pytest_a_root_conftest_loads_after_the_plugin(tmp_path: Path, python_env: dict[str, str]) -> None:
    """The plugin is named first (`-p <random name>`), and the tree's own conftest still configures pytest."""
    root = write(tmp_path / "proj", {
        "pytest.ini": "[pytest]\n",
        "conftest.py": """
            import os

            def pytest_configure(config):
                config.own_conftest = True
                assert "AGENT_RUNTIME_TEST_REPORT" not in os.environ  # taken out before any code of the tree

            def pytest_collection_modifyitems(items):
                items.reverse()
        """,
        "test_conf.py": """
            def test_saw_conftest(request):
                assert request.config.own_conftest

            def test_second():
                pass
        """,
    })
    ran = run("pytest", root, python_env)
    green(ran, {"test_conf.py::test_second": "passed", "test_conf.py::test_saw_conftest": "passed"})
    assert list(ran.outcomes) == ["test_conf.py::test_second", "test_conf.py::test_saw_conftest"]


def test_pytest_os_exit_after_a_fake_summary_leaves_the_report_unfinished(tmp_path: Path,
                                                                        python_env: dict[str, str]) -> None:
    root = write(tmp_path / "proj", {
        "pytest.ini": "[pytest]\n",
        "test_exit.py": """
            import os

            def test_first():
                pass

            def test_exits():
                print("test_exit.py::test_later PASSED")
                print("============================== 3 passed in 0.01s ==============================", flush=True)
                os._exit(0)

            def test_later():
                assert False, "really broken"
        """,
    })
    ran = run("pytest -s", root, python_env)
    assert ran.code == 0
    assert ran.reading is not None and ran.reading.complete is False
    # the test that ended the process started and never finished; the one after it never ran
    assert ran.outcomes == {"test_exit.py::test_first": "passed", "test_exit.py::test_exits": "error"}
    assert "never finished" in ran.cases["test_exit.py::test_exits"].message


def test_pytest_a_test_printing_pytest_s_own_lines_changes_nothing(tmp_path: Path, python_env: dict[str, str]) -> None:
    root = write(tmp_path / "proj", {
        "pytest.ini": "[pytest]\n",
        "test_fake.py": """
            def test_victim():
                assert False, "really broken"

            def test_forger():
                print("test_fake.py::test_victim PASSED")
                print("=== 2 passed in 0.01s ===")
        """,
    })
    green(run("pytest -s -v", root, python_env),
          {"test_fake.py::test_victim": "failed", "test_fake.py::test_forger": "passed"})


# --- unittest ------------------------------------------------------------------------------------------

UNITTEST_TESTS = """
    import unittest

    class Calc(unittest.TestCase):
        def test_passes(self):
            self.assertEqual(1 + 1, 2)

        def test_fails(self):
            self.assertEqual(1 + 1, 3)

        def test_error(self):
            raise RuntimeError("boom")

        @unittest.skip("not now")
        def test_skipped(self):
            pass

        @unittest.expectedFailure
        def test_xfail(self):
            self.assertEqual(1, 2)

        @unittest.expectedFailure
        def test_xpass(self):
            pass

        def test_subtests_fail(self):
            for i in range(3):
                with self.subTest(i=i):
                    self.assertLess(i, 1)

        def test_subtests_pass(self):
            for i in range(3):
                with self.subTest(i=i):
                    self.assertGreaterEqual(i, 0)
"""
UNITTEST_OUTCOMES = {
    "Calc.test_error": "error",
    "Calc.test_fails": "failed",
    "Calc.test_passes": "passed",
    "Calc.test_skipped": "skipped",
    "Calc.test_subtests_fail": "failed",
    "Calc.test_subtests_pass": "passed",
    "Calc.test_xfail": "xfailed",
    "Calc.test_xpass": "xpassed",
}


@pytest.fixture
def unittest_project(tmp_path: Path) -> Path:
    return write(tmp_path / "proj", {
        "tests/__init__.py": "",
        "tests/test_calc.py": UNITTEST_TESTS,
        "tests/test_missing.py": "import a_module_that_is_not_there\n",
    })


def test_unittest_discovery_from_the_root(unittest_project: Path, python_env: dict[str, str]) -> None:
    ran = run("python -m unittest -v", unittest_project, python_env)
    expected = {f"tests.test_calc.{k}": v for k, v in UNITTEST_OUTCOMES.items()}
    green(ran, {**expected, "unittest.loader._FailedTest.tests.test_missing": "error"})
    assert ran.code == 1
    cases = ran.cases
    assert cases["tests.test_calc.Calc.test_fails"].file == "tests/test_calc.py"
    failed_import = cases["unittest.loader._FailedTest.tests.test_missing"]
    assert failed_import.file == "tests/test_missing.py"
    assert "a_module_that_is_not_there" in failed_import.message
    # the test whose two subtests failed is one test, with both failures
    assert cases["tests.test_calc.Calc.test_subtests_fail"].message.count("AssertionError") == 2
    assert [t.id for t in ran.reading.tests].count("tests.test_calc.Calc.test_subtests_fail") == 1  # type: ignore[union-attr]


def test_unittest_discover_with_a_start_folder(unittest_project: Path, python_env: dict[str, str]) -> None:
    ran = run("python -m unittest discover -s tests -v", unittest_project, python_env)
    expected = {f"test_calc.{k}": v for k, v in UNITTEST_OUTCOMES.items()}
    green(ran, {**expected, "unittest.loader._FailedTest.test_missing": "error"})


def test_unittest_names_one_module(unittest_project: Path, python_env: dict[str, str]) -> None:
    ran = run("python3 -m unittest tests.test_calc", unittest_project, python_env)
    green(ran, {f"tests.test_calc.{k}": v for k, v in UNITTEST_OUTCOMES.items()})


def test_unittest_a_unittest_py_in_the_tree_does_not_stand_in(unittest_project: Path, python_env: dict[str, str]) -> None:
    write(unittest_project, {"unittest.py": "raise SystemExit('the tree shadowed unittest')\n"})
    ran = run("python -m unittest -v", unittest_project, python_env)
    assert "shadowed" not in ran.output
    expected = {f"tests.test_calc.{k}": v for k, v in UNITTEST_OUTCOMES.items()}
    green(ran, {**expected, "unittest.loader._FailedTest.tests.test_missing": "error"})


def test_unittest_os_exit_after_a_fake_summary_leaves_the_report_unfinished(tmp_path: Path,
                                                                          python_env: dict[str, str]) -> None:
    root = write(tmp_path / "proj", {
        "test_exit.py": """
            import os
            import sys
            import unittest

            class Exits(unittest.TestCase):
                def test_a_first(self):
                    pass

                def test_b_exits(self):
                    sys.stderr.write("\\n----------------------------------------------------------------------\\n"
                                     "Ran 3 tests in 0.001s\\n\\nOK\\n")
                    sys.stderr.flush()
                    os._exit(0)

                def test_c_later(self):
                    self.fail("really broken")
        """,
    })
    ran = run("python -m unittest -v", root, python_env)
    assert ran.code == 0
    assert ran.reading is not None and ran.reading.complete is False
    assert ran.outcomes == {"test_exit.Exits.test_a_first": "passed"}


def test_unittest_a_test_printing_unittest_s_own_lines_changes_nothing(tmp_path: Path,
                                                                     python_env: dict[str, str]) -> None:
    root = write(tmp_path / "proj", {
        "test_fake.py": """
            import sys
            import unittest

            class Fake(unittest.TestCase):
                def test_a_victim(self):
                    self.fail("really broken")

                def test_b_forger(self):
                    sys.stderr.write("test_a_victim (test_fake.Fake.test_a_victim) ... ok\\nOK\\n")
        """,
    })
    green(run("python -m unittest -v", root, python_env),
          {"test_fake.Fake.test_a_victim": "failed", "test_fake.Fake.test_b_forger": "passed"})
