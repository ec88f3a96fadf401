"""`runtime check --resident`: the hook answered by a resident process of this user's, over a Unix socket.

A cold `runtime check` spends most of its time starting: Python's own imports, the gate's modules, the
tree-sitter grammar. A resident process has them loaded and answers a call in about a millisecond; the
hook process then only forwards its arguments, environment and input and prints the answer.

- **Only this user reaches it.** The socket lies in a folder of this user's, mode 0700 (checked before
  every connect: owned by this uid, no other permission bits, not a symlink); the server also checks
  each peer's uid (SO_PEERCRED) and serves no other.
- **Never failing open.** No server, a refused or slow connection (past ``CONNECT_S``/``ANSWER_S``), an
  answer of any other shape: the hook answers the call itself, cold, as without `--resident`. The
  server answers exactly what `runtime check` would (``runtime.cli.check.respond``, which denies on
  any failure), with the caller's environment and working folder.
- **Started on demand; the default.** `runtime hook install` writes `--resident` unless told `--no-resident`. A
  call that found no server starts one after answering, detached; it exits after ``IDLE_S`` without a call, or
  once its socket is gone. Its socket's name carries a stamp of the code it runs (the
  interpreter, the package's folder, the modification times of the gate's entry points), so a new
  install starts a new server and the old one idles out.
- Policies are found per call as the cold hook finds them (`runtime.gate.cache` checks its inputs each
  time); a loaded policy is kept while its file is unchanged (``runtime.gate.cache.KEPT``).

This module is the client, and what both ends share; the server is ``runtime.cli.resident_server``.

The messages are ``marshal``-encoded (a length, then the data): a builtin, with nothing to import on the
hook's side; both ends belong to the same user.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing's, without importing typing: the client runs in the hook's fresh process
if TYPE_CHECKING:
    import _socket

CONNECT_S = 0.5  # a server that does not accept by then is not used
ANSWER_S = 8.0  # below the hook's own 10 s deadline: the cold path still has time after it
IDLE_S = 900.0  # a server exits after this long without a call
POLL_S = 5.0  # how often an idle server looks whether its socket is still there
MAX_MESSAGE = 8 << 20
_STAMPED = ("cli/check.py", "cli/resident.py", "cli/resident_server.py", "gate/engine.py", "gate/hook.py", "gate/cache.py")


def folder() -> str | None:
    """This user's folder for the socket, made 0700 if absent; None when it is not safely this user's."""
    base = os.environ.get("XDG_RUNTIME_DIR") or os.path.join(os.path.expanduser("~"), ".cache")
    path = os.path.join(base, "agent-runtime-gate")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.lstat(path)
    except OSError:
        return None
    import stat

    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        return None
    return path


def socket_path() -> str | None:
    """The socket of the server running this very code, or None (no safe folder, or a path too long)."""
    where = folder()
    if where is None:
        return None
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parts = [os.path.realpath(sys.executable), package]
    for rel in _STAMPED:
        try:
            parts.append(str(os.stat(os.path.join(package, rel)).st_mtime_ns))
        except OSError:
            return None
    import _sha256  # the C module: hashlib would import more than the hook needs

    stamp = _sha256.sha256("\0".join(parts).encode()).hexdigest()[:16]
    path = os.path.join(where, f"gate-{stamp}.sock")
    return path if len(path.encode()) < 100 else None


def send_message(sock: _socket.socket, data: bytes) -> None:
    sock.sendall(len(data).to_bytes(4, "big") + data)


def receive_message(sock: _socket.socket) -> bytes | None:
    head = _exactly(sock, 4)
    if head is None:
        return None
    size = int.from_bytes(head, "big")
    return None if size > MAX_MESSAGE else _exactly(sock, size)


def _exactly(sock: _socket.socket, size: int) -> bytes | None:
    chunks, got = [], 0
    while got < size:
        chunk = sock.recv(min(size - got, 1 << 16))
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


# -- the hook's side ---------------------------------------------------------------------------------


def ask(argv: list[str], raw: bytes) -> tuple[str, str, int] | None:
    """The resident server's answer to this call, or None: then the hook answers it itself."""
    path = socket_path()
    if path is None:
        return None
    import _socket  # the C module: `socket` would import enum for its constants
    import marshal

    try:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            sock.settimeout(CONNECT_S)
            sock.connect(path)
            sock.settimeout(ANSWER_S)
            send_message(sock, marshal.dumps((argv, raw, dict(os.environ), os.getcwd())))
            data = receive_message(sock)
        finally:
            sock.close()
        found = marshal.loads(data) if data is not None else None
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if (isinstance(found, tuple) and len(found) == 3 and isinstance(found[0], str) and isinstance(found[1], str)
            and isinstance(found[2], int) and not isinstance(found[2], bool) and found[2] in (0, 2)):
        return found
    return None


def start() -> None:
    """Start a server for the next call, detached from this one; any failure only leaves the cold path."""
    path = socket_path()
    if path is None:
        return
    import subprocess

    try:
        subprocess.Popen([sys.executable, "-m", "runtime.cli.resident_server", path], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                         close_fds=True)
    except OSError:
        pass
