"""What each verify kind is judged on: the evidence an atom's verify example gives, as a schema.

The gatherers of ``runtime.verify.gather`` build this evidence from a worktree
and its base; an atom's ``[[examples]]`` write it by hand, and ``runtime lint``
runs them. Each kind's table is checked here when the atom loads, so a key the
kind does not read (``base_files`` for ``base-files``) is an error at its line
rather than an example that silently judges something else; the JSON schema of
``capability.toml`` is made from the same models.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from runtime.manifests.model import Model

Bytes = Annotated[int, Field(ge=0)]


class ChangedPaths(Model):
    """scope-whitelist, scope-denylist, no-changes: every path the change touches (a rename's both names)."""

    changed: list[str]


class DependencyFiles(Model):
    """dep-stable: the text of the changed dependency files at the base and now (absent: no such file)."""

    before: dict[str, str]
    after: dict[str, str]


class BaseRun(Model):
    """The same command on the base, where it failed on the change (`runtime.verify.kinds.baseline`)."""

    exit_code: int
    output: str


class TestRun(Model):
    """tests-green: the test command's exit code and output, and where it failed, the base's."""

    exit_code: int
    output: str
    base: BaseRun | None = None


class CheckRun(Model):
    command: str
    exit_code: int
    output: str
    base: BaseRun | None = None


class CheckRuns(Model):
    """checks-green: each check command's exit code and output."""

    results: list[CheckRun]


class FileTexts(Model):
    """size-limits: the text of each added or modified file, and at the base of those that existed there
    (under their current name); a file not in ``base-files`` is new."""

    files: dict[str, str]
    base_files: dict[str, str]


class FileSizes(Model):
    """change-size: the size in bytes of each added or modified file, and at the base of those that existed
    there (under their current name); a file not in ``base-sizes`` is new."""

    sizes: dict[str, Bytes]
    base_sizes: dict[str, Bytes]


class Report(Model):
    """report-fields, severity-grades: the agent's final report."""

    report: str


EVIDENCE: dict[str, type[Model]] = {
    "scope-whitelist": ChangedPaths,
    "scope-denylist": ChangedPaths,
    "no-changes": ChangedPaths,
    "dep-stable": DependencyFiles,
    "tests-green": TestRun,
    "checks-green": CheckRuns,
    "size-limits": FileTexts,
    "report-fields": Report,
    "severity-grades": Report,
    "change-size": FileSizes,
}

# The kinds whose evidence gained the base's side when they began judging the change rather than whole
# files: (the key of the current files, the key of the base's). An example giving only the first was
# written before; `runtime migrate` adds an empty second, which judges every file as new, as it was.
BASE_KEYS: dict[str, tuple[str, str]] = {"size-limits": ("files", "base-files"), "change-size": ("sizes", "base-sizes")}
