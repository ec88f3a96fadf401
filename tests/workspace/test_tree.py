"""runtime.workspace.tree: walking and removing what an agent left, whatever it left."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from runtime.workspace.tree import remove_tree, walk
from tests.conftest import REPO, require

DEPTH = 2100  # "dd/" x 2100 is 6,300 bytes: deeper than PATH_MAX


def chain(root: Path, depth: int = DEPTH) -> None:
    fd = os.open(root, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir("dd", dir_fd=fd)
        nxt = os.open("dd", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = nxt
    os.close(os.open("leaf", os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd))
    os.close(fd)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_chain_deeper_than_path_max_is_walked_and_removed_with_one_descriptor(tmp_path):
    top = tmp_path / "top"
    top.mkdir()
    chain(top)
    with pytest.raises(OSError):  # what path-string APIs meet
        os.lstat(str(top) + "/dd" * DEPTH + "/leaf")
    before = open_fds()
    depths = [f.depth for f in walk(top, paths=False)]
    assert max(depths) == DEPTH and open_fds() == before
    remove_tree(top)
    assert not top.exists() and open_fds() == before


def test_symlinks_are_never_followed(tmp_path):
    outside = tmp_path / "outside"
    (outside / "keep").mkdir(parents=True)
    (outside / "keep" / "precious.txt").write_text("x")
    top = tmp_path / "top"
    (top / "sub").mkdir(parents=True)
    os.symlink(outside, top / "sub" / "link")
    os.symlink(outside, tmp_path / "top-link")
    assert [f.path for f in walk(top)] == ["", "sub"]  # the link is an entry, never a folder to enter
    remove_tree(tmp_path / "top-link")  # the link goes, not what it points at
    remove_tree(top)
    assert not top.exists() and not (tmp_path / "top-link").exists()
    assert (outside / "keep" / "precious.txt").read_text() == "x"


def test_fifos_sockets_and_odd_names_are_removed_without_blocking(tmp_path):
    import socket

    top = tmp_path / "top"
    top.mkdir()
    os.mkfifo(top / "pipe")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(top / "sock"))
    sock.close()
    for name in (b"bad-\xff\xfe", b"line\nVerified: yes", b"\x1b]0;owned\x07", b"d" * 255):
        with open(os.path.join(os.fsencode(top), name), "wb") as fh:
            fh.write(b"x")
    remove_tree(top)
    assert not top.exists()


def test_a_non_root_orchestrator_removes_folders_its_agent_made_unreadable():
    """Not root, the orchestrator owns what its agent made (the same uid in a user namespace) but has no
    right over a folder of mode 0 until it gives itself one: run as an unprivileged uid."""
    require(shutil.which("setpriv") is not None and os.geteuid() == 0, "setpriv, and root to switch uid")
    home = Path(tempfile.mkdtemp(prefix="runtime-tree-"))  # pytest's own folder is root's alone
    home.chmod(0o755)
    top = home / "nobody"
    top.mkdir()
    os.chown(top, 65534, 65534)
    code = (f"import os, sys; sys.path.insert(0, {str(REPO)!r}); from runtime.workspace.tree import remove_tree; "
            f"os.makedirs({str(top)!r} + '/a/b/c'); open({str(top)!r} + '/a/b/c/f', 'w').close(); "
            f"os.chmod({str(top)!r} + '/a/b/c', 0); os.chmod({str(top)!r} + '/a/b', 0o500); "
            f"os.chmod({str(top)!r} + '/a', 0); remove_tree({str(top)!r} + '/a'); "
            f"print(os.path.exists({str(top)!r} + '/a'))")
    try:
        proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-I",
                               "-c", code], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == "False"
    finally:
        remove_tree(home)
