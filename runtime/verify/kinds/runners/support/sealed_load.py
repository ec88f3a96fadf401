"""The loader of a sealed test module: a test file the orchestrator keeps out of the tree's reach (a hidden
test, a tamper check). Its place in the tree holds only a read-only stub that calls ``load``; the source
comes from the orchestrator's socket, which serves it once: code that asks for it first takes it from the
runner, and the runner's own ask is then seen as the second (the run is tampered with). The source is
compiled here (with pytest's assertion rewriting, as pytest compiles a test module) and never written to
disk: neither the files of the tree nor the source lines of a stack give it away. Standard library (and
pytest's rewriting, where pytest runs) only."""

from __future__ import annotations

import socket
from typing import Any

_LIMIT = 64 * 1024 * 1024


def _fetch(path: str, ident: str) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(60)
        conn.connect(path)
        conn.sendall(ident.encode("ascii") + b"\n")
        chunks, size = [], 0
        while size <= _LIMIT:
            chunk = conn.recv(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    return b"".join(chunks)


def load(namespace: dict[str, Any], path: str, ident: str) -> None:
    source = _fetch(path, ident)
    if not source:
        raise ImportError(f"sealed test module {ident}: its source was taken before its runner loaded it")
    filename = str(namespace.get("__file__") or "<sealed>")
    try:
        import ast

        from _pytest.assertion.rewrite import rewrite_asserts

        tree = ast.parse(source, filename)
        rewrite_asserts(tree, source, filename)
        code = compile(tree, filename, "exec", dont_inherit=True)
    except ImportError:  # no pytest: plain asserts
        code = compile(source, filename, "exec", dont_inherit=True)
    exec(code, namespace)  # noqa: S102 - the orchestrator's own test source, laid over for this run
