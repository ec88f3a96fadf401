"""The Unix-socket service: a private socket moved into place, JSON lines in order, a clean close."""

from __future__ import annotations

import json
import os
import socket
import stat
from pathlib import Path

import pytest

from runtime.ipc.unix_service import SUN_PATH_MAX, JsonLinesHandler, TrackedServer, UnixService, bind_private, remove_if_ours

LIMIT = 64


class Echo(JsonLinesHandler):
    def answer(self, line: bytes) -> dict:
        return {"echo": line.decode().strip(), "by": self.server.owner.name}

    def too_long(self, limit: int) -> dict:
        return {"error": f"longer than {limit} bytes"}


class EchoService(UnixService):
    thread_name = "echo-service"
    max_line_bytes = LIMIT
    name = "echo"

    def make_server(self) -> TrackedServer:
        return TrackedServer(self.socket_path, Echo, self)


def unix_socket() -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(5)
    return sock


def connect(path: Path):
    client = unix_socket()
    client.connect(os.fspath(path))
    return client, client.makefile("rwb")


def ask(stream, *lines: bytes) -> list[dict]:
    stream.write(b"".join(lines))
    stream.flush()
    return [json.loads(stream.readline()) for _ in lines]


# ---------------------------------------------------------------- bind_private


def test_bind_private_binds_mode_0600_and_returns_the_inode(tmp_path):
    path = tmp_path / "run" / "a.sock"
    with unix_socket() as server:
        ident = bind_private(server, path)
        st = os.lstat(path)
        assert stat.S_ISSOCK(st.st_mode)
        assert stat.S_IMODE(st.st_mode) == 0o600
        assert ident == (st.st_dev, st.st_ino)
        assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
        with unix_socket() as client:
            client.connect(os.fspath(path))  # it listens
        assert [p.name for p in path.parent.iterdir()] == ["a.sock"]  # no temporary name left


def test_bind_private_replaces_a_stale_socket(tmp_path):
    path = tmp_path / "a.sock"
    with unix_socket() as old:
        old.bind(os.fspath(path))  # closed without removing its file: nothing listens there
    with unix_socket() as client, pytest.raises(ConnectionRefusedError):
        client.connect(os.fspath(path))
    with unix_socket() as server:
        ident = bind_private(server, path)
        assert os.lstat(path).st_ino == ident[1]
        with unix_socket() as client:
            client.connect(os.fspath(path))


@pytest.mark.parametrize("make", [lambda p: p.write_text("keep"), lambda p: p.mkdir()])
def test_bind_private_refuses_anything_but_a_socket_at_the_path(tmp_path, make):
    path = tmp_path / "a.sock"
    make(path)
    with unix_socket() as server, pytest.raises(FileExistsError) as exc:
        bind_private(server, path)
    assert str(exc.value) == f"{path} exists and is not a socket"
    assert path.exists() and not stat.S_ISSOCK(os.lstat(path).st_mode)


def test_bind_private_leaves_no_temporary_socket_when_binding_fails(tmp_path):
    path = tmp_path / "a.sock"
    with unix_socket() as server:
        server.bind(os.fspath(tmp_path / "elsewhere.sock"))  # a socket binds once
        with pytest.raises(OSError):
            bind_private(server, path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere.sock"]


# ---------------------------------------------------------------- remove_if_ours


def test_remove_if_ours_removes_the_socket_it_made(tmp_path):
    path = tmp_path / "a.sock"
    with unix_socket() as server:
        ident = bind_private(server, path)
        remove_if_ours(path, ident)
    assert not path.exists()


def test_remove_if_ours_leaves_a_socket_that_replaced_it(tmp_path):
    path = tmp_path / "a.sock"
    with unix_socket() as first, unix_socket() as second:
        ours = bind_private(first, path)
        theirs = bind_private(second, path)
        remove_if_ours(path, ours)
        assert os.lstat(path).st_ino == theirs[1]
        remove_if_ours(path, None)
        assert path.exists()


def test_remove_if_ours_of_a_missing_path_does_nothing(tmp_path):
    remove_if_ours(tmp_path / "never.sock", (1, 2))
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- UnixService


def test_a_socket_path_too_long_is_refused_naming_its_length(tmp_path):
    path = "/" + "x" * SUN_PATH_MAX
    with pytest.raises(ValueError) as exc:
        EchoService(path)
    assert f"({SUN_PATH_MAX + 1} bytes, at most {SUN_PATH_MAX})" in str(exc.value) and path in str(exc.value)
    assert EchoService("/" + "x" * (SUN_PATH_MAX - 1)).socket_path == Path("/" + "x" * (SUN_PATH_MAX - 1))


def test_the_service_answers_each_line_in_order_in_compact_json(tmp_path):
    with EchoService(tmp_path / "s.sock") as service:
        client, stream = connect(service.socket_path)
        with client:
            stream.write(b"one\n\n   \ntwo\nthree\n")
            stream.flush()
            raw = [stream.readline() for _ in range(3)]
    assert raw == [b'{"echo":"one","by":"echo"}\n', b'{"echo":"two","by":"echo"}\n', b'{"echo":"three","by":"echo"}\n']


def test_a_line_of_the_limit_is_answered(tmp_path):
    line = b"x" * (LIMIT - 1) + b"\n"
    with EchoService(tmp_path / "s.sock") as service:
        client, stream = connect(service.socket_path)
        with client:
            assert ask(stream, line) == [{"echo": "x" * (LIMIT - 1), "by": "echo"}]


@pytest.mark.parametrize("length", [LIMIT, LIMIT + 1, LIMIT + 2, 3 * LIMIT, 10 * LIMIT + 7])
def test_a_line_too_long_gets_too_long_and_the_next_line_starts_clean(tmp_path, length):
    with EchoService(tmp_path / "s.sock") as service:
        client, stream = connect(service.socket_path)
        with client:
            assert ask(stream, b"y" * length + b"\n", b"after\n") == [
                {"error": f"longer than {LIMIT} bytes"}, {"echo": "after", "by": "echo"}]


def test_a_client_hanging_up_inside_a_long_line_gets_nothing(tmp_path):
    with EchoService(tmp_path / "s.sock") as service:
        client, stream = connect(service.socket_path)
        with client:
            stream.write(b"z" * (3 * LIMIT))
            stream.flush()
            client.shutdown(socket.SHUT_WR)
            assert stream.readline() == b""


def test_the_socket_is_private_while_serving_and_gone_after(tmp_path):
    path = tmp_path / "s.sock"
    with EchoService(path):
        assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600
    assert not path.exists()


def test_start_twice_is_one_start_and_close_twice_is_one_close(tmp_path):
    service = EchoService(tmp_path / "s.sock")
    assert service.start() is service
    inode = os.lstat(service.socket_path).st_ino
    assert service.start() is service
    assert os.lstat(service.socket_path).st_ino == inode
    service.close()
    service.close()
    assert not service.socket_path.exists()


def test_close_before_start_does_nothing(tmp_path):
    service = EchoService(tmp_path / "s.sock")
    service.close()
    assert list(tmp_path.iterdir()) == []


def test_close_drops_open_connections(tmp_path):
    service = EchoService(tmp_path / "s.sock").start()
    client, stream = connect(service.socket_path)
    with client:
        assert ask(stream, b"hello\n")[0]["echo"] == "hello"
        service.close()
        try:
            reply = stream.readline()
        except ConnectionResetError:
            reply = b""
        assert reply == b""  # the server's end is shut: end of stream, never a hang


def test_close_leaves_a_socket_that_replaced_ours(tmp_path):
    path = tmp_path / "s.sock"
    service = EchoService(path).start()
    with unix_socket() as other:
        theirs = bind_private(other, path)
        service.close()
        assert os.lstat(path).st_ino == theirs[1]


def test_a_start_that_cannot_bind_raises_and_leaves_the_service_stopped(tmp_path):
    path = tmp_path / "s.sock"
    path.write_text("not a socket")
    service = EchoService(path)
    with pytest.raises(FileExistsError):
        service.start()
    service.close()
    assert path.read_text() == "not a socket"
    path.unlink()
    with service:  # it can still be started once the path is free
        client, stream = connect(path)
        with client:
            assert ask(stream, b"ok\n")[0]["echo"] == "ok"
