"""The shapes the gate checks by hand, without `re`, mean what their regular expressions mean.

Each is held to the expression it replaced, over any string of the characters that matter to it and
a few that do not (a newline: `$` once took `git\\n`; a Unicode digit: `\\d` took `٣`, the shapes
take ASCII digits only)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.lang import shapes
from runtime.policy.build import build_policy
from runtime.policy.document import PolicyDocument

REPO = Path(__file__).resolve().parents[2]

# Each shape, the regular expression it means (matched whole), and the characters its strings are drawn from.
CASES = [
    (shapes.is_program_name, r"[A-Za-z0-9_][A-Za-z0-9_.+-]*", "aZ09_.+-/ \n:"),
    (shapes.is_option_spelling, r"--?[A-Za-z0-9][A-Za-z0-9_.:+-]*", "-aZ0_.:+=/ \n"),
    (shapes.is_dotted_name, r"[A-Za-z_][A-Za-z0-9_.]*", "aZ0_.-/\n"),
    (shapes.is_target_name, r"[A-Za-z0-9_][A-Za-z0-9_.-]*", "aZ0_.-+/\n"),
    (shapes.is_python, r"(?:python|pypy)[0-9.]*", "pythonpy3.1-\n"),
    (shapes.is_interpreter, r"python[0-9.]*|pypy[0-9.]*|node|nodejs|perl|ruby|php|deno|bun|lua|Rscript",
     "pythonodejsrlubyhp3.\n"),
    (shapes.is_negative_number, r"-[0-9]+", "-+0123a\n"),
    (shapes.is_env_name, r"[A-Za-z_][A-Za-z0-9_]*", "aZ0_-=\n"),
    (shapes.is_role_name, r"[a-z][a-z0-9-]{0,63}", "az09-A_\n"),
    (shapes.is_count, r"[+-]?[0-9]+[kKmMgGbB]?", "+-09kKmMgGbBx\n"),
    (shapes.is_file_mode, r"0?[0-7]{1,3}|(?:[ugoa]*[-+=][rwxX]*(?:[-+=][rwxX]*)*)(?:,[ugoa]*[-+=][rwxX]*(?:[-+=][rwxX]*)*)*",
     "0178ugoa-+=rwxX,s\n"),
]


@pytest.mark.parametrize(("shape", "pattern", "alphabet"), CASES, ids=[c[0].__name__ for c in CASES])
@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_a_shape_matches_what_its_regular_expression_matches(shape, pattern, alphabet, data):
    text = data.draw(st.text(alphabet=alphabet, max_size=70))
    assert shape(text) == (re.fullmatch(pattern, text) is not None), text


@pytest.mark.parametrize("text", ["5\n", "٣", "-٣", "python\n"])
def test_no_shape_takes_a_final_newline_or_a_unicode_digit(text):
    assert not shapes.is_count(text)
    assert not shapes.is_negative_number(text)
    assert not shapes.is_python(text)


def test_the_space_check_reads_blanks_as_the_shell_s_splitting_would():
    assert shapes.has_space_or_any("a\u00a0b", "*") == (re.search(r"\s", "a\u00a0b") is not None)
    assert shapes.has_space_or_any("a*b", "*") and not shapes.has_space_or_any("ab", "*?")


TASK = """[task]
role = "edit-local"
goal = "shapes"
[scope]
files-whitelist = ["src/**"]
[verification]
test-command = "pytest -q"
check-commands = ["ruff check src"]
[body]
text = "x"
"""


def test_a_cold_hook_imports_no_regular_expressions_for_a_compound_command(tmp_path):
    """The hook is a fresh process per call: `re` (with `enum`, `functools` and `collections`) is a quarter of it.
    A compound Bash command judged under a role's whole policy (globs, counts, a grammar) imports none of
    them, nor `json`."""
    root = tmp_path / "wt"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("x = 1\n")
    (root / "README.md").write_text("x\n")
    (tmp_path / "task.toml").write_text(TASK)
    policy = tmp_path / "policy.json"
    PolicyDocument.read(build_policy(REPO, None, tmp_path / "task.toml", root)).write(policy)
    call = json.dumps({"hook_event_name": "PreToolUse", "cwd": str(root), "tool_name": "Bash",
                       "tool_input": {"command": "ls -la src && head -20 README.md | grep -c x; chmod u+x src/a.py"}})
    probe = ("import sys; from runtime.cli.check import respond; "
             f"out, err, code = respond(['--policy', {str(policy)!r}], sys.stdin.buffer.read()); "
             "print(code, out.strip()); "
             "print(sorted(m for m in ('re', 'enum', 'functools', 'collections', 'json', 'typing') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], input=call, capture_output=True, text=True, check=True)
    answer, imported = out.stdout.splitlines()
    assert answer.startswith("0 ") and '"allow"' in answer, out.stdout + out.stderr
    assert imported == "[]", out.stdout


def test_a_person_s_session_hook_imports_none_of_them_once_its_policy_is_cached(tmp_path):
    """The main session of `runtime hook install` (its role and catalog looked up, its policy from the cache):
    the same holds for every module that path reads (the catalog's lookup, the errors it could raise)."""
    root = tmp_path / "wt"
    (root / "src").mkdir(parents=True)
    (root / "README.md").write_text("x\n")
    env = {**os.environ, "RUNTIME_CACHE_DIR": str(tmp_path / "cache"), "CLAUDE_PROJECT_DIR": str(root)}
    call = json.dumps({"hook_event_name": "PreToolUse", "cwd": str(root), "tool_name": "Bash",
                       "tool_input": {"command": "ls -la src && head -20 README.md | grep -c x"}})
    probe = ("import sys; from runtime.cli.check import respond; "
             "out, err, code = respond(['--on-allow', 'defer', '--main-session', 'session'], sys.stdin.buffer.read()); "
             "print(code, out.strip() or '-', err.strip() or '-'); "
             "print(sorted(m for m in ('re', 'enum', 'functools', 'collections', 'json', 'typing') if m in sys.modules))")
    for _ in range(2):  # the first call compiles the policy into the cache; the second reads it from there
        out = subprocess.run([sys.executable, "-c", probe], input=call, capture_output=True, text=True, check=True,
                             env=env, cwd=root)
    answer, imported = out.stdout.splitlines()
    assert answer.startswith("0 "), out.stdout + out.stderr
    assert imported == "[]", out.stdout
