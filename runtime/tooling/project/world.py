"""What `runtime init` writes into toolchain.toml's `[worktree]` table: what a worktree of the repository needs
beyond what git tracks (`runtime.spawn.world`).

- The version file a build backend writes at install time and git ignores, which the package imports
  (hatch-vcs's `version-file`, setuptools-scm's `version_file` or `write_to`, in pyproject.toml): included
  when the main checkout has it (install the project once to make it), said when it does not.
- The lockfile's install command (uv.lock, poetry.lock, package-lock.json, pnpm-lock.yaml, yarn.lock) and a
  documented setup script (`scripts/setup.sh`, `bin/setup`, `script/bootstrap`): offered as `setup`,
  commented out, since they reach the network and write into the tree: a person decides.

Read as data, nothing run.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from runtime.tooling.gitignore import ignored_by_git

LOCKFILES = (("uv.lock", "uv sync --frozen", ("pypi.org", "files.pythonhosted.org")),
             ("poetry.lock", "poetry install --no-root", ("pypi.org", "files.pythonhosted.org")),
             ("package-lock.json", "npm ci", ("registry.npmjs.org",)),
             ("pnpm-lock.yaml", "pnpm install --frozen-lockfile", ("registry.npmjs.org",)),
             ("yarn.lock", "yarn install --frozen-lockfile", ("registry.yarnpkg.com", "registry.npmjs.org")))
SCRIPTS = ("scripts/setup.sh", "scripts/bootstrap.sh", "bin/setup", "script/bootstrap", "script/setup")


@dataclass
class WorldFound:
    include: list[tuple[str, str]] = field(default_factory=list)  # (path, where it was found)
    missing: list[tuple[str, str]] = field(default_factory=list)  # a version file the main checkout lacks
    setup: list[tuple[str, str, tuple[str, ...]]] = field(default_factory=list)  # (command, from, its domains)


def version_files(repo: Path) -> list[tuple[str, str]]:
    """(path, where pyproject.toml names it) of the version files build backends write."""
    try:
        tool = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8")).get("tool", {})
    except (OSError, ValueError):
        return []
    out = []
    vcs = (((tool.get("hatch") or {}).get("build") or {}).get("hooks") or {}).get("vcs") or {}
    if isinstance(vcs.get("version-file"), str):
        out.append((vcs["version-file"], "pyproject.toml [tool.hatch.build.hooks.vcs] version-file"))
    scm = tool.get("setuptools_scm") or {}
    for key in ("version_file", "write_to"):
        if isinstance(scm.get(key), str):
            out.append((scm[key], f"pyproject.toml [tool.setuptools_scm] {key}"))
    return out


def find_world(repo: Path) -> WorldFound:
    found = WorldFound()
    for rel, where in version_files(repo):
        rel = rel.lstrip("./")
        if not ignored_by_git(repo, [rel]):
            continue  # tracked, or not ignored: every worktree has it, or it would be the agent's change
        (found.include if (repo / rel).is_file() else found.missing).append((rel, where))
    for lock, command, domains in LOCKFILES:
        if (repo / lock).is_file():
            found.setup.append((command, lock, domains))
            break
    for script in SCRIPTS:
        if (repo / script).is_file():
            found.setup.append((f"sh {script}", script, ()))
            break
    return found


def worktree_text(found: WorldFound) -> str:
    """The `[worktree]` table, or nothing when there is nothing to say."""
    if not (found.include or found.missing or found.setup):
        return ""
    lines = ["", "# What each agent's worktree, and every copy verify runs commands over, needs beyond what git",
             "# tracks: files git ignores, copied from this checkout; and set-up commands, run in the worktree",
             "# inside the sandbox before the agent starts, with their own egress (never the agent's).", "[worktree]"]
    if found.include:
        lines.append(f"include = [{', '.join(json.dumps(p) for p, _ in found.include)}]  # "
                     + "; ".join(f"{p}: {w}" for p, w in found.include))
    for rel, where in found.missing:
        lines.append(f"# include = [{json.dumps(rel)}]  # {where}: install the project once to make it, then uncomment")
    for command, source, domains in found.setup:
        lines.append(f"# setup = [{json.dumps(command)}]  # {source}")
        if domains:
            lines.append(f"# setup-domains = [{', '.join(json.dumps(d) for d in domains)}]")
    return "\n".join(lines) + "\n"
