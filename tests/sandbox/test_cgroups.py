"""A run's cgroup: where the machine lets it go, what it holds, that it ends whole and leaves nothing.

Where each controller goes is read from /proc/self/mountinfo and /proc/self/cgroup; those readings are
tested on texts of the layouts the runtime meets (v1 hierarchies, a delegated v2 tree, a container's
cgroup namespace, nothing usable) over folders that stand in for cgroupfs. What a cgroup does is tested
on this machine's own hierarchies, as root (CI's machine mounts v1 memory, pids and cpu).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from runtime.sandbox import cgroups
from runtime.sandbox.cgroups import Budget, RunCgroup, find_support
from tests.conftest import require

V1_MOUNTS = """\
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
V1_OWN = "8:pids:/\n4:memory:/jobs/ci-7\n1:cpu:/\n0::/\n"


def _mounts(text: str, root: Path) -> str:
    return text.replace("/sys/fs/cgroup", str(root))


def _folder(path: Path, **files: str) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (path / name.replace("_", ".", 1)).write_text(content)  # cgroup_controllers: cgroup.controllers
    return path


def test_v1_each_controller_goes_under_the_orchestrators_own_cgroup_in_its_hierarchy(tmp_path):
    for sub in ("cpu", "memory/jobs/ci-7", "pids"):
        _folder(tmp_path / sub)
    found = find_support(_mounts(V1_MOUNTS, tmp_path), V1_OWN)
    assert {c: (p.version, p.parent) for c, p in found.places.items()} == {
        "pids": (1, tmp_path / "pids"), "memory": (1, tmp_path / "memory/jobs/ci-7"), "cpu": (1, tmp_path / "cpu")}
    assert found.missing == {}
    assert found.describe() == "cgroup v1 (cpu memory pids)"


def test_v2_a_delegating_ancestor_takes_the_runs_when_the_own_cgroup_holds_processes(tmp_path):
    """No internal processes: the orchestrator's own cgroup cannot delegate while it holds the orchestrator,
    so its runs go beside it, under the nearest ancestor that delegates the controller."""
    mounts = "41 31 0:38 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
    _folder(tmp_path, cgroup_controllers="cpuset cpu io memory pids", cgroup_subtree_control="cpu memory pids")
    _folder(tmp_path / "user.slice", cgroup_controllers="cpu memory pids", cgroup_subtree_control="memory pids")
    _folder(tmp_path / "user.slice/session-1.scope", cgroup_controllers="memory pids", cgroup_subtree_control="")
    found = find_support(_mounts(mounts, tmp_path), "0::/user.slice/session-1.scope\n")
    assert found.places["pids"].parent == tmp_path / "user.slice"
    assert found.places["memory"].parent == tmp_path / "user.slice"
    assert found.places["pids"].version == 2
    assert "cpu" in found.missing and "not available" in found.missing["cpu"]


def test_v2_the_root_of_a_containers_cgroup_namespace_serves_itself(tmp_path):
    mounts = "41 31 0:38 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
    _folder(tmp_path, cgroup_controllers="cpu memory pids", cgroup_subtree_control="")
    found = find_support(_mounts(mounts, tmp_path), "0::/\n")
    assert {c: p.parent for c, p in found.places.items()} == {c: tmp_path for c in ("pids", "memory", "cpu")}
    # The controllers were delegated to the root's children when the machine was read, in one write.
    assert set((tmp_path / "cgroup.subtree_control").read_text().split()) == {"+pids", "+memory", "+cpu"}


def test_v2_a_mount_showing_a_sub_tree_maps_the_own_path_into_it(tmp_path):
    mounts = "41 31 0:38 /kubepods/pod-1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
    _folder(tmp_path, cgroup_controllers="memory pids", cgroup_subtree_control="memory pids")
    _folder(tmp_path / "app", cgroup_controllers="memory pids", cgroup_subtree_control="")
    found = find_support(_mounts(mounts, tmp_path), "0::/kubepods/pod-1/app\n")
    assert found.places["pids"].parent == tmp_path


def test_nothing_usable_says_why_for_each_controller(tmp_path):
    found = find_support("", "0::/\n")
    assert found.places == {}
    assert set(found.missing) == {"pids", "memory", "cpu"}
    assert all("no cgroup hierarchy" in why for why in found.missing.values())


def test_the_join_prefix_enters_every_folder_before_the_command_runs(tmp_path):
    folders = [_folder(tmp_path / n) for n in ("a", "b")]
    group = RunCgroup({"pids": (1, folders[0]), "memory": (1, folders[1])})
    out = subprocess.run([*group.join_prefix(), "/bin/sh", "-c", "echo $$"], capture_output=True, text=True, check=True)
    pid = out.stdout.strip()
    assert [(f / "cgroup.procs").read_text().strip() for f in folders] == [pid, pid]


def test_a_join_that_cannot_write_runs_nothing(tmp_path):
    group = RunCgroup({"pids": (1, tmp_path / "missing")})
    out = subprocess.run([*group.join_prefix(), "/bin/sh", "-c", "echo ran"], capture_output=True, text=True)
    assert out.returncode == 125 and "ran" not in out.stdout


# -- on this machine's own hierarchies -----------------------------------------------------------

def _real(*controllers: str) -> cgroups.Support:
    found = cgroups.support()
    require(set(controllers) <= set(found.places), f"no usable cgroup for {controllers} here: {found.missing}")
    return found


def _run_in(group: RunCgroup, code: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([*group.join_prefix(), sys.executable, "-c", code], **kw)


def test_threads_and_processes_count_against_pids_max_and_a_refusal_is_a_breach():
    found = _real("pids")
    group = RunCgroup.make(Budget(processes=12), found)
    assert group is not None
    try:
        code = ("import threading, time\nn = 0\ntry:\n    for _ in range(100):\n"
                "        threading.Thread(target=time.sleep, args=(5,), daemon=True).start(); n += 1\n"
                "except RuntimeError:\n    pass\nprint(n)")
        proc = _run_in(group, code, stdout=subprocess.PIPE, text=True)
        out, _ = proc.communicate(timeout=30)
        assert int(out) == 11  # the main thread and 11 more: twelve pids
        assert group.breach() == "processes"
        assert group.peaks()[1] == 12
    finally:
        group.kill()
        group.remove()
    assert not group.distinct[0].exists()


def test_memory_is_charged_with_tmpfs_pages_and_a_kill_is_a_breach(tmp_path):
    """A file in a tmpfs the run mounted counts as its memory: the kernel holds the limit and counts the kill."""
    found = _real("memory")
    require(os.geteuid() == 0, "mounting a tmpfs for the test needs root")
    group = RunCgroup.make(Budget(memory_bytes=64 << 20), found)
    assert group is not None
    try:
        code = ("import os, subprocess, time\n"
                "chunk = b'x' * (4 << 20)\n"
                "with open('/dev/shm/fill', 'wb') as fh:\n"
                "    for _ in range(64):\n        fh.write(chunk); fh.flush()\n"
                "time.sleep(10)")
        proc = subprocess.Popen([*group.join_prefix(), "unshare", "--mount", "--propagation", "private", "sh", "-c",
                                 f"mount -t tmpfs -o size=512m tmpfs /dev/shm && exec {sys.executable} -c \"$0\"", code])
        deadline = time.monotonic() + 20
        while group.breach() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert group.breach() == "memory"
        memory_mb, _ = group.peaks()
        assert memory_mb is not None and memory_mb <= 64
    finally:
        assert group.kill()
        group.remove()
        proc.wait(timeout=10)


def test_kill_ends_a_forking_tree_at_once_and_remove_leaves_nothing():
    found = _real("pids")
    group = RunCgroup.make(Budget(processes=200), found)
    assert group is not None
    code = "import os, time\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        time.sleep(0.01)"
    proc = _run_in(group, code)
    try:
        time.sleep(0.3)
        assert len(group.members()) > 50
        started = time.monotonic()
        assert group.kill()
        assert time.monotonic() - started < 0.5
        assert group.members() == []
    finally:
        group.kill()
        proc.wait(timeout=10)
        group.remove()
    assert not any(f.exists() for f in group.distinct)


def test_a_dead_orchestrators_cgroups_are_removed_by_the_next_run():
    found = _real("pids")
    parent = found.places["pids"].parent
    namespace = os.stat("/proc/self/ns/pid").st_ino
    stale = parent / f"{cgroups.PREFIX}{namespace}-{_dead_pid()}-0badc0de"
    # Another pid namespace's (a container's, a cluster node's): its pids mean nothing here, so it stays.
    foreign = parent / f"{cgroups.PREFIX}{namespace + 1}-{_dead_pid()}-0badc0de"
    stale.mkdir()
    foreign.mkdir()
    try:
        group = RunCgroup.make(Budget(processes=10), found)
        assert group is not None
        group.remove()
        assert not stale.exists()
        assert foreign.exists()
    finally:
        for folder in (stale, foreign):
            if folder.exists():
                folder.rmdir()


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_the_cpu_quota_is_set_from_cpus():
    found = _real("cpu")
    group = RunCgroup.make(Budget(cpus=1.5), found)
    assert group is not None
    try:
        version, folder = group.folders["cpu"]
        if version == 2:
            assert (folder / "cpu.max").read_text().split() == ["150000", "100000"]
        else:
            assert (folder / "cpu.cfs_quota_us").read_text().strip() == "150000"
    finally:
        group.remove()


def test_the_limit_hit_and_held_full_of_memory_the_kernel_cannot_drop_is_a_breach(tmp_path):
    """A write into tmpfs past the limit may be refused (ENOMEM) rather than killed for: then no oom_kill is
    counted, and the limit hit with all but a tenth of it anonymous or tmpfs memory is the breach. Page cache
    filling the limit is not (the kernel drops it). Read from cgroup files as v1 and v2 write them."""
    for version, hits_file, stat_anon in ((1, "memory.memsw.failcnt", "rss"), (2, "memory.events", "anon")):
        folder = _folder(tmp_path / f"v{version}", memory_oom_control="oom_kill 0\n", memory_events="max 0\noom_kill 0\n")
        group = RunCgroup({"memory": (version, folder)}, memory_bytes=100 << 20)
        (folder / "memory.stat").write_text(f"{stat_anon} {20 << 20}\nshmem {20 << 20}\nfile {60 << 20}\n")
        (folder / hits_file).write_text("max 3\n" if version == 2 else "3\n")
        assert group.breach() is None  # hit, but most of it is page cache
        (folder / "memory.stat").write_text(f"{stat_anon} {10 << 20}\nshmem {85 << 20}\nfile {5 << 20}\n")
        assert group.breach() is None  # full of tmpfs now, but no new hit since the last look
        (folder / hits_file).write_text("max 4\n" if version == 2 else "4\n")
        assert group.breach() == "memory"
