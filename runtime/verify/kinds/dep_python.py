"""Python dependency files for dep-stable: pyproject.toml, requirements files, uv.lock, poetry.lock.

Requirements (PEP 508) are keyed by their PEP 503 normalised name; the spec is
rewritten canonically (extras and version clauses sorted, whitespace and quote
style dropped) so only a real change in what is required shows as one.
"""

from __future__ import annotations

import re
import tomllib
from typing import Any

from runtime.verify.kinds.dep_view import View, add_entries, canonical, table, toml_lock

_NAME = re.compile(r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?=$|[\s\[(;@<>=!~,])")
_MARKER_OP = re.compile(r"\s*(===|~=|==|!=|<=|>=|<|>)\s*")


def pep503(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement(text: str) -> tuple[str, str]:
    """(normalised name, canonical spec) of a PEP 508 string; one not understood is kept whole as its name."""
    match = _NAME.match(text)
    rest = text[match.end():].strip() if match else ""
    if not match or (rest.startswith("[") and "]" not in rest):
        return " ".join(text.split()), ""
    extras = ""
    if rest.startswith("["):
        inside, _, rest = rest[1:].partition("]")
        extras = "[" + ",".join(sorted(pep503(e.strip()) for e in inside.split(",") if e.strip())) + "]"
    version, _, marker = rest.partition(";")
    version = version.strip()
    if version.startswith("@"):
        version = "@ " + "".join(version[1:].split())
    else:
        clauses = version.strip("() ").split(",")
        version = ",".join(sorted("".join(c.split()) for c in clauses if c.strip()))
    marker = _MARKER_OP.sub(r"\1", " ".join(marker.replace('"', "'").split()))
    return pep503(match[1]), extras + version + (f"; {marker}" if marker else "")


def _add_requirements(view: View, section: str, pairs: list[tuple[str, str]]) -> None:
    # The same name may be listed twice (different markers): its entry holds every spec.
    specs: dict[str, list[str]] = {}
    for name, spec in pairs:
        specs.setdefault(name, []).append(spec)
    for name, group in specs.items():
        view[f"{section} `{name}`"] = " | ".join(sorted(group))


def _requirement_list(view: View, section: str, items: Any) -> None:
    if not isinstance(items, list):
        raise ValueError(f"`{section}` should be a list of requirements")
    # A dependency-groups entry may be a table such as {include-group = "test"}.
    pairs = [requirement(i) if isinstance(i, str) else (canonical(i), "") for i in items]
    _add_requirements(view, section, pairs)


def pyproject(text: str) -> View:
    data = tomllib.loads(text)
    view: View = {}
    project = table(data, "project")
    _requirement_list(view, "project.dependencies", project.get("dependencies", []))
    for group, items in table(project, "optional-dependencies").items():
        _requirement_list(view, f"project.optional-dependencies.{group}", items)
    _requirement_list(view, "build-system.requires", table(data, "build-system").get("requires", []))
    for group, items in table(data, "dependency-groups").items():
        _requirement_list(view, f"dependency-groups.{group}", items)
    tool = table(data, "tool")
    poetry = table(tool, "poetry")
    for key in poetry:
        if key.endswith("dependencies"):
            add_entries(view, f"tool.poetry.{key}", table(poetry, key), pep503)
    for group, body in table(poetry, "group").items():
        add_entries(view, f"tool.poetry.group.{group}.dependencies", table(body, "dependencies"), pep503)
    uv = table(tool, "uv")
    for key in uv:
        if key.endswith("dependencies"):  # dev-, constraint- and override-dependencies
            _requirement_list(view, f"tool.uv.{key}", uv[key])
    add_entries(view, "tool.uv.sources", table(uv, "sources"), pep503)
    return view


def requirements_txt(text: str) -> View:
    """A pip requirements file: one requirement or option per logical line."""
    view: View = {}
    pairs = []
    for line in _logical_lines(text):
        if line.startswith("-"):  # -r, -c, -e, --index-url: each counts as one entry
            view[f"option `{line}`"] = ""
            continue
        words = line.split()
        hashes = sorted(w for w in words if w.startswith("--hash"))
        name, spec = requirement(" ".join(w for w in words if not w.startswith("--hash")))
        pairs.append((name, " ".join([spec, *hashes]).strip()))
    _add_requirements(view, "requirement", pairs)
    return view


def _logical_lines(text: str) -> list[str]:
    # As pip reads them: continuation lines joined first, then comments (a `#` at
    # the start or after whitespace) removed; whitespace runs count as one space.
    joined = re.sub(r"\\\r?\n", " ", text)
    lines = (re.sub(r"(^|\s)#.*$", "", line) for line in joined.splitlines())
    return [" ".join(line.split()) for line in lines if line.strip()]


def uv_lock(text: str) -> View:
    return toml_lock(text, {"version", "revision"}, pep503)


def poetry_lock(text: str) -> View:
    # The content hash changes with any pyproject edit; descriptions are not dependencies.
    return toml_lock(text, {"metadata.content-hash", "metadata.lock-version", "package.description"}, pep503)
