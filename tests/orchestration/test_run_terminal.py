"""`runtime run` without `--json` shows its agents' and its reviewer's text inert, on a pseudo-terminal
and on pipes: the live table, `shared-path` events (paths an agent wrote), the judgement, the run's
reason and the questions from reports; then `runtime memory show/search`, which show what the
accepted run left, and the Markdown run report on disk. See `tests.hostile_text`.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import REPO, RUNTIME
from tests.hostile_text import HOSTILE, MARKUP, SHOWN, assert_inert, run_cli
from tests.orchestration.conftest import FIX_TURN, Orchestra

# TOML holds no lone surrogate: the rest of the string, its NUL included (memory keeps text escaped).
TEXT = HOSTILE.replace("\udcff", "")
NAME = "x\x1b]0;pwned\x07\x1b[2J\r\b\x9b\u202e[red][bold].py"


@pytest.mark.parametrize("tty", [False, True], ids=["pipes", "pty"])
def test_a_run_shows_agent_and_reviewer_text_inert(orchestra: Orchestra, tty):
    o = orchestra
    write = [{"name": "Write", "input": {"file_path": f"src/calc/{NAME}", "content": "X = 1\n"}}]
    shared = o.subtask("shared", 1, role="edit-shared", whitelist=["src/calc/**"], turns=[
        FIX_TURN, write, f"Summary: {TEXT}\nFiles changed: src/calc/__init__.py\n"])
    doc = [{"name": "Write", "input": {"file_path": "docs/calc.md", "content": "# calc\n"}}]
    asker = o.subtask("asker", 1, whitelist=["docs/**"], test_command="pytest -q tests -k add",
                      check_commands=["test -s docs/calc.md"],
                      turns=[doc, f"Summary: documented.\nFiles changed: docs/calc.md\nQuestions: {TEXT}\n"])
    review = json.dumps({"status": "ok", "reason": f"fine\n{TEXT}", "learn": [TEXT]})
    plan = o.plan([shared, asker], reviewer=[review])
    code, raw = run_cli([RUNTIME, "run", "--catalog", str(REPO), str(plan)], tty=tty, cwd=o.repo, env=o.full_env(),
                        timeout=300)
    out = assert_inert(raw, tty=tty)
    assert code == 0 and "accepted" in out, out
    assert "shared-path: subtask=shared, agent=" in out and f"src/calc/{NAME[:1]}\\x1b]0;pwned\\x07" in out, out
    assert f"judgement: status=ok, reason=fine\\n{SHOWN}" in out, out
    assert f"question: {SHOWN}" in out and all(m in out for m in MARKUP), out
    # What the accepted run left: the report's summary as a result, the reviewer's learning as pending.
    for args in (["memory", "show"], ["memory", "search", "pwned"]):
        code, raw = run_cli([RUNTIME, *args, "--catalog", str(REPO)], tty=tty, cwd=o.repo, env=o.full_env())
        shown = assert_inert(raw, tty=tty)
        assert code == 0 and SHOWN in shown, shown
    (report_path,) = (o.state / "runs").glob("*/report.md")
    report = assert_inert(report_path.read_bytes(), tty=False)
    assert f"- {SHOWN}" in report, report  # the question
