"""Real-project benchmark, run on demand (`make bench`), never as a timed test.

What a user waits for on real projects of each toolchain (as `tests/realrepos` makes them: a Rust crate, a Go
module, a Python and an npm project, each with its own toolchain, `runtime init`'s role and a planted bug),
against the project's own test command run plainly on the host, measured side by side on this machine:

- plain: the project's test command on the fixed tree, on the host, warm (run once before, as a developer's
  machine has it: Go's and cargo's build caches, pytest's and node's files in the page cache; Go's test results
  not replayed, `-count=1`, since an agent's change is new to it); the median of `--runs`;
- spawn, first agent: `runtime spawn` of the one-line fix by a scripted builtin agent that runs the tests and
  checks in its shell, in the OS sandbox, the first agent on its base (verify runs the base's tests too);
- spawn, next agent: another agent on the same base (the base's run read from the state folder's cache);
- spawn, first on a base: the first agent on a new base commit of the same repository (the base's tests run, the
  toolchain's build caches warm from the base before, the new base's filled beside it);
- plan: `runtime run --merge` of the real-project suite's plan (the fix, then a feature that uses it), with
  its checks on the merged result.

Each figure is wall time; the ratios are against plain. A spawn whose agent runs the tests and checks, as this
one's does, runs them twice at the least (the agent's run, then verify's on a copy of the work): the last column
is that floor, the plain test and check commands twice, with the next agent's spawn against it.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import tomlkit  # noqa: E402

from tests.realrepos.conftest import RealRepo, make_real_repo, own_commands  # noqa: E402
from tests.realrepos.projects import BY_NAME  # noqa: E402

DEFAULT = "strsim,uuid,cachetools,proxy-addr"


def _timed(argv: list[str] | str, cwd: Path, env: dict[str, str], shell: bool = False) -> float:
    started = time.monotonic()
    proc = subprocess.run(argv, cwd=cwd, env=env, shell=shell, capture_output=True, text=True, timeout=900,
                          executable="/bin/bash" if shell else None)
    took = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"{argv!r} failed in {cwd} ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return took


def plain(repo: RealRepo, runs: int) -> tuple[float, float]:
    """The test command in the main checkout with the fix applied (its own environment there: an editable
    install, node_modules, cargo's target), on the host, warm: the median of ``runs`` after one run; and the
    same of the check commands, together. The checkout is put back as it was after."""
    test, checks = own_commands(repo)
    edits = repo.project.fix.edits
    kept = {e.path: (repo.root / e.path).read_bytes() if (repo.root / e.path).exists() else None for e in edits}
    try:
        for edit in edits:
            path = repo.root / edit.path
            path.write_text(edit.apply(path.read_text() if path.exists() else None))
        env = repo.full_env()
        # the repository's own tools first, as a developer's activated environment has them
        env["PATH"] = ":".join([str(repo.root / ".venv" / "bin"), str(repo.root / "node_modules" / ".bin"), env["PATH"]])
        # go replays a test result whose inputs it has seen: the agent's change is always new to it
        env["GOFLAGS"] = f"{env.get('GOFLAGS', '')} -count=1".strip()
        _timed(test, repo.root, env, shell=True)
        tests = statistics.median(_timed(test, repo.root, env, shell=True) for _ in range(runs))
        checked = 0.0
        for check in checks:
            _timed(check, repo.root, env, shell=True)
            checked += statistics.median(_timed(check, repo.root, env, shell=True) for _ in range(runs))
        return tests, checked
    finally:
        for rel, data in kept.items():
            if data is None:
                (repo.root / rel).unlink(missing_ok=True)
            else:
                (repo.root / rel).write_bytes(data)


def spawn(repo: RealRepo, agent_id: str) -> float:
    change = repo.project.fix
    agent: dict[str, Any] = repo.builtin_agent(change, agent_id)
    task = repo.write_task(change, agent_id, agent)
    return _timed([str(REPO / ".venv" / "bin" / "runtime"), "spawn", "--json", str(task)], repo.root, repo.full_env())


def _on_new_base(repo: RealRepo, n: int) -> float:
    """The first agent on a new base: a commit on the base branch that changes nothing the tests or the change
    touch (its base's tests have not run yet), then the fix spawned on it."""
    (repo.root / "BENCH-BASE.txt").write_text(f"base {n}\n")
    repo.git("add", "BENCH-BASE.txt")
    repo.git("commit", "-qm", f"bench: base {n}")
    return spawn(repo, f"bench-base-{n}")


def plan(repo: RealRepo) -> float:
    from tests.realrepos.test_real_repos import _subtask

    project = repo.project
    test, checks = own_commands(repo)
    doc = {"plan": {"goal": f"Fix the bug in {project.bug.path}, then: {project.feature.goal}",
                    "success-criteria": ["the repository's tests and checks pass"],
                    "checks": [test, *checks], "max-replans": 0, "concurrency": 2},
           "subtask": [_subtask(repo, "fix", 1, project.fix, []), _subtask(repo, "feature", 2, project.feature, ["fix"])]}
    path = repo.tmp / "tasks" / "plan.toml"
    path.write_text(tomlkit.dumps(doc))
    return _timed([str(REPO / ".venv" / "bin" / "runtime"), "run", "--json", "--merge", str(path)], repo.root,
                  repo.full_env())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="plain runs and next-agent spawns, each")
    parser.add_argument("--projects", default=DEFAULT, help=f"comma-separated, of tests/realrepos (default {DEFAULT})")
    args = parser.parse_args()
    if shutil.which("bwrap") is None:
        print("bubblewrap is not installed: this benchmark measures sandboxed spawns")
        return 1
    rows = []
    with tempfile.TemporaryDirectory(prefix="realrepos-bench-") as tmp:
        for name in args.projects.split(","):
            project = BY_NAME[name]
            repo = make_real_repo(project, Path(tmp) / name)
            base, checked = plain(repo, args.runs)
            first = spawn(repo, "bench-first")
            nexts = statistics.median(spawn(repo, f"bench-next-{n}") for n in range(args.runs))
            renewed = statistics.median(_on_new_base(repo, n) for n in range(args.runs))
            planned = plan(repo)
            rows.append((f"{name} ({project.kind})", base, checked, first, renewed, nexts, planned))
    print("wall seconds on this machine (ratio to the plain test command)")
    print(f"{'project':<20} {'plain':>6} {'spawn, first ever':>18} {'first on a base':>18} {'next agent':>18}"
          f" {'plan of 2, merged':>18} {'floor, next':>12}")
    for label, base, checked, first, renewed, nexts, planned in rows:
        floor = 2 * (base + checked)
        cells = "".join(f" {v:>10.2f} ({v / base:>5.1f}x)" for v in (first, renewed, nexts, planned))
        print(f"{label:<20} {base:>6.2f}{cells} {floor:>5.2f} ({nexts / floor:>3.1f}x)")
    print("first ever: the first spawn in the repository (every cache cold); first on a base: the first agent on a "
          "new base commit (its base's tests run; the toolchain's caches warm from the base before)")
    print("floor, next: what a next agent's spawn runs at the least, plainly on the host: the tests and the checks "
          "twice (the agent's own run, and verify's); in brackets, the spawn against it")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
