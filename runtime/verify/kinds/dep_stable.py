"""dep-stable: the agent's result declares and locks the same dependencies as the base.

A task that may not change dependencies may still reformat or reorder a
dependency file, so files are compared as parsed data (see ``dep_view``), not
byte for byte. Evidence::

    {"before": {"pyproject.toml": "<text at the base>", ...},
     "after":  {"pyproject.toml": "<text in the result>", ...}}

Both tables are keyed by path relative to the worktree root and hold the
dependency files that exist on that side: a path missing from one side was
added or deleted, which is a change. Only paths matching the ``globs``
parameter count. A file that no longer parses in ``after`` is a rejection (the
agent broke it); one that does not parse in ``before`` is an error, since the
check then has nothing to compare against.
"""

from __future__ import annotations

from collections.abc import Callable
from fnmatch import fnmatchcase

from runtime.verify.kinds.base import compile_globs, listing
from runtime.verify.kinds.dep_cargo_go import cargo_lock, cargo_toml, go_mod, go_sum
from runtime.verify.kinds.dep_js import line_set, package_json, package_lock
from runtime.verify.kinds.dep_python import poetry_lock, pyproject, requirements_txt, uv_lock
from runtime.verify.kinds.dep_view import View, differences
from runtime.verify.kinds.kind import Evidence, Gathering, Kind
from runtime.verify.kinds.result import VerifyResult, error, passed, rejected
from runtime.verify.kinds.scope import GlobParams, changed


class DependencyFiles(Evidence):
    """dep-stable: the text of the changed dependency files at the base and now (absent: no such file)."""

    before: dict[str, str]
    after: dict[str, str]


async def gather(params: GlobParams, gathering: Gathering) -> DependencyFiles:
    match = compile_globs(params.globs)
    before, after = {}, {}
    for path in (p for p in changed(gathering) if match and match.match(p)):
        if (old := gathering.base_text(path)) is not None:
            before[path] = old
        if (new := gathering.text(path)) is not None:
            after[path] = new
    return DependencyFiles(before=before, after=after)

PARSERS_BY_NAME: dict[str, Callable[[str], View]] = {
    "pyproject.toml": pyproject,
    "uv.lock": uv_lock,
    "poetry.lock": poetry_lock,
    "package.json": package_json,
    "package-lock.json": package_lock,
    "npm-shrinkwrap.json": package_lock,
    "yarn.lock": line_set,
    "pnpm-lock.yaml": line_set,
    "Cargo.toml": cargo_toml,
    "Cargo.lock": cargo_lock,
    "go.mod": go_mod,
    "go.sum": go_sum,
}


def parser_for(path: str) -> Callable[[str], View]:
    parent, _, name = path.rpartition("/")
    if name in PARSERS_BY_NAME:
        return PARSERS_BY_NAME[name]
    in_requirements_dir = parent.rpartition("/")[2] == "requirements" and name.endswith(".txt")
    if fnmatchcase(name, "requirements*.txt") or name.endswith(".in") or in_requirements_dir:
        return requirements_txt
    return line_set  # an unknown format: any changed line counts


def dep_stable(params: GlobParams, evidence: DependencyFiles) -> VerifyResult:
    match = compile_globs(params.globs)
    before, after = evidence.before, evidence.after
    paths = sorted(p for p in before.keys() | after.keys() if match is not None and match.match(p))
    changes: list[str] = []
    for path in paths:
        if path not in before:
            changes.append(f"`{path}` was created")
        elif path not in after:
            changes.append(f"`{path}` was deleted")
        elif before[path] != after[path]:
            parse = parser_for(path)
            try:
                old = parse(before[path])
            except ValueError as exc:
                return error(f"cannot read the base version of `{path}`: {exc}", {"path": path})
            try:
                new = parse(after[path])
            except ValueError as exc:
                changes.append(f"`{path}` no longer parses ({exc}); restore its syntax")
                continue
            changes += [f"`{path}`: {line}" for line in differences(old, new)]
    if not changes:
        return passed(f"the declared and locked dependencies in {len(paths)} file(s) are unchanged", {"files": len(paths)})
    return rejected(
        "This task may not change dependencies, but your result does:\n"
        f"{listing(changes)}\n"
        "Restore these declarations and locked versions (reformatting is fine). "
        "If the task cannot be done without a dependency change, say so in your report instead.",
        {"files": len(paths), "changes": len(changes)},
    )


KIND = Kind("dep-stable", {"globs": "glob-list"}, GlobParams.read, DependencyFiles, gather, dep_stable)
