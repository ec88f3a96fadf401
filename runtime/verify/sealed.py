"""Sealed test files: tests a run must hold that the code under test must not read (hidden tests, tamper
checks), served once each by the orchestrator to the runner's loader (`support/sealed_load.py`, `sealed_load.cjs`).

In the tree each sealed file is a stub, bound read-only over its place for the run: it names the socket and
the file's id and asks the runner's loader to fetch and run it (`Runner.sealed_stub`: pytest's and node's). The server answers the first ask for an id with the
source and every later one with nothing, and counts them: a legitimate run asks once per file it collects;
a second ask means something took the source before the runner (a tampered run, `runtime.verify.kinds.tests_green`).
Nothing of the source is on disk where the sandbox can see it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import threading
from collections.abc import Mapping
from pathlib import Path

from runtime.sandbox.identity import AgentUser

_LINE = 128  # an ask: an id and a newline


class SealedServer:
    """Serves ``files`` (relative path -> source) over a Unix socket at ``path``, each once."""

    def __init__(self, path: Path, files: Mapping[str, bytes], user: AgentUser | None) -> None:
        self.path, self._user = path, user
        self.ids = {rel: secrets.token_hex(12) for rel in files}
        self._sources = {self.ids[rel]: data for rel, data in files.items()}
        self._asked: dict[str, int] = dict.fromkeys(self._sources, 0)
        self._unknown = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> SealedServer:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(self.path))
        os.chmod(self.path, 0o600)
        if self._user is not None:
            os.chown(self.path, self._user.uid, self._user.gid, follow_symlinks=False)
        sock.listen(16)
        sock.settimeout(0.1)
        self._sock = sock
        self._thread = threading.Thread(target=self._serve, name="sealed-tests", daemon=True)
        self._thread.start()
        return self

    def _serve(self) -> None:
        assert self._sock is not None
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                self._answer(conn)

    def _answer(self, conn: socket.socket) -> None:
        conn.settimeout(10)
        data = b""
        with contextlib.suppress(OSError):
            while b"\n" not in data and len(data) < _LINE:
                chunk = conn.recv(_LINE)
                if not chunk:
                    break
                data += chunk
        ident = data.split(b"\n", 1)[0].decode("ascii", "replace")
        with self._lock:
            if ident not in self._asked:
                self._unknown += 1
                return
            self._asked[ident] += 1
            first = self._asked[ident] == 1
        if first:
            with contextlib.suppress(OSError):
                conn.sendall(self._sources[ident])

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._sock is not None:
            self._sock.close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def asked(self) -> dict[str, int]:
        """How many times each file (by its relative path) was asked for; '?' counts asks for no known id."""
        with self._lock:
            out = {rel: self._asked[ident] for rel, ident in self.ids.items()}
            if self._unknown:
                out["?"] = self._unknown
            return out
