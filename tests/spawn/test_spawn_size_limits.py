"""`runtime spawn` on a repository with a large module: a one-line fix in it is accepted the first time,
and growing it is rejected with feedback that asks for no refactor of code nobody touched.

edit-local holds `quality::constructor-pattern` (200 lines a file, 50 a function); the module here has
1075 lines and a 110-line function, as real libraries do.
"""

from __future__ import annotations

from tests.spawn.conftest import BASE_BRANCH, Spawner
from tests.spawn.conftest import BUGGY as MEAN_BUGGY
from tests.spawn.conftest import FIXED as MEAN_FIXED

BUGGY = "FACTOR = 3  # the scale factor"
FIXED = "FACTOR = 2  # the scale factor"
MODULE = "src/calc/tables.py"


def big_module() -> str:
    lines = ['"""Conversion tables."""', "", BUGGY, "", "", "def scale(x):"]
    lines += [f"    x = x + {n} - {n}" for n in range(108)] + ["    return x * FACTOR", "", ""]
    lines += [f"TABLE_{n} = {n}" for n in range(1075 - len(lines))]
    return "\n".join(lines) + "\n"


def add_module(s: Spawner) -> str:
    """The module and its test on trunk (calc.mean, the demo's bug, fixed: this task is about the tables)."""
    calc = s.repo / "src" / "calc" / "__init__.py"
    calc.write_text(calc.read_text().replace(MEAN_BUGGY, MEAN_FIXED))
    (s.repo / MODULE).write_text(big_module())
    (s.repo / "tests" / "test_tables.py").write_text("from calc.tables import scale\n\n\n"
                                                     "def test_scale():\n    assert scale(5) == 10\n")
    s.git("add", "-A")
    s.git("commit", "-q", "-m", "conversion tables")
    return s.git("rev-parse", BASE_BRANCH)


VERIFICATION = {"test-command": "pytest -q tests", "test-count-min": 5, "check-commands": ["python3 -m tabnanny src"]}


def report(what: str) -> str:
    return f"Summary: {what}\nFiles changed: {MODULE}\n"


def test_a_one_line_fix_in_a_1075_line_module_is_accepted_the_first_time(spawner: Spawner):
    s = spawner
    base = add_module(s)
    assert len((s.repo / MODULE).read_text().splitlines()) == 1075
    task = s.task(agent_id="ag-big-fix", goal="scale() multiplies by 3; it must multiply by 2.",
                  verification=VERIFICATION, script=[
        [{"name": "Edit", "input": {"file_path": MODULE, "old_string": BUGGY, "new_string": FIXED}}],
        [{"name": "Bash", "input": {"command": "pytest -q tests"}}],
        report("FACTOR was 3; it is now 2."),
    ])
    r = s.spawn(task)
    assert r.code == 0, r.describe()
    out = r.outcome
    assert out["label"] == "ok" and len(out["attempts"]) == 1, r.describe()
    checks = {c["atom"]: c for c in out["attempts"][0]["checks"]}
    assert checks["quality::constructor-pattern"]["status"] == "passed", checks
    assert s.git("diff", "--name-only", base, out["commit"]).splitlines() == [MODULE]
    assert FIXED in s.show(out["commit"], MODULE)


def test_growing_the_1075_line_module_is_rejected_saying_it_may_not_grow(spawner: Spawner):
    s = spawner
    add_module(s)
    grown = big_module().replace(BUGGY, FIXED) + "".join(f"EXTRA_{n} = {n}\n" for n in range(15))
    task = s.task(agent_id="ag-big-grow", goal="scale() multiplies by 3; it must multiply by 2.",
                  verification=VERIFICATION, script=[
        [{"name": "Write", "input": {"file_path": MODULE, "content": grown}}],
        [{"name": "Bash", "input": {"command": "pytest -q tests"}}],
        report("FACTOR is now 2, and there are more tables."),
    ])
    r = s.spawn(task)
    assert r.code == 2, r.describe()
    checks = {c["atom"]: c for c in r.outcome["attempts"][0]["checks"]}
    size = checks["quality::constructor-pattern"]
    assert size["status"] == "rejected"
    assert (f"`{MODULE}` grew from 1075 to 1090 lines; it was over the 200-line limit at the base, so it may not grow: "
            "make the change without adding lines, or move the new code to a new module") in size["feedback"]
    assert "scale" not in size["feedback"]  # the untouched 110-line function is not judged
    assert all(c["status"] == "passed" for atom, c in checks.items() if atom != "quality::constructor-pattern"), checks
