"""A worktree's world (`[worktree]` in toolchain.toml), run on demand (`make bench`), never as a timed test.

Spawns of a command agent in the spawn demo's repository, with the OS sandbox, whose worktrees need:

- **include**: an ignored version file copied from the main checkout;
- **setup, shared**: a dependency installed with pip into `.deps` (`--target`) from a package index on
  loopback through setup's egress proxy: a world that names no worktree, so every agent on the base
  takes it from the cache;
- **setup, per worktree**: a virtualenv made in the worktree and a dependency installed into it: a world
  that names its worktree (the venv's scripts), so only that worktree (`runtime again`) takes it from the cache.

Prints the spawn's `setup` phase (its outcome's timings) for the first agent on a base (made) against a
later one (from the cache), the median of `--runs`, and the whole spawn beside a spawn without `[worktree]`.
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.spawn.test_worktree_world import tiny_wheel  # noqa: E402

RUNTIME = str(Path(sys.executable).with_name("runtime"))
FIX = "sed -i 's/(len(values) + 1)/len(values)/' src/calc/__init__.py"
REPORT = "printf 'Summary: fixed mean\\nFiles changed: src/calc/__init__.py\\n' > \"$RUNTIME_REPORT_FILE\""


def index_server(root: Path) -> tuple[http.server.ThreadingHTTPServer, int]:
    (root / "simple" / "tinydep").mkdir(parents=True)
    wheel = tiny_wheel(root / "simple" / "tinydep")
    (root / "simple" / "tinydep" / "index.html").write_text(f'<a href="{wheel.name}">{wheel.name}</a>\n')

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=str(root), **kw)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


def make_repo(root: Path, toolchain: str | None) -> Path:
    repo = root / "repo"
    shutil.rmtree(repo, ignore_errors=True)
    shutil.copytree(REPO / "manifests/examples/spawn-demo/project", repo)
    with (repo / ".gitignore").open("a") as fh:
        fh.write("src/calc/_version.py\n.deps/\n.wt/\n")
    (repo / "src/calc/_version.py").write_text("version = '1.2.3'\n")
    if toolchain is not None:
        (repo / ".agent-runtime").mkdir()
        (repo / ".agent-runtime/toolchain.toml").write_text(toolchain)
    for args in (["init", "-q", "-b", "trunk"], ["add", "-A"],
                 ["-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qm", "base"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True)
    return repo


def task(root: Path, agent_id: str) -> Path:
    path = root / f"{agent_id}.toml"
    path.write_text(f"""[task]
role = "edit-local"
agent-id = "{agent_id}"
goal = "Fix calc.mean."

[scope]
files-whitelist = ["src/calc/**"]

[verification]
test-command = "pytest -q tests"
check-commands = []

[output]
report-fields-required = ["summary", "files-changed"]

[agent]
backend = "command"
command = ["/bin/sh", "-c", {json.dumps(f"{FIX}; {REPORT}")}]
retries = 0

[body]
text = "Fix mean."
""")
    return path


def spawn(root: Path, repo: Path, state: Path, agent_id: str, catalog: Path | None) -> tuple[float, float, bool | None]:
    """The spawn's setup phase and its whole wall time, and whether its world came from the cache."""
    argv = [RUNTIME, "spawn", "--json", *(["--catalog", str(catalog)] if catalog else []), str(task(root, agent_id))]
    done = subprocess.run(argv, cwd=repo, capture_output=True, text=True, env={**os.environ, "RUNTIME_STATE_DIR": str(state)})
    outcome = json.loads(done.stdout)
    if outcome["label"] != "ok":
        raise SystemExit(f"{agent_id}: {outcome['label']}: {outcome['message'][:500]}")
    record = json.loads((state / "runs" / agent_id / "state.json").read_text())
    timings = outcome["timings"]
    total = sum(timings.values())
    setup = record.get("setup") or {}
    return timings.get("setup", 0.0), total, setup.get("cached")


def series(label: str, toolchain: str | None, runs: int) -> None:
    made, cached, totals_made, totals_cached = [], [], [], []
    for n in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            repo = make_repo(root, toolchain)
            catalog = repo / ".agent-runtime" if toolchain is not None else REPO
            state = root / "state"
            first = spawn(root, repo, state, f"ag-{n}-a", catalog)
            second = spawn(root, repo, state, f"ag-{n}-b", catalog)
            made.append(first[0])
            totals_made.append(first[1])
            cached.append(second[0])
            totals_cached.append(second[1])
            from_cache = second[2]
    if toolchain is None:
        print(f"{label}: the whole spawn {statistics.median(totals_made):.2f} s")
        return
    m, c = statistics.median(made), statistics.median(cached)
    how = "from the cache" if from_cache else "made again (the world names its worktree)"
    print(f"{label}: setup {m:.2f} s for the first agent on the base, {c:.2f} s for the next ({how}); "
          f"the whole spawn {statistics.median(totals_made):.2f} s and {statistics.median(totals_cached):.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server, port = index_server(Path(tmp))
        egress = (f'setup-domains = ["localhost"]\nsetup-addresses = ["127.0.0.1/32", "::1/128"]\n'
                  f"setup-ports = [{port}]\n")
        pip = (f"{sys.executable} -m pip install --isolated --quiet --disable-pip-version-check "
               f"--index-url http://localhost:{port}/simple/")
        try:
            series("no [worktree]", None, args.runs)
            series("include only", '[worktree]\ninclude = ["src/calc/_version.py"]\n', args.runs)
            series("setup, shared (pip --target .deps)",
                   f'[worktree]\ninclude = ["src/calc/_version.py"]\nsetup = ["{pip} --target .deps tinydep"]\n{egress}',
                   args.runs)
            series("setup, per worktree (a venv in it)",
                   '[worktree]\ninclude = ["src/calc/_version.py"]\n'
                   f'setup = ["{sys.executable} -m venv --without-pip .wt", "{pip} --prefix .wt tinydep"]\n'
                   f'path = [".wt/bin"]\n{egress}', args.runs)
        finally:
            server.shutdown()


if __name__ == "__main__":
    main()
