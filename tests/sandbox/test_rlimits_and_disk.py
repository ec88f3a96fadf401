"""The rlimits a run starts with, and the disk meter's reading of the kernel's per-process figures."""

from __future__ import annotations

import os
import subprocess
import sys

from runtime.sandbox import disk
from runtime.sandbox.rlimits import Rlimits, nproc_for, prlimit_path


def test_the_prefix_sets_only_what_is_given_and_the_child_has_it():
    assert Rlimits().prefix() == []
    prefix = Rlimits(file_bytes=1 << 20, data_bytes=512 << 20).prefix()
    assert prefix == [prlimit_path(), f"--data={512 << 20}", f"--fsize={1 << 20}", "--"]
    out = subprocess.run([*prefix, sys.executable, "-c",
                          "import resource as r; print(r.getrlimit(r.RLIMIT_FSIZE), r.getrlimit(r.RLIMIT_DATA))"],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == f"({1 << 20}, {1 << 20}) ({512 << 20}, {512 << 20})"  # soft and hard: no raising them


def test_nproc_is_the_allowance_for_the_agent_uid_and_the_users_tasks_plus_it_otherwise():
    assert nproc_for(64, agent_uid=1_900_000_000) == 64
    mine = nproc_for(0, agent_uid=None)
    threads = sum(1 for _ in os.scandir("/proc/self/task"))
    assert mine >= threads  # this process's own threads are among its user's tasks
    assert nproc_for(64, agent_uid=None) - 64 <= mine + 50  # the user's tasks now, give or take what started since


def test_the_meter_counts_what_a_tree_writes_children_reaped_included(tmp_path):
    """A parent's figure includes the children it has reaped: the sum over the live tree is the whole."""
    code = ("import os, subprocess, sys\n"
            f"subprocess.run(['dd', 'if=/dev/zero', 'of={tmp_path}/f', 'bs=1M', 'count=8'], capture_output=True)\n"
            "print(os.getpid(), flush=True)\nsys.stdin.read()")
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        pid = int(proc.stdout.readline())
        assert disk.readable()
        assert disk.written([pid]) >= 8 << 20
        assert disk.written([pid, 999_999_999]) == disk.written([pid])  # a pid gone counts nothing
    finally:
        proc.communicate("")


def test_a_truncated_file_is_taken_back(tmp_path):
    code = (f"import os\nwith open('{tmp_path}/f', 'wb') as fh:\n    fh.write(b'x' * (4 << 20))\n"
            f"os.truncate('{tmp_path}/f', 0)\nprint(os.getpid(), flush=True)\nimport sys; sys.stdin.read()")
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        pid = int(proc.stdout.readline())
        assert disk.written([pid]) < 1 << 20  # written, then cancelled before writeback
    finally:
        proc.communicate("")


def test_a_kept_meter_reads_again_and_lets_go_of_a_process_that_ended(tmp_path):
    """`disk.Meter` keeps a descriptor per process between looks: a second look sees what was written since,
    and a process that has ended is dropped (its descriptor closed), not read as another's figure."""
    code = ("import os, sys\nprint(os.getpid(), flush=True)\nsys.stdin.readline()\n"
            f"open('{tmp_path}/f', 'wb').write(b'x' * (4 << 20))\nos.fsync(os.open('{tmp_path}/f', os.O_RDONLY))\n"
            "print('wrote', flush=True)\nsys.stdin.readline()")
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    meter = disk.Meter()
    try:
        pid = int(proc.stdout.readline())
        assert meter.written([pid]) < 1 << 20
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == "wrote\n"
        assert meter.written([pid]) >= 4 << 20  # the same descriptor, read again
        proc.communicate("\n")
        opened = len(os.listdir("/proc/self/fd"))
        assert meter.written([pid]) == 0  # ended and reaped: nothing, and its descriptor is let go
        assert len(os.listdir("/proc/self/fd")) == opened - 1
    finally:
        meter.close()
        if proc.poll() is None:
            proc.kill()
