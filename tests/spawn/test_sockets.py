"""The socket folders of a spawn: made under the temporary folder, recorded in the state folder, cleaned up."""

from __future__ import annotations

import os
import tempfile

import pytest

from runtime.spawn import sockets
from runtime.spawn.sockets import clean_stale_socket_folders, remove_socket_folder, socket_folder


@pytest.fixture
def tmpdir_root(tmp_path, monkeypatch):
    """The temporary folder the socket folders go under: a private one."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


@pytest.fixture
def state(tmp_path):
    root = tmp_path / "state"
    root.mkdir()
    return root


def _record(state, folder, pid):
    registry = state / "sockets"
    registry.mkdir(exist_ok=True)
    (registry / folder.name).write_text(f"{pid}\n{folder}\n", encoding="utf-8")
    return registry / folder.name


def test_a_socket_folder_is_private_under_the_temporary_folder_and_recorded_as_this_process(tmpdir_root, state):
    folder = socket_folder(state)
    assert folder.parent == tmpdir_root and folder.name.startswith("rt-") and folder.is_dir()
    assert oct(folder.stat().st_mode & 0o777) == oct(0o700)
    record = state / "sockets" / folder.name
    assert record.read_text(encoding="utf-8") == f"{os.getpid()}\n{folder}\n"


def test_each_call_makes_a_new_folder(tmpdir_root, state):
    first, second = socket_folder(state), socket_folder(state)
    assert first != second
    assert sorted(p.name for p in (state / "sockets").iterdir()) == sorted([first.name, second.name])


def test_removing_a_folder_removes_it_and_its_record(tmpdir_root, state):
    folder = socket_folder(state)
    (folder / "broker.sock").write_text("")
    remove_socket_folder(state, folder)
    assert not folder.exists() and not (state / "sockets" / folder.name).exists()
    remove_socket_folder(state, folder)  # a second removal is no error


def test_no_registry_means_nothing_to_clean(state):
    assert clean_stale_socket_folders(state) == []
    assert clean_stale_socket_folders(state / "missing") == []


def test_folders_of_dead_owners_are_removed_and_live_owners_kept(tmpdir_root, state, monkeypatch):
    dead, live = socket_folder(state), socket_folder(state)
    _record(state, dead, 999_999)
    _record(state, live, 4242)
    monkeypatch.setattr(sockets, "alive", lambda pid: pid == 4242)
    assert clean_stale_socket_folders(state) == [dead]
    assert not dead.exists() and not (state / "sockets" / dead.name).exists()
    assert live.is_dir() and (state / "sockets" / live.name).exists()


def test_the_current_process_counts_as_alive(tmpdir_root, state):
    folder = socket_folder(state)
    assert clean_stale_socket_folders(state) == []
    assert folder.is_dir()


def test_a_record_naming_another_folder_removes_nothing(tmpdir_root, state, tmp_path, monkeypatch):
    """Only folders recorded under their own name are removed: a record cannot point the clean-up elsewhere."""
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("x")
    registry = state / "sockets"
    registry.mkdir()
    (registry / "rt-abc").write_text(f"1\n{precious}\n", encoding="utf-8")
    monkeypatch.setattr(sockets, "alive", lambda pid: False)
    assert clean_stale_socket_folders(state) == []
    assert (precious / "keep.txt").exists()
    assert (registry / "rt-abc").exists()


@pytest.mark.parametrize("text", ["", "not-a-pid\n/tmp/rt-x\n", "12"])
def test_an_unreadable_record_is_dropped_without_touching_any_folder(tmpdir_root, state, text, monkeypatch):
    folder = tmpdir_root / "rt-x"
    folder.mkdir()
    registry = state / "sockets"
    registry.mkdir()
    (registry / "rt-x").write_text(text, encoding="utf-8")
    monkeypatch.setattr(sockets, "alive", lambda pid: False)
    assert clean_stale_socket_folders(state) == []
    assert not (registry / "rt-x").exists()
    assert folder.is_dir()


def test_only_records_named_like_socket_folders_are_read(tmpdir_root, state, monkeypatch):
    registry = state / "sockets"
    registry.mkdir()
    other = registry / "notes.txt"
    other.write_text("garbage")
    monkeypatch.setattr(sockets, "alive", lambda pid: False)
    assert clean_stale_socket_folders(state) == []
    assert other.read_text() == "garbage"


def test_a_dead_owners_record_whose_folder_is_already_gone_is_forgotten(tmpdir_root, state, monkeypatch):
    folder = socket_folder(state)
    folder.rmdir()
    monkeypatch.setattr(sockets, "alive", lambda pid: False)
    assert clean_stale_socket_folders(state) == [folder]
    assert list((state / "sockets").iterdir()) == []
