"""The throwaway copy verify's commands run over (`runtime.sandbox.scratch`, `SandboxSpec.scratch`).

The copy is faithful where tests look (contents, modes, times, symlinks as symlinks) and never
follows what the agent planted; in the sandbox it stands at the worktree's path, writable
throughout, while `.git` and the control files stay read-only and the worktree itself is never
written. Real bubblewrap; each test checks the host afterwards.
"""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from runtime.sandbox.agent import control_paths
from runtime.sandbox.identity import agent_user
from runtime.sandbox.scratch import scratch_copy
from runtime.workspace.hazards import MAX_PATH_BYTES
from tests.sandbox.test_bwrap import sh, spec


@pytest.fixture
def worktree(tmp_path) -> Path:
    root = tmp_path / "worktree"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / ".git").write_text("gitdir: /nowhere\n")
    (root / "src" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "src" / "pkg" / "data.txt").write_text("data\n")
    (root / "README.md").write_text("readme\n")
    return root


@pytest.fixture
def home(tmp_path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def _tree(root: Path) -> dict[str, bytes | str]:
    out: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            out[rel] = f"-> {os.readlink(path)}"
        elif stat.S_ISDIR(st.st_mode):
            out[rel] = "dir"
        elif stat.S_ISREG(st.st_mode) and st.st_size < 1 << 20:
            out[rel] = path.read_bytes()
        else:
            out[rel] = f"{stat.S_IFMT(st.st_mode):o}, {st.st_size} bytes"  # a FIFO, a socket, the sparse terabyte
    return out


def test_the_copy_is_faithful_and_follows_nothing(tmp_path, worktree):
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "key").write_text("host secret\n")
    (worktree / "src" / "to-secret").symlink_to(secret)  # a folder link: copied as a link, never entered
    (worktree / "src" / "passwd").symlink_to("/etc/passwd")
    (worktree / "src" / "calc.py").chmod(0o751)
    os.utime(worktree / "src" / "calc.py", ns=(1_000_000_000, 2_000_000_000))
    os.mkfifo(worktree / "src" / "pipe")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(worktree / "src" / "sock"))
    os.link(worktree / "README.md", worktree / "hardlink.md")
    with open(worktree / "sparse.img", "wb") as f:
        f.truncate(1 << 40)  # a terabyte of hole
    (worktree / "closed").mkdir(mode=0)
    (worktree / "src" / "set-id").write_text("x")
    (worktree / "src" / "set-id").chmod(0o4755)

    user = agent_user()
    copied = scratch_copy(worktree, tmp_path / "copy", user)
    copy = tmp_path / "copy"
    assert copied.missing == []
    expected = {k: v for k, v in _tree(worktree).items() if k != "src/sock"}
    assert _tree(copy) == expected  # the socket is left out: nothing can be read from it
    assert stat.S_IMODE(os.stat(copy / "src" / "calc.py").st_mode) == 0o751
    assert os.stat(copy / "src" / "calc.py").st_mtime_ns == 2_000_000_000
    assert stat.S_ISFIFO(os.lstat(copy / "src" / "pipe").st_mode)
    assert os.stat(copy / "hardlink.md").st_ino != os.stat(copy / "README.md").st_ino  # a file of its own
    assert os.stat(copy / "sparse.img").st_size == 1 << 40 and os.stat(copy / "sparse.img").st_blocks < 64
    assert stat.S_IMODE(os.stat(copy / "src" / "set-id").st_mode) == 0o755  # no set-ID bits on the agent's copy
    assert stat.S_IMODE(os.stat(copy / "closed").st_mode) == 0o700  # its owner may enter and remove it
    assert os.path.islink(copy / "src" / "to-secret") and not (copy / "src" / "to-secret").is_mount()
    owner = (user.uid, user.gid) if user else (os.geteuid(), os.getegid())
    for path in [copy, *copy.rglob("*")]:
        st = os.lstat(path)
        assert (st.st_uid, st.st_gid) == owner, path
    assert copied.files == len([p for p in expected if (worktree / p).is_file() and not (worktree / p).is_symlink()
                                and not stat.S_ISFIFO(os.lstat(worktree / p).st_mode)])


def test_what_cannot_be_copied_is_reported(tmp_path, worktree):
    """A folder deeper than git can hold is left out and named: the copy is incomplete, and the
    commands are not run over it (verify rejects such a tree anyway)."""
    fd = os.open(worktree, os.O_RDONLY)
    depth = 0
    try:
        while depth * 201 <= MAX_PATH_BYTES:
            os.mkdir("d" * 200, dir_fd=fd)
            nxt = os.open("d" * 200, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nxt
            depth += 1
        os.close(os.open("deep.txt", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    copied = scratch_copy(worktree, tmp_path / "copy")
    assert len(copied.missing) == 1
    path, why = copied.missing[0]
    assert path.count("/") == depth - 1 and "deeper than git can hold" in why
    assert (tmp_path / "copy" / "src" / "calc.py").is_file()


def test_commands_write_anywhere_in_the_copy_and_never_in_the_worktree(bwrap, tmp_path, worktree, home):
    copy = tmp_path / "scratch"
    scratch_copy(worktree, copy, agent_user())
    main_checkout = tmp_path / "main-checkout"  # where the toolchain shows the worktree again
    main_checkout.mkdir()
    sandbox = spec(worktree, home, scratch=copy, readonly=[worktree / ".git"], control=control_paths(worktree),
                   toolchain_binds=[(worktree, main_checkout)])
    before = _tree(worktree)
    script = ("echo part > file.txt.part && mkdir -p tests/scratch && echo s > tests/scratch/out.txt "
              "&& echo more >> src/calc.py && rm src/pkg/data.txt "
              f"&& echo mirror > {main_checkout}/from-the-mirror && cat {worktree}/from-the-mirror && pwd")
    result = sh(sandbox, bwrap, script)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["mirror", str(worktree)]
    assert _tree(worktree) == before and list(main_checkout.iterdir()) == []
    assert (copy / "file.txt.part").read_text() == "part\n" and (copy / "tests/scratch/out.txt").read_text() == "s\n"
    assert (copy / "src/calc.py").read_text().endswith("more\n") and not (copy / "src/pkg/data.txt").exists()


@pytest.mark.parametrize("script", [
    "echo x >> .git", "mkdir .claude/hooks", "echo {} > .mcp.json", "mkdir .agent-runtime/roles", "rm .git",
    "mv .claude elsewhere",
])
def test_control_files_stay_read_only_over_the_copy(bwrap, tmp_path, worktree, home, script):
    copy = tmp_path / "scratch"
    scratch_copy(worktree, copy, agent_user())
    sandbox = spec(worktree, home, scratch=copy, readonly=[worktree / ".git"], control=control_paths(worktree))
    before, copied = _tree(worktree), _tree(copy)
    result = sh(sandbox, bwrap, script)
    assert result.returncode != 0 and any(words in result.stderr for words in (
        "Read-only file system", "Device or resource busy", "Permission denied")), result.stderr
    assert _tree(worktree) == before  # the placeholders made for the sandbox's life are gone again
    assert {k: v for k, v in _tree(copy).items() if k not in (".claude", ".mcp.json", ".agent-runtime", ".gitmodules")} == copied
    assert not any((copy / name).exists() and any((copy / name).iterdir()) for name in (".claude", ".agent-runtime"))
