"""The attacks of the outside review, end to end through `runtime spawn`, with the host checked after.

With the gate out of the way (`command` backend) and through it (`builtin`
backend: code the agent may write in scope, a conftest.py, runs in its own
pytest call and in the verify step): kernel knobs, /etc/shadow, ptrace of the
sandbox's pid 1 to stop its teardown, and sockets of the host. Probes that
touch a sysctl write back the value they read, so a failing sandbox never
changes the host.
"""

from __future__ import annotations

import os
import secrets
import shlex
import socket
import textwrap
import time
from pathlib import Path

from tests.spawn.conftest import FIX_TURN, PY, REPORT, SH_FIX, TEST_TURN, Spawner, marker, no_survivors

CORE_PATTERN = Path("/proc/sys/kernel/core_pattern")

PROBE = textwrap.dedent("""\
    import ctypes, os, socket
    out = []
    try:
        value = open("/proc/sys/kernel/core_pattern").read()
        with open("/proc/sys/kernel/core_pattern", "w") as fh:
            fh.write(value)
        out.append("sysctl:WROTE")
    except OSError as exc:
        out.append(f"sysctl:refused:{exc.errno}")
    try:
        open("/etc/shadow").read()
        out.append("shadow:READ")
    except OSError as exc:
        out.append(f"shadow:refused:{exc.errno}")
    libc = ctypes.CDLL(None, use_errno=True)
    out.append(f"ptrace:{libc.ptrace(16, 1, None, None)}:{ctypes.get_errno()}")
    for path in SOCKETS:
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(path)
            out.append("socket:CONNECTED")
        except OSError as exc:
            out.append(f"socket:refused:{exc.errno}")
    out.append(f"uid:{os.getuid()}")
""")


def probe(sockets: list[str]) -> str:
    return f"SOCKETS = {sockets!r}\n" + PROBE


def host_socket(folder: Path) -> socket.socket:
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o777)
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(folder / "host.sock"))
    os.chmod(folder / "host.sock", 0o777)
    sock.listen(4)
    return sock


def check_probe_lines(lines: list[str]) -> None:
    assert lines, "the probe never ran"
    for line in lines:
        fields = line.split()
        assert "sysctl:WROTE" not in fields and "shadow:READ" not in fields and "socket:CONNECTED" not in fields, line
        assert "ptrace:-1:1" in fields, line
        assert "uid:0" not in fields, line


def test_command_agent_cannot_reach_host_root(spawner: Spawner):
    s = spawner
    before = CORE_PATTERN.read_text()
    folder = Path("/var/tmp") / f"rt-hostile-{secrets.token_hex(4)}"
    listener = host_socket(folder)
    try:
        code = shlex.quote(probe([listener.getsockname()]) + 'print(" ".join(out))')
        agent = (f"{SH_FIX}; {PY} -I -c {code} > \"$HOME/probe\"; "
                 "printf 'Summary: fixed\\nFiles changed: src/calc/__init__.py\\nProbe: %s\\n' \"$(cat \"$HOME/probe\")\" "
                 "> \"$RUNTIME_REPORT_FILE\"")
        r = s.spawn(s.task(agent_id="ag-hostile", command=agent))
    finally:
        listener.close()
        (folder / "host.sock").unlink()
        folder.rmdir()
    assert r.outcome is not None, r.describe()
    report = r.outcome["attempts"][0]["report"]
    check_probe_lines([line.removeprefix("Probe: ") for line in report.splitlines() if line.startswith("Probe: ")])
    assert CORE_PATTERN.read_text() == before


def test_conftest_through_the_gate_cannot_reach_host_root(spawner: Spawner):
    """Write tests/conftest.py (in scope) and run pytest (allowed): the payload runs, sandboxed, in the
    agent's own test run, in verify and on the simulated merge — as an unprivileged uid every time. The
    agent's run leaves its probe in the agent's home; verify's and the merge's commands each have a home
    of their own, so their test command prints it, into the commands' logs."""
    s = spawner
    before = CORE_PATTERN.read_text()
    listener = host_socket(s.tmp / "host-sockets")
    try:
        conftest = (probe([listener.getsockname()])
                    + "with open(os.path.join(os.environ['HOME'], 'probe'), 'a') as fh:\n"
                    + "    fh.write(' '.join(out) + '\\n')\n")
        script = [FIX_TURN, [{"name": "Write", "input": {"file_path": "tests/conftest.py", "content": conftest}}],
                  TEST_TURN, REPORT]
        # the conftest's top-level code would be a finding of quality::no-test-detection: the task allows it,
        # so that the payload also reaches the simulated merge, whose sandbox holds it too
        verification = {"test-command": 'pytest -q tests && cat "$HOME/probe"', "test-count-min": 4,
                        "check-commands": ["python3 -m tabnanny src"], "allow-test-detection": ["tests/conftest.py"]}
        r = s.spawn(s.task(agent_id="ag-hostile-gate", script=script, verification=verification), "--merge")
    finally:
        listener.close()
    assert r.outcome is not None, r.describe()
    run_dir = s.run_dir("ag-hostile-gate")
    lines = (run_dir / "home" / "probe").read_text().splitlines()  # the agent's own pytest
    for folder in ("attempt-1/commands", "merge-commands"):  # verify's, the merge's
        for log in sorted((run_dir / folder).glob("*.log")):
            lines += [line for line in log.read_text().splitlines() if line.startswith("sysctl:")]
    assert len(lines) == 3, lines
    check_probe_lines(lines)
    assert CORE_PATTERN.read_text() == before
    assert r.label == "ok", r.describe()  # every effect was stopped, so the work itself is clean


def test_ptrace_cannot_keep_the_tree_alive(spawner: Spawner):
    """A background writer and PTRACE_ATTACH on the sandbox's pid 1: nothing runs 1 s after the agent."""
    s = spawner
    n = marker()
    beat = "$HOME/beat"
    agent = (f"{SH_FIX}; (while :; do echo x >> {beat}; sleep 0.0{n[:1]}1; done) & "
             f"setsid sleep {n} & "
             f"{PY} -I -c 'import ctypes; print(ctypes.CDLL(None, use_errno=True).ptrace(16, 1, None, None))' "
             "> \"$HOME/attach\"; "
             "printf 'Summary: fixed\\nFiles changed: src/calc/__init__.py\\n' > \"$RUNTIME_REPORT_FILE\"; exit 0")
    r = s.spawn(s.task(agent_id="ag-ptrace", command=agent))
    assert r.outcome is not None, r.describe()
    home = s.run_dir("ag-ptrace") / "home"
    assert (home / "attach").read_text().strip() == "-1"
    no_survivors(n, timeout=1.0)
    size = (home / "beat").stat().st_size
    time.sleep(1.0)
    assert (home / "beat").stat().st_size == size, "a background writer outlived the agent"


# A user configuration ruff reads where the project has none: every rule off.
RUFF_OFF = '[lint]\nignore = ["ALL"]\n'


def test_configuration_the_agent_leaves_in_its_home_does_not_steer_verify(spawner: Spawner):
    """The agent's home is its own while it runs; the commands verify judges it by each start from an empty
    one. Linters, npm, go and mypy read settings from $HOME (`~/.config/ruff/ruff.toml`, `~/.npmrc`'s
    script-shell, `~/.config/go/env`): left there, they would pass work the project's own checks refuse.
    The agent adds an unused import (F401) and plants a ruff configuration that turns every rule off."""
    s = spawner
    plant = ('mkdir -p "$HOME/.config/ruff" && printf %s ' + shlex.quote(RUFF_OFF) + ' > "$HOME/.config/ruff/ruff.toml"'
             ' && mkdir -p "$XDG_CONFIG_HOME/ruff" 2>/dev/null; true')
    agent = f"{SH_FIX} && sed -i '1i import os' src/calc/__init__.py && {plant} && ruff check src > ruff.log 2>&1; " \
            'cat ruff.log >&2; rm -f ruff.log; ' + REPORT_SH
    task = s.task(agent_id="ag-home-config", command=agent,
                  verification={"test-command": "pytest -q tests", "test-count-min": 4, "check-commands": ["ruff check src"]})
    r = s.spawn(task)
    assert r.label == "rejected", r.describe()
    check = next(c for c in r.outcome["attempts"][-1]["checks"] if c["atom"] == "quality::check-green")
    assert check["status"] == "rejected" and "F401" in check["feedback"], check
    # the plant itself worked where the agent ran: its own ruff passed under it
    assert "All checks passed!" in s.run_dir("ag-home-config").joinpath("attempt-1", "stderr.log").read_text()


REPORT_SH = ("printf 'Summary: fixed mean\\nFiles changed: src/calc/__init__.py\\n' > \"$RUNTIME_REPORT_FILE\"")


# Compiles the fixed calc.mean into an unchecked-hash .pyc (PEP 552: Python never compares it with the source),
# then leaves the source buggy: a run that imports the bytecode sees the fix, the commit holds the bug.
PYC_SWAP = '''import importlib.util, pathlib, py_compile
p = pathlib.Path("src/calc/__init__.py")
buggy = p.read_text()
p.write_text(buggy.replace("(len(values) + 1)", "len(values)"))
py_compile.compile(str(p), cfile=importlib.util.cache_from_source(str(p)),
                   invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
p.write_text(buggy + "# reviewed\\n")
'''


def test_bytecode_the_agent_leaves_in_ignored_folders_is_not_what_verify_tests(spawner: Spawner):
    """`__pycache__/` is ignored by the repository, so its files are no change; left in the copy verify runs
    over, a .pyc would be tested in place of the source it claims to be. Verify's copy holds the change, not
    what the base's ignore rules hide: the tests run on the buggy source and fail."""
    s = spawner
    agent = f"python3 -c {shlex.quote(PYC_SWAP)} && {REPORT_SH}"
    r = s.spawn(s.task(agent_id="ag-pyc", command=agent))
    assert r.label == "rejected", r.describe()
    tests = next(c for c in r.outcome["attempts"][-1]["checks"] if c["atom"] == "quality::tests-green")
    assert tests["status"] == "rejected" and "test_mean" in tests["feedback"], tests
