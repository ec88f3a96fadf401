"""Agent-sandbox start benchmark, run on demand (`make bench`), never as a timed test.

What the agent sandbox's binds cost at start: bubblewrap's set-up time grows
with its mounts, and the sandbox binds the folders and files beside a scope's
files read-only again, the worktree's top among them (where a repository's own
commands write their scratch). Measured on a worktree shaped like a real
project's top (20 folders, 25 files, as more-itertools' or cachetools'),
median of 15 starts of `true`, side by side:

1. the scope's one file's folder only (how the sandbox was before the top took scratch);
2. that folder and the top, each with its folders and files bound read-only again (now).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from runtime.policy.document import seal  # noqa: E402
from runtime.sandbox.agent import agent_sandbox  # noqa: E402
from runtime.sandbox.launch import sandboxed  # noqa: E402

RUNS = 15


def populate(root: Path) -> None:
    for d in range(20):
        (root / f"dir{d}").mkdir(parents=True)
        (root / f"dir{d}" / "mod.py").write_text("x = 1\n")
    for f in range(25):
        (root / f"file{f}.txt").write_text("x\n")
    (root / "src").mkdir()
    for f in range(10):
        (root / "src" / f"m{f}.py").write_text("x = 1\n")
    (root / ".git").mkdir()


def start_time(spec) -> tuple[float, int]:
    times, mounts = [], 0
    for _ in range(RUNS):
        with sandboxed(spec, ("true",)) as (argv, fds):
            mounts = sum(a in ("--bind", "--ro-bind") for a in argv)
            start = time.perf_counter()
            subprocess.run(argv, check=True, pass_fds=fds)
            times.append(time.perf_counter() - start)
    return statistics.median(times), mounts


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as tmp:
        worktree, home = Path(tmp) / "worktree", Path(tmp) / "home"
        populate(worktree)
        home.mkdir()
        policy = seal(role="bench", root=str(worktree), gates=[{"kind": "write-whitelist", "params": {"globs": ["src/m0.py"]}}])
        now = agent_sandbox(policy, worktree, home, [], {})
        before = agent_sandbox(policy, worktree, home, [], {})
        before.file_folders = [f for f in before.file_folders if f[0] != worktree]
        old_s, old_n = start_time(before)
        new_s, new_n = start_time(now)
        print(f"agent sandbox start: scope's folder only {old_s * 1000:.1f} ms ({old_n} binds); "
              f"with the top taking scratch {new_s * 1000:.1f} ms ({new_n} binds); ratio {new_s / old_s:.2f}")


if __name__ == "__main__":
    main()
