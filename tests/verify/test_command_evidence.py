"""command_evidence: a command kind's evidence, with the base's run of each command that failed."""

from __future__ import annotations

import anyio

from runtime.verify.gather import COMMAND_TIMEOUT_S, command_evidence


def _runner(answers: dict[str, tuple[int, str]], asked: list[tuple[str, float]]):
    async def run(command: str, timeout_s: float) -> tuple[int, str]:
        asked.append((command, timeout_s))
        return answers[command]
    return run


def test_checks_run_each_command_and_only_a_failing_one_again_on_the_base():
    here: list = []
    there: list = []
    evidence = anyio.run(command_evidence, "checks-green", {"commands": ["lint", "types"], "baseline": True},
                         _runner({"lint": (1, "a.py:1: W"), "types": (0, "ok")}, here),
                         _runner({"lint": (1, "a.py:2: W")}, there))
    assert evidence == {"results": [
        {"command": "lint", "exit-code": 1, "output": "a.py:1: W", "base": {"exit-code": 1, "output": "a.py:2: W"}},
        {"command": "types", "exit-code": 0, "output": "ok"}]}
    assert here == [("lint", COMMAND_TIMEOUT_S), ("types", COMMAND_TIMEOUT_S)]
    assert there == [("lint", COMMAND_TIMEOUT_S)]


def test_tests_green_without_a_base_runner_gives_the_run_alone():
    asked: list = []
    evidence = anyio.run(command_evidence, "tests-green", {"command": "pytest", "min-count": 1},
                         _runner({"pytest": (1, "1 failed")}, asked))
    assert evidence == {"exit-code": 1, "output": "1 failed"}


def test_without_baseline_the_base_is_never_asked():
    there: list = []
    evidence = anyio.run(command_evidence, "tests-green", {"command": "pytest", "min-count": 1, "baseline": False},
                         _runner({"pytest": (1, "1 failed")}, []), _runner({}, there))
    assert evidence == {"exit-code": 1, "output": "1 failed"} and there == []


def test_tests_green_that_passes_never_asks_the_base():
    there: list = []
    evidence = anyio.run(command_evidence, "tests-green", {"command": "pytest", "min-count": 1, "baseline": True},
                         _runner({"pytest": (0, "3 passed")}, []), _runner({}, there))
    assert evidence == {"exit-code": 0, "output": "3 passed"} and there == []
