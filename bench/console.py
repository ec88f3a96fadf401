"""Console benchmark, run on demand (`make bench`), never as a timed test. Prints:

- **event to page**: from a run writing its state to the change showing in an open page of headless Chromium
  (the page's own clock, `window.consoleUpdated`, against the writer's; one machine, one clock), and to the
  event reaching a bare event-stream client; median, 90th percentile and worst of `--events` changes (a
  page fetches a section at once on a change, then at most once a second while changes keep coming);
- **first render** of a state folder of 64 agents (each with its attempts and checks) in one plan run, with
  20,000 audit records and plan events: the home page, the plan's page and an agent's page, over HTTP and
  as the browser's load time;
- **memory**: the console process's resident size once it has served all of that, and while a page is open;
- **big pages beside small ones**: an agent whose change is 11 MB (long lines, a 1 MB one among them) and one
  whose run wrote 20,000 audit records: each page's first render over HTTP, and the slowest answer of another
  page (the static script, the runs list) asked over and over while those render (target: under 100 ms);
- **the run is not slowed**: a plan of 8 scripted agents (the OS sandbox, 2 groups of 4) with no console,
  against the same with a console open and a browser page on it, alternating, median of `--pairs`.

Needs the `console` extra, and Chromium with chromedriver for the browser figures (they are left out,
saying so, without them).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from runtime.audit.log import AuditLog  # noqa: E402
from runtime.audit.records import Gated, ToolRan  # noqa: E402
from runtime.spawn.outcome import Attempt  # noqa: E402
from runtime.spawn.state import RunRecord, StateDir  # noqa: E402
from runtime.verify.kinds.record import CheckRecord  # noqa: E402

RUNTIME = str(Path(sys.executable).with_name("runtime"))
AGENTS, EVENTS = 64, 20_000


class Console:
    def __init__(self, state: Path, cwd: Path | None = None) -> None:
        self.proc = subprocess.Popen([RUNTIME, "console", "--no-open", "--state-dir", str(state)], cwd=cwd,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        parts = urlsplit(self.url)
        self.port, self.token = parts.port, parts.query.split("=", 1)[1]
        self.base = self.url.split("?")[0].rstrip("/")

    def get(self, path: str) -> tuple[float, int, int]:
        """Seconds to fetch ``path`` whole, its status and size (the token as a header, and as the cookie a
        console of an earlier version took, so one benchmark measures both)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        started = time.perf_counter()
        conn.request("GET", path, headers={"Host": f"127.0.0.1:{self.port}", "X-Console-Token": self.token,
                                           "Cookie": f"runtime_console={self.token}"})
        answer = conn.getresponse()
        body = answer.read()
        took = time.perf_counter() - started
        conn.close()
        return took, answer.status, len(body)

    def rss_mb(self) -> float:
        with open(f"/proc/{self.proc.pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def browser():
    found = (shutil.which("chromium") or shutil.which("chromium-browser"), shutil.which("chromedriver"))
    if not all(found):
        return None
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = found[0]
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(executable_path=found[1]), options=options)


def spread(values: list[float]) -> str:
    values = sorted(values)
    p90 = values[min(len(values) - 1, int(len(values) * 0.9))]
    return f"median {statistics.median(values):.0f} ms, p90 {p90:.0f} ms, worst {values[-1]:.0f} ms"


# -- event to page ------------------------------------------------------------------------------

def event_latency(n: int, driver) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        state = StateDir(Path(tmp) / "state")
        state.write(RunRecord(agent_id="ag-0", status="running", role="edit-local"))
        console = Console(state.root)
        try:
            stream = http.client.HTTPConnection("127.0.0.1", console.port, timeout=10)
            stream.request("GET", "/events", headers={"Host": f"127.0.0.1:{console.port}",
                                                      "X-Console-Token": console.token})
            answer = stream.getresponse()
            answer.readline()
            answer.readline()
            answer.readline()
            sse = []
            for i in range(n):
                time.sleep(0.13 + random.random() * 0.1)  # not in step with the watcher
                started = time.time()
                state.write(RunRecord(agent_id=f"ag-sse-{i}", status="running", role="edit-local"))
                while answer.readline() != b"event: change\n":
                    pass
                sse.append((time.time() - started) * 1000)
            stream.close()
            print(f"event to an event-stream client ({n} changes): {spread(sse)}")
            if driver is None:
                print("event to the page: left out (no Chromium and chromedriver)")
                return
            driver.get(console.url)
            page = []
            for i in range(n):
                # Apart by more than the page's gap between two fetches of a section (GAP_MS in console.js): each
                # change is then the first after a quiet spell, and shows as soon as the page hears of it.
                time.sleep(1.05 + random.random() * 0.2)
                seen = driver.execute_script("return window.consoleUpdates")
                started = time.time() * 1000
                state.write(RunRecord(agent_id=f"ag-page-{i}", status="running", role="edit-local"))
                end = time.monotonic() + 5
                while driver.execute_script("return window.consoleUpdates") == seen and time.monotonic() < end:
                    time.sleep(0.005)
                page.append(driver.execute_script("return window.consoleUpdated") - started)
            print(f"event to the page in Chromium ({n} changes): {spread(page)} (target: under 200 ms)")
        finally:
            console.stop()


# -- first render of a big run ------------------------------------------------------------------

def big_state(root: Path) -> tuple[StateDir, str]:
    state = StateDir(root / "state")
    run_id = "rbench0001"
    checks = [CheckRecord(f"quality::check-{k}", "checks-green", "passed", "all 3 check(s) passed " * 4) for k in range(12)]
    for a in range(AGENTS):
        attempts = tuple(Attempt(number=n, duration_s=12.5, exit_code=0, turns=14, tool_calls=40, denials=2,
                                 tokens=24_000, cost_usd=0.04, peak_memory_mb=180, checks=list(checks),
                                 report="Summary: did it\nFiles changed: src/x.py\n")
                         for n in (1, 2))
        state.write(RunRecord(agent_id=f"{run_id}.sub-{a:02d}", status="ok", role="edit-local", label="ok",
                              base="0" * 40, branch=f"agent/{run_id}.sub-{a:02d}", commit="1" * 40, attempts=attempts,
                              subtask=f"sub-{a:02d}", catalog=str(REPO)))
    log = AuditLog(state.audit)
    per_agent_audit = EVENTS // 2 // AGENTS
    for a in range(AGENTS):
        agent = f"{run_id}.sub-{a:02d}"
        for k in range(per_agent_audit // 2):
            log.append(Gated(attempt=1, tool="Bash", input={"command": f"pytest -q tests/test_{k}.py"},
                             decision="allow" if k % 9 else "deny", reason="sandboxed", atom="tools::bash-allowlist",
                             rule="pytest"), agent)
            log.append(ToolRan(attempt=1, tool="Bash", is_error=False, result="....\n4 passed in 0.5s\n"), agent)
    from runtime.orchestration.state import OrchestratorState

    db = OrchestratorState(state.root / "orchestrator.sqlite")
    plan = {"plan": {"goal": "A big plan."}, "subtask": [{"id": f"sub-{a:02d}", "sequence": 1 + a // 16}
                                                           for a in range(AGENTS)]}
    db.create_run(run_id, None, plan, "0" * 40, "trunk", f"run/{run_id}")
    for a in range(AGENTS):
        db.put_subtask(run_id, f"sub-{a:02d}", round=0, sequence=1 + a // 16, agent_id=f"{run_id}.sub-{a:02d}",
                       status="ok", label="ok", commit_sha="1" * 40)
    with db.lock:
        db.conn.execute("begin")
        for k in range(EVENTS - per_agent_audit * AGENTS):
            a = k % AGENTS
            kind = "dispatch" if k < AGENTS else "progress"
            db.conn.execute("insert into events (run_id, time, kind, data) values (?, ?, ?, ?)",
                            (run_id, time.time() + k * 0.001, kind,
                             json.dumps({"subtask": f"sub-{a:02d}", "agent": f"{run_id}.sub-{a:02d}", "attempt": 1,
                                         "state": "running", "turns": k % 14, "tool_calls": k % 40, "denials": 0,
                                         "elapsed_s": 1.0, "cost_usd": 0.0, "dispatch": 1, "base": "0" * 40})))
        db.conn.execute("commit")
    db.close()
    return state, run_id


def big_change_state(root: Path) -> tuple[StateDir, Path, float]:
    """A repository whose agent `ag-big` changed 11 MB (40 files of long lines, one 1 MB line among them), and an
    agent `ag-long` whose run wrote 20,000 audit records (its calls and their results)."""
    repo = root / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "keep.py").write_text("x = 1\n")
    git = ["git", "-C", str(repo), "-c", "user.name=b", "-c", "user.email=b@x"]
    subprocess.run(["git", "init", "-q", "-b", "trunk", str(repo)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    base = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run([*git, "checkout", "-q", "-b", "agent/ag-big"], check=True)
    line = "value = compute(" + ", ".join(f"arg_{k}" for k in range(30)) + ")  # a long line of code\n"
    for f in range(40):
        (repo / "src" / f"gen_{f:02d}.py").write_text(line * (270_000 // len(line)))
    (repo / "src" / "wide.py").write_text("blob = '" + "x" * 1_000_000 + "'\n")
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "big"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    size = sum(p.stat().st_size for p in (repo / "src").glob("*.py")) / 1e6
    subprocess.run([*git, "checkout", "-q", "trunk"], check=True)
    state = StateDir(root / "state")
    state.write(RunRecord(agent_id="ag-big", status="ok", role="edit-local", label="ok", base=base,
                          branch="agent/ag-big", commit=head, attempts=(Attempt(number=1),)))
    state.write(RunRecord(agent_id="ag-long", status="ok", role="edit-local", label="ok", base=base,
                          attempts=(Attempt(number=1, tool_calls=EVENTS // 2),)))
    log = AuditLog(state.audit)
    for k in range(EVENTS // 2):
        log.append(Gated(attempt=1, tool="Bash", input={"command": f"pytest -q tests/test_{k}.py"},
                         decision="allow", reason="sandboxed", atom="tools::bash-allowlist", rule="pytest"), "ag-long")
        log.append(ToolRan(attempt=1, tool="Bash", is_error=False, result="....\n4 passed in 0.5s\n"), "ag-long")
    return state, repo, size


def big_pages() -> None:
    import threading

    with tempfile.TemporaryDirectory() as tmp:
        state, repo, size = big_change_state(Path(tmp))
        console = Console(state.root, cwd=repo)
        try:
            console.get("/runs")
            time.sleep(1.0)  # the console warm: it reads the audit log once as it starts
            for name, path in ((f"a change of {size:.0f} MB", "/agents/ag-big/diff"),
                               ("a run of 20,000 records", "/agents/ag-long")):
                slowest, done = [0.0], threading.Event()

                def others(done: threading.Event, slowest: list[float]) -> None:
                    while not done.is_set():
                        for small in ("/static/console.js", "/runs"):
                            slowest[0] = max(slowest[0], console.get(small)[0])

                beside = threading.Thread(target=others, args=(done, slowest))
                beside.start()
                took, status, size_b = console.get(path)
                done.set()
                beside.join()
                print(f"  {name}: its page in {took * 1000:.0f} ms ({size_b // 1024} KB"
                      f"{'' if status == 200 else f', status {status}'}) (target: under 1 s); "
                      f"the slowest other page meanwhile {slowest[0] * 1000:.0f} ms (target: under 100 ms)")
        finally:
            console.stop()


def first_render(driver) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        state, run_id = big_state(Path(tmp))
        sqlite3.connect(state.root / "orchestrator.sqlite").close()
        print(f"a state folder of {AGENTS} agents, {EVENTS} audit records and plan events "
              f"(made in {time.perf_counter() - started:.1f} s)")
        console = Console(state.root)
        try:
            idle = console.rss_mb()
            for name, path in (("home", "/"), ("plan", f"/plans/{run_id}"), ("agent", f"/agents/{run_id}.sub-07"),
                               ("agent, again", f"/agents/{run_id}.sub-08")):
                took, status, size = console.get(path)
                assert status == 200, (path, status)
                print(f"  first render over HTTP, {name}: {took * 1000:.0f} ms ({size // 1024} KB) (target: under 1 s)")
            if driver is not None:
                driver.get(console.url)
                for name, path in (("home", "/"), ("plan", f"/plans/{run_id}")):
                    driver.get(console.base + path)  # the shell, then its script fetches the page
                    end = time.monotonic() + 30
                    while driver.execute_script("return window.consoleOpened") is None and time.monotonic() < end:
                        time.sleep(0.02)
                    took = driver.execute_script("return window.consoleOpened")
                    print(f"  the browser's load, {name}: {took:.0f} ms")
            print(f"memory: the console {idle:.0f} MB started, {console.rss_mb():.0f} MB after serving these pages")
        finally:
            console.stop()


# -- the run with and without a console open ----------------------------------------------------

def plan_run(root: Path, state: Path, repo: Path) -> float:
    plan = root / "plan.toml"
    started = time.perf_counter()
    done = subprocess.run([RUNTIME, "run", "--catalog", str(REPO), "--unattended", str(plan)], cwd=repo,
                          env={**os.environ, "RUNTIME_STATE_DIR": str(state)}, capture_output=True, text=True)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"the plan run failed: {done.stderr[-2000:]}")
    return took


def write_plan(root: Path) -> None:
    lines = ['[plan]', 'goal = "Write 8 notes."', 'success-criteria = ["every note exists"]', 'concurrency = 4',
             'max-replans = 0', '']
    for g in (1, 2):
        for k in range(4):
            sid = f"note-{g}-{k}"
            script = root / f"{sid}.toml"
            script.write_text(f'latency-s = 0.1\n\n[[turn]]\ntool_calls = [{{ name = "Write", input = {{ file_path = '
                              f'"notes/{sid}.md", content = "note {sid}\\n" }} }}]\n\n[[turn]]\n'
                              f'content = """Summary: wrote notes/{sid}.md\\nFiles changed: notes/{sid}.md\\n"""\n')
            lines += ['[[subtask]]', f'id = "{sid}"', f'sequence = {g}', '[subtask.task]', 'role = "edit-local"',
                      f'goal = "Write notes/{sid}.md."', '[subtask.scope]', f'files-whitelist = ["notes/{sid}.md"]',
                      '[subtask.verification]', 'test-command = "true"', 'test-results = "exit-code"',
                      'check-commands = ["true"]', '[subtask.agent]', 'backend = "builtin"', f'model = "scripted/{sid}"',
                      f'script = "{script}"', '[subtask.body]', f'text = "Write notes/{sid}.md."', '']
    (root / "plan.toml").write_text("\n".join(lines))


def fresh_repo(root: Path) -> Path:
    repo = root / "repo"
    shutil.rmtree(repo, ignore_errors=True)
    (repo / "notes").mkdir(parents=True)
    (repo / "notes" / ".keep").write_text("")
    subprocess.run(["git", "init", "-q", "-b", "trunk", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qm", "i"], check=True)
    return repo


def run_not_slowed(pairs: int, driver) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_plan(root)
        without, with_console, peaks = [], [], []
        for i in range(pairs):
            for watched in (False, True) if i % 2 == 0 else (True, False):
                repo = fresh_repo(root)
                state = root / f"state-{i}-{watched}"
                state.mkdir()
                console = Console(state, cwd=repo) if watched else None
                if driver is not None:  # the same browser in both: on the console's page, or on a blank one
                    driver.get(console.url if console is not None else "about:blank")
                took = plan_run(root, state, repo)
                (with_console if watched else without).append(took)
                if console is not None:
                    peaks.append(console.rss_mb())
                    console.stop()
        a, b = statistics.median(without), statistics.median(with_console)
        page = "and a browser page on it" if driver is not None else "(no browser: no page open)"
        print(f"a plan of 8 agents: {a:.2f} s with no console, {b:.2f} s with a console open {page} "
              f"({b / a:.2f}x, median of {pairs}); the console's memory then {max(peaks):.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=30)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--only", choices=["big-pages"], help="run one part alone")
    args = parser.parse_args()
    if args.only == "big-pages":
        print("big pages beside small ones:")
        big_pages()
        return
    driver = browser()
    try:
        event_latency(args.events, driver)
        first_render(driver)
        print("big pages beside small ones:")
        big_pages()
        run_not_slowed(args.pairs, None)  # the console alone
        if driver is not None:
            run_not_slowed(args.pairs, driver)  # and a person's page on it
    finally:
        if driver is not None:
            driver.quit()


if __name__ == "__main__":
    main()
