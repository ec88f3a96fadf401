"""Verify benchmark, run on demand (`make bench`), never as a timed test.

What judging each test against the base costs, measured side by side in one run on this machine, on the
spawn demo and on real projects (cachetools under pytest, strsim under cargo, as `tests/realrepos` makes
them: their own toolchains, `runtime init`'s role, the one-line fix of a planted bug, applied by the
scripted builtin agent):

- by exit code: `[verification] test-results = "exit-code"`, the test command run once on the work and
  judged by its exit code, as verify judged tests before (its cost is the earlier verify's);
- per test, first agent: the runner started with the runtime's reporter on the work, and the same plan on
  a checkout of the base, which this agent is the first to ask for;
- per test, later agent: another agent (another attempt, another subtask of a plan) on the same base,
  which reads the base's run from the state folder's cache and pays nothing for it.

Each line is the median of the spawns' `verify` phase (`Outcome.timings`) over the runs asked for; the
ratios are against the exit-code verify of the same project.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import anyio  # noqa: E402
import tomlkit  # noqa: E402

from runtime.spawn.pipeline import SpawnOptions, spawn  # noqa: E402

DEMO = REPO / "manifests" / "examples" / "spawn-demo"


def _spawn(repo: Path, state: Path, doc: dict[str, Any], path: Path, catalog: str | None) -> float:
    path.write_text(tomlkit.dumps(doc))
    os.chdir(repo)  # where a user runs it: the repository's own catalog (`runtime init`'s) is found from there
    outcome = anyio.run(spawn, path, SpawnOptions(repo=repo, state_dir=state, catalog=catalog))
    assert outcome.status == "ok", outcome.to_dict()
    return outcome.timings["verify"]


def measure(name: str, repo: Path, state: Path, doc: dict[str, Any], runs: int, catalog: str | None,
            folder: Path) -> dict[str, float]:
    """The median verify seconds of the three ways, spawning the task ``doc`` (a fresh agent id each time)."""
    times: dict[str, list[float]] = {"exit-code": [], "first": [], "later": []}
    for n in range(runs):
        for way in ("exit-code", "first", "later"):
            task = tomlkit.parse(tomlkit.dumps(doc))
            task["task"]["agent-id"] = f"bench-{way}-{n}"
            verification = task["verification"]
            if way == "exit-code":
                verification["test-results"] = "exit-code"
                verification.pop("test-count-min", None)
            if way == "first":
                shutil.rmtree(state / "base-tests", ignore_errors=True)  # this agent is the first on the base
            times[way].append(_spawn(repo, state, task, folder / f"{name}-{way}-{n}.toml", catalog))
    return {way: statistics.median(values) for way, values in times.items()}


def demo(root: Path, runs: int) -> dict[str, float]:
    import subprocess

    repo = root / "demo"
    shutil.copytree(DEMO / "project", repo)
    subprocess.run(["git", "init", "-q", "-b", "trunk", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qm", "bug"], check=True)
    doc = tomlkit.parse((DEMO / "task.toml").read_text()).unwrap()
    doc["agent"]["script"] = str(DEMO / "script.toml")
    return measure("demo", repo, root / "demo-state", doc, runs, str(REPO), root)


def real(name: str, root: Path, runs: int) -> dict[str, float]:
    from tests.realrepos.conftest import builtin_turns, make_real_repo
    from tests.realrepos.projects import BY_NAME

    made = make_real_repo(BY_NAME[name], root / name)
    fix = made.project.fix
    doc = made.task_doc(fix, "bench")
    doc["agent"] = {"backend": "builtin", "model": f"scripted/{name}",
                    "script": str(made.script(f"{name}.script.toml", builtin_turns(made, fix))), "retries": 0,
                    "limits": {"timeout-s": 600, "max-turns": 20}}
    return measure(name, made.root, made.state, doc, runs, None, made.tmp / "tasks")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--projects", default="demo,cachetools,strsim",
                        help="comma-separated: demo and any of tests/realrepos (more-itertools, proxy-addr, uuid, ...)")
    args = parser.parse_args()
    if shutil.which("bwrap") is None:
        print("bubblewrap is not installed: this benchmark measures sandboxed spawns")
        return 1
    rows = []
    with tempfile.TemporaryDirectory(prefix="verify-bench-") as tmp:
        for name in args.projects.split(","):
            folder = Path(tmp) / name
            folder.mkdir()
            result = demo(folder, args.runs) if name == "demo" else real(name, folder, args.runs)
            rows.append((name, result))
    print(f"verify's seconds, median of {args.runs} spawns each (ratio to the exit-code verify of the same project)")
    print(f"{'project':<14} {'exit code':>10} {'per test, first agent':>24} {'per test, later agent':>24}")
    for name, r in rows:
        base = r["exit-code"]
        print(f"{name:<14} {base:>10.2f} {r['first']:>14.2f} ({r['first'] / base:>5.2f}x) "
              f"{r['later']:>14.2f} ({r['later'] / base:>5.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
