"""Scratch-copy benchmark, run on demand (`make bench`), never as a timed test.

What running verify's commands over a throwaway copy of the worktree costs
(`runtime.sandbox.scratch`, made once per verify), on a tree shaped like a
real project (3,000 files of about 2 KB in 300 folders), medians of 5 in one
run on this machine, side by side:

1. the copy (`scratch_copy`, as the sandbox's user when root) against GNU
   `cp -a --reflink=auto` of the same tree;
2. removing the copy afterwards (`remove_tree`).

The copy's cost is the file system's cost of making the files: on one with
reflinks (btrfs, xfs) `copy_file_range` shares the blocks, elsewhere the
kernel copies them.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from runtime.sandbox.identity import agent_user  # noqa: E402
from runtime.sandbox.scratch import scratch_copy  # noqa: E402
from runtime.workspace.tree import remove_tree  # noqa: E402

FOLDERS, FILES_PER_FOLDER, RUNS = 300, 10, 5


def populate(root: Path) -> int:
    for d in range(FOLDERS):
        folder = root / f"pkg{d % 10}" / f"mod{d}"
        folder.mkdir(parents=True)
        for f in range(FILES_PER_FOLDER):
            (folder / f"f{f}.py").write_text(f"value_{f} = {f}\n" * 120)
    return FOLDERS * FILES_PER_FOLDER


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-scratch-") as tmp:
        source = Path(tmp) / "worktree"
        files = populate(source)
        user = agent_user()
        ours, theirs, removal = [], [], []
        for n in range(RUNS):  # alternated, so the file system's own drift hits both
            copy = Path(tmp) / f"copy-{n}"
            start = time.perf_counter()
            copied = scratch_copy(source, copy, user)
            ours.append(time.perf_counter() - start)
            assert copied.files == files and not copied.missing
            start = time.perf_counter()
            remove_tree(copy)
            removal.append(time.perf_counter() - start)
            other = Path(tmp) / f"cp-{n}"
            start = time.perf_counter()
            subprocess.run(["cp", "-a", "--reflink=auto", str(source), str(other)], check=True)
            theirs.append(time.perf_counter() - start)
            shutil.rmtree(other)
        copy_s, cp_s, rm_s = (statistics.median(x) for x in (ours, theirs, removal))
        print(f"scratch copy of {files} files in {FOLDERS} folders: {copy_s * 1000:.0f} ms "
              f"({copy_s / files * 1e6:.0f} us a file); cp -a {cp_s * 1000:.0f} ms; removing it {rm_s * 1000:.0f} ms")


if __name__ == "__main__":
    main()
