"""Reading what an agent could have written: never through a symlink, never a FIFO, never unbounded."""

from __future__ import annotations

import os
import threading

import pytest

from runtime.workspace.safe_files import UnsafeFile, read_file, read_under, sha256_under, size_under


@pytest.fixture
def root(tmp_path):
    (tmp_path / "root" / "sub").mkdir(parents=True)
    (tmp_path / "root" / "sub" / "a.txt").write_text("hello")
    (tmp_path / "secret").write_text("CANARY")
    return tmp_path / "root"


def test_a_regular_file_is_read_bounded(root):
    assert read_under(root, "sub/a.txt", 100) == (b"hello", 5)
    assert read_under(root, "sub/a.txt", 2) == (b"he", 5)
    assert read_file(root / "sub" / "a.txt", 3) == (b"hel", 5)
    assert sha256_under(root, "sub/a.txt") == "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"


@pytest.mark.parametrize("where", ["leaf", "middle"])
def test_a_symlink_anywhere_is_refused(root, tmp_path, where):
    if where == "leaf":
        (root / "link.txt").symlink_to(tmp_path / "secret")
        path = "link.txt"
    else:
        (root / "dir").symlink_to(tmp_path)
        path = "dir/secret"
    with pytest.raises(UnsafeFile):
        read_under(root, path, 100)
    with pytest.raises(UnsafeFile):
        sha256_under(root, path)


def test_a_fifo_or_a_folder_is_refused_without_blocking(root):
    os.mkfifo(root / "pipe")
    done = threading.Event()

    def attempt():
        with pytest.raises(UnsafeFile):
            read_under(root, "pipe", 100)
        done.set()

    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    thread.join(5)
    assert done.is_set(), "opening a FIFO blocked"
    with pytest.raises(UnsafeFile):
        read_under(root, "sub", 100)


@pytest.mark.parametrize("path", ["../secret", "/etc/passwd", "", "."])
def test_paths_that_leave_the_root_are_refused(root, path):
    with pytest.raises(UnsafeFile):
        read_under(root, path, 100)


def test_missing_files_raise_file_not_found(root):
    with pytest.raises(FileNotFoundError):
        read_under(root, "sub/nope.txt", 10)


def test_size_comes_from_lstat_alone(root, tmp_path):
    big = root / "big.bin"
    with open(big, "wb") as fh:
        fh.truncate(600 * 1024 * 1024)  # sparse: nothing is written, nothing must be read
    (root / "link").symlink_to(tmp_path / "secret")
    assert size_under(root, "big.bin") == 600 * 1024 * 1024
    assert size_under(root, "link") is None and size_under(root, "sub") is None and size_under(root, "nope") is None
