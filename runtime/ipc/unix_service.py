"""A threaded server on a Unix socket (mode 0600), started and stopped by the orchestrator.

The model broker and the Anthropic proxy both serve one agent this way: the
socket is bound under a temporary name, restricted, then moved into place, so
it never exists at its path with looser permissions; closing drops open
connections and removes the socket only if it is still ours. The egress proxy,
which runs its own event loop, binds and removes its socket with the same
`bind_private` and `remove_if_ours`.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import socketserver
import stat
import threading
from pathlib import Path
from typing import Any, Generic, Self, TypeVar

SUN_PATH_MAX = 107  # bytes of a Unix socket path, without the trailing NUL (Linux)

Reply = TypeVar("Reply")


class TrackedServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """Remembers its open connections so `close` can drop them."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, path: Path, handler: type, owner: Any) -> None:
        self.owner = owner
        self._conns: set[socket.socket] = set()
        self._conns_lock = threading.Lock()
        super().__init__(os.fspath(path), handler, bind_and_activate=False)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._conns_lock:
            self._conns.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._conns_lock:
            self._conns.discard(request)
        super().shutdown_request(request)

    def drop_connections(self) -> None:
        with self._conns_lock:
            conns, self._conns = list(self._conns), set()
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class JsonLinesHandler(socketserver.StreamRequestHandler, Generic[Reply]):
    """One compact JSON reply per request line, in order, until the client hangs up.

    Subclasses say how a line is answered (``answer``) and what a line longer
    than the owner's ``max_line_bytes`` gets (``too_long``: the rest of it is
    read and discarded, so the next line starts clean). ``Reply`` is the
    service's own answer, a JSON object as ``json.dumps`` writes it.
    """

    server: TrackedServer

    def answer(self, line: bytes) -> Reply:
        raise NotImplementedError

    def too_long(self, limit: int) -> Reply:
        raise NotImplementedError

    def handle(self) -> None:
        limit = self.server.owner.max_line_bytes
        while True:
            try:
                line = self.rfile.readline(limit + 1)
            except OSError:
                return
            if not line:
                return
            if len(line) > limit:
                # A read of limit+1 bytes may have ended on the newline itself: that line is
                # whole, and skipping on would swallow the next request.
                if not line.endswith(b"\n") and not self._skip_line(limit):
                    return
                reply = self.too_long(limit)
            elif not line.strip():
                continue
            else:
                reply = self.answer(line)
            try:
                self.wfile.write(json.dumps(reply, separators=(",", ":")).encode() + b"\n")
                self.wfile.flush()
            except OSError:
                return

    def _skip_line(self, limit: int) -> bool:
        """Discard the rest of an oversized line; False when the connection ended first."""
        while True:
            try:
                chunk = self.rfile.readline(limit)
            except OSError:
                return False
            if not chunk:
                return False
            if chunk.endswith(b"\n"):
                return True


def bind_private(sock: socket.socket, path: Path, backlog: int = 16) -> tuple[int, int]:
    """Bind the Unix socket ``sock`` at ``path`` with mode 0600 and listen; return its (device, inode).

    Bound under a temporary name, restricted, then moved into place, so it never exists at
    ``path`` with looser permissions; a stale socket of an earlier run is replaced, anything
    else at ``path`` is an error.
    """
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            raise FileExistsError(f"{path} exists and is not a socket")
        os.unlink(path)  # a stale socket of an earlier run
    except FileNotFoundError:
        pass
    tmp = path.with_name(f".s{os.getpid() % 100000}.{id(sock) % 100000}.tmp")
    try:
        sock.bind(os.fspath(tmp))
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
        sock.listen(backlog)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    st = os.lstat(path)
    return st.st_dev, st.st_ino


def remove_if_ours(path: Path, inode: tuple[int, int] | None) -> None:
    """Remove the socket at ``path`` only if it is still the one ``bind_private`` made."""
    try:
        st = os.lstat(path)
        if (st.st_dev, st.st_ino) == inode:
            os.unlink(path)
    except FileNotFoundError:
        pass


class UnixService:
    """Start/stop of one `TrackedServer` at `socket_path`; subclasses say which server."""

    thread_name = "unix-service"

    def __init__(self, socket_path: str | os.PathLike[str]) -> None:
        self.socket_path = Path(socket_path)
        if len(os.fsencode(self.socket_path)) > SUN_PATH_MAX:
            raise ValueError(f"socket path too long for a Unix socket ({len(os.fsencode(self.socket_path))} "
                             f"bytes, at most {SUN_PATH_MAX}): {self.socket_path}")
        self._server: TrackedServer | None = None
        self._thread: threading.Thread | None = None
        self._inode: tuple[int, int] | None = None

    def make_server(self) -> TrackedServer:
        raise NotImplementedError

    def start(self) -> Self:
        if self._server is not None:
            return self
        server = self.make_server()
        try:
            self._inode = bind_private(server.socket, self.socket_path)
        except BaseException:
            server.server_close()
            raise
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=self.thread_name, daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop accepting, drop open connections and remove the socket (idempotent).

        A request already running finishes in its daemon thread; its answer is discarded.
        """
        server, self._server = self._server, None
        if server is None:
            return
        stopper = threading.Thread(target=server.shutdown, daemon=True)
        stopper.start()
        # serve_forever sees the request only when its select returns, up to a poll interval later
        # (50 ms, for each service of each spawn): a connection makes it return at once.
        while stopper.is_alive():
            with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as poke:
                poke.settimeout(0.2)
                poke.connect(os.fspath(self.socket_path))
            stopper.join(0.005)
        server.server_close()
        server.drop_connections()
        if self._thread is not None:
            self._thread.join(timeout=5)
        remove_if_ours(self.socket_path, self._inode)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
