"""Supervising a real agent process: exit codes, limits, stragglers, cancellation.

The agents are small Python or shell scripts that print the pids of what they
start, so each test can check with psutil that nothing survived the stop.
"""

from __future__ import annotations

import os
import secrets
import sys
import time
from pathlib import Path

import anyio
import psutil
import pytest

from runtime.sandbox.supervise import Limits, ProcessResult, supervise

PY = sys.executable
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1"}
FAST = {"poll_s": 0.05, "grace_s": 0.5}


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def marked(marker: str) -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["cmdline", "status"])
            if marker in " ".join(p.info["cmdline"] or []) and p.info["status"] != psutil.STATUS_ZOMBIE]


def run(tmp_path: Path, argv: list[str], *, stdin: bytes | None = None, lines: list[str] | None = None,
        on_line=None, check=None, **limits) -> ProcessResult:
    limits = Limits(**{"timeout_s": 5.0, **FAST, **limits})
    return anyio.run(lambda: supervise(
        argv, cwd=tmp_path, env=ENV, stdin=stdin, stdout_path=tmp_path / "out.jsonl",
        stderr_path=tmp_path / "err.log", limits=limits,
        on_stdout_line=on_line or (None if lines is None else lines.append), check=check,
    ))


def pids_in(lines: list[str]) -> list[int]:
    return [int(word) for line in lines for word in line.split() if word.isdigit()]


def test_normal_exit(tmp_path):
    outcome = run(tmp_path, [PY, "-c", "import sys; print('hello'); print('oops', file=sys.stderr)"])
    assert (outcome.exit_code, outcome.breach, outcome.leftovers_killed) == (0, None, 0)
    assert (tmp_path / "out.jsonl").read_text() == "hello\n"
    assert (tmp_path / "err.log").read_text() == "oops\n"
    assert outcome.peak_processes >= 1 and outcome.duration_s < 3


def test_non_zero_exit(tmp_path):
    outcome = run(tmp_path, [PY, "-c", "raise SystemExit(3)"])
    assert (outcome.exit_code, outcome.breach) == (3, None)


def test_stdin_is_fed_then_closed(tmp_path):
    outcome = run(tmp_path, ["/bin/cat"], stdin=b"the bundle\n" * 10000)
    assert outcome.exit_code == 0
    assert (tmp_path / "out.jsonl").read_bytes() == b"the bundle\n" * 10000


def test_timeout_stops_the_whole_tree(tmp_path):
    lines: list[str] = []
    started = time.monotonic()
    outcome = run(tmp_path, ["/bin/sh", "-c", "sleep 30 & echo $!; echo $$; wait"], lines=lines, timeout_s=0.5)
    assert outcome.breach == "timeout"
    assert time.monotonic() - started < 0.5 + 2 * FAST["grace_s"] + 1.0
    assert len(pids_in(lines)) == 2 and all(gone(pid) for pid in pids_in(lines))


def test_sigterm_ignored_is_sigkilled(tmp_path):
    code = "import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print(os.getpid()); time.sleep(30)"
    lines: list[str] = []
    outcome = run(tmp_path, [PY, "-c", code], lines=lines, timeout_s=0.3)
    assert outcome.breach == "timeout"
    assert outcome.exit_code == -9
    assert all(gone(pid) for pid in pids_in(lines))


def test_setsid_child_is_found_and_killed(tmp_path):
    seen: dict[str, tuple[int, int]] = {}

    def record(line: str) -> None:
        main, child = map(int, line.split())
        seen["main"], seen["child"] = (main, os.getsid(main)), (child, os.getsid(child))

    code = ("import os, subprocess, time\nc = subprocess.Popen(['setsid', 'sleep', '30'])\n"
            "while os.getsid(c.pid) != c.pid:\n    time.sleep(0.01)\nprint(os.getpid(), c.pid)\ntime.sleep(0.5)")
    outcome = run(tmp_path, [PY, "-c", code], on_line=record)
    (main, main_sid), (child, child_sid) = seen["main"], seen["child"]
    assert main_sid == main and child_sid == child  # the child left the agent's session for its own
    assert (outcome.exit_code, outcome.breach) == (0, None)
    assert outcome.leftovers_killed == 1
    assert gone(child)


def test_sandboxed_agent_tree_is_stopped(tmp_path):
    from runtime.sandbox.bwrap import SandboxSpec, bwrap_path
    from tests.conftest import require

    bwrap = bwrap_path()
    require(bwrap is not None, "bubblewrap (bwrap) is not installed")
    marker = f"776.{secrets.randbelow(10**6):06d}"
    (tmp_path / "wt").mkdir()
    (tmp_path / "home").mkdir()
    sandbox = SandboxSpec(worktree=tmp_path / "wt", home=tmp_path / "home", env=ENV)
    outcome = run(tmp_path, [*sandbox.args(bwrap), "/bin/sh", "-c", f"sleep {marker} & sleep {marker}"], timeout_s=0.5)
    assert outcome.breach == "timeout"
    assert outcome.peak_processes >= 4  # bwrap, its init inside the PID namespace, sh, two sleeps
    assert marked(marker) == []


@pytest.fixture(params=["kernel", "sampled"])
def holder(request, monkeypatch):
    """Each limit test twice: held by the run's cgroup (which CI's machine has, as root), and by the
    fallback where the machine has none (rlimits and the sampled tree)."""
    from runtime.sandbox import cgroups, limits

    if request.param == "sampled":
        monkeypatch.setattr(limits, "support", lambda: cgroups.Support({}, {c: "off" for c in cgroups.CONTROLLERS}))
    else:
        from tests.conftest import require

        found = cgroups.support()
        require({"pids", "memory"} <= set(found.places), f"no cgroup for pids and memory here: {found.missing}")
    return request.param


def test_fork_bomb_is_bounded(tmp_path, holder):
    marker = f"777.{secrets.randbelow(10**6):06d}"
    # At most 60 sleeping children, so a supervisor bug cannot take the machine down.
    code = (f"import subprocess, time\nfor _ in range(60):\n    subprocess.Popen(['sleep', '{marker}'])\n"
            "    time.sleep(0.01)\ntime.sleep(30)")
    outcome = run(tmp_path, [PY, "-c", code], max_processes=10)
    assert outcome.breach == "processes"
    if holder == "kernel":
        assert outcome.peak_processes == 10  # the kernel refused the eleventh fork (and the tree was killed then)
    else:
        assert outcome.peak_processes > 10  # seen past the limit, then stopped
        assert outcome.leftovers_killed >= 10
    assert marked(marker) == []


def test_thread_bomb_is_bounded_like_a_fork_bomb(tmp_path):
    """Threads take pids too: one process starting threads is held by the same limit as a fork bomb (the
    run's cgroup; the sampled fallback counts processes, and RLIMIT_NPROC holds threads for it)."""
    from runtime.sandbox import cgroups
    from tests.conftest import require

    require("pids" in cgroups.support().places, f"no pids cgroup here: {cgroups.support().missing}")
    code = ("import threading, time\nfor _ in range(300):\n"
            "    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\ntime.sleep(30)")
    started = time.monotonic()
    outcome = run(tmp_path, [PY, "-c", code], max_processes=20)
    assert outcome.breach == "processes"
    assert outcome.peak_processes == 20
    assert time.monotonic() - started < 3


def test_memory_growth_is_bounded(tmp_path, holder):
    # At most 400 MB, touched so that it is resident.
    code = "import time\nkeep = []\nfor _ in range(40):\n    keep.append(b'x' * (10 << 20))\n    time.sleep(0.02)\ntime.sleep(30)"
    outcome = run(tmp_path, [PY, "-c", code], memory_mb=100)
    assert outcome.peak_memory_mb <= 100  # charged memory (kernel), or each process's data (RLIMIT_DATA)
    if holder == "kernel":
        assert outcome.breach == "memory"  # the kernel's kill, counted
        assert outcome.exit_code is not None and outcome.exit_code < 0
    else:
        # One process over RLIMIT_DATA has its allocation refused: Python raises MemoryError.
        assert outcome.exit_code == 1 and "MemoryError" in (tmp_path / "err.log").read_text()


def test_a_tree_of_processes_over_the_memory_limit_is_stopped(tmp_path, holder):
    """Four processes of 40 MB each under 100 MB: each within RLIMIT_DATA, the tree over the limit (the
    cgroup charges them all; the fallback's sample sums them)."""
    code = ("import subprocess, sys, time\nchild = \"import time\\nx = b'x' * (40 << 20)\\ntime.sleep(30)\"\n"
            "kids = [subprocess.Popen([sys.executable, '-c', child]) for _ in range(4)]\ntime.sleep(30)")
    outcome = run(tmp_path, [PY, "-c", code], memory_mb=100, timeout_s=20)
    assert outcome.breach == "memory"
    if holder == "kernel":
        assert outcome.peak_memory_mb <= 100


def test_a_breach_ends_the_tree_at_once_without_a_grace(tmp_path, holder):
    """A resource breach is SIGKILL at once, even for a tree that ignores SIGTERM and holds stdin open,
    where the grace of a well-behaved end (grace_s) would have let it run on."""
    code = ("import signal, subprocess, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "for _ in range(12):\n    try:\n        subprocess.Popen(['sleep', '30'])\n    except OSError:\n"
            "        pass\n    time.sleep(0.02)\ntime.sleep(30)")
    started = time.monotonic()
    outcome = run(tmp_path, [PY, "-c", code], stdin=b"", max_processes=8, grace_s=5.0)
    assert outcome.breach == "processes"
    assert outcome.exit_code == -9
    assert time.monotonic() - started < 3  # no 5 s grace before the kill


def test_disk_written_past_the_budget_is_a_breach(tmp_path, holder):
    """Many files, none large: the kernel's per-process write figures, read while the tree runs."""
    code = ("import os, time\nfor i in range(200):\n    with open(f'f{i}', 'wb') as fh:\n"
            "        fh.write(os.urandom(1 << 20))\ntime.sleep(30)")
    started = time.monotonic()
    outcome = run(tmp_path, [PY, "-c", code], disk_mb=20, timeout_s=20)
    assert outcome.breach == "disk"
    written = sum(f.stat().st_size for f in tmp_path.glob("f*"))
    assert written < 60 << 20, f"{written >> 20} MiB written under a 20 MiB budget"
    assert time.monotonic() - started < 10


def test_one_file_stops_at_the_disk_budget(tmp_path, holder):
    """RLIMIT_FSIZE holds a single file at the budget, faster than any look of the meter; the writer that
    goes on (here: waits) has broken the limit."""
    code = ("import os, time\ntry:\n    with open('big', 'wb', buffering=0) as fh:\n        while True:\n"
            "            fh.write(b'x' * (1 << 20))\nexcept OSError:\n    time.sleep(30)")
    outcome = run(tmp_path, [PY, "-c", code], disk_mb=10, timeout_s=20)
    assert outcome.breach == "disk"
    assert (tmp_path / "big").stat().st_size == 10 << 20


def test_check_hook_breach(tmp_path):
    lines: list[str] = []
    code = "import time\nfor i in range(200):\n    print('{\"turn\": %d}' % i)\n    time.sleep(0.05)"
    outcome = run(tmp_path, [PY, "-c", code], lines=lines, check=lambda: "turns" if len(lines) >= 3 else None)
    assert outcome.breach == "turns"
    assert 3 <= len(lines) < 50


def test_lines_arrive_while_the_process_runs(tmp_path):
    go = tmp_path / "go"
    lines: list[str] = []

    def on_line(line: str) -> None:
        lines.append(line)
        go.touch()  # the agent prints its second line only after the parent saw the first

    code = (f"import os, time\nprint('first')\nwhile not os.path.exists({str(go)!r}):\n    time.sleep(0.01)\n"
            "print('second', end='')")
    outcome = run(tmp_path, [PY, "-c", code], on_line=on_line, timeout_s=3)
    assert (outcome.exit_code, outcome.breach) == (0, None)
    assert lines == ["first", "second"]


def test_cancelling_the_caller_still_kills_the_tree(tmp_path):
    lines: list[str] = []

    async def main() -> bool:
        with anyio.move_on_after(0.5) as scope:
            await supervise(
                ["/bin/sh", "-c", "sleep 30 & echo $!; echo $$; wait"], cwd=tmp_path, env=ENV, stdin=b"",
                stdout_path=tmp_path / "out", stderr_path=tmp_path / "err",
                limits=Limits(timeout_s=30, **FAST), on_stdout_line=lines.append,
            )
        return scope.cancelled_caught

    assert anyio.run(main)
    assert len(pids_in(lines)) == 2
    assert all(gone(pid) for pid in pids_in(lines))


def test_callback_error_propagates_and_the_tree_is_stopped(tmp_path):
    code = "import os, time; print(os.getpid()); time.sleep(30)"
    with pytest.raises(ZeroDivisionError):
        run(tmp_path, [PY, "-c", code], on_line=lambda line: 1 / 0)
    assert gone(int((tmp_path / "out.jsonl").read_text()))


# -- bounded output ------------------------------------------------------------------------------

def test_capped_log_keeps_head_and_tail_and_counts_the_rest(tmp_path):
    from runtime.sandbox.supervise import CappedLog

    log = CappedLog(tmp_path / "log", 100)
    for n in range(1000):
        log.write(b"%04d\n" % n)  # 5000 bytes in 5-byte writes
    log.close()
    text = (tmp_path / "log").read_bytes()
    head, _, rest = text.partition(b"\n[... ")
    assert head == b"".join(b"%04d\n" % n for n in range(10))  # the first 50 bytes
    note, _, tail = rest.partition(b"...]\n")
    assert note == b"4900 bytes dropped: the output was longer than the cap "
    assert tail == b"".join(b"%04d\n" % n for n in range(990, 1000))  # the last 50 bytes


def test_a_flood_is_stored_within_the_cap_and_lines_still_arrive(tmp_path):
    """200 MB on stdout and on stderr: each log keeps the cap, the parent never holds the flood, and
    the lines around it (short ones) still reach the callback; an over-long line does not."""
    code = ("import sys, os\n"
            "print('first', flush=True)\n"
            "chunk = b'x' * (1 << 20)\n"
            "for _ in range(200):\n"
            "    os.write(1, chunk); os.write(2, chunk)\n"
            "os.write(1, b'\\nlast\\n')\n")
    lines: list[str] = []
    before = _peak_rss_mb()
    outcome = run(tmp_path, [PY, "-c", code], lines=lines, timeout_s=60.0, output_bytes=1 << 20)
    assert outcome.exit_code == 0 and outcome.breach is None
    for name in ("out.jsonl", "err.log"):
        size = (tmp_path / name).stat().st_size
        assert size < (1 << 20) + 200, (name, size)
    assert outcome.output_dropped >= 2 * 200 * (1 << 20) - 2 * (1 << 20)
    assert lines[0] == "first" and lines[-1] == "last"
    assert all(len(line) < (1 << 20) + 1 for line in lines)  # the 200 MB line was not handed on
    assert _peak_rss_mb() - before < 100  # never held whole


def _peak_rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0
