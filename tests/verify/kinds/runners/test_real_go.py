"""`go test` run for real (`-json`, its events to the report file) on small modules with no dependencies:
go's caches, module path and home in the test's folders, no network."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.verify.kinds.runners.harness import green, run, write

pytestmark = pytest.mark.slow

GO_MOD = "module example.com/demo\n\ngo 1.19\n"
CALC_TEST = """
    package calc

    import "testing"

    func TestAdd(t *testing.T) {
        if Add(1, 2) != 3 {
            t.Fatal("bad sum")
        }
    }

    func TestFails(t *testing.T) { t.Errorf("wrong: %d", Add(1, 1)) }

    func TestSkipped(t *testing.T) { t.Skip("not now") }

    func TestTable(t *testing.T) {
        t.Run("ok", func(t *testing.T) {})
        t.Run("bad case", func(t *testing.T) { t.Fatal("sub broke") })
    }
"""
CALC_OUTCOMES = {
    "example.com/demo/calc::TestAdd": "passed",
    "example.com/demo/calc::TestFails": "failed",
    "example.com/demo/calc::TestSkipped": "skipped",
    "example.com/demo/calc::TestTable": "failed",
    "example.com/demo/calc::TestTable/ok": "passed",
    "example.com/demo/calc::TestTable/bad_case": "failed",
}


@pytest.fixture
def go_project(tmp_path: Path) -> Path:
    return write(tmp_path / "proj", {
        "go.mod": GO_MOD,
        "calc/calc.go": "package calc\n\nfunc Add(a, b int) int { return a + b }\n",
        "calc/calc_test.go": CALC_TEST,
        "notests/notests.go": "package notests\n\nfunc X() int { return 1 }\n",
    })


@pytest.mark.parametrize("command", ["go test ./...", "go test -v ./...", "go test -json ./calc/ ./notests/"])
def test_go_reports_each_test_and_subtest(go_project: Path, go_env: dict[str, str], command: str) -> None:
    ran = run(command, go_project, go_env)
    green(ran, CALC_OUTCOMES)
    assert ran.code == 1
    assert ran.command.count("-json") == 1
    cases = ran.cases
    assert "wrong: 2" in cases["example.com/demo/calc::TestFails"].message
    assert "sub broke" in cases["example.com/demo/calc::TestTable/bad_case"].message


def test_go_a_package_that_does_not_build_is_an_error_case(go_project: Path, go_env: dict[str, str]) -> None:
    write(go_project, {
        "broken/broken.go": 'package broken\n\nfunc X() int { return "s" }\n',
        "broken/broken_test.go": 'package broken\n\nimport "testing"\n\nfunc TestX(t *testing.T) { X() }\n',
    })
    ran = run("go test ./...", go_project, go_env)
    green(ran, {**CALC_OUTCOMES, "example.com/demo/broken::(package)": "error"})
    message = ran.cases["example.com/demo/broken::(package)"].message
    assert "broken.go:3" in message  # the compiler's words, which go printed on its standard error


def test_go_a_package_that_does_not_build_alone(tmp_path: Path, go_env: dict[str, str]) -> None:
    root = write(tmp_path / "proj", {
        "go.mod": GO_MOD,
        "broken/broken_test.go": 'package broken\n\nimport "testing"\n\nfunc TestX(t *testing.T) { undefined() }\n',
    })
    ran = run("go test ./...", root, go_env)
    green(ran, {"example.com/demo/broken::(package)": "error"})
    assert "undefined" in ran.cases["example.com/demo/broken::(package)"].message
    assert ran.code != 0


def test_go_test_main_exiting_before_the_tests_leaves_them_absent(go_project: Path, go_env: dict[str, str]) -> None:
    write(go_project, {"exits/exits_test.go": """
        package exits

        import (
            "fmt"
            "os"
            "testing"
        )

        func TestMain(m *testing.M) {
            fmt.Println("PASS")
            fmt.Println("ok  \\texample.com/demo/exits\\t0.001s")
            os.Exit(0)
            os.Exit(m.Run())
        }

        func TestNeverRuns(t *testing.T) { t.Fatal("never runs") }
    """})
    ran = run("go test ./...", go_project, go_env)
    green(ran, CALC_OUTCOMES)  # no test of the package that exited: not passed, absent


def test_go_a_printed_result_line_never_covers_a_real_failure(tmp_path: Path, go_env: dict[str, str]) -> None:
    root = write(tmp_path / "proj", {"go.mod": GO_MOD, "fake/fake_test.go": """
        package fake

        import (
            "fmt"
            "testing"
        )

        func TestVictim(t *testing.T) { t.Fatal("really broken") }

        func TestForger(t *testing.T) {
            fmt.Println("--- PASS: TestVictim (0.00s)")
            fmt.Println("--- PASS: TestNeverWritten (0.00s)")
        }
    """})
    ran = run("go test ./...", root, go_env)
    assert ran.reading is not None
    assert "printed lines of go test's own form" in ran.reading.problem
    outcomes = ran.outcomes
    assert outcomes["example.com/demo/fake::TestVictim"] == "failed"
    assert outcomes["example.com/demo/fake::TestForger"] == "passed"
    # Go before 1.20 reads the printed line as a result (a test that never started): never a pass
    assert outcomes.get("example.com/demo/fake::TestNeverWritten", "error") == "error"


def test_go_os_exit_in_a_test_after_a_fake_summary_fails_it(tmp_path: Path, go_env: dict[str, str]) -> None:
    root = write(tmp_path / "proj", {"go.mod": GO_MOD, "exits/exits_test.go": """
        package exits

        import (
            "fmt"
            "os"
            "testing"
        )

        func TestFirst(t *testing.T) {}

        func TestExits(t *testing.T) {
            fmt.Println("PASS")
            fmt.Println("ok  \\texample.com/demo/exits\\t0.001s")
            os.Exit(0)
        }

        func TestLater(t *testing.T) { t.Fatal("really broken") }
    """})
    ran = run("go test ./...", root, go_env)
    assert ran.code != 0
    assert ran.reading is not None
    outcomes = ran.outcomes
    assert outcomes["example.com/demo/exits::TestFirst"] == "passed"
    # go's testing panics on os.Exit(0) inside a test (Go 1.16 on): the test fails, the rest never ran
    assert outcomes["example.com/demo/exits::TestExits"] in ("failed", "error")
    assert outcomes.get("example.com/demo/exits::TestLater") != "passed"
    assert "passed" not in {v for k, v in outcomes.items() if k != "example.com/demo/exits::TestFirst"}
