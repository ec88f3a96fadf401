"""runtime console [--no-open] [--port N] [--state-dir DIR]: the runs of this repository in a browser.

Prints the URL (with its token) as its first line, then serves on 127.0.0.1 until interrupted; without
`--no-open` it also opens the browser there. Needs the `console` extra (Starlette and uvicorn).
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.cli.status import state_dir
from runtime.errors import FatalError
from runtime.workspace.git import Git, GitError

if TYPE_CHECKING:
    from runtime.cli.settings import Console


def run(args: Console) -> int:
    try:
        from runtime.console.app import serve
        from runtime.console.guard import Guard
    except ImportError as exc:
        raise FatalError(f"the console needs its extra: pip install 'agent-role-runtime[console]' ({exc})") from None
    state = state_dir(args.state_dir)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", args.port))
    except OSError as exc:
        raise FatalError(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror}") from None
    listener.listen(128)  # connections wait in the kernel's queue from the moment the URL is printed
    guard = Guard(port=listener.getsockname()[1])
    print(guard.url(), flush=True)  # the first line: a person opens it, a program reads it
    if not args.no_open:
        import webbrowser

        webbrowser.open(guard.url())
    try:
        repo = Git(Path.cwd()).root
    except GitError:
        repo = None  # outside a repository: no diffs, only what the state folder holds
    try:
        serve(state, guard, listener, repo)
    except KeyboardInterrupt:
        pass
    print(f"console stopped ({state.root})", file=sys.stderr)
    return 0
