"""Run a shell command for real and observe what it touched: the oracle of the differential tests.

The command runs in a throwaway bubblewrap sandbox whose root is an overlay of
the host's: every file it creates, changes, deletes or merely opens for
writing lands in a tmpfs upper layer (the host is never changed), and every
``execve`` is traced with strace. What the run touched is then judged without
the gate's code: a write is fine only inside the task's write scope (or one of
the incidental caches and temporary files listed below), never in ``.git`` or
``.claude``, never to a file that had other hard links; a program executed must
be one the role allows, or a wrapper or shell the gate unwraps.

Needs root (mounts in a private mount namespace), ``unshare``, ``bwrap`` and
``strace``; ``available()`` says whether they are there.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

# One private mount namespace per run: a tmpfs for the overlay's upper layer,
# the overlay over /, bubblewrap on top of it, strace inside. The report is
# the upper layer's listing and the trace, printed before the namespace goes.
_SCRIPT = r'''
set -eu
base=$1 cwd=$2 cmd=$3 path=$4
mount -t tmpfs -o size=256m tmpfs "$base"
mkdir "$base/u" "$base/w" "$base/m"
mount -t overlay overlay -o "lowerdir=/,upperdir=$base/u,workdir=$base/w" "$base/m"
timeout -k 2 20 bwrap --bind "$base/m" / --proc /proc --dev /dev --unshare-all --die-with-parent \
    --chdir "$cwd" --clearenv --setenv PATH "$path" --setenv HOME /root --setenv LANG C.UTF-8 \
    -- strace -f -qq -e trace=execve,execveat,clone,clone3,fork,vfork -e signal=none -o /tmp/.reality-trace \
    bash -c "$cmd" </dev/null >/dev/null 2>&1 || true
cd "$base/u"
find . -mindepth 1 \( -type c -printf 'gone %p\n' -o -type d -printf 'dir %p\n' -o -printf 'file %p\n' \)
echo '--- trace'
cat "$base/u/tmp/.reality-trace" 2>/dev/null || true
'''

# strace -f interleaves processes: a call may be split into `<unfinished ...>` and `<... resumed>`.
_EXEC = re.compile(r'^(\d+)\s+execve(?:at)?\((?:AT_FDCWD, )?"([^"]*)"(.*)$')
_EXEC_RESUMED = re.compile(r'^(\d+)\s+<\.\.\. execve(?:at)? resumed>.*=\s*0\s*$')
_SPAWN = re.compile(r'^(\d+)\s+(?:(?:clone3?|v?fork)\(|<\.\.\. (?:clone3?|v?fork) resumed>).*=\s*(\d+)\s*$')
# Programs that run code the agent may have written (tests, conftest.py): what their processes
# execute is the sandbox's to contain, not the gate's to foresee, so their subtrees are not judged.
CODE_RUNNERS = re.compile(r"^(?:pytest|py\.test|python[0-9.]*|node|cargo|go|npm)$")


def available() -> str | None:
    """None when differential runs can happen here, else why not."""
    if os.geteuid() != 0:
        return "needs root (overlay mounts in a private mount namespace)"
    for tool in ("unshare", "bwrap", "strace", "timeout"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed"
    return None


@dataclass(frozen=True)
class Touched:
    writes: tuple[str, ...]  # absolute paths created, changed, opened for writing or deleted
    new_dirs: tuple[str, ...]
    execs: tuple[str, ...]  # programs executed (paths as passed to execve)


def run_for_real(command: str, cwd: Path, path_env: str) -> Touched:
    base = tempfile.mkdtemp(prefix="reality-")
    try:
        proc = subprocess.run(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", _SCRIPT, "sh", base, str(cwd), command, path_env],
            capture_output=True, text=True, timeout=60,
        )
    finally:
        os.rmdir(base)
    if proc.returncode != 0:
        raise RuntimeError(f"the reality harness failed ({proc.returncode}): {proc.stderr.strip()[:500]}")
    listing, _, trace = proc.stdout.partition("--- trace\n")
    writes, dirs = [], []
    for line in listing.splitlines():
        kind, _, rel = line.partition(" ")
        path = "/" + rel[2:]
        if path == "/tmp/.reality-trace":
            continue
        if kind == "dir":
            if not os.path.isdir(path):  # a copied-up parent is not a change; a new folder is
                dirs.append(path)
        else:
            writes.append(path)
    return Touched(tuple(writes), tuple(dirs), tuple(_judged_execs(trace)))


def _judged_execs(trace: str) -> list[str]:
    """Programs executed, in order, leaving out what runs below a code runner."""
    parent: dict[str, tuple[str, int]] = {}  # child pid -> (parent pid, line of the fork)
    runner_since: dict[str, int] = {}  # pid -> line at which it became a code runner
    execs: list[tuple[str, str, int]] = []
    pending: dict[str, str] = {}
    for n, line in enumerate(trace.splitlines()):
        spawn = _SPAWN.match(line)
        if spawn:
            parent[spawn.group(2)] = (spawn.group(1), n)
            continue
        m = _EXEC.match(line)
        if m:
            pid, program, rest = m.groups()
            if rest.rstrip().endswith("<unfinished ...>"):
                pending[pid] = program
                continue
            if not re.search(r"=\s*0\s*$", rest):
                continue
        else:
            r = _EXEC_RESUMED.match(line)
            if r is None or r.group(1) not in pending:
                continue
            pid, program = r.group(1), pending.pop(r.group(1))
        execs.append((pid, program, n))
        if CODE_RUNNERS.match(os.path.basename(program)):
            runner_since.setdefault(pid, n)

    def under_runner(pid: str, at: int) -> bool:
        while True:
            since = runner_since.get(pid)
            if since is not None and since < at:
                return True
            if pid not in parent:
                return False
            pid, at = parent[pid]

    return [program for pid, program, n in execs if not under_runner(pid, n)]


@dataclass(frozen=True)
class Oracle:
    """What a command allowed by the gate may touch, stated independently of the gate's code."""

    root: Path
    scope: tuple[str, ...]  # folder prefixes relative to root, e.g. ("src/", "tests/")
    out_of_scope: tuple[str, ...]  # folder prefixes inside them that are not writable
    programs: frozenset[str]  # basenames a command may execute
    # Side effects of allowed programs that are not the agent's doing: temporary files, and caches
    # that test runners write beside the code (the spawned sandbox gives each agent its own /tmp).
    # HOME is /root in the harness: tools' own logs and caches there are theirs, never config files.
    incidental: tuple[str, ...] = ("/tmp/", "/var/tmp/", "/dev/", "/root/.npm/_logs/", "/root/.npm/_cacache/",
                                   "/root/.cache/")
    # The interpreter's, pytest's, ruff's and mypy's caches and coverage's data file (ruff and mypy are
    # installed with the dev tools, so their generated calls really run and write `.ruff_cache` and
    # `.mypy_cache` at the project's root, as pytest writes its own).
    incidental_parts: tuple[str, ...] = ("/__pycache__/", "/.pytest_cache/", "/.ruff_cache/", "/.mypy_cache/",
                                         "/.coverage/")
    # System programs an allowed program runs of itself, with arguments of its own: `pip list` describes the
    # machine in its requests' user agent (its vendored `distro` runs lsb_release, a shell script calling
    # getopt, and uname).
    incidental_programs: frozenset[str] = frozenset({"lsb_release", "getopt", "uname"})

    def violations(self, touched: Touched, hard_linked: frozenset[str]) -> list[str]:
        out: list[str] = []
        root = str(self.root) + "/"
        for path in touched.writes + touched.new_dirs:
            if path in hard_linked:
                out.append(f"wrote a file with other hard links: {path}")
                continue
            rel = path[len(root):] if path.startswith(root) else None
            if rel is not None:
                parts = rel.split("/")
                if any(p.lower().rstrip(".") in (".git", ".claude") for p in parts):
                    out.append(f"touched {rel}")
                elif any(part in "/" + rel + "/" for part in self.incidental_parts):
                    continue
                elif not rel.startswith(self.scope) or rel.startswith(self.out_of_scope):
                    out.append(f"wrote outside the write scope: {rel}")
            # (path + "/"): an incidental folder itself counts too, which a tool makes on a fresh machine
            # (pip list makes /root/.cache for its version check where there was no cache yet).
            elif not (path + "/").startswith(self.incidental) and "/__pycache__/" not in path:
                out.append(f"wrote outside the worktree: {path}")
        for program in touched.execs[1:]:  # the first is the harness's own `bash -c`
            if os.path.basename(program) not in self.programs | self.incidental_programs:
                out.append(f"executed a program the role does not allow: {program}")
        return out


def hard_linked_files(root: Path) -> frozenset[str]:
    """Files under root with more than one link: writing any of them writes the others."""
    found = set()
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            try:
                if os.lstat(path).st_nlink > 1:
                    found.add(path)
            except OSError:
                continue
    return frozenset(found)
