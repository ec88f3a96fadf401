"""runtime init: a project catalog (`.agent-runtime/`) that extends the shipped one.

It holds only what the project adds or changes: a role extending
`edit-local`, with the place to allow more programs, an empty folder for
program grammars, and `toolchain.toml` declaring the repository's own tools
as found here (a virtualenv, uv, node_modules, Makefile targets). Existing
files are never overwritten.
"""

from __future__ import annotations

from pathlib import Path

from runtime.errors import UsageError
from runtime.manifests.locate import PROJECT_FOLDER
from runtime.tooling.claude import write_atomic

ROLE = '''# A role of this project. It extends the shipped `edit-local` (see `runtime roles`): everything
# edit-local allows and enforces, plus what you add here. Files in .agent-runtime/ add to the shipped
# catalog; a role, atom or grammar with a shipped one's name replaces it.

[role]
name = "project"
display-name = "code implementer for this repository"
description = "The shipped edit-local role, with this repository's own tools allowed as declared below."
use-cases = ["Implement a change in this repository with its own toolchain"]

[capabilities]
extends = "edit-local"

# Shell rules add to edit-local's, program by program (a rule for the same program replaces it).
# Each names a grammar (programs/<name>.program.toml, here or shipped) or declares one inline. For example:
#
# [[params."tools::bash-allowlist".rules]]
# program = "tox"
# subcommands = ["-e py311"]
# positionals = []
#
# The repository's own venv, uv, node_modules and make targets are declared in toolchain.toml.
'''

TOOLCHAIN_HEAD = '''# The repository's own tools, which git does not track and so no worktree has. Declared here,
# they are bound read-only into every agent's sandbox (and into its checks), their bin folders
# first on PATH; agents call them by name or by path (`.venv/bin/pytest`). What runs is the
# repository's own code (conftest.py, npm scripts, the Makefile): the sandbox contains it.
# Presets: python (.venv), uv (.venv, run through `uv run --no-sync`), node (node_modules),
# go (the host's go and module cache), rust (the host's cargo and rustup homes).
# Written by `runtime init` from what it found; `runtime lint` checks it.

[toolchain]
'''

COMMON_TARGETS = ("test", "tests", "check", "lint", "typecheck", "fmt", "format", "build")


def detect_toolchain(repo: Path) -> str:
    """toolchain.toml for what ``repo`` has: presets found, make targets offered (commented out)."""
    presets = []
    if (repo / ".venv" / "pyvenv.cfg").is_file():
        presets.append("uv" if (repo / "uv.lock").is_file() else "python")
    if (repo / "node_modules").is_dir():
        presets.append("node")
    if (repo / "go.mod").is_file():
        presets.append("go")
    if (repo / "Cargo.toml").is_file():
        presets.append("rust")
    lines = [f"presets = [{', '.join(repr(p).replace(chr(39), chr(34)) for p in presets)}]"]
    if not presets:
        lines = ["# presets = [\"python\"]  # nothing found: no .venv, node_modules, go.mod or Cargo.toml",
                 "presets = []"]
    targets = _make_targets(repo / "Makefile")
    if targets:
        shown = ", ".join(f'"{t}"' for t in targets)
        lines.append(f"# `make TARGET` for every role with shell rules, once you uncomment it:\n# make-targets = [{shown}]")
    return TOOLCHAIN_HEAD + "\n".join(lines) + "\n"


def _make_targets(makefile: Path) -> list[str]:
    try:
        text = makefile.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    found = []
    for line in text.splitlines():
        name, sep, rest = line.partition(":")
        if sep and not rest.startswith("=") and name.strip() in COMMON_TARGETS and not line[:1].isspace():
            found.append(name.strip())
    return list(dict.fromkeys(found))

GRAMMARS = '''Program grammars of this project: one <name>.program.toml per program, as in the shipped
programs/ folder (`runtime lint` checks them and runs their examples). Never <name>.toml: the program
itself would read that as its configuration (ruff reads every ruff.toml below where it runs). See the
README, "programs/<name>.program.toml".
'''


def run(args) -> int:
    repo = Path(args.path or ".").resolve()
    folder = repo / PROJECT_FOLDER
    files = {folder / "roles" / "project.toml": ROLE, folder / "programs" / "README": GRAMMARS,
             folder / "toolchain.toml": detect_toolchain(repo)}
    existing = [str(p) for p in files if p.exists()]
    if existing:
        raise UsageError(f"{existing[0]} exists already; nothing was written")
    for path, text in files.items():
        write_atomic(path, text)
        print(f"wrote {path}")
    print(f"next: `runtime lint` and `runtime explain --role project 'a command'` from {folder.parent}")
    return 0
