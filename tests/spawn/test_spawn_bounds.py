"""What an agent writes is bounded, and what it plants is never followed — end to end through `runtime spawn`.

A flood on stdout and stderr is stored within the cap and the orchestrator's
memory stays flat; a 600 MB file (sparse: the check must not read it) is
rejected and committed nowhere; a report file made a symlink to a host file
the sandbox hides leaks nothing of it anywhere the orchestrator writes.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys

from tests.conftest import RUNTIME
from tests.spawn.conftest import SH_FIX, SH_REPORT, Spawner


def spawn_measured(s: Spawner, task) -> tuple[subprocess.CompletedProcess, float]:
    """`runtime spawn --json` under a wrapper whose only child it is, with that child's peak resident
    memory (MiB): the orchestrator and what it waited for, not whatever this test process ran before."""
    wrapper = ("import resource, subprocess, sys\n"
               "proc = subprocess.run(sys.argv[1:])\n"
               "sys.stderr.write('PEAK-KB %d\\n' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
               "sys.exit(proc.returncode)\n")
    proc = subprocess.run([sys.executable, "-c", wrapper, *s.argv(task)], cwd=s.repo, capture_output=True, text=True,
                          env=s.full_env(), timeout=300)
    peak_kb = int(proc.stderr.rsplit("PEAK-KB ", 1)[1].split()[0])
    return proc, peak_kb / 1024


def test_a_300_mb_flood_is_stored_within_the_cap(spawner: Spawner):
    s = spawner
    flood = "head -c 314572800 /dev/zero | tr '\\0' x; head -c 314572800 /dev/zero | tr '\\0' y >&2"
    task = s.task(agent_id="ag-flood", command=f"{SH_FIX}; {flood}; {SH_REPORT}",
                  limits={"timeout-s": 120, "max-output-bytes": 1048576})
    proc, peak_mb = spawn_measured(s, task)
    assert len(proc.stdout) < 400_000, len(proc.stdout)  # --json carries excerpts, not the flood
    outcome = json.loads(proc.stdout)
    assert outcome["label"] == "ok", proc.stderr
    attempt = s.run_dir("ag-flood") / "attempt-1"
    for name in ("stdout.log", "stderr.log"):
        assert (attempt / name).stat().st_size < 1048576 + 200
        assert b"bytes dropped" in (attempt / name).read_bytes()
    assert (s.run_dir("ag-flood") / "state.json").stat().st_size < 400_000
    assert peak_mb < 150, f"the orchestrator peaked at {peak_mb:.0f} MiB"  # ~45 MiB here; the flood is 600 MB


def test_a_120_mb_file_is_rejected_and_committed_nowhere_and_600_mb_cannot_be_written(spawner: Spawner):
    """Past the change limit (100 MiB) but within the disk budget (the limit plus 64 MiB), a file is written
    and verify rejects it; past the disk budget the kernel refuses to make it (RLIMIT_FSIZE), sparse or not."""
    s = spawner
    plant = (f"{SH_FIX}; truncate -s 120M src/calc/dump.bin; {SH_REPORT}; "
             "truncate -s 600M src/calc/huge.bin 2>> \"$RUNTIME_REPORT_FILE\"; true")
    r = s.spawn(s.task(agent_id="ag-big", command=plant), "--merge")
    assert r.outcome is not None, r.describe()
    assert r.label == "rejected", r.describe()
    # truncate ends by SIGXFSZ (the shell says so), or is told EFBIG where the signal is ignored.
    report = r.outcome["attempts"][-1]["report"] or ""
    assert "File size limit exceeded" in report or "File too large" in report, r.describe()
    checks = r.outcome["attempts"][-1]["checks"]
    sizes = [c for c in checks if c["kind"] == "change-size"]
    assert sizes and sizes[0]["status"] == "rejected" and "src/calc/dump.bin" in sizes[0]["feedback"]
    for rev in s.git("for-each-ref", "--format=%(refname)").split():
        assert "src/calc/dump.bin" not in s.files_at(rev), rev
    assert 'Left-Out: "src/calc/dump.bin" (too large)' in s.message("agent/ag-big")  # the inspection commit says so
    # Nothing of it landed in the object store either (listing the changes used a throwaway store).
    count = s.git("count-objects", "-v")
    size_kb = sum(int(line.split()[1]) for line in count.splitlines() if line.startswith(("size:", "size-pack:")))
    assert size_kb < 50_000, count


def test_a_symlinked_report_leaks_nothing(spawner: Spawner, tmp_path):
    s = spawner
    canary = f"CANARY-{secrets.token_hex(8)}"
    secret = tmp_path / "orchestrator-home" / ".aws" / "credentials"
    secret.parent.mkdir(parents=True)
    secret.write_text(f"aws_secret_access_key = {canary}\n")
    plant = f"{SH_FIX}; ln -sf {secret} \"$RUNTIME_REPORT_FILE\"; echo done"
    r = s.spawn(s.task(agent_id="ag-link", command=plant, agent={"retries": 1}))
    assert r.outcome is not None, r.describe()
    assert r.label == "rejected", r.describe()
    feedback = [c["feedback"] for a in r.outcome["attempts"] for c in a["checks"] if c["kind"] == "report-file"]
    assert feedback and "symlink" in feedback[0] and "RUNTIME_REPORT_FILE" in feedback[0]
    status = subprocess.run([RUNTIME, "status", "--json"], cwd=s.repo, capture_output=True, text=True,
                            env=s.full_env())
    audit = subprocess.run([RUNTIME, "audit", "show", "--json"], cwd=s.repo, capture_output=True, text=True,
                           env=s.full_env())
    haystacks = {"--json": r.proc.stdout + r.proc.stderr, "status": status.stdout + status.stderr,
                 "audit": audit.stdout}
    for root, _, files in os.walk(s.state):
        for name in files:
            path = os.path.join(root, name)
            if not os.path.islink(path) and os.path.isfile(path):
                with open(path, "rb") as fh:
                    haystacks[path] = fh.read().decode("utf-8", "replace")
    for where, text in haystacks.items():
        assert canary not in text, f"the canary leaked into {where}"


PROBE_CPUS = ("c=$(grep Cpus_allowed_list /proc/self/status | cut -f2); "
              "w=$(python3 -c 'import os\ntry:\n    os.sched_setaffinity(0, range(os.cpu_count()))\n    print(\"widened\")\n"
              "except PermissionError:\n    print(\"refused\")'); "
              "printf 'Summary: cpus %s, widening %s\\nFiles changed: src/calc/__init__.py\\n' \"$c\" \"$w\" "
              "> \"$RUNTIME_REPORT_FILE\"")


def test_an_agent_runs_pinned_to_its_cpus_and_cannot_widen_the_pin(spawner: Spawner):
    s = spawner
    r = s.spawn(s.task(agent_id="ag-cpus", command=f"{SH_FIX}; {PROBE_CPUS}", limits={"cpus": 1}))
    assert r.label == "ok", r.describe()
    report = r.outcome["attempts"][-1]["report"]
    pinned = report.split("cpus ", 1)[1].split(",", 1)[0]
    assert pinned.isdigit() and int(pinned) in os.sched_getaffinity(0), report  # one CPU, of this machine's
    assert "widening refused" in report, report
    unpinned = s.spawn(s.task(agent_id="ag-free", command=f"{SH_FIX}; {PROBE_CPUS}"))
    assert "widening refused" in unpinned.outcome["attempts"][-1]["report"]  # the filter is the same for all


def test_an_agent_asking_for_more_cpus_than_the_machine_has_is_one_line(spawner: Spawner):
    s = spawner
    task = s.task(agent_id="ag-greedy", command=f"{SH_FIX}; {SH_REPORT}", limits={"cpus": 1024})
    r = s.spawn(task)
    assert r.proc.returncode == 1 and not s.state.joinpath("runs", "ag-greedy").exists()
    (line,) = r.proc.stderr.strip().splitlines()
    assert f"[agent.limits] cpus = 1024, but this machine offers {len(os.sched_getaffinity(0))}" in line
