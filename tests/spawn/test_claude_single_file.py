"""A write scope naming single files, with the real Claude Code CLI (2.1.332) in the real sandbox.

The CLI's Edit and Write replace a file atomically: they write `<file>.tmp.<pid>.<hex>` beside it and
rename that over it. The sandbox makes the folder of a file the scope names writable (a read-only
folder refused the temporary file with EROFS, a file bound on its own would refuse the rename), keeps
the folders inside it read-only, and leaves the rest to the gate (the file tools' writes to other
files there) and to verify (any file the scope does not hold). The CLI's temporary files never
survive into the change.

Each spawn also runs the repository's own suite in verify, whose tests write scratch files in the
working folder and in a subfolder, as a doctest writing `file.txt.part` does: they pass, and their
scratch files are in neither the change nor the worktree afterwards.
"""

from __future__ import annotations

import json
import mmap
import re
import shlex
from pathlib import Path

import pytest

from runtime.spawn.backends.claude_code.cli import find_claude
from runtime.spawn.backends.claude_code.settings import remove_staging_files, stream_event, written_files
from runtime.spawn.progress import Progress
from tests.conftest import require
from tests.fakes.claude_cli import missing_cli_reason
from tests.spawn.test_claude_backend import (
    BUGGY,
    FIXED,
    REPORT,
    WatchingServer,
    _describe,
    _gate_records,
    _git,
    _spawn,
    _task,
    calculator_repo,
)

pytestmark = pytest.mark.real_client

HELPERS = "def twice(x):\n    return 2 * x\n"
WRITTEN = '"""A calculator."""\n\n\ndef add(a, b):\n    return a + b\n'
# The repository's own test: it writes scratch files where it runs, as real suites do.
SCRATCH_TEST = ("import pathlib\n\n\ndef test_scratch_files_may_be_written_anywhere():\n"
                "    pathlib.Path('file.txt.part').write_text('partial download')\n"
                "    folder = pathlib.Path('tests/scratch')\n    folder.mkdir(exist_ok=True)\n"
                "    (folder / 'out.txt').write_text('scratch')\n"
                "    pathlib.Path('src/sub/cache.bin').write_bytes(b'scratch')\n")
# Run by the agent through Bash (allowed: in the sandboxed policy the gate does not read Python): a new
# file beside the scope's file lands, the folders inside that folder and the rest of the tree stay read-only.
PLANTER = ("import pathlib\n"
           "pathlib.Path('src/notes.txt').write_text('planted')\n"
           "for p in ('src/sub/planted.py', 'tests/planted.py', 'README.md', 'src/helpers.py', 'planted-at-top.txt'):\n"
           "    try:\n"
           "        pathlib.Path(p).write_text('x')\n"
           "        print('WROTE', p)\n"
           "    except OSError as e:\n"
           "        print('REFUSED', p, e.strerror)\n")


@pytest.fixture
def one_file_project(tmp_path) -> tuple[Path, str]:
    """The calculator, with a sibling module, a folder beside it and a test that writes scratch files."""
    repo, _ = calculator_repo(tmp_path)
    (repo / "src" / "helpers.py").write_text(HELPERS)
    (repo / "src" / "sub").mkdir()
    (repo / "src" / "sub" / "__init__.py").write_text("")
    (repo / "tests" / "test_scratch.py").write_text(SCRATCH_TEST)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "helpers and a test that writes scratch files")
    return repo, _git(repo, "rev-parse", "HEAD")


def _staging(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".tmp." in p.name)


def test_a_single_file_scope_takes_the_clis_atomic_edit_and_write(one_file_project, tmp_path):
    repo, base = one_file_project
    state, agent_id = tmp_path / "state", "ag-one-file"
    worktree = state / "worktrees" / agent_id
    turns = [
        [{"name": "Edit", "input": {"file_path": str(worktree / "src/calc.py"), "old_string": BUGGY,
                                    "new_string": FIXED}}],
        [{"name": "Write", "input": {"file_path": str(worktree / "src/calc.py"), "content": WRITTEN}}],
        REPORT,
    ]
    with WatchingServer(turns, state / "runs" / agent_id / "home") as server:
        proc, outcome = _spawn(repo, state, _task(tmp_path, agent_id, server.url, ["src/calc.py"], retries=0))
        edit_id, write_id = (ids[0] for ids in server.scripted_tool_use_ids()[:2])
        edit, write = server.tool_result_for(edit_id), server.tool_result_for(write_id)
    why = _describe(proc, state, agent_id)
    assert proc.returncode == 0 and outcome.get("label") == "ok", why
    assert not edit.get("is_error") and not write.get("is_error"), (edit, write)
    assert [r["decision"] for r in _gate_records(state, repo)] == ["allow", "allow"]
    (attempt,) = outcome["attempts"]
    assert all(c["status"] == "passed" for c in attempt["checks"]), attempt["checks"]
    tests = next(c for c in attempt["checks"] if c["kind"] == "tests-green")
    assert "2 test(s) passed" in tests["feedback"]  # the scratch-writing test ran in verify, and passed

    # The change is the one file, as the Write left it; the CLI's temporary files are gone.
    commit = outcome["commit"]
    assert _git(repo, "diff", "--name-only", base, commit).splitlines() == ["src/calc.py"]
    assert _git(repo, "show", f"{commit}:src/calc.py") == WRITTEN.strip()
    assert _staging(worktree / "src") == []
    # Verify's scratch files stayed in its throwaway copy: not in the worktree, not in the commit.
    for scratch in ("file.txt.part", "tests/scratch", "src/sub/cache.bin"):
        assert not (worktree / scratch).exists(), scratch
    assert _git(repo, "ls-tree", "-r", "--name-only", commit) == _git(repo, "ls-tree", "-r", "--name-only", base)
    assert not (state / "runs" / agent_id / "scratch").exists()


def test_other_files_beside_the_scopes_file_are_refused_or_thrown_away(one_file_project, tmp_path):
    repo, base = one_file_project
    state, agent_id = tmp_path / "state", "ag-one-file-wider"
    worktree = state / "worktrees" / agent_id
    turns = [
        [{"name": "Edit", "input": {"file_path": str(worktree / "src/calc.py"), "old_string": BUGGY,
                                    "new_string": FIXED}}],
        [{"name": "Write", "input": {"file_path": str(worktree / "src/other.py"), "content": "x = 1\n"}}],
        [{"name": "Edit", "input": {"file_path": str(worktree / "src/helpers.py"), "old_string": "2 * x",
                                    "new_string": "3 * x"}}],
        [{"name": "Bash", "input": {"command": f"python3 -c {shlex.quote(PLANTER)}"}}],
        REPORT,
    ]
    with WatchingServer(turns, state / "runs" / agent_id / "home") as server:
        proc, outcome = _spawn(repo, state, _task(tmp_path, agent_id, server.url, ["src/calc.py"], retries=0))
        ids = [ids[0] for ids in server.scripted_tool_use_ids()[:4]]
        results = [server.tool_result_for(i) for i in ids]
    why = _describe(proc, state, agent_id)

    # The gate refused the file tools' writes beside the scope's file; the Edit of that file went through.
    decisions = [(r["tool"], r["decision"]) for r in _gate_records(state, repo)]
    assert decisions == [("Edit", "allow"), ("Write", "deny"), ("Edit", "deny"), ("Bash", "allow")], decisions
    for result in results[1:3]:
        assert result["is_error"] is True and "outside your write scope" in str(result["content"]), result
    # The sandbox let a new file beside it through, and one at the worktree's top (where a repository's own
    # commands write their scratch), and kept the folders inside both, and the files already there, read-only.
    ran = str(results[3]["content"])
    for path in ("src/sub/planted.py", "tests/planted.py", "README.md", "src/helpers.py"):
        assert f"REFUSED {path} Read-only file system" in ran, ran
    assert "WROTE planted-at-top.txt" in ran, ran
    assert not (worktree / "src/sub/planted.py").exists() and not (worktree / "tests/planted.py").exists()
    assert (worktree / "README.md").read_text() == "original\n"
    assert (worktree / "src/helpers.py").read_text() == HELPERS and not (worktree / "src/other.py").exists()
    # The new files a command made outside the scope were thrown away before verify, which said so; the
    # change is the scope's one file.
    assert proc.returncode == 0 and outcome.get("label") == "ok", why
    (attempt,) = outcome["attempts"]
    (scratch,) = [c for c in attempt["checks"] if c["kind"] == "scratch"]
    assert "`src/notes.txt`" in scratch["feedback"] and "`planted-at-top.txt`" in scratch["feedback"], scratch
    assert not (worktree / "src/notes.txt").exists()
    assert _git(repo, "diff", "--name-only", base, outcome["commit"]).splitlines() == ["src/calc.py"]
    assert _staging(worktree / "src") == []


def test_temporary_files_a_stopped_cli_left_are_removed(tmp_path):
    """What a CLI killed between writing its temporary file and renaming it leaves: removed after the
    attempt, beside the files its file tools named only, and never through a symlink."""
    worktree = tmp_path / "wt"
    (worktree / "src").mkdir(parents=True)
    (worktree / "elsewhere").mkdir()
    (tmp_path / "outside").mkdir()
    (worktree / "linked").symlink_to(tmp_path / "outside")
    progress = Progress("ag")
    for n, (tool, path) in enumerate([("Edit", str(worktree / "src/calc.py")), ("Write", "src/new.py"),
                                      ("Write", str(worktree / "linked/x.py")), ("Read", str(worktree / "elsewhere/a")),
                                      ("Write", str(tmp_path / "outside/y.py"))]):
        stream_event(progress, json.dumps({"type": "assistant", "message": {"id": f"m{n}", "content": [
            {"type": "tool_use", "id": f"t{n}", "name": tool, "input": {"file_path": path}}]}}))
    assert written_files(progress) == [str(worktree / "src/calc.py"), "src/new.py", str(worktree / "linked/x.py"),
                                       str(tmp_path / "outside/y.py")]
    left = ["src/calc.py.tmp.5.b769fca075cd", "src/new.py.tmp.12.0123456789ab"]
    kept = ["src/calc.py.tmp.5.b769fca075c", "src/calc.py.tmp.x.b769fca075cd", "src/other.py.tmp.5.b769fca075cd",
            "elsewhere/a.tmp.5.b769fca075cd"]
    for name in (*left, *kept):
        (worktree / name).write_text("partial")
    (worktree / "src/calc.py").write_text("whole")
    (tmp_path / "outside/x.py.tmp.5.b769fca075cd").write_text("not the worktree's")
    (tmp_path / "outside/y.py.tmp.5.b769fca075cd").write_text("not the worktree's")

    assert sorted(remove_staging_files(worktree, written_files(progress))) == left
    assert all(not (worktree / name).exists() for name in left)
    assert all((worktree / name).exists() for name in (*kept, "src/calc.py"))
    assert sorted(p.name for p in (tmp_path / "outside").iterdir()) == ["x.py.tmp.5.b769fca075cd",
                                                                      "y.py.tmp.5.b769fca075cd"]


def test_the_pinned_cli_stages_its_writes_under_that_name():
    """The name the clean-up looks for is the one the pinned CLI makes (the spawn above shows it failing
    with EROFS on `src/calc.py.tmp.5.<12 hex>` in a read-only folder): `<file>.tmp.<pid>.<6 random bytes in hex>`."""
    reason = missing_cli_reason()
    require(reason is None, reason or "")
    real = find_claude().resolve()
    with open(real, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        found = set(re.findall(rb"`\.tmp\.\$\{process\.pid\}\.\$\{\w+\((\d+)\)\.toString\(\"hex\"\)\}`", data))
    assert found == {b"6"}, found
