"""The functions of a Python file, measured, and matched with the same functions at the base.

- A function's or method's size runs from its ``def`` line to its last line
  (decorators excluded); nested functions are measured on their own as well as
  inside their parent, under qualified names (``Parser.parse``, ``outer.inner``).
- A function of the current file is the base's function of the same qualified
  name in the same file (the n-th of that name, for a property's getter and
  setter); one whose lines are those of a function of the base, indentation
  aside (a method of a renamed class, a function moved to another module), is
  untouched wherever it now is.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Function:
    name: str  # qualified
    size: int
    text: str  # its lines, dedented: what "untouched" is judged by


class Unparsable(ValueError):
    """The file is not Python this interpreter parses; the message says where."""


def functions(path: str, source: str) -> list[Function]:
    """Every function and method of ``source``, nested ones too; Unparsable if it does not parse."""
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as exc:
        raise Unparsable(f"line {exc.lineno}: {exc.msg}") from None
    except ValueError as exc:  # Python 3.11 reports NUL bytes in source this way
        raise Unparsable(str(exc)) from None
    lines = source.splitlines()
    out = []
    for name, node in _walk(tree):
        end = node.end_lineno or node.lineno
        text = textwrap.dedent("\n".join(lines[node.lineno - 1:end]))
        out.append(Function(name, end - node.lineno + 1, text))
    return out


def _walk(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = prefix + node.name
            yield name, node
            yield from _walk(node, name + ".")
        elif isinstance(node, ast.ClassDef):
            yield from _walk(node, prefix + node.name + ".")
        else:
            yield from _walk(node, prefix)


def base_sizes(now: list[Function], before: list[Function]) -> list[int | None]:
    """For each function of ``now``, its size at the base under the same qualified name (the n-th of that
    name for the n-th), or None for a function the base did not have."""
    by_name: dict[str, list[int]] = {}
    for fn in before:
        by_name.setdefault(fn.name, []).append(fn.size)
    seen: dict[str, int] = {}
    out: list[int | None] = []
    for fn in now:
        nth = seen.get(fn.name, 0)
        seen[fn.name] = nth + 1
        sizes = by_name.get(fn.name, [])
        out.append(sizes[nth] if nth < len(sizes) else None)
    return out
