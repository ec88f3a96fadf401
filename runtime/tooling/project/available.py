"""Whether a command's program is there to run: a task whose check cannot start fails the first time.

Looked for where the sandbox finds programs: the repository's toolchain folders
(`.venv/bin`, `node_modules/.bin`), the system's folders, and the host's cargo
and go for their presets. A Python module run with `-m` is looked for in the
standard library and the virtualenv's site-packages. Nothing is run to find out.
"""

from __future__ import annotations

import glob
import json
import re
import shlex
import shutil
import sys
from pathlib import Path

from runtime.gate.package_scripts import script_named

SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


def _words(command: str) -> list[str]:
    words = shlex.split(command)
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        words = words[1:]
    if words[:3] == ["uv", "run", "--no-sync"]:
        words = words[3:]
    return words


def _program(root: Path, name: str) -> bool:
    for folder in (root / ".venv" / "bin", root / "node_modules" / ".bin"):
        if (folder / name).is_file():
            return True
    return shutil.which(name, path=SYSTEM_PATH) is not None


def _module(root: Path, module: str) -> bool:
    top = module.split(".")[0]
    if top in sys.stdlib_module_names:
        return True
    venv = root / ".venv"
    patterns = [str(venv / "lib" / "python*" / "site-packages")] if venv.is_dir() else [
        "/usr/lib/python3/dist-packages", "/usr/local/lib/python3*/dist-packages", "/usr/lib/python3*/site-packages"]
    for folder in (p for pattern in patterns for p in glob.glob(pattern)):
        if (Path(folder) / top).is_dir() or (Path(folder) / f"{top}.py").is_file():
            return True
    return False


def missing(root: Path, command: str) -> str | None:
    """Why ``command`` cannot start in ``root``'s sandbox, or None when its program is there."""
    words = _words(command)
    if not words:
        return "nothing to run"
    program, args = words[0], words[1:]
    if program == "cargo":
        sub = next((a for a in args if not a.startswith("-")), "")
        if shutil.which("cargo") is None:
            return "cargo is not installed on this machine"
        helper = {"clippy": "cargo-clippy", "fmt": "cargo-fmt"}.get(sub)
        if helper and shutil.which(helper) is None:
            return f"`cargo {sub}` needs {helper}, which is not installed (rustup component add {sub.replace('fmt', 'rustfmt')})"
        return None
    if program == "go":
        return None if shutil.which("go") else "go is not installed on this machine"
    if program == "npm":
        if shutil.which("npm", path=SYSTEM_PATH) is None:
            return "npm is not installed on this machine"
        manifest = root / "package.json"
        if manifest.is_file() and '"devDependencies"' in manifest.read_text(errors="replace") \
                and not (root / "node_modules").is_dir():
            return "node_modules is missing: install the packages (npm install), then run `runtime init` again"
        return _npm_script(root, args)
    if re.match(r"^python3?$", program) and args[:1] == ["-m"] and len(args) > 1:
        if not _program(root, program):
            return f"{program} is not installed"
        if not _module(root, args[1]):
            where = ".venv" if (root / ".venv").is_dir() else "the system's Python (no .venv)"
            return f"the module `{args[1]}` is not installed in {where}"
        return None
    if not _program(root, program):
        where = ".venv/bin, node_modules/.bin" if (root / ".venv").is_dir() or (root / "node_modules").is_dir() else "no .venv or node_modules"
        return f"`{program}` is not installed here ({where}, {SYSTEM_PATH.replace(':', ', ')})"
    return None


_SCRIPT_SPLIT = re.compile(r"&&|\|\||[;|&]")
_NPM_DEPTH = 8  # scripts calling scripts; deeper (or a cycle) is not followed


def _npm_script(root: Path, args: list[str], depth: int = 0) -> str | None:
    """Why the package.json script that ``npm ARGS`` runs cannot start: a program it runs that neither
    node_modules/.bin nor the system has (`c8`, `eslint` of devDependencies never installed). The
    script is read as text, never run; a segment that is not a plain command is left to the run."""
    name = script_named(args)
    if name is None:
        return None
    try:
        scripts = json.loads((root / "package.json").read_text(encoding="utf-8")).get("scripts") or {}
    except (OSError, ValueError, AttributeError):
        return None
    script = scripts.get(name) if isinstance(scripts, dict) else None
    if not isinstance(script, str) or depth > _NPM_DEPTH:
        return None
    for segment in _SCRIPT_SPLIT.split(script):
        try:
            words = _words(segment)
        except ValueError:
            continue
        if not words:
            continue
        if words[0] == "npm":
            if why := _npm_script(root, words[1:], depth + 1):
                return why
        elif re.fullmatch(r"[A-Za-z0-9_.@-]+", words[0]) and not _program(root, words[0]):
            return (f"the script `{name}` runs `{words[0]}`, which node_modules/.bin does not have: install the "
                    "dev dependencies (npm install), then run `runtime init` again")
    return None
