"""runtime init: a project catalog (`.agent-runtime/`) that extends the shipped one.

It holds only what the project adds or changes: a role extending
`edit-local`, with the place to allow the repository's own tools, and an
empty folder for program grammars. Existing files are never overwritten.
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
# Each names a grammar (programs/<name>.toml, here or shipped) or declares one inline. For example,
# this repository's tests through uv (what runs is the repository's own code: the sandbox contains it):
#
# [[params."tools::bash-allowlist".rules]]
# program = "uv"
# subcommands = ["run pytest"]
# grammar = "pytest"
'''

GRAMMARS = '''Program grammars of this project: one <name>.toml per program, as in the shipped programs/
folder (`runtime lint` checks them and runs their examples). See the README, "programs/<name>.toml".
'''


def run(args) -> int:
    folder = Path(args.path or ".").resolve() / PROJECT_FOLDER
    files = {folder / "roles" / "project.toml": ROLE, folder / "programs" / "README": GRAMMARS}
    existing = [str(p) for p in files if p.exists()]
    if existing:
        raise UsageError(f"{existing[0]} exists already; nothing was written")
    for path, text in files.items():
        write_atomic(path, text)
        print(f"wrote {path}")
    print(f"next: `runtime lint` and `runtime explain --role project 'a command'` from {folder.parent}")
    return 0
