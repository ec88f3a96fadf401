"""Resource-limit benchmark, run on demand, never as a test: how far hostile agents get past the limits.

Five attacks, each run twice through `runtime spawn --json` as a subprocess (a
fresh git repository and a private state folder per run, the OS sandbox on):
as the agent itself (a `command` backend whose command is the attack), and as
the task's test command (the agent fixes the spawn demo's bug and writes its
report, and verify runs the attack). The task's limits are scaled down:
`[agent.limits] max-processes = 64, memory-mb = 256, timeout-s = 60`, and a
project role (`edit-local` plus `scope::change-size`, max-change-bytes =
4 MiB) bounds the change. Each attack has its own safety cap, so a runtime
that enforces nothing still cannot take the machine down, and ends itself
after HOLD_S seconds (saying so in its output, exit 3):

- fork-bomb: `sleep` children forked by a shell loop (cap 3000 live processes);
- thread-bomb: one Python process starting threads that sleep (cap 1500 threads);
- tmpfs-filler: files in the sandbox's private /dev/shm and /tmp (cap 1.5 GiB), then sleeps;
- allocator: one Python process allocating and touching memory quickly (cap 3 GiB);
- disk-filler: files in the worktree (the current folder) as fast as it can (cap 1000 MiB), then sleeps.

Observed only from outside, by a thread sampling every ~5 ms while the spawn
runs: the processes descending from the `runtime spawn` process (ppid links in
/proc, whatever their uid): their tasks (threads included, `num_threads` of
/proc/PID/stat, the `Threads:` of its status), the sum of their RSS, the
growth of the host's `Shmem:` (tmpfs pages, machine-wide: other work on the
machine shows up in it) and the bytes of the disk filler's files on the host
(in the run's worktree and verify's scratch copy). Process attacks compare
tasks with max-processes, memory attacks RSS + Shmem growth with memory-mb,
the disk filler its files with the disk limit of the runtime measured: the
change limit plus its slack, held while the run goes on, where it has one;
the 4 MiB change limit, which it judged only after the run, where not.

Prints, per attack and way of running it: the limit, the peak seen, how far
past the limit it got (% of the limit), the time from the first sample over
the limit until the sandboxed tree was gone (the descendants in another PID
namespace than the host's; "never over" when it stayed under), the whole
spawn's time, the median sampling interval (a scan of /proc costs more with
every process), the outcome label the spawn printed and what ended the attack
(the runtime, the attack itself after HOLD_S, or this script's safety
timeout). A table on a terminal, aligned text otherwise, `--json` for
machines. Afterwards every process seen in a tree, or holding the run's
marker in its command line, that is still alive is killed, and the output
says so. The goal: whichever way it runs, no attack gets more than 10% past
its limit, and a tree over it is gone within 100 ms. A runtime that only
samples the tree every 0.1 s and checks no limit on test commands (this
project's before its limits were held by the kernel) lets every attack far
past them; one that holds them (a cgroup per run, a sized tmpfs, the disk
meter) keeps the process and tmpfs attacks under their limits, where the
runs end by the limit's breach or, for a filler the sized tmpfs refused and
that then waits, by their clock.

`--repo PATH` runs the `runtime` of another checkout (PATH/.venv/bin/runtime,
else `python -m runtime.cli.main` with PYTHONPATH=PATH) to compare two
versions; `--only NAME` runs one attack.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROJECT = REPO / "manifests" / "examples" / "spawn-demo" / "project"
BASE_BRANCH = "trunk"

MAX_PROCESSES = 64
MEMORY_MB = 256
TIMEOUT_S = 60
MAX_CHANGE_BYTES = 4 * 1024 * 1024
HOLD_S = 75  # an attack ends itself this long after it started: past the agent's timeout
SAFETY_S = 240  # this script kills a spawn still running after this long
SAMPLE_S = 0.005
MIB = 1024 * 1024
PAGE = os.sysconf("SC_PAGE_SIZE")
# What an attack prints when it ends itself, split in its source: the runtime quotes a failed test command.
SELF_END = "limits-bench: ran its full"

ROLE = f"""[role]
name = "bench-limits"
display-name = "edit-local with a 4 MiB change limit"
description = "The edit-local role with scope::change-size at 4 MiB, for bench/limits.py."
use-cases = ["measuring resource limits"]

[capabilities]
extends = "edit-local"
required = ["scope::change-size"]

[params."scope::change-size"]
max-change-bytes = {MAX_CHANGE_BYTES}
"""

SH_FIX = "sed -i 's/(len(values) + 1)/len(values)/' src/calc/__init__.py"
SH_REPORT = "printf 'Summary: fixed mean\\nFiles changed: src/calc/__init__.py\\n' > \"$RUNTIME_REPORT_FILE\""


# -- the attacks: POSIX sh run in the sandbox with the worktree (or verify's copy) as cwd -------------------

def _python(code: str) -> str:
    return "exec python3 -c " + shlex.quote(code)


def _ended(name: str) -> str:
    return f'sys.stderr.write("limits-bench: ran" + " its full {HOLD_S} s: {name}\\n"); sys.stderr.flush(); os._exit(3)'


def fork_bomb(marker: str) -> str:
    # 2998 sleeps, the shell and its last sleep: at most 3000 live processes. The marker is the sleeps' fraction.
    # The last words go to stdout: verify keeps only that of a test command (its `2>&1` ends at the first `;`).
    sleep = f"sleep {HOLD_S}.{marker}"
    return (f"i=0; while [ $i -lt 2998 ]; do {sleep} & i=$((i+1)); done; {sleep}; "
            f"echo 'limits-bench: ran'' its full {HOLD_S} s: fork-bomb'; exit 3")


def thread_bomb(marker: str) -> str:
    return _python(f"""import os, sys, threading, time
MARK = "{HOLD_S}.{marker}"
end = time.time() + {HOLD_S}
def hold():
    time.sleep(max(0.0, end - time.time()))
threading.stack_size(1 << 18)
for _ in range(1499):
    try:
        threading.Thread(target=hold, daemon=True).start()
    except RuntimeError:
        break
hold()
{_ended("thread-bomb")}
""")


def tmpfs_filler(marker: str) -> str:
    return _python(f"""import os, sys, time
MARK = "{HOLD_S}.{marker}"
end = time.time() + {HOLD_S}
chunk = bytes([1]) * (8 << 20)
total, n = 0, 0
while total + len(chunk) <= 1536 << 20:
    try:
        with open(("/dev/shm", "/tmp")[n % 2] + "/fill-%d" % n, "wb") as fh:
            fh.write(chunk)
    except OSError:
        break
    total, n = total + len(chunk), n + 1
time.sleep(max(0.0, end - time.time()))
{_ended("tmpfs-filler")}
""")


def allocator(marker: str) -> str:
    return _python(f"""import os, sys, time
MARK = "{HOLD_S}.{marker}"
end = time.time() + {HOLD_S}
held = []
while len(held) * (64 << 20) < 3 << 30:
    held.append(bytearray(b"\\x01") * (64 << 20))
time.sleep(max(0.0, end - time.time()))
{_ended("allocator")}
""")


def disk_filler(marker: str) -> str:
    return _python(f"""import os, sys, time
MARK = "{HOLD_S}.{marker}"
end = time.time() + {HOLD_S}
chunk = bytes([1]) * (8 << 20)
total, n = 0, 0
while total + len(chunk) <= 1000 << 20:
    try:
        with open("fill-%d.bin" % n, "wb") as fh:
            fh.write(chunk)
    except OSError:
        break
    total, n = total + len(chunk), n + 1
time.sleep(max(0.0, end - time.time()))
{_ended("disk-filler")}
""")


# name: (program, what is compared, the limit in its unit, the unit)
ATTACKS = {
    "fork-bomb": (fork_bomb, "tasks", MAX_PROCESSES, "tasks"),
    "thread-bomb": (thread_bomb, "tasks", MAX_PROCESSES, "tasks"),
    "tmpfs-filler": (tmpfs_filler, "memory", MEMORY_MB, "MiB"),
    "allocator": (allocator, "memory", MEMORY_MB, "MiB"),
    "disk-filler": (disk_filler, "disk", MAX_CHANGE_BYTES / MIB, "MiB"),
}
PHASES = ("agent", "tests")


# -- the runtime under measurement ---------------------------------------------------------------------------

def runtime_command(checkout: Path) -> tuple[list[str], dict[str, str]]:
    """argv and extra environment of `runtime` in ``checkout``: its venv's console script, else the module."""
    script = checkout / ".venv" / "bin" / "runtime"
    if script.exists():
        return [str(script)], {}
    return [sys.executable, "-m", "runtime.cli.main"], {"PYTHONPATH": str(checkout)}


def describe_checkout(checkout: Path) -> str:
    head = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(checkout), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True)
    if head.returncode != 0:
        return f"{checkout} (not a git checkout)"
    return f"{checkout} @ {head.stdout.strip()}{' (modified)' if dirty.stdout.strip() else ''}"


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=bench", "-c", "user.email=bench@example.invalid",
                    *args], check=True, capture_output=True)


def make_repo(root: Path) -> Path:
    """The spawn demo's project on `trunk`, with the bench's role in its project catalog."""
    repo = root / "repo"
    shutil.copytree(PROJECT, repo, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    (repo / ".agent-runtime" / "roles").mkdir(parents=True)
    (repo / ".agent-runtime" / "roles" / "bench-limits.toml").write_text(ROLE)
    subprocess.run(["git", "init", "-q", "-b", BASE_BRANCH, str(repo)], check=True)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a calculator with a bug")
    return repo


def task_toml(agent_id: str, phase: str, attack: str) -> str:
    """A task of the bench role: the attack as the agent (`agent`) or as the test command (`tests`)."""
    agent = attack if phase == "agent" else f"{SH_FIX}; {SH_REPORT}"
    test = attack if phase == "tests" else "true"
    return f"""[task]
role = "bench-limits"
agent-id = "{agent_id}"
parent-agent = "orchestrator"
goal = "Fix calc.mean, which divides by one too many."

[scope]
files-whitelist = ["src/calc/**", "tests/**"]

[verification]
test-command = {json.dumps(test)}
test-count-min = 0
check-commands = ["true"]

[output]
report-fields-required = ["summary", "files-changed"]

[agent]
backend = "command"
command = ["/bin/sh", "-c", {json.dumps(agent)}]
retries = 0

[agent.limits]
timeout-s = {TIMEOUT_S}
max-processes = {MAX_PROCESSES}
memory-mb = {MEMORY_MB}

[body]
text = "calc.mean returns a wrong average. Fix it."
"""


# -- watching from the host ----------------------------------------------------------------------------------

def scan_proc() -> dict[int, tuple[int, bytes, int, int, int]]:
    """pid -> (ppid, state, threads, rss pages, start time) of every process: one read of /proc/PID/stat each."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            fd = os.open(f"/proc/{name}/stat", os.O_RDONLY)  # half the time of open(): no buffered reader
            try:
                fields = os.read(fd, 1024).rsplit(b")", 1)[1].split()
            finally:
                os.close(fd)
        except (OSError, IndexError):
            continue  # gone between the listing and the read
        out[int(name)] = (int(fields[1]), fields[0], int(fields[17]), int(fields[21]), int(fields[19]))
    return out


def shmem_bytes() -> int:
    with open("/proc/meminfo") as fh:
        for line in fh:
            if line.startswith("Shmem:"):
                return int(line.split()[1]) * 1024
    return 0


def fs_type(path: Path) -> str:
    """The type of the file system holding ``path``, from the longest mount point above it."""
    best, kind = "", "?"
    with open("/proc/mounts") as fh:
        for line in fh:
            _dev, point, fstype, *_ = line.split()
            if (str(path) + "/").startswith(point.rstrip("/") + "/") and len(point) >= len(best):
                best, kind = point, fstype
    return kind


def disk_used(path: Path) -> int:
    """Bytes of the disk filler's files (`fill-N.bin`) anywhere under ``path`` (the run's repository and state
    folder: the worktree, verify's scratch copy), as the host's file system holds them. Not the file system's
    free space, which moves with everything else on the machine and lags behind delayed allocation."""
    total = 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            if name.startswith("fill-") and name.endswith(".bin"):
                try:
                    total += os.lstat(os.path.join(folder, name)).st_size
                except OSError:
                    pass
    return total


def disk_budget_mib(checkout: Path) -> tuple[float, str]:
    """The disk limit the runtime in ``checkout`` holds a run to by default, and what it is: the change limit
    plus its slack where it has one (`runtime/sandbox/budget.py`), else the change limit alone, which that
    runtime judged only after the run."""
    budget = checkout / "runtime" / "spawn" / "budget.py"
    match = re.search(r"^DISK_SLACK_MB = (\d+)", budget.read_text(encoding="utf-8"), re.M) if budget.is_file() else None
    if match:
        return MAX_CHANGE_BYTES / MIB + int(match.group(1)), f"change {MAX_CHANGE_BYTES / MIB:.0f} MiB + {match.group(1)} MiB slack, held while it runs"
    return MAX_CHANGE_BYTES / MIB, f"change {MAX_CHANGE_BYTES / MIB:.0f} MiB, judged after the run"


@dataclass
class Sample:
    t: float  # seconds since the spawn started
    tasks: int
    processes: int
    rss: int
    shmem: int  # growth since the start, bytes
    disk: int  # growth since the start, bytes
    sandboxed: int  # descendants in another PID namespace than the host's


class Watch(threading.Thread):
    """Samples the tree below ``root`` (a pid) every SAMPLE_S until stopped; remembers every process seen."""

    def __init__(self, root: int, disk_path: Path, started: float, shmem0: int, disk0: int) -> None:
        super().__init__(daemon=True)
        self.root, self.disk_path, self.started = root, disk_path, started
        self.shmem0, self.disk0 = shmem0, disk0
        self.host_ns = os.readlink("/proc/self/ns/pid")
        self.samples: list[Sample] = []
        self.seen: set[tuple[int, int]] = set()  # (pid, start time)
        self.ns: dict[tuple[int, int], bool] = {}  # (pid, start time) -> in another PID namespace
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.sample()
            time.sleep(SAMPLE_S)
        self.sample()

    def _sandboxed(self, key: tuple[int, int]) -> bool:
        if key not in self.ns:
            try:
                self.ns[key] = os.readlink(f"/proc/{key[0]}/ns/pid") != self.host_ns
            except OSError:
                return False
        return self.ns[key]

    def sample(self) -> None:
        table = scan_proc()
        children: dict[int, list[int]] = {}
        for pid, (ppid, *_rest) in table.items():
            children.setdefault(ppid, []).append(pid)
        tasks = processes = rss = sandboxed = 0
        todo = list(children.get(self.root, ()))
        while todo:
            pid = todo.pop()
            todo.extend(children.get(pid, ()))
            _ppid, state, threads, pages, start = table[pid]
            if state == b"Z":
                continue
            self.seen.add((pid, start))
            tasks, processes, rss = tasks + threads, processes + 1, rss + pages * PAGE
            sandboxed += self._sandboxed((pid, start))
        self.samples.append(Sample(time.monotonic() - self.started, tasks, processes, rss,
                                   shmem_bytes() - self.shmem0, disk_used(self.disk_path) - self.disk0, sandboxed))


def holds_marker(pid: int, marker: str) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return marker.encode() in fh.read()
    except OSError:
        return False


def kill_leftovers(seen: set[tuple[int, int]], marker: str) -> int:
    """SIGKILL every process seen in the tree (same pid, same start time) or holding ``marker`` in its command
    line that still lives, until none is left; how many there were."""
    killed: set[tuple[int, int]] = set()
    for _ in range(50):
        table = scan_proc()
        alive = {(pid, start) for pid, start in seen if pid in table and table[pid][4] == start}
        alive |= {(pid, row[4]) for pid, row in table.items() if pid != os.getpid() and holds_marker(pid, marker)}
        alive = {(pid, start) for pid, start in alive if table[pid][1] != b"Z"}
        if not alive:
            break
        for pid, start in alive:
            killed.add((pid, start))
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.1)
    return len(killed)


# -- one run -------------------------------------------------------------------------------------------------

@dataclass
class Result:
    attack: str
    phase: str
    metric: str
    unit: str
    limit: float
    peak: float
    over_pct: float | None  # how far past the limit the peak went, % of the limit; None: never over
    over_to_gone_ms: float | None  # first sample over the limit until the sandboxed tree was gone
    over_to_under_ms: float | None  # first sample over the limit until the figure was back under it
    spawn_s: float
    label: str | None
    ended_by: str
    exit_code: int | None
    samples: int
    median_interval_ms: float
    peaks: dict[str, float] = field(default_factory=dict)
    leftovers_killed: int = 0


def value(sample: Sample, metric: str) -> float:
    if metric == "tasks":
        return sample.tasks
    if metric == "memory":
        return (sample.rss + sample.shmem) / MIB
    return sample.disk / MIB


def run_one(attack: str, phase: str, runtime: list[str], extra_env: dict[str, str]) -> Result:
    program, metric, limit, unit = ATTACKS[attack]
    marker = str(100_000 + secrets.randbelow(900_000))  # `sleep 75.<marker>`, `MARK = "75.<marker>"`
    agent_id = f"lb-{attack}-{phase}"
    with tempfile.TemporaryDirectory(prefix="limits-bench-", ignore_cleanup_errors=True) as tmp:
        root = Path(tmp)
        repo, state = make_repo(root), root / "state"
        task = root / "task.toml"
        task.write_text(task_toml(agent_id, phase, program(marker)))
        env = {k: v for k, v in os.environ.items() if k not in ("RUNTIME_CATALOG", "CLAUDE_PROJECT_DIR")}
        env.update(extra_env, RUNTIME_STATE_DIR=str(state), RUNTIME_CACHE_DIR=str(root / "cache"))
        argv = [*runtime, "spawn", "--json", "--catalog", str(repo / ".agent-runtime"), str(task)]
        shmem0, disk0 = shmem_bytes(), disk_used(root)
        started = time.monotonic()
        proc = subprocess.Popen(argv, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        watch = Watch(proc.pid, root, started, shmem0, disk0)
        watch.start()
        timed_out = False
        try:
            stdout, stderr = proc.communicate(timeout=SAFETY_S)
        except subprocess.TimeoutExpired:
            timed_out = True
            stdout, stderr = stop_spawn(proc)
        except BaseException:
            stop_spawn(proc)
            watch.done.set()
            watch.join()
            kill_leftovers(watch.seen, f"{HOLD_S}.{marker}")
            raise
        spawn_s = time.monotonic() - started
        watch.done.set()
        watch.join()
        killed = kill_leftovers(watch.seen, f"{HOLD_S}.{marker}")
        logs = stdout + stderr + "".join(p.read_text(errors="replace") for p in (state / "runs").glob("*/attempt-*/*.log"))
    try:
        outcome = json.loads(stdout)
    except ValueError:
        outcome = None
    label = outcome.get("label") if isinstance(outcome, dict) else None
    if label is None:
        label = f"exit {proc.returncode}: " + (stderr.strip().splitlines() or ["no output"])[-1][:80]
    ended_by = "bench timeout" if timed_out else f"itself ({HOLD_S} s)" if SELF_END in logs else "runtime"
    return summarize(attack, phase, watch.samples, spawn_s, label, ended_by, proc.returncode, killed)


def stop_spawn(proc: subprocess.Popen) -> tuple[str, str]:
    """SIGTERM the spawn's process group (it stops its agent and records the run), then SIGKILL."""
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except OSError:
            pass
        try:
            return proc.communicate(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
    return "", ""


def summarize(attack: str, phase: str, samples: list[Sample], spawn_s: float, label: str, ended_by: str,
              exit_code: int | None, killed: int) -> Result:
    _, metric, limit, unit = ATTACKS[attack]
    values = [value(s, metric) for s in samples]
    peak = max(values, default=0.0)
    over_at = next((i for i, v in enumerate(values) if v > limit), None)
    over_pct = gone_ms = under_ms = None
    if over_at is not None:
        t0 = samples[over_at].t
        over_pct = 100 * (peak - limit) / limit
        gone = next((s.t for s in samples[over_at:] if s.sandboxed == 0), samples[-1].t)
        under = next((samples[i].t for i in range(over_at, len(samples)) if values[i] <= limit), None)
        gone_ms = 1000 * (gone - t0)
        under_ms = None if under is None else 1000 * (under - t0)
    gaps = [b.t - a.t for a, b in zip(samples, samples[1:], strict=False)]
    peaks = {"tasks": max((s.tasks for s in samples), default=0),
             "processes": max((s.processes for s in samples), default=0),
             "rss_mib": round(max((s.rss for s in samples), default=0) / MIB, 1),
             "shmem_growth_mib": round(max((s.shmem for s in samples), default=0) / MIB, 1),
             "disk_growth_mib": round(max((s.disk for s in samples), default=0) / MIB, 1)}
    return Result(attack, phase, metric, unit, limit, round(peak, 1), None if over_pct is None else round(over_pct, 1),
                  None if gone_ms is None else round(gone_ms, 1), None if under_ms is None else round(under_ms, 1),
                  round(spawn_s, 2), label, ended_by, exit_code, len(samples),
                  round(1000 * statistics.median(gaps), 2) if gaps else 0.0, peaks, killed)


# -- output --------------------------------------------------------------------------------------------------

COLUMNS = ("attack", "run as", "limit", "peak", "past limit", "over -> gone", "spawn", "sampled every", "outcome",
           "ended by")
RIGHT = range(2, 8)


def _amount(x: float, unit: str) -> str:
    return f"{x:.0f} {unit}" if unit == "tasks" or x >= 10 else f"{x:.1f} {unit}"


def row(r: Result) -> list[str]:
    runs_as = "agent" if r.phase == "agent" else "test command"
    past = "never over" if r.over_pct is None else f"+{r.over_pct:.0f}%"
    gone = "never over" if r.over_to_gone_ms is None else f"{r.over_to_gone_ms:.0f} ms"
    return [r.attack, runs_as, _amount(r.limit, r.unit), _amount(r.peak, r.unit), past, gone, f"{r.spawn_s:.1f} s",
            f"{r.median_interval_ms:.0f} ms", r.label or "-", r.ended_by]


def print_table(results: list[Result]) -> None:
    rows = [row(r) for r in results]
    if sys.stdout.isatty():
        from rich import box
        from rich.console import Console
        from rich.table import Table

        table = Table(title="resource limits against hostile agents, seen from the host", box=box.SIMPLE_HEAD)
        for n, name in enumerate(COLUMNS):
            table.add_column(name, justify="right" if n in RIGHT else "left", no_wrap=n in (0, 8))
        for cells in rows:
            table.add_row(*cells)
        Console(markup=False, emoji=False, highlight=False).print(table)
        return
    widths = [max(len(c), *(len(r[n]) for r in rows)) for n, c in enumerate(COLUMNS)]

    def line(cells) -> str:
        return "  ".join(c.rjust(w) if n in RIGHT else c.ljust(w) for n, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    print(line(COLUMNS))
    print(line(["-" * w for w in widths]))
    for cells in rows:
        print(line(cells))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout whose runtime to run (default: this one)")
    parser.add_argument("--only", choices=sorted(ATTACKS), help="run this attack only")
    parser.add_argument("--json", action="store_true", help="the figures as JSON")
    args = parser.parse_args()
    if shutil.which("bwrap") is None:
        print("bubblewrap is not installed: this benchmark measures the sandboxed spawn")
        return 1
    tmp = Path(tempfile.gettempdir()).resolve()
    if fs_type(tmp) == "tmpfs" and not args.json:
        print(f"note: {tmp} is a tmpfs, so the disk filler's files are memory there (Shmem) and the disk figures "
              "measure that tmpfs; set TMPDIR to a folder on disk")
    checkout = args.repo.resolve()
    runtime, extra_env = runtime_command(checkout)
    disk_mib, disk_what = disk_budget_mib(checkout)
    ATTACKS["disk-filler"] = (disk_filler, "disk", disk_mib, "MiB")
    results = []
    for attack in [args.only] if args.only else list(ATTACKS):
        for phase in PHASES:
            if not args.json:
                print(f"running {attack} as the {'agent' if phase == 'agent' else 'test command'} ...", file=sys.stderr)
            results.append(run_one(attack, phase, runtime, extra_env))
    header = {"python": sys.version.split()[0], "cpus": os.cpu_count(), "runtime": describe_checkout(checkout),
              "argv": runtime, "limits": {"max-processes": MAX_PROCESSES, "memory-mb": MEMORY_MB, "timeout-s": TIMEOUT_S,
                                           "max-change-bytes": MAX_CHANGE_BYTES, "disk-mib": disk_mib,
                                           "disk": disk_what},
              "hold_s": HOLD_S, "sample_s": SAMPLE_S}
    if args.json:
        print(json.dumps({**header, "runs": [asdict(r) for r in results]}, indent=1))
        return 0
    print(f"runtime {header['runtime']}; python {header['python']}, {header['cpus']} cpus")
    print(f"limits: max-processes {MAX_PROCESSES}, memory-mb {MEMORY_MB}, timeout-s {TIMEOUT_S}, "
          f"disk {disk_mib:g} MiB ({disk_what}); each attack ends itself after {HOLD_S} s")
    print_table(results)
    print("past limit: the peak over the limit, in % of it; over -> gone: from the first sample over the limit "
          "until no process of a sandbox was left; ended by: who ended the attack (the runtime, the attack itself "
          f"after {HOLD_S} s, or this script after {SAFETY_S} s)")
    print(f"{sum(r.samples for r in results)} samples (median interval per run above: a scan of /proc costs more "
          "with every process); memory = RSS of the tree + growth of the host's Shmem, disk = the disk filler's "
          "files on the host, in the run's worktree and verify's scratch copy")
    leftovers = [r for r in results if r.leftovers_killed]
    if leftovers:
        for r in leftovers:
            print(f"leftovers: {r.leftovers_killed} process(es) of {r.attack} ({r.phase}) were still alive after the "
                  "spawn ended and were killed")
    else:
        print("leftovers: none; no process of any attack outlived its spawn")
    return 0


if __name__ == "__main__":
    sys.exit(main())
