"""Workspace benchmark, run on demand (`make bench`), never as a timed test.

What guarding the orchestrator's git against the agent's tree costs, on a
worktree shaped like a real project (21,000 files in 1,500 folders, one new
file), measured side by side in one run on this machine, medians of 7:

1. the hazard survey (`runtime.workspace.hazards.survey`: a descriptor walk
   looking for nested repositories and folders git cannot hold) against the
   listing of the changes it guards (`changed_paths`, survey included): its
   share of the listing;
2. removing a worktree through descriptors (`runtime.workspace.tree.remove_tree`)
   against `shutil.rmtree` on the same tree.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from runtime.workspace.changes import changed_paths  # noqa: E402
from runtime.workspace.git import Git  # noqa: E402
from runtime.workspace.hazards import survey  # noqa: E402
from runtime.workspace.tree import remove_tree  # noqa: E402

FOLDERS, FILES_PER_FOLDER, RUNS = 1500, 14, 7


def populate(root: Path) -> None:
    for d in range(FOLDERS):
        folder = root / f"pkg{d % 15}" / f"mod{d // 15}" / f"sub{d % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        for f in range(FILES_PER_FOLDER):
            (folder / f"f{f}.py").write_text(f"x = {f}\n" * 20)


def median_s(fn: Callable[[], object], runs: int = RUNS) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}
    with tempfile.TemporaryDirectory(prefix="bench-workspace-") as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        populate(repo)
        for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "x"]):
            subprocess.run(["git", "-C", str(repo), *args], check=True, env=env)
        git = Git(repo)
        worktree = Path(tmp) / "wt"
        base = git.add_worktree(worktree, "bench")
        (worktree / "pkg1" / "new.py").write_text("y = 1\n")
        files = sum(len(f) for _, _, f in os.walk(worktree))
        walk = median_s(lambda: survey(worktree))
        listing = median_s(lambda: changed_paths(git, worktree, base))
        print(f"worktree of {files} files: hazard survey {walk * 1000:.0f} ms, listing the changes "
              f"{listing * 1000:.0f} ms with it: the survey is {walk / listing:.0%} of the listing")

        copies = Path(tmp) / "copies"

        def fresh() -> None:
            shutil.rmtree(copies, ignore_errors=True)
            shutil.copytree(repo, copies, ignore=shutil.ignore_patterns(".git"))

        ours, stdlib = [], []
        for _ in range(5):  # alternated, so the file system's own drift hits both
            for remove, times in ((remove_tree, ours), (shutil.rmtree, stdlib)):
                fresh()
                start = time.perf_counter()
                remove(copies)
                times.append(time.perf_counter() - start)
        ours, stdlib = statistics.median(ours), statistics.median(stdlib)
        print(f"removing it: remove_tree {ours * 1000:.0f} ms, shutil.rmtree {stdlib * 1000:.0f} ms "
              f"({ours / stdlib:.2f}x)")


if __name__ == "__main__":
    main()
