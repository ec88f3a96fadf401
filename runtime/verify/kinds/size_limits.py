"""size-limits: what the change adds stays small; what it did not touch is not judged.

Small files and functions keep a codebase reviewable; a model left alone tends
to pile code into one place. But a real repository has long modules and long
functions already, and a one-line fix in one is not the agent's to refactor.
So files and functions are judged against the base (``runtime.verify.kinds.growth``):
new ones stay within the limits, ones within a limit at the base stay within it,
ones already over it at the base may not grow, and untouched ones always pass.
Evidence::

    {"files": {"src/app.py": "<text in the result>", ...},
     "base-files": {"src/app.py": "<its text at the base>", ...}}

``files`` holds the files the agent added or modified (deleted files are left
out); ``base-files`` the base's text of those of them that existed there,
under their current name (a renamed file under its new name). A file missing
from ``base-files`` is new.

- A file's size is its number of lines, blank and comment lines included: the
  simplest measure, and the one an editor shows.
- Python functions are measured and matched as ``runtime.verify.kinds.python_functions``
  says. Only ``*.py`` files are parsed; a ``.py`` file that does not parse is a
  rejection, since its functions cannot be measured, unless it did not parse at
  the base either (its functions are then not judged).
- A limit of 0 means that limit is not checked.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from runtime.verify.kinds.base import MalformedInput, listing, take_int, take_str_map
from runtime.verify.kinds.growth import CROSSED, NEW, breach
from runtime.verify.kinds.python_functions import Function, Unparsable, base_sizes, functions
from runtime.verify.result import VerifyResult, passed, rejected


def size_limits(params: dict[str, Any], evidence: dict[str, Any]) -> VerifyResult:
    max_file = take_int(params, "max-file-lines", "parameter")
    max_function = take_int(params, "max-function-lines", "parameter")
    files = take_str_map(evidence, "files", "evidence")
    base = take_str_map(evidence, "base-files", "evidence")
    if stray := sorted(set(base) - set(files)):
        raise MalformedInput(f"evidence `base-files` holds `{stray[0]}`, which is not in `files`")
    offenders: list[str] = []
    for path in sorted(files):
        before = base.get(path)
        lines = len(files[path].splitlines())
        if max_file and (why := breach(lines, None if before is None else len(before.splitlines()), max_file)):
            offenders.append(_file_offence(path, why, before, files[path], max_file))
    offenders += _function_offences(files, base, max_function)
    if not offenders:
        return passed(f"the change keeps its {len(files)} changed file(s) within the size limits", {"files": len(files)})
    return rejected(
        f"{len(offenders)} size limit violation(s) in what you changed (code you did not change is not judged):\n"
        f"{listing(offenders)}",
        {"files": len(files), "offenders": len(offenders)},
    )


def _file_offence(path: str, why: str, before: str | None, now: str, limit: int) -> str:
    lines = len(now.splitlines())
    if why == NEW:
        return f"`{path}` is a new file of {lines} lines (limit {limit}): split it into smaller modules"
    grew = f"`{path}` grew from {len((before or '').splitlines())} to {lines} lines"
    if why == CROSSED:
        return f"{grew}, past the {limit}-line limit: keep it within {limit} lines, or move the new code to a new module"
    return (f"{grew}; it was over the {limit}-line limit at the base, so it may not grow: make the change "
            "without adding lines, or move the new code to a new module")


def _parsed(path: str, text: str | None) -> list[Function] | Unparsable:
    """The functions of ``text`` (none when there is no text), or why it does not parse."""
    if text is None:
        return []
    try:
        return functions(path, text)
    except Unparsable as exc:
        return exc


def _function_offences(files: dict[str, str], base: dict[str, str], limit: int) -> list[str]:
    now = {p: _parsed(p, t) for p, t in sorted(files.items()) if p.endswith(".py")}
    before = {p: _parsed(p, base.get(p)) for p in now}
    # A function whose lines are a base function's (moved, or its class renamed) is untouched, as long as
    # there are no more of it now than at the base: a copy is new code.
    at_base = Counter(f.text for fns in before.values() if isinstance(fns, list) for f in fns)
    at_now = Counter(f.text for fns in now.values() if isinstance(fns, list) for f in fns)
    offenders: list[str] = []
    for path, fns in now.items():
        old = before[path]
        if isinstance(fns, Unparsable):
            # Its functions cannot be measured; if they could not at the base either, they are not judged.
            if not isinstance(old, Unparsable):
                offenders.append(f"`{path}` does not parse ({fns}): fix the syntax")
            continue
        sizes = base_sizes(fns, old if isinstance(old, list) else [])
        for fn, size in zip(fns, sizes, strict=True):
            if at_now[fn.text] <= at_base[fn.text]:
                continue
            if limit and (why := breach(fn.size, size, limit)):
                offenders.append(_function_offence(path, fn, why, size, limit))
    return offenders


def _function_offence(path: str, fn: Function, why: str, before: int | None, limit: int) -> str:
    if why == NEW:
        return f"`{path}`: the new function `{fn.name}` has {fn.size} lines (limit {limit}): split it into smaller functions"
    grew = f"`{path}`: function `{fn.name}` grew from {before} to {fn.size} lines"
    if why == CROSSED:
        return f"{grew}, past the {limit}-line limit: move what you added into a new function"
    return (f"{grew}; it was over the {limit}-line limit at the base, so it may not grow: make the change "
            "without adding lines to it, or put the new code in a new function")
