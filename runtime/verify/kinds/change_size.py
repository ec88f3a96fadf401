"""change-size: how many bytes the agent's change adds to the repository.

A 600 MB file written inside the scope was once verified, committed and merged.
Sizes are gathered with lstat, never by reading the files. Evidence::

    {"sizes": {"src/app.py": 1234, "data/blob.bin": 629145600}}

``sizes`` maps every added or modified regular file to its size in bytes
(deleted files and symlinks are not there: they add nothing).
"""

from __future__ import annotations

from typing import Any

from runtime.verify.kinds.base import MalformedInput, listing, take_int
from runtime.verify.result import VerifyResult, passed, rejected

DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024
DEFAULT_MAX_CHANGE_BYTES = 100 * 1024 * 1024


def _sizes(evidence: dict[str, Any]) -> dict[str, int]:
    sizes = evidence.get("sizes")
    if not isinstance(sizes, dict) or not all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 0 for k, v in sizes.items()):
        raise MalformedInput("evidence `sizes` must map paths to sizes in bytes")
    return sizes


def change_size(params: dict[str, Any], evidence: dict[str, Any]) -> VerifyResult:
    max_file = take_int(params, "max-file-bytes", "parameter")
    max_change = take_int(params, "max-change-bytes", "parameter")
    sizes = _sizes(evidence)
    big = [f"`{path}` ({size} bytes)" for path, size in sorted(sizes.items()) if size > max_file]
    total = sum(sizes.values())
    problems = []
    if big:
        problems.append(f"files larger than {max_file} bytes:\n{listing(big)}")
    if total > max_change:
        problems.append(f"the change adds {total} bytes in all, more than {max_change}")
    if problems:
        return rejected("the change is too large; remove or shrink these and keep generated or binary data out "
                        "of the repository:\n" + "\n".join(problems))
    return passed(f"{len(sizes)} files, {total} bytes in all")
