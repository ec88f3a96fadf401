"""size-limits: no changed file, and no Python function in one, grows past its limit.

Small files and functions keep a codebase reviewable; a model left alone tends
to pile code into one place. Evidence::

    {"files": {"src/app.py": "<text in the result>", ...}}

holding only the files the agent added or modified (deleted files are left out).

- A file's size is its number of lines, blank and comment lines included: the
  simplest measure, and the one an editor shows.
- A Python function's or method's size runs from its ``def`` line to its last
  line (decorators excluded); nested functions are measured on their own as
  well as inside their parent. Only ``*.py`` files are parsed; a ``.py`` file
  that does not parse is a rejection, since its functions cannot be measured.
- A limit of 0 means that limit is not checked.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

from runtime.verify.kinds.base import listing, take_int, take_str_map
from runtime.verify.result import VerifyResult, passed, rejected


def size_limits(params: dict[str, Any], evidence: dict[str, Any]) -> VerifyResult:
    max_file = take_int(params, "max-file-lines", "parameter")
    max_function = take_int(params, "max-function-lines", "parameter")
    files = take_str_map(evidence, "files", "evidence")
    offenders: list[str] = []
    for path in sorted(files):
        text = files[path]
        lines = len(text.splitlines())
        if max_file and lines > max_file:
            offenders.append(f"`{path}` has {lines} lines (limit {max_file}): split it into smaller modules")
        if not path.endswith(".py"):
            continue
        try:
            tree = ast.parse(text, filename=path)
        except SyntaxError as exc:
            offenders.append(f"`{path}` does not parse (line {exc.lineno}: {exc.msg}): fix the syntax")
            continue
        except ValueError as exc:  # Python 3.11 reports NUL bytes in source this way
            offenders.append(f"`{path}` does not parse ({exc}): fix it")
            continue
        if max_function:
            for name, size in function_sizes(tree):
                if size > max_function:
                    offenders.append(f"`{path}`: function `{name}` has {size} lines (limit {max_function}): break it up")
    if not offenders:
        return passed(f"all {len(files)} changed file(s) are within the size limits", {"files": len(files)})
    return rejected(
        f"{len(offenders)} size limit violation(s) in the files you changed:\n{listing(offenders)}",
        {"files": len(files), "offenders": len(offenders)},
    )


def function_sizes(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, int]]:
    """(qualified name, lines from `def` to the end) of every function and method, nested ones too."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = prefix + node.name
            yield name, (node.end_lineno or node.lineno) - node.lineno + 1
            yield from function_sizes(node, name + ".")
        elif isinstance(node, ast.ClassDef):
            yield from function_sizes(node, prefix + node.name + ".")
        else:
            yield from function_sizes(node, prefix)
