"""change-size: how many bytes the agent's change adds to the repository.

A 600 MB file written inside the scope was once verified, committed and merged.
Sizes are gathered with lstat (and, at the base, from git's object store), never
by reading the files. Evidence::

    {"sizes": {"src/app.py": 1234, "data/blob.bin": 629145600},
     "base-sizes": {"src/app.py": 1200}}

``sizes`` maps every added or modified regular file to its size in bytes
(deleted files and symlinks are not there: they add nothing); ``base-sizes``
the size at the base of those of them that were regular files there (a renamed
file under its new name). The file limit is a resource bound on what git stores
(``runtime.verify.kinds.growth``): a new file within the limit, one within it at
the base stays within it, one over it already may not grow; and the change adds
the bytes of its new files and what its modified files grew by, so a one-line
fix in a large file adds a line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from runtime.verify.kinds.base import MalformedInput, listing, take_int
from runtime.verify.kinds.growth import CROSSED, NEW, breach
from runtime.verify.kinds.kind import Evidence, Gathering, Kind
from runtime.verify.kinds.result import VerifyResult, passed, rejected

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONObject

DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024
DEFAULT_MAX_CHANGE_BYTES = 100 * 1024 * 1024


DEFAULTS = {"max-file-bytes": DEFAULT_MAX_FILE_BYTES, "max-change-bytes": DEFAULT_MAX_CHANGE_BYTES}
Bytes = Annotated[int, Field(ge=0)]


@dataclass(frozen=True, slots=True)
class ChangeSizeParams:
    """change-size: the most bytes one file may hold, and the most the whole change may add."""

    max_file_bytes: int
    max_change_bytes: int

    @classmethod
    def read(cls, data: JSONObject) -> ChangeSizeParams:
        return cls(take_int(data, "max-file-bytes", "parameter"), take_int(data, "max-change-bytes", "parameter"))


class FileSizes(Evidence):
    """change-size: the size in bytes of each added or modified file, and at the base of those that existed
    there (under their current name); a file not in ``base-sizes`` is new."""

    sizes: dict[str, Bytes]
    base_sizes: dict[str, Bytes]


async def gather(params: ChangeSizeParams, gathering: Gathering) -> FileSizes:
    return sizes_of(gathering)


def sizes_of(gathering: Gathering) -> FileSizes:
    """The size of every added or modified regular file (lstat alone), and at the base."""
    sizes = {}
    for change in gathering.changes:
        if change.kind != "deleted" and (size := gathering.size(change.path)) is not None:
            sizes[change.path] = size
    return FileSizes(sizes=sizes, base_sizes=gathering.base_sizes(sizes))


def change_size(params: ChangeSizeParams, evidence: FileSizes) -> VerifyResult:
    max_file, max_change = params.max_file_bytes, params.max_change_bytes
    sizes, base = evidence.sizes, evidence.base_sizes
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


KIND = Kind("change-size", {"max-file-bytes": "int", "max-change-bytes": "int"}, ChangeSizeParams.read, FileSizes, gather,
            change_size,
            base_key=("sizes", "base-sizes"))
