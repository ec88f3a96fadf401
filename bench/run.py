"""Orchestration benchmark, run on demand (`make bench`), never as a timed test.

32 subtasks in 4 sequence groups of 8, each an edit-local agent played by the
scripted model with a fixed latency per model turn (two turns: one write, one
report), on this machine, with the OS sandbox. Prints:

- the orchestrator's overhead per subtask: its wall time from dispatch to end
  minus its model time (turns x latency): sandbox, agent start, gate, verify,
  commit and clean-up; and the same split by phase (the outcome's timings);
- total wall time against the ideal, the longest dependency chain's model
  time (4 groups x 2 turns x latency);
- peak memory: the orchestrator's own, and each agent's sandboxed process tree.

`--executor ray [--ray-address HOST:PORT]` runs the same plan on a Ray cluster that is already
running and also prints what Ray adds per subtask: its wall time from dispatch to end minus the
time the spawn pipeline took on the worker (bundle out and in, scheduling, the worker's checkout,
the import and the orchestrator's re-check).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import anyio  # noqa: E402

from runtime.manifests.catalog import Catalog  # noqa: E402
from runtime.orchestration.plans.load import load_plan  # noqa: E402
from runtime.orchestration.run import RunOptions, run_plan  # noqa: E402

LATENCY_S = 0.25
GROUPS, PER_GROUP = 4, 8


def write_plan(root: Path) -> Path:
    lines = ['[plan]', 'goal = "Write 32 notes."', 'success-criteria = ["every note exists"]',
             f'concurrency = {PER_GROUP}', 'max-replans = 0', '']
    for g in range(1, GROUPS + 1):
        for k in range(PER_GROUP):
            sid = f"note-{g}-{k}"
            script = root / f"{sid}.toml"
            script.write_text(
                f'latency-s = {LATENCY_S}\n\n[[turn]]\ntool_calls = [{{ name = "Write", input = {{ file_path = '
                f'"notes/{sid}.md", content = "note {sid}\\n" }} }}]\n\n[[turn]]\n'
                f'content = """Summary: wrote notes/{sid}.md\\nFiles changed: notes/{sid}.md\\n"""\n')
            lines += [
                '[[subtask]]', f'id = "{sid}"', f'sequence = {g}', '[subtask.task]', 'role = "edit-local"',
                f'goal = "Write notes/{sid}.md."', '[subtask.scope]', f'files-whitelist = ["notes/{sid}.md"]',
                '[subtask.verification]', 'test-command = "true"', 'test-results = "exit-code"', 'check-commands = ["true"]',
                '[subtask.agent]', 'backend = "builtin"', f'model = "scripted/{sid}"', f'script = "{script}"',
                '[subtask.body]', f'text = "Write notes/{sid}.md."', '',
            ]
    path = root / "plan.toml"
    path.write_text("\n".join(lines))
    return path


def make_repo(root: Path) -> Path:
    repo = root / "repo"
    (repo / "notes").mkdir(parents=True)
    (repo / "notes" / ".keep").write_text("")
    subprocess.run(["git", "init", "-q", "-b", "trunk", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qm", "init"], check=True)
    return repo


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executor", choices=("local", "ray"), default="local")
    parser.add_argument("--ray-address", metavar="HOST:PORT")
    args = parser.parse_args()
    if shutil.which("bwrap") is None:
        print("bubblewrap is not installed: this benchmark measures sandboxed agents")
        return 1
    with tempfile.TemporaryDirectory(prefix="run-bench-") as tmp:
        root = Path(tmp)
        repo, state = make_repo(root), root / "state"
        plan = load_plan(Catalog(REPO), write_plan(root))
        from runtime.models.llm import get_litellm

        get_litellm()  # the 3-5 s import happens once per orchestrator; not part of a subtask's overhead
        options = RunOptions(repo=repo, state_dir=state, catalog=str(REPO))
        if args.executor == "ray":
            from runtime.orchestration.ray_executor import ray_executor

            options.executor = ray_executor(args.ray_address)
        started, cpu0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
        kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        report = anyio.run(run_plan, plan, Catalog(REPO), options)
        wall = time.perf_counter() - started
        cpu1, kids1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        own_cpu = (cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime) / (GROUPS * PER_GROUP)
        kids_cpu = (kids1.ru_utime + kids1.ru_stime - kids0.ru_utime - kids0.ru_stime) / (GROUPS * PER_GROUP)
        assert report.status == "accepted", report.reason
        conn = sqlite3.connect(state / "orchestrator.sqlite")
        times: dict[str, dict[str, float]] = {}
        for kind, at, data in conn.execute("select kind, time, data from events where kind in ('dispatch', 'subtask-end')"):
            times.setdefault(json.loads(data)["subtask"], {})[kind] = at
        turns = {line.subtask_id: 2 for line in report.subtasks}
        overheads = [t["subtask-end"] - t["dispatch"] - turns[sid] * LATENCY_S for sid, t in times.items()]
        ideal = GROUPS * 2 * LATENCY_S
        me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        outcomes = [json.loads(raw) for (raw,) in conn.execute("select outcome_json from subtasks")]
        agent_peaks = [a["peak_memory_mb"] for o in outcomes for a in o["attempts"]]
        phases: dict[str, list[float]] = {}
        spent_in_spawn = {o["agent_id"].rsplit(".", 1)[-1]: sum(o.get("timings", {}).values()) for o in outcomes}
        for o in outcomes:
            timings = dict(o.get("timings", {}))
            if "agent" in timings:
                timings["agent"] -= 2 * LATENCY_S  # its own start, its gate calls and its exit, not the model
            for phase, seconds in timings.items():
                phases.setdefault(phase, []).append(seconds)
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus; {GROUPS * PER_GROUP} subtasks in {GROUPS} groups "
              f"of {PER_GROUP}, concurrency {PER_GROUP}, model latency {LATENCY_S} s per turn, OS sandbox on, "
              f"executor {args.executor}")
        if args.executor == "ray":
            added = [t["subtask-end"] - t["dispatch"] - spent_in_spawn[sid] for sid, t in times.items()]
            print(f"added by Ray per subtask (dispatch to end minus the spawn on the worker): median "
                  f"{statistics.median(added):.2f} s, max {max(added):.2f} s")
        print(f"orchestrator overhead per subtask (wall minus model time): median {statistics.median(overheads):.2f} s, "
              f"max {max(overheads):.2f} s")
        order = ["checks", "prepare", "model-access", "agent", "verify", "commit", "cleanup"]
        print("per phase, median s per subtask (agent: minus its model time): " + ", ".join(
            f"{p} {statistics.median(phases[p]):.3f}" for p in order if p in phases))
        print(f"CPU per subtask: the orchestrator's own {own_cpu:.2f} s; its children (git, bubblewrap, the agent, "
              f"the checks) {kids_cpu:.2f} s")
        print(f"total wall {wall:.1f} s against the ideal {ideal:.1f} s (longest chain: {GROUPS} subtasks x 2 turns): "
              f"{wall / ideal:.1f}x")
        print(f"peak memory: orchestrator {me:.0f} MiB (litellm loaded); an agent's process tree: median "
              f"{statistics.median(agent_peaks):.0f} MiB, max {max(agent_peaks):.0f} MiB (sampled every 0.1 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
