"""size-limits: what the change adds in one place stays small; what it did not touch is not judged.

Small files and functions keep a codebase reviewable; a model left alone tends
to pile code into one place. But a real repository has long modules and long
functions already, and where its code goes is the project's decision: a
function added to a 4,656-line module beside its kind, its test added to a
5,735-line test module, a guard line added inside a 110-line function are
what its own developers would do. Judging whole files (or forbidding any growth
of a file or function already over a limit) rejects exactly those, and its
feedback asks for a refactor nobody wanted. So the limit bounds what the change
adds to one file or function: a new one holds at most the limit, an existing
one may grow by at most the limit, and untouched ones always pass (their size
at the base is their size now). Evidence::

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
from dataclasses import dataclass
from typing import TYPE_CHECKING

from runtime.verify.kinds.base import MalformedInput, listing, take_int
from runtime.verify.kinds.kind import Evidence, Gathering, Kind
from runtime.verify.kinds.python_functions import Function, Unparsable, base_sizes, functions
from runtime.verify.kinds.result import VerifyResult, passed, rejected

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONObject


@dataclass(frozen=True, slots=True)
class SizeLimitsParams:
    """size-limits: the most lines a file and a function may hold (0: not checked)."""

    max_file_lines: int
    max_function_lines: int

    @classmethod
    def read(cls, data: JSONObject) -> SizeLimitsParams:
        return cls(take_int(data, "max-file-lines", "parameter"), take_int(data, "max-function-lines", "parameter"))


class FileTexts(Evidence):
    """size-limits: the text of each added or modified file, and at the base of those that existed there
    (under their current name); a file not in ``base-files`` is new."""

    files: dict[str, str]
    base_files: dict[str, str]


async def gather(params: SizeLimitsParams, gathering: Gathering) -> FileTexts:
    files = {}
    for c in gathering.changes:
        if c.kind != "deleted" and (text := gathering.text(c.path)) is not None:
            files[c.path] = text
    base = {}
    for path, text in gathering.base_texts(files).items():
        # A base version that is no text the check reads (binary, too large) cannot be compared: the file,
        # which was that at the base, is left out rather than judged as new.
        if text is not None:
            base[path] = text
        else:
            del files[path]
    return FileTexts(files=files, base_files=base)


def size_limits(params: SizeLimitsParams, evidence: FileTexts) -> VerifyResult:
    max_file, max_function = params.max_file_lines, params.max_function_lines
    files, base = evidence.files, evidence.base_files
    if stray := sorted(set(base) - set(files)):
        raise MalformedInput(f"evidence `base-files` holds `{stray[0]}`, which is not in `files`")
    offenders: list[str] = []
    for path in sorted(files):
        before = base.get(path)
        lines = len(files[path].splitlines())
        was = None if before is None else len(before.splitlines())
        if max_file and lines - (was or 0) > max_file:
            offenders.append(_file_offence(path, was, lines, max_file))
    offenders += _function_offences(files, base, max_function)
    if not offenders:
        return passed(f"the change keeps its {len(files)} changed file(s) within the size limits", {"files": len(files)})
    return rejected(
        f"{len(offenders)} size limit violation(s) in what you changed (code you did not change is not judged):\n"
        f"{listing(offenders)}",
        {"files": len(files), "offenders": len(offenders)},
    )


def _file_offence(path: str, before: int | None, lines: int, limit: int) -> str:
    if before is None:
        return f"`{path}` is a new file of {lines} lines (limit {limit}): split it into smaller modules"
    return (f"`{path}` grew by {lines - before} lines (from {before} to {lines}); at most {limit} may be added to "
            "one file: put the new code in a new module")


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
            if limit and fn.size - (size or 0) > limit:
                offenders.append(_function_offence(path, fn, size, limit))
    return offenders


def _function_offence(path: str, fn: Function, before: int | None, limit: int) -> str:
    if before is None:
        return f"`{path}`: the new function `{fn.name}` has {fn.size} lines (limit {limit}): split it into smaller functions"
    return (f"`{path}`: function `{fn.name}` grew by {fn.size - before} lines (from {before} to {fn.size}); at most "
            f"{limit} may be added to one function: put the new code in a new function")


KIND = Kind("size-limits", {"max-file-lines": "int", "max-function-lines": "int"}, SizeLimitsParams.read, FileTexts, gather,
            size_limits,
            base_key=("files", "base-files"))
