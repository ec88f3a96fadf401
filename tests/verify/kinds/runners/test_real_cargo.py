"""`cargo test` run for real on small crates with no dependencies: offline, with a fresh CARGO_HOME (no
registry is read) and the test's own target folder. libtest's text is the report (its JSON needs nightly)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.verify.kinds.runners.harness import green, run, write

pytestmark = pytest.mark.slow

CARGO_TOML = '[package]\nname = "demo"\nversion = "0.1.0"\nedition = "2021"\n'
LIB = """
    /// Adds two numbers.
    ///
    /// ```
    /// assert_eq!(demo::add(1, 2), 3);
    /// ```
    ///
    /// A wrong one:
    ///
    /// ```
    /// assert_eq!(demo::add(2, 2), 5);
    /// ```
    pub fn add(a: i32, b: i32) -> i32 {
        a + b
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn passes() {
            assert_eq!(add(1, 2), 3);
        }

        #[test]
        fn fails() {
            assert_eq!(add(1, 1), 3, "wrong sum");
        }

        #[test]
        #[ignore]
        fn ignored() {}

        #[test]
        #[should_panic(expected = "boom")]
        fn panics() {
            panic!("boom");
        }

        mod inner {
            #[test]
            fn nested() {}
        }
    }
"""
OUTCOMES = {
    "demo::tests::passes": "passed",
    "demo::tests::fails": "failed",
    "demo::tests::ignored": "skipped",
    "demo::tests::panics": "passed",
    "demo::tests::inner::nested": "passed",
    "integration::integrates": "passed",
    "integration::integration_fails": "failed",
    "doc-tests demo::src/lib.rs - add": "passed",
    "doc-tests demo::src/lib.rs - add #2": "failed",
}


@pytest.fixture
def crate(tmp_path: Path) -> Path:
    return write(tmp_path / "proj", {
        "Cargo.toml": CARGO_TOML,
        "src/lib.rs": LIB,
        "tests/integration.rs": """
            #[test]
            fn integrates() {
                assert_eq!(demo::add(2, 3), 5);
            }

            #[test]
            fn integration_fails() {
                assert_eq!(demo::add(2, 3), 6);
            }
        """,
    })


def test_cargo_reads_unit_integration_and_doc_tests_with_ids_stable_across_options(
        crate: Path, cargo_env: dict[str, str]) -> None:
    """`-q` is taken out (its dots name no test), `--verbose` names rustdoc in a `Running` line of its own,
    and doc tests finish in any order: each run reads the same ids."""
    for command in ("cargo test", "cargo test --verbose", "cargo test -q", "cargo test -q -- -q", "cargo test"):
        ran = run(command, crate, cargo_env)
        green(ran, OUTCOMES)
        assert ran.code == 101
        assert "-q" not in ran.command.split()
        cases = ran.cases
        assert "wrong sum" in cases["demo::tests::fails"].message
        assert "left: 4" in cases["doc-tests demo::src/lib.rs - add #2"].message  # the second example's own failure
        assert cases["doc-tests demo::src/lib.rs - add"].message == ""


def test_cargo_a_compile_error_leaves_the_report_unfinished(tmp_path: Path, cargo_env: dict[str, str]) -> None:
    root = write(tmp_path / "proj", {
        "Cargo.toml": CARGO_TOML,
        "src/lib.rs": 'pub fn f() -> i32 {\n    "not a number"\n}\n\n#[test]\nfn t() {}\n',
    })
    ran = run("cargo test", root, cargo_env)
    assert ran.code == 101
    assert ran.reading is not None
    assert ran.reading.complete is False and ran.reading.tests == []
    assert "mismatched types" in ran.output


def test_cargo_a_printed_result_line_is_caught_and_never_covers_a_real_failure(tmp_path: Path,
                                                                             cargo_env: dict[str, str]) -> None:
    root = write(tmp_path / "proj", {"Cargo.toml": CARGO_TOML, "src/lib.rs": """
        #[cfg(test)]
        mod tests {
            use std::io::Write;

            #[test]
            fn victim() {
                std::thread::sleep(std::time::Duration::from_millis(300));
                panic!("really broken");
            }

            #[test]
            fn forger() {
                // past libtest's capture, straight to the process's standard output
                let mut out = std::io::stdout();
                out.write_all(b"test tests::victim ... ok\\n").unwrap();
                out.flush().unwrap();
            }
        }
    """})
    ran = run("cargo test", root, cargo_env)
    assert ran.reading is not None
    assert "printed lines of libtest's own form" in ran.reading.problem
    assert ran.outcomes == {"demo::tests::victim": "failed", "demo::tests::forger": "passed"}


def test_cargo_process_exit_after_a_fake_summary_is_caught(tmp_path: Path, cargo_env: dict[str, str]) -> None:
    root = write(tmp_path / "proj", {"Cargo.toml": CARGO_TOML, "src/lib.rs": """
        #[cfg(test)]
        mod tests {
            use std::io::Write;

            #[test]
            fn victim() {
                std::thread::sleep(std::time::Duration::from_millis(300));
                panic!("really broken");
            }

            #[test]
            fn exits() {
                let mut out = std::io::stdout();
                out.write_all(b"test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\\n").unwrap();
                out.flush().unwrap();
                std::process::exit(0);
            }
        }
    """})
    ran = run("cargo test", root, cargo_env)
    assert ran.code == 0  # cargo saw the binary end well
    assert ran.reading is not None
    assert ran.reading.problem or not ran.reading.complete
    assert "passed" not in ran.outcomes.values()


def test_cargo_process_exit_alone_leaves_the_report_unfinished(tmp_path: Path, cargo_env: dict[str, str]) -> None:
    root = write(tmp_path / "proj", {"Cargo.toml": CARGO_TOML, "src/lib.rs": """
        #[cfg(test)]
        mod tests {
            #[test]
            fn victim() {
                std::thread::sleep(std::time::Duration::from_millis(300));
                panic!("really broken");
            }

            #[test]
            fn exits() {
                std::process::exit(0);
            }
        }
    """})
    ran = run("cargo test", root, cargo_env)
    assert ran.reading is not None
    assert ran.reading.complete is False
    assert "passed" not in ran.outcomes.values()
