"""Spawn benchmark, run on demand (`make bench`), never as a timed test.

Prints, measured in one run on this machine:

1. spawn overhead with the OS sandbox: the whole `spawn()` minus the agent's
   own run (its process, from start to exit), for an agent that answers at
   once and a role with no verify commands, so what remains is worktree,
   policy, bundle, broker, verify, commit and clean-up (target <= 0.5 s);
   and the cost of starting the sandbox itself (bwrap running /bin/true
   against /bin/true alone);
2. the agent process's resident memory (the whole sandboxed tree, peak);
3. the gate's added time per tool call inside the builtin loop (target
   < 1 ms), from the `gate_ms` the agent reports for each call.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import anyio  # noqa: E402

from runtime.spawn.pipeline import SpawnOptions, spawn  # noqa: E402

EXPLORER_TASK = """[task]
role = "explorer"
agent-id = "{agent_id}"
goal = "Say what is there."
[agent]
backend = "builtin"
model = "scripted/bench"
script = "{script}"
[body]
text = "Look around and report."
"""
WEB_TASK = """[task]
role = "read-only"
agent-id = "{agent_id}"
goal = "Say what is there."
[network]
allowed-domains = ["docs.python.org"]
[agent]
backend = "builtin"
model = "scripted/bench"
script = "{script}"
[body]
text = "Look around and report."
"""
WEB_SCRIPT = '[[turn]]\ncontent = """Summary: nothing to fix.\\n## Findings\\n- [LOW] none\\n"""\n'
REPORT_SCRIPT = '[[turn]]\ncontent = """Summary: nothing to fix.\\nFindings: none\\n"""\n'
EDIT_TASK = """[task]
role = "edit-local"
agent-id = "{agent_id}"
goal = "Touch many files."
[scope]
files-whitelist = ["src/**"]
[verification]
test-command = "true"
test-results = "exit-code"
check-commands = ["true"]
[agent]
backend = "builtin"
model = "scripted/bench"
script = "{script}"
[agent.limits]
max-turns = 200
max-tool-calls = 400
[body]
text = "Edit files."
"""


def make_repo(root: Path) -> Path:
    repo = root / "repo"
    (repo / "src").mkdir(parents=True)
    for n in range(20):
        (repo / "src" / f"m{n}.py").write_text(f"value = {n}\n")
    subprocess.run(["git", "init", "-q", "-b", "trunk", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qm", "init"], check=True)
    return repo


def edit_script() -> str:
    turns = []
    for n in range(20):
        turns.append(f'[[turn]]\ntool_calls = [{{ name = "Read", input = {{ file_path = "src/m{n}.py" }} }}]\n')
        turns.append(f'[[turn]]\ntool_calls = [{{ name = "Edit", input = {{ file_path = "src/m{n}.py", '
                     f'old_string = "value = {n}", new_string = "value = {n + 1}" }} }}]\n')
        turns.append(f'[[turn]]\ntool_calls = [{{ name = "Bash", input = {{ command = "grep -n value src/m{n}.py && cat src/m{n}.py | wc -l" }} }}]\n')
    turns.append('[[turn]]\ncontent = """Summary: edited.\\nFiles changed: src\\n"""\n')
    return "\n".join(turns)


def run_spawn(repo: Path, state: Path, task: Path):
    options = SpawnOptions(repo=repo, state_dir=state, catalog=str(REPO))
    started = time.perf_counter()
    outcome = anyio.run(spawn, task, options)
    return outcome, time.perf_counter() - started


def sandbox_start(runs: int, root: Path) -> tuple[float, float, float]:
    """Median start-to-exit of /bin/true: in the sandbox as spawn builds it (unprivileged uid, minimal
    root, kernel knobs read-only, seccomp), in the earlier sandbox (the host's / bound whole, no
    seccomp, no uid switch), and bare."""
    from runtime.sandbox.bwrap import SandboxSpec
    from runtime.sandbox.env import agent_env
    from runtime.sandbox.launch import sandboxed

    bwrap = shutil.which("bwrap")
    earlier = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
               "--cap-drop", "ALL", "--unshare-net", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
               "--tmpfs", "/tmp", "--", "/bin/true"]
    (root / "sb-worktree").mkdir(exist_ok=True)
    (root / "sb-home").mkdir(exist_ok=True)
    spec = SandboxSpec(worktree=root / "sb-worktree", home=root / "sb-home", writable=[root / "sb-worktree"],
                       env=agent_env(root / "sb-home", {}))
    spec.expose([Path(sys.prefix), Path(sys.base_prefix), REPO])
    hardened, before, bare = [], [], []
    for _ in range(runs):
        t = time.perf_counter()
        with sandboxed(spec, ["/bin/true"]) as (argv, fds):
            subprocess.run(argv, check=True, pass_fds=fds)
        hardened.append(time.perf_counter() - t)
        t = time.perf_counter()
        subprocess.run(earlier, check=True)
        before.append(time.perf_counter() - t)
        t = time.perf_counter()
        subprocess.run(["/bin/true"], check=True)
        bare.append(time.perf_counter() - t)
    return statistics.median(hardened), statistics.median(before), statistics.median(bare)


def main() -> int:
    if shutil.which("bwrap") is None:
        print("bubblewrap is not installed: this benchmark measures the sandboxed spawn")
        return 1
    with tempfile.TemporaryDirectory(prefix="spawn-bench-") as tmp:
        root = Path(tmp)
        repo, state = make_repo(root), root / "state"
        (root / "report.toml").write_text(REPORT_SCRIPT)
        overheads, agent_times = [], []
        for n in range(6):
            task = root / f"explore{n}.toml"
            task.write_text(EXPLORER_TASK.format(agent_id=f"bench-explore-{n}", script=root / "report.toml"))
            outcome, total = run_spawn(repo, state, task)
            assert outcome.status == "ok", outcome.to_dict()
            if n == 0:
                continue  # warm-up: the first model call imports litellm in the orchestrator
            attempt = outcome.attempts[0]
            overheads.append(total - attempt.duration_s)
            agent_times.append(attempt.duration_s)
        (root / "web.toml").write_text(WEB_SCRIPT)
        web_overheads = []
        for n in range(4):  # the egress proxy and its relay on top of the sandbox
            task = root / f"web{n}.toml"
            task.write_text(WEB_TASK.format(agent_id=f"bench-web-{n}", script=root / "web.toml"))
            outcome, total = run_spawn(repo, state, task)
            assert outcome.status == "ok", outcome.to_dict()
            web_overheads.append(total - outcome.attempts[0].duration_s)
        sb, earlier, plain = sandbox_start(20, root)
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus")
        print(f"spawn overhead (sandboxed, all but the agent's run): median {statistics.median(overheads):.3f} s, "
              f"max {max(overheads):.3f} s over {len(overheads)} spawns (target <= 0.5 s)")
        print(f"agent process run (sandbox + interpreter + one model turn): median {statistics.median(agent_times):.3f} s")
        print(f"spawn overhead with an egress proxy (read-only role, declared domains): median "
              f"{statistics.median(web_overheads):.3f} s over {len(web_overheads)} spawns")
        print(f"sandbox start, /bin/true: hardened sandbox {sb * 1000:.1f} ms, earlier sandbox (host / bound whole) "
              f"{earlier * 1000:.1f} ms, no sandbox {plain * 1000:.1f} ms")

        (root / "edit.toml").write_text(edit_script())
        task = root / "edit-task.toml"
        task.write_text(EDIT_TASK.format(agent_id="bench-edit", script=root / "edit.toml"))
        outcome, total = run_spawn(repo, state, task)
        assert outcome.status == "ok", outcome.to_dict()
        lines = (state / "runs" / "bench-edit" / "attempt-1" / "stdout.log").read_text().splitlines()
        gate_ms = [json.loads(l)["gate_ms"] for l in lines if '"event": "tool"' in l]
        attempt = outcome.attempts[0]
        print(f"a 60-tool-call edit-local spawn: {total:.2f} s in all, agent run {attempt.duration_s:.2f} s, "
              f"agent resident memory (whole tree, peak) {attempt.peak_memory_mb:.1f} MiB")
        print(f"gate time per tool call in the builtin loop: median {statistics.median(gate_ms):.3f} ms, "
              f"max {max(gate_ms):.3f} ms (first call, with lazy imports), over {len(gate_ms)} calls (target < 1 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
