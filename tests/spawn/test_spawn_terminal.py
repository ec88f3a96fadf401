"""The agent's text never controls the operator's terminal: `runtime spawn` and the commands that show
what a spawn left (`status`, `audit show`), run for real with a hostile command agent, on a
pseudo-terminal and on pipes.

The agent (the `command` backend: any script) writes the outside review's string to its stderr, into
its report, into a file name and into a failing test's message; every byte the CLI then writes is
checked (`tests.hostile_text.assert_inert`), and the escaped text must be there, whole.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.conftest import REPO, RUNTIME
from tests.hostile_text import HOSTILE, HOSTILE_NAME, MARKUP, SHOWN, assert_inert, run_cli, sh_bytes
from tests.spawn.conftest import SH_FIX, Spawner

TTY = pytest.mark.parametrize("tty", [False, True], ids=["pipes", "pty"])

# The stderr tail quoted in a failure is the last line, and a CR ends a line: the line without it.
STDERR_LINE = HOSTILE.replace("\r", "")
REPORT = f"Summary: {HOSTILE}\nFiles changed: src/calc/__init__.py\n"
NAME_SHOWN = "x\\x1b]0;pwned\\x07\\x1b[2J\\r\\x08\\x9b\\u202e[red][bold]\\xff.txt"
# A test whose failure message is the hostile string (Python escapes in the source; no lone surrogate).
HOSTILE_TEST = "def test_hostile():\n    assert False, " + ascii(HOSTILE.replace("\udcff", "")) + "\n"


def _printf(text: str, to: str) -> str:
    return f"printf '{sh_bytes(text)}' {to}"


def _spawn(s: Spawner, task, *, tty: bool, json_out: bool = False) -> tuple[int, str]:
    argv = [RUNTIME, "spawn", *(["--json"] if json_out else []), "--catalog", str(REPO), str(task)]
    code, out = run_cli(argv, tty=tty, cwd=s.repo, env=s.full_env())
    return code, assert_inert(out, tty=tty)


def _cli(s: Spawner, *args: str, tty: bool) -> tuple[int, str]:
    code, out = run_cli([RUNTIME, *args], tty=tty, cwd=s.repo, env=s.full_env())
    return code, assert_inert(out, tty=tty)


@TTY
def test_an_agent_s_stderr_quoted_in_a_failure_is_shown_escaped_with_the_outcome_s_exit_code(spawner: Spawner, tty):
    s = spawner
    task = s.task(agent_id="ag-stderr", command=f"{_printf('starting' + chr(10) + STDERR_LINE, '>&2')}; exit 3")
    code, out = _spawn(s, task, tty=tty)
    # The summary did not crash on `[/bold]`: the exit code is the outcome's, not an internal error's.
    assert code == 2 and "internal error" not in out, out
    assert "failed(agent)" in out and "the agent exited with code 3: " + SHOWN in out, out
    assert all(m in out for m in MARKUP), out


@TTY
def test_rejected_work_shows_hostile_file_names_test_output_and_report_escaped(spawner: Spawner, tty):
    s = spawner
    command = "; ".join([
        SH_FIX,
        f"printf x > \"$(printf 'src/calc/{sh_bytes(HOSTILE_NAME)}')\"",  # denied by the task: its name is quoted
        _printf(HOSTILE_TEST, "> tests/test_hostile.py"),  # fails with the hostile message: pytest's output is quoted
        _printf(REPORT, '> "$RUNTIME_REPORT_FILE"'),
        _printf(STDERR_LINE, ">&2"),
    ])
    task = s.task(agent_id="ag-names", command=command,
                  scope={"files-whitelist": ["src/calc/**", "tests/**"], "files-denylist": ["src/calc/x*"]})
    code, out = _spawn(s, task, tty=tty)
    assert code == 2 and "rejected" in out and "internal error" not in out, out
    assert f"src/calc/{NAME_SHOWN}" in out, out  # the denied file, named in the feedback
    assert f"AssertionError: {SHOWN}" in out, out  # the failing test's output
    # The work was committed for inspection; what the other commands show of it is inert too.
    state = s.state_json("ag-names")
    assert state["status"] == "rejected" and s.sha("agent/ag-names") is not None
    code, out = _cli(s, "status", tty=tty)
    assert code == 0 and "ag-names" in out and "rejected" in out, out
    code, out = _cli(s, "audit", "show", "--agent", "ag-names", tty=tty)
    assert code == 0 and "outcome" in out and "rejected your work" in out, out


def test_json_output_stays_exact_json_with_the_agent_s_text_intact(spawner: Spawner):
    s = spawner
    command = "; ".join([SH_FIX, _printf(REPORT, '> "$RUNTIME_REPORT_FILE"'), _printf(HOSTILE, ">&2")])
    task = s.task(agent_id="ag-json", command=command)
    proc = subprocess.run(s.argv(task), cwd=s.repo, env=s.full_env(), capture_output=True, timeout=150)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.isascii()  # json.dumps escapes every control and non-ASCII character
    outcome = json.loads(proc.stdout)
    report = outcome["attempts"][-1]["report"]
    # Exact: the report as the agent wrote it (its undecodable byte read as U+FFFD), not an escaped copy.
    assert report == REPORT.replace("\udcff", "\ufffd"), report
    assert "\x1b]0;pwned\x07" in report and "ok … merged" in report and "\u202e" in report
