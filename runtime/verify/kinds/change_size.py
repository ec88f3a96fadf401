"""change-size: how many bytes the agent's change adds to the repository.

A 600 MB file written inside the scope was once verified, committed and merged.
Sizes are gathered with lstat (and, at the base, from git's object store), never
by reading the files. Evidence::

    {"sizes": {"src/app.py": 1234, "data/blob.bin": 629145600},
     "base-sizes": {"src/app.py": 1200}}

``sizes`` maps every added or modified regular file to its size in bytes
(deleted files and symlinks are not there: they add nothing); ``base-sizes``
the size at the base of those of them that were regular files there (a renamed
file under its new name). As for size-limits (``runtime.verify.kinds.growth``),
a file is judged on the change: a new file within the limit, one within it at
the base stays within it, one over it already may not grow; and the change adds
the bytes of its new files and what its modified files grew by, so a one-line
fix in a large file adds a line.
"""

from __future__ import annotations

from typing import Any

from runtime.verify.kinds.base import MalformedInput, listing, take_int
from runtime.verify.kinds.growth import CROSSED, NEW, breach
from runtime.verify.result import VerifyResult, passed, rejected

DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024
DEFAULT_MAX_CHANGE_BYTES = 100 * 1024 * 1024


def _sizes(evidence: dict[str, Any], key: str) -> dict[str, int]:
    sizes = evidence.get(key)
    if not isinstance(sizes, dict) or not all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 0 for k, v in sizes.items()):
        raise MalformedInput(f"evidence `{key}` must map paths to sizes in bytes")
    return sizes


def change_size(params: dict[str, Any], evidence: dict[str, Any]) -> VerifyResult:
    max_file = take_int(params, "max-file-bytes", "parameter")
    max_change = take_int(params, "max-change-bytes", "parameter")
    sizes = _sizes(evidence, "sizes")
    base = _sizes(evidence, "base-sizes")
    if stray := sorted(set(base) - set(sizes)):
        raise MalformedInput(f"evidence `base-sizes` holds `{stray[0]}`, which is not in `sizes`")
    big = []
    for path, size in sorted(sizes.items()):
        why = breach(size, base.get(path), max_file)
        if why == NEW:
            big.append(f"`{path}` is a new file of {size} bytes")
        elif why == CROSSED:
            big.append(f"`{path}` grew from {base[path]} to {size} bytes")
        elif why:
            big.append(f"`{path}` grew from {base[path]} to {size} bytes; it was over the limit at the base, "
                       "so it may not grow")
    total = sum(max(0, size - base.get(path, 0)) for path, size in sizes.items())
    problems = []
    if big:
        problems.append(f"files over the limit of {max_file} bytes:\n{listing(big)}")
    if total > max_change:
        problems.append(f"the change adds {total} bytes in all, more than {max_change}")
    if problems:
        return rejected("the change is too large; remove or shrink what it adds and keep generated or binary data "
                        "out of the repository:\n" + "\n".join(problems))
    return passed(f"{len(sizes)} files, {total} bytes added in all")
