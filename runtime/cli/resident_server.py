"""The resident hook's server: answers `runtime check --resident` calls over this user's socket, as a cold
`runtime check` would (``runtime.cli.check.respond``). Started detached by the first call that found none
(``runtime.cli.resident.start``); the socket, its folder and the messages are ``runtime.cli.resident``'s.
"""

from __future__ import annotations

import os
import sys

from runtime.cli.resident import ANSWER_S, IDLE_S, POLL_S, receive_message, send_message


def serve(path: str, idle: float = IDLE_S) -> int:
    """Answer calls at ``path`` until ``idle`` seconds pass without one. Exits at once if another server
    holds the socket already."""
    import fcntl
    import marshal
    import socket
    import struct
    import time

    import runtime.gate.cache as cache
    from runtime.cli.check import respond
    from runtime.gate.treesitter import bash_parser

    bash_parser()  # loaded once, here, rather than on the first call
    cache.KEPT = {}
    lock = os.open(path + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 0  # another server starts or runs here
    os.ftruncate(lock, 0)
    os.write(lock, str(os.getpid()).encode())  # which process answers here, for a person (or a test) to see
    try:
        os.unlink(path)  # a socket left by a server that died
    except FileNotFoundError:
        pass
    uid = os.getuid()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        old = os.umask(0o177)
        try:
            listener.bind(path)
        finally:
            os.umask(old)
        listener.listen(16)
        # Woken every few seconds: past ``idle`` without a call it exits, and at once when its socket is gone (its
        # folder removed: a HOME that was a test's, or a person clearing the cache), since no call can reach it.
        listener.settimeout(min(idle, POLL_S))
        last = time.monotonic()
        while True:
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                if time.monotonic() - last >= idle or not os.path.exists(path):
                    break
                continue
            last = time.monotonic()
            with conn:
                creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
                if struct.unpack("3i", creds)[1] != uid:
                    continue  # only this user's calls
                conn.settimeout(ANSWER_S)
                try:
                    data = receive_message(conn)
                    if data is None:
                        continue
                    argv, raw, env, cwd = marshal.loads(data)
                    answer = _answer(respond, argv, raw, env, cwd)
                    send_message(conn, marshal.dumps(answer))
                except (OSError, ValueError, EOFError, TypeError):
                    continue
    try:
        os.unlink(path)
    except OSError:
        pass
    return 0


def _answer(respond, argv: list[str], raw: bytes, env: dict[str, str], cwd: str) -> tuple[str, str, int]:  # type: ignore[no-untyped-def]
    """``respond`` run as the calling hook would run it: its environment and working folder, restored after."""
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    try:
        os.environ.clear()
        os.environ.update(env)
        os.chdir(cwd)
        found: tuple[str, str, int] = respond(list(argv), bytes(raw))
        return found
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        os.chdir(saved_cwd)


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1]))
