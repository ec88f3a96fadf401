"""A repository's own suite runs in verify as on its developers' machines: real git, real bubblewrap.

Its tests and checks may write scratch files anywhere in the tree they run in (a doctest writing
`file.txt.part` in the working folder failed a suite that passes on the host, while the worktree's
top was read-only outside the scope): they run over a throwaway copy of the worktree, shown at its
path, so the writes succeed and are in neither the change nor the worktree afterwards. `.git` and
the control files stay read-only over the copy.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import anyio
import pytest

from runtime.policy.document import seal
from runtime.sandbox.agent import agent_sandbox
from runtime.verify.commands import NOT_RUN, scratch_runner
from runtime.workspace.hazards import MAX_PATH_BYTES
from tests.conftest import REPO
from tests.spawn.conftest import BASE_BRANCH, FIX_TURN, REPORT, Spawner, git

# The repository's own test: it leaves scratch files at the top, in a new folder and in an existing one,
# and rewrites a file of the tree, as suites that cache, download or regenerate do.
SCRATCH_TEST = '''import pathlib


def test_scratch_files_may_be_written_anywhere():
    pathlib.Path("file.txt.part").write_text("partial download")
    pathlib.Path(".coverage").write_text("coverage data")
    folder = pathlib.Path("build/cache")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "out.bin").write_bytes(b"scratch")
    pathlib.Path("docs/notes.md").write_text("regenerated")
    pathlib.Path("src/calc/__pycache__").mkdir(exist_ok=True)
'''
# A check that tries to write every control file and passes only if each write was refused.
CONTROL_CHECK = '''import pathlib
landed = []
for path in (".claude/settings.json", ".mcp.json", ".gitmodules", ".agent-runtime/roles/x.toml", ".git"):
    try:
        with open(path, "a") as f:
            f.write("planted")
        landed.append(path)
    except OSError as e:
        print("refused", path, e.strerror)
print("landed", landed)
raise SystemExit(1 if landed else 0)
'''
SCRATCH = ("file.txt.part", ".coverage", "build", "src/calc/__pycache__")


@pytest.fixture
def scratchy(spawner: Spawner) -> Spawner:
    """The spawn demo's project with a test that writes scratch files where it runs."""
    (spawner.repo / "tests" / "test_scratch.py").write_text(SCRATCH_TEST)
    spawner.git("add", "-A")
    spawner.git("commit", "-q", "-m", "a test that writes scratch files")
    spawner.base = spawner.git("rev-parse", "HEAD")
    return spawner


def test_a_suite_writing_scratch_files_passes_and_leaves_nothing(scratchy: Spawner):
    s = scratchy
    verification = {"test-command": "pytest -q tests", "test-count-min": 5,
                    "check-commands": [f"python3 -c {shlex.quote(CONTROL_CHECK)}", "python3 -m tabnanny src"]}
    task = s.task(agent_id="ag-scratch", verification=verification, script=[FIX_TURN, REPORT])
    r = s.spawn(task, "--keep", "--merge")
    assert r.code == 0 and r.label == "ok", r.describe()
    (attempt,) = r.outcome["attempts"]
    assert all(c["status"] == "passed" for c in attempt["checks"]), attempt["checks"]
    assert "5 test(s) passed" in next(c["feedback"] for c in attempt["checks"] if c["kind"] == "tests-green")
    # The change is the fix alone, merged; the scratch files are nowhere: not in a commit, not in the worktree.
    assert s.git("diff", "--name-only", s.base, BASE_BRANCH).splitlines() == ["src/calc/__init__.py"]
    worktree = s.worktree("ag-scratch")
    for path in SCRATCH:
        assert not (worktree / path).exists() and not (s.repo / path).exists(), path
    assert (worktree / "docs" / "notes.md").read_text() == (s.repo / "docs" / "notes.md").read_text()
    # No control file was written, by the check or through it; the copies are gone.
    assert not any((worktree / name).exists() for name in (".claude", ".mcp.json", ".gitmodules", ".agent-runtime"))
    assert not (s.run_dir("ag-scratch") / "scratch").exists()


def _runner_setup(s: Spawner, use_sandbox: bool):
    wt = s.tmp / "wt"
    s.git("worktree", "add", "-q", "-b", "agent/by-hand", str(wt), s.base)
    home = s.tmp / "home"
    home.mkdir()
    policy = seal(role="test", root=str(wt), gates=[{"kind": "write-whitelist", "params": {"globs": ["src/calc/__init__.py"]}}])
    sandbox = agent_sandbox(policy, wt, home, [], {}) if use_sandbox else None
    return wt, home, sandbox


@pytest.mark.parametrize("use_sandbox", [True, False], ids=["sandbox", "no-os-sandbox"])
def test_the_commands_of_one_verify_share_one_copy(spawner: Spawner, use_sandbox: bool):
    s = spawner
    wt, home, sandbox = _runner_setup(s, use_sandbox)
    before = git(wt, "status", "--porcelain", "--ignored")
    folder = s.tmp / "scratch"

    async def run() -> list[tuple[int, str]]:
        with scratch_runner(wt, sandbox, home, folder) as command:
            first = await command("echo one > file.txt.part && mkdir -p tests/tmp && echo two > tests/tmp/x && pwd", 60)
            second = await command("cat file.txt.part tests/tmp/x", 60)
            assert folder.is_dir()
            return [first, second]

    (code1, out1), (code2, out2) = anyio.run(run)
    assert (code1, code2) == (0, 0), out1 + out2
    assert out1.strip() == (str(wt) if use_sandbox else str(folder / "tree"))  # the copy stands in the worktree's place
    assert out2.split() == ["one", "two"]  # the next command of the same verify sees them, as on a developer's machine
    assert git(wt, "status", "--porcelain", "--ignored") == before
    assert not (wt / "file.txt.part").exists() and not folder.exists()


def test_a_tree_that_cannot_be_copied_runs_nothing(spawner: Spawner):
    s = spawner
    wt, home, sandbox = _runner_setup(s, True)
    fd = os.open(wt, os.O_RDONLY)
    try:
        for _ in range(MAX_PATH_BYTES // 200 + 1):
            os.mkdir("d" * 199, dir_fd=fd)
            nxt = os.open("d" * 199, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nxt
    finally:
        os.close(fd)
    marker = s.tmp / "ran"

    async def run() -> tuple[int, str]:
        with scratch_runner(wt, sandbox, home, s.tmp / "scratch") as command:
            return await command(f"touch {marker}", 60)

    code, output = anyio.run(run)
    assert code == NOT_RUN and "was not run" in output and "deeper than git can hold" in output
    assert not marker.exists()


def test_runtime_verify_runs_the_suite_over_a_copy(scratchy: Spawner):
    s = scratchy
    wt = s.tmp / "wt"
    s.git("worktree", "add", "-q", "-b", "agent/by-hand", str(wt), s.base)
    path = wt / "src" / "calc" / "__init__.py"
    path.write_text(path.read_text().replace("(len(values) + 1)", "len(values)"))
    report = s.tmp / "report.md"
    report.write_text(REPORT)
    task = s.task(agent_id="ag-verify", verification={"test-command": "pytest -q tests", "test-count-min": 5,
                                                      "check-commands": ["python3 -m tabnanny src"]})
    proc = s.cli("verify", "--catalog", str(REPO), str(task), "--worktree", str(wt), "--base", s.base,
                 "--report", str(report), cwd=wt)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["failed"] == []
    assert git(wt, "status", "--porcelain", "--ignored") == "M src/calc/__init__.py"  # the fix, and nothing else
    assert all(not Path(wt, p).exists() for p in SCRATCH)
