"""A repository whose checks and tests already fail at its base: with `[verification] baseline = true`
the change is judged by what it adds.

Real repositories are seldom clean (a lint warning nobody fixed, a test that needs the network the
sandbox does not give). Without it, every change to such a repository is rejected, with feedback
asking the agent to fix code its task never named. With it, a failing command runs on the base as
well (in the same sandbox, over a copy of the base shown at the worktree's path), and only what is
new counts: real git, real bubblewrap, the spawn demo's project with a planted lint warning and a
test that needs the network.
"""

from __future__ import annotations

import shlex

import pytest

from tests.spawn.conftest import FIX_TURN, REPORT, TEST_TURN, Spawner

# A linter of the repository's own: a `print(` in the sources is a warning, `path:line:col: T201 ...`. Each
# run says which tree it saw, into the run's command logs: `saw 1` where calc.mean is the base's, else
# `saw 2` (a number, which the comparison with the base does not read).
LINT = '''import pathlib, sys
calc = pathlib.Path("src/calc/__init__.py").read_text()
print("saw", 1 if "(len(values) + 1)" in calc else 2)
found = 0
for path in sorted(pathlib.Path("src").rglob("*.py")):
    for number, line in enumerate(path.read_text().splitlines(), 1):
        column = line.find("print(")
        if column >= 0:
            print(f"{path}:{number}:{column + 1}: T201 print found")
            found += 1
print(f"Found {found} error(s).")
sys.exit(1 if found else 0)
'''
LEGACY = 'def report(values):\n    print("legacy", values)\n'
NETWORK_TEST = 'def test_downloads_the_index():\n    raise ConnectionError("no network in the sandbox")\n'
CHECK = "python3 tools/lint.py"
VERIFICATION = {"test-command": "pytest -q tests", "test-count-min": 4, "check-commands": [CHECK], "baseline": True}

PRINT_TURN = [{"name": "Edit", "input": {"file_path": "src/calc/__init__.py", "old_string": "def mean(",
                                         "new_string": "print('loaded')\n\n\ndef mean("}}]
NEW_FAILING_TEST = [{"name": "Write", "input": {"file_path": "tests/test_new.py",
                                                "content": "def test_new():\n    assert 1 == 2\n"}}]


@pytest.fixture
def unclean(spawner: Spawner) -> Spawner:
    """The demo project with a lint warning in legacy code and a test that fails without a network, at its base."""
    (spawner.repo / "tools").mkdir()
    (spawner.repo / "tools" / "lint.py").write_text(LINT)
    (spawner.repo / "src" / "legacy.py").write_text(LEGACY)
    (spawner.repo / "tests" / "test_network.py").write_text(NETWORK_TEST)
    spawner.git("add", "-A")
    spawner.git("commit", "-q", "-m", "legacy code, a lint of our own, a test that needs the network")
    spawner.base = spawner.git("rev-parse", "HEAD")
    return spawner


def _lint_runs(s: Spawner, agent_id: str) -> list[str]:
    """Where each run of the lint was (`work`, `base`, `merge`) and which tree it saw, from the command logs."""
    runs = []
    for folder in ("attempt-1/commands", "merge-commands"):
        for log in sorted((s.run_dir(agent_id) / folder).glob("*.log")):
            text = log.read_text()
            if text.startswith(f"$ {CHECK}\n"):
                where = log.stem.split("-", 1)[1]
                saw = next(line for line in text.splitlines() if line.startswith("saw "))
                runs.append(f"{where}:{'base' if saw == 'saw 1' else 'work'}")
    return runs


def _check(r, atom: str) -> dict:
    return next(c for c in r.outcome["attempts"][-1]["checks"] if c["atom"] == atom)


def test_a_fix_is_accepted_and_merged_where_the_base_fails_the_same_checks(unclean: Spawner):
    s = unclean
    task = s.task(agent_id="ag-unclean", verification=VERIFICATION, script=[FIX_TURN, TEST_TURN, REPORT])
    r = s.spawn(task, "--merge")
    assert r.code == 0 and r.label == "ok", r.describe()
    assert len(r.outcome["attempts"]) == 1
    lint = _check(r, "quality::check-green")
    assert lint["status"] == "passed" and "fail(s) there too, and the change adds nothing" in lint["feedback"], lint
    tests = _check(r, "quality::tests-green")
    assert tests["status"] == "passed", tests
    assert "1 fail as they do at the base (tests/test_network.py::test_downloads_the_index), nothing new" \
        in tests["feedback"], tests
    # merged: the simulated merge's checks were judged against the base as well
    assert r.outcome["merged"] and s.git("rev-parse", "trunk") == r.outcome["merged"]
    # verify's run, the base's, the merge's run and the base branch's
    assert _lint_runs(s, "ag-unclean") == ["work:work", "base:base", "merge:work", "base:base"]


def test_without_baseline_the_repository_s_own_failures_reject_the_fix_and_the_base_never_runs(unclean: Spawner):
    s = unclean
    strict = {k: v for k, v in VERIFICATION.items() if k != "baseline"}
    task = s.task(agent_id="ag-strict", verification=strict, script=[FIX_TURN, REPORT])
    r = s.spawn(task)
    assert r.code == 2 and r.label == "rejected", r.describe()
    lint = _check(r, "quality::check-green")
    assert "src/legacy.py:2:5: T201 print found" in lint["feedback"] and "at the base" not in lint["feedback"], lint
    tests = _check(r, "quality::tests-green")
    assert tests["status"] == "rejected" and "test_downloads_the_index" in tests["feedback"], tests
    assert _lint_runs(s, "ag-strict") == ["work:work"]  # the base was never checked out


def test_only_what_the_change_adds_is_rejected_and_quoted(unclean: Spawner):
    s = unclean
    task = s.task(agent_id="ag-worse", verification=VERIFICATION,
                  script=[FIX_TURN, PRINT_TURN, NEW_FAILING_TEST, REPORT])
    r = s.spawn(task)
    assert r.code == 2 and r.label == "rejected", r.describe()
    lint = _check(r, "quality::check-green")
    assert lint["status"] == "rejected", lint
    assert "fails at the base too (code 1), so only what the change adds is quoted" in lint["feedback"], lint
    assert "src/calc/__init__.py:8:1: T201 print found" in lint["feedback"], lint
    assert "legacy.py" not in lint["feedback"], lint  # the repository's own warning is not the agent's to fix
    tests = _check(r, "quality::tests-green")
    assert tests["status"] == "rejected", tests
    assert "1 test(s) fail:" in tests["feedback"], tests  # the new one alone: the base's own failure is let through
    assert "test_new" in tests["feedback"] and "test_downloads_the_index" not in tests["feedback"], tests


# Exits with the count of prints in calc: 0 at the base.
COUNT_PRINTS = "python3 -c " + shlex.quote("import sys; sys.exit(open('src/calc/__init__.py').read().count('print('))")


def test_a_check_green_at_the_base_is_judged_whole_and_the_base_copy_is_removed(spawner: Spawner):
    s = spawner
    verification = {"test-command": "pytest -q tests", "test-count-min": 4, "check-commands": [COUNT_PRINTS]}
    task = s.task(agent_id="ag-clean", verification=verification, script=[FIX_TURN, PRINT_TURN, REPORT])
    r = s.spawn(task)
    assert r.label == "rejected", r.describe()
    lint = _check(r, "quality::check-green")
    assert "exited with code 1" in lint["feedback"] and "at the base" not in lint["feedback"], lint
    assert _check(r, "quality::tests-green")["status"] == "passed"
    assert not (s.run_dir("ag-clean") / "base").exists() and not (s.run_dir("ag-clean") / "scratch").exists()
