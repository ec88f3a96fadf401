"""GNU patch without a file operand: the gate reads the diff and checks every file it names.

The diff is read where patch reads it (a heredoc, a here-string, `-i FILE`, `< FILE`), but from a file only
when the agent cannot change it; the names are cut as patch cuts them (-p, /dev/null, dates after a tab),
and diffs patch reads otherwise than as unified ones are refused. The model is held against the real
patch too: the file it says it patches is always one the gate checked.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from runtime.gate.decision import ALLOW, DENY
from runtime.gate.diff_targets import DiffError, diff_targets
from runtime.gate.engine import decide
from runtime.gate.shell import analyze
from tests.conftest import require

EDIT = "--- a/{old}\n+++ b/{new}\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"


def _bash(policy, command, cwd):
    return decide(policy, "Bash", {"command": command}, str(cwd))


def _inline(diff: str, options: str = "-p1") -> str:
    return f"patch {options} <<'EOF'\n{diff}EOF"


# -- the names a diff gives ----------------------------------------------------------------


@pytest.mark.parametrize("diff,strip,names", [
    (EDIT.format(old="src/a.py", new="src/a.py"), 1, ["src/a.py"]),
    (EDIT.format(old="src/a.py", new="src/b.py"), 1, ["src/a.py", "src/b.py"]),
    (EDIT.format(old="src/a.py", new="src/a.py"), None, ["a.py"]),  # no -p: the last part only
    (EDIT.format(old="src/a.py", new="src/a.py"), 0, ["a/src/a.py", "b/src/a.py"]),
    (EDIT.format(old="src/a.py", new="src/a.py"), 3, []),  # too few parts: patch skips the name
    ("--- a//src///a.py\n+++ b/src/a.py\n@@ -1 +1 @@\n-x\n+y\n", 2, ["a.py"]),  # a run of slashes counts once
    ("--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+x\n", 1, ["new.py"]),
    ("--- a/x.py\t2024-01-01 10:00:00\n+++ b/x.py\t2024-01-01 10:00:01\n@@ -1 +1 @@\n-x\n+y\n", 1, ["x.py"]),
    ("Index: src/x.py\n" + EDIT.format(old="src/x.py", new="src/x.py"), 0, ["src/x.py", "a/src/x.py", "b/src/x.py"]),
    ("diff --git a/old.py b/new.py\nsimilarity index 100%\nrename from old.py\nrename to new.py\n", 1,
     ["old.py", "new.py"]),
    ("commit message\n\n" + EDIT.format(old="a.py", new="a.py") + "-- \n2.39.0\n", 1, ["a.py"]),
])
def test_a_diff_names_the_files_patch_would_pick_from(diff, strip, names):
    assert diff_targets(diff, strip) == names


@pytest.mark.parametrize("diff,why", [
    ("*** a/x.py\n--- b/x.py\n***************\n", "context, normal or ed diff"),
    ("--- a/x.py\n+++ b/x.py\n1c1\n< x\n---\n> y\n", "context, normal or ed diff"),  # a normal diff
    ("--- a/x.py\n+++ b/x.py\n1d\n.\n", "context, normal or ed diff"),  # an ed script: patch runs ed
    ("  --- a/.git/config\n  +++ b/.git/config\n  @@ -0,0 +1 @@\n  +x\n", "indented"),
    ("- --- a/.git/config\n- +++ b/.git/config\n@@ -0,0 +1 @@\n+x\n", "context, normal or ed diff"),
    ('--- "a/x.py"\n+++ "b/x.py"\n', "quoted"),
    ("--- a/my file.py\t2024-01-01\n", "blanks"),
    ("diff --git a/x b/x\nnew file mode 120000\n--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+/etc\n", "120000"),
    ("diff --git a/x b/x\nGIT binary patch\nliteral 0\n", "context, normal or ed diff"),
    ("--- a/x.py\r\n+++ b/x.py\r\n", "carriage returns"),
    ("--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n-x\n+y\n", "ends before"),
    ("--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-x\n-z\n+y\n", "more lines"),
    ("just text\n", "no unified diff"),
])
def test_what_patch_would_read_otherwise_is_refused(diff, why):
    with pytest.raises(DiffError, match=why):
        diff_targets(diff, 1)


# -- the shell: what standard input is -------------------------------------------------------


@pytest.mark.parametrize("command,path,text", [
    ("patch -p1 < fix.diff", "fix.diff", None),
    ("< fix.diff patch -p1", "fix.diff", None),
    ("patch -p1 0< fix.diff 2>&1", "fix.diff", None),
    ("patch -p1 <<'EOF'\nab\nEOF", None, "ab\n"),
    ("patch -p1 <<EOF && echo ok\nab\nEOF", None, "ab\n"),
    ("patch -p1 <<< 'ab'", None, "ab\n"),
])
def test_standard_input_is_recorded_when_the_shell_says_for_sure(command, path, text):
    stdin = analyze(command, "/w").commands[0].stdin
    assert stdin is not None and (stdin.path, stdin.text) == (path, text)


@pytest.mark.parametrize("command", [
    "cat fix.diff | patch -p1", "patch -p1", "patch -p1 < a.diff < b.diff", "patch -p1 <&3", "{ patch -p1; } < a.diff",
    "timeout 5 patch -p1 < a.diff", "patch -p1 <<-'EOF'\n\tab\nEOF", "patch -p1 <<EOF\na\\\\b\nEOF",
    "patch -p1 3<<'EOF'\nab\nEOF", "patch -p1 < a.diff <&-",
])
def test_standard_input_is_unknown_otherwise(command):
    assert all(c.stdin is None for c in analyze(command, "/w").commands if c.name == "patch")


# -- the gate ---------------------------------------------------------------------------------


def test_an_inline_diff_of_files_in_the_scope_is_allowed(policy_for, worktree):
    policy = policy_for()
    for command in (_inline(EDIT.format(old="src/pkg/mod.py", new="src/pkg/mod.py")),
                    _inline("--- /dev/null\n+++ b/tests/test_new.py\n@@ -0,0 +1 @@\n+x\n"),
                    "cd src/pkg && " + _inline(EDIT.format(old="mod.py", new="mod.py")),
                    "patch -p1 <<< '" + EDIT.format(old="src/pkg/mod.py", new="src/pkg/mod.py") + "'"):
        assert _bash(policy, command, worktree).verdict == ALLOW, command


@pytest.mark.parametrize("diff,options", [
    (EDIT.format(old="src/pkg/mod.py", new=".git/hooks/pre-commit"), "-p1"),
    (EDIT.format(old="src/pkg/mod.py", new="docs/x.md"), "-p1"),  # outside the write scope
    (EDIT.format(old="src/pkg/mod.py", new="src/pkg/generated/x.py"), "-p1"),  # the denylist
    (EDIT.format(old="src/pkg/mod.py", new="src/pkg/mod.py"), "-p0"),  # a/src/... lies outside the scope
    (EDIT.format(old="src/pkg/mod.py", new="src/pkg/mod.py"), ""),  # no -p: mod.py in the worktree's root
    (EDIT.format(old="src/pkg/escape/passwd", new="src/pkg/escape/passwd"), "-p1"),  # a symlink to /etc
    ("diff --git a/src/pkg/mod.py b/.claude/settings.json\nrename from src/pkg/mod.py\nrename to .claude/settings.json\n",
     "-p1"),
    ("--- a/src/pkg/mod.py\n+++ b/src/pkg/mod.py\n5c5\n< x\n---\n> y\n", "-p1"),
])
def test_an_inline_diff_naming_a_file_the_role_may_not_write_is_refused(policy_for, worktree, diff, options):
    d = _bash(policy_for(), _inline(diff, options), worktree)
    assert d.verdict == DENY, d


def test_the_backup_and_the_rejects_beside_a_target_are_writes_too(policy_for, worktree):
    (worktree / ".git/config").write_text("[core]\n")
    os.link(worktree / ".git/config", worktree / "src/pkg/mod.py.orig")
    policy = policy_for()
    diff = EDIT.format(old="src/pkg/mod.py", new="src/pkg/mod.py")
    d = _bash(policy, _inline(diff), worktree)
    assert d.verdict == DENY and "mod.py.orig" in d.reason and "hard links" in d.reason
    assert _bash(policy, _inline(diff, "-p1 --no-backup-if-mismatch"), worktree).verdict == ALLOW
    d = _bash(policy, "patch src/pkg/mod.py fix.diff", worktree)  # the same with a file operand
    assert d.verdict == DENY and "mod.py.orig" in d.reason
    os.link(worktree / ".git/config", worktree / "src/pkg/mod.py.rej")
    d = _bash(policy, _inline(diff, "-p1 --no-backup-if-mismatch"), worktree)
    assert d.verdict == DENY and "mod.py.rej" in d.reason
    assert _bash(policy, _inline(diff, "-p1 --no-backup-if-mismatch -r /dev/null"), worktree).verdict == ALLOW


def test_a_diff_file_the_agent_can_change_is_refused_with_the_inline_form(policy_for, worktree):
    (worktree / "src/pkg/fix.diff").write_text(EDIT.format(old="src/pkg/mod.py", new="src/pkg/mod.py"))
    policy = policy_for()
    for command in ("patch -p1 < src/pkg/fix.diff", "patch -p1 -i src/pkg/fix.diff", "patch -p1 --input=src/pkg/fix.diff"):
        d = _bash(policy, command, worktree)
        assert d.verdict == DENY and "a file you can change" in d.reason and "<<'EOF'" in d.reason, command
    # With --dry-run patch writes nothing: the diff need not be read.
    assert _bash(policy, "patch -p1 --dry-run < src/pkg/fix.diff", worktree).verdict == ALLOW
    assert _bash(policy, "patch -p1 --dry-run -o /tmp/out < src/pkg/fix.diff", worktree).verdict == DENY


def test_a_diff_file_the_agent_cannot_change_is_read(policy_for, worktree):
    (worktree / "docs/good.diff").write_text(EDIT.format(old="src/pkg/mod.py", new="src/pkg/mod.py"))
    (worktree / "docs/evil.diff").write_text(EDIT.format(old="src/pkg/mod.py", new=".git/hooks/pre-commit"))
    os.symlink("good.diff", worktree / "docs/link.diff")
    os.mkfifo(worktree / "docs/fifo.diff")
    policy = policy_for()
    assert _bash(policy, "patch -p1 < docs/good.diff", worktree).verdict == ALLOW
    assert _bash(policy, "patch -p1 -i docs/good.diff", worktree).verdict == ALLOW
    assert _bash(policy, "patch -p1 < docs/evil.diff", worktree).verdict == DENY
    for unreadable in ("docs/link.diff", "docs/fifo.diff", "docs/missing.diff"):  # never follows a link or waits
        d = _bash(policy, f"patch -p1 < {unreadable}", worktree)
        assert d.verdict == DENY and "cannot be read as a diff" in d.reason, unreadable


@pytest.mark.parametrize("command", ["cat fix.diff | patch -p1", "patch -p1", "timeout 5 patch -p1 < docs/good.diff",
                                     "patch -p1 < a.diff < b.diff"])
def test_a_diff_the_gate_cannot_see_is_refused_with_the_inline_form(policy_for, worktree, command):
    d = _bash(policy_for(), command, worktree)
    assert d.verdict == DENY and "<<'EOF'" in d.reason


# -- the real patch ----------------------------------------------------------------------------


@pytest.mark.parametrize("diff", [
    EDIT.format(old="src/a.py", new="src/a.py"),
    EDIT.format(old="src/a.py", new="src/b.py"),
    EDIT.format(old="src/missing.py", new="src/b.py"),
    "--- /dev/null\n+++ b/src/new.py\n@@ -0,0 +1 @@\n+x = 1\n",
    "--- a/src/a.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x = 1\n",
    "Index: src/b.py\n--- src/a.py\n+++ src/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n",
    "diff --git a/src/a.py b/src/c.py\nsimilarity index 100%\nrename from src/a.py\nrename to src/c.py\n",
    "--- a/src/a.py\t2024-01-01 10:00:00\n+++ b/src/b.py\t2024-01-01 10:00:00\n@@ -1 +1 @@\n-x = 1\n+x = 2\n",
])
@pytest.mark.parametrize("strip", [None, 0, 1])
def test_the_files_the_real_patch_changes_are_among_the_names_the_gate_checks(diff, strip, tmp_path):
    require(shutil.which("patch") is not None, "`patch` is not installed")
    for name in ("src/a.py", "src/b.py", "a.py", "b.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    args = ["patch", "-f", "-t", "--no-backup-if-mismatch", "-r", "-"] + ([f"-p{strip}"] if strip is not None else [])
    subprocess.run(args, input=diff, text=True, cwd=tmp_path, capture_output=True, timeout=30,
                   env={"PATH": "/usr/bin:/bin", "LANG": "C"})
    after = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    touched = {str(p.relative_to(tmp_path)) for p in set(before) | set(after) if before.get(p) != after.get(p)}
    assert touched <= set(diff_targets(diff, strip)), (touched, diff_targets(diff, strip))
