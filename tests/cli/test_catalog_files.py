"""A project catalog's files never pass for another program's configuration.

A grammar is named after its program, and programs find their configuration by
file name: `programs/ruff.toml` made `ruff check .` fail at the repository's
root ("unknown field `examples`"). Grammars are `<name>.program.toml`; here the
real ruff, pytest, mypy, cargo and npm run at the root of a repository holding
a project catalog with grammars of their own names, and `runtime migrate`
renames grammar files of the old naming.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, require, run_cli

BIN = Path(sys.executable).parent
TOOLS = ("ruff", "pytest", "mypy", "cargo", "npm")


def _project(root: Path, *, old_names: bool) -> Path:
    """A repository a person might run all five tools in, with the shipped grammars of those tools copied into
    its project catalog (under the old names, or the new)."""
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "src/pkg").mkdir(parents=True)
    (root / "src/pkg/__init__.py").write_text("def add(a: int, b: int) -> int:\n    return a + b\n")
    (root / "tests").mkdir()
    (root / "tests/test_add.py").write_text("from pkg import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n")
    (root / "pyproject.toml").write_text('[project]\nname = "pkg"\nversion = "0.1"\n\n'
                                         '[tool.pytest.ini_options]\npythonpath = ["src"]\n')
    (root / "Cargo.toml").write_text('[package]\nname = "probe"\nversion = "0.1.0"\nedition = "2021"\n')
    (root / "src/lib.rs").write_text("pub fn add(a: i32, b: i32) -> i32 { a + b }\n")
    (root / "package.json").write_text(json.dumps({"name": "probe", "version": "1.0.0", "private": True,
                                                   "scripts": {"test": "node --version"}}))
    programs = root / ".agent-runtime/programs"
    programs.mkdir(parents=True)
    for name in TOOLS:
        target = programs / (f"{name}.toml" if old_names else f"{name}.program.toml")
        shutil.copyfile(REPO / "programs" / f"{name}.program.toml", target)
    return programs


def _run(argv: list[str], cwd: Path, tmp: Path) -> subprocess.CompletedProcess:
    cargo = Path(shutil.which("cargo") or "/nonexistent/cargo").parent
    env = {"PATH": f"{BIN}:{cargo}:/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp / "home"),
           "CARGO_TARGET_DIR": str(tmp / "target"), "CARGO_HOME": str(Path.home() / ".cargo"),
           "RUSTUP_HOME": str(Path.home() / ".rustup"), "npm_config_cache": str(tmp / "npm-cache"),
           "MYPY_CACHE_DIR": str(tmp / "mypy-cache"), "RUFF_CACHE_DIR": str(tmp / "ruff-cache")}
    (tmp / "home").mkdir(exist_ok=True)
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _need_tools() -> None:
    require(shutil.which("cargo") is not None, "cargo is not installed")
    require(shutil.which("npm") is not None, "npm is not installed")


def _cargo() -> str:
    return shutil.which("cargo") or "cargo"


def test_the_tools_run_clean_beside_a_project_catalog_of_grammars_named_after_them(tmp_path):
    _need_tools()
    repo = tmp_path / "repo"
    programs = _project(repo, old_names=False)
    assert sorted(p.name for p in programs.iterdir()) == sorted(f"{n}.program.toml" for n in TOOLS)
    runs = {
        "ruff": ([str(BIN / "ruff"), "check", "."], repo),
        "pytest": ([str(BIN / "pytest"), "-q", "-p", "no:cacheprovider"], repo),
        "mypy": ([str(BIN / "mypy"), "src/pkg"], repo),
        "cargo": ([_cargo(), "check", "--offline", "-q"], repo),
        "npm": (["npm", "test", "--silent"], repo),
    }
    for name, (argv, cwd) in runs.items():
        proc = _run(argv, cwd, tmp_path)
        assert proc.returncode == 0, f"{name}: {proc.stdout}{proc.stderr}"
    # Run from the catalog's own folder, pytest and ruff look for their configuration there first.
    inside = _run([str(BIN / "pytest"), "-q", "-p", "no:cacheprovider", "."], programs, tmp_path)
    assert inside.returncode == 5 and "configuration" not in inside.stdout + inside.stderr  # 5: no tests, no error
    assert _run([str(BIN / "ruff"), "check", "."], programs, tmp_path).returncode == 0
    # The catalog is one the runtime reads: the project's grammars replace the shipped ones of their names.
    lint = run_cli("lint", "--json", cwd=repo)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_grammars_of_the_old_naming_are_refused_and_migrate_renames_them(tmp_path):
    repo = tmp_path / "repo"
    programs = _project(repo, old_names=True)
    # The old naming is what broke: ruff reads `ruff.toml` as its configuration.
    broken = _run([str(BIN / "ruff"), "check", "."], repo, tmp_path)
    assert broken.returncode == 2 and "unknown field `examples`" in broken.stderr
    lint = run_cli("lint", cwd=repo)
    assert lint.returncode == 1
    assert ("error: .agent-runtime/programs/ruff.toml:1: a grammar's file is named `<name>.program.toml`: rename it to "
            "`ruff.program.toml`") in lint.stderr
    check = run_cli("migrate", "--check", cwd=repo)
    assert check.returncode == 1 and sorted(p.name for p in programs.iterdir()) == sorted(f"{n}.toml" for n in TOOLS)
    assert ".agent-runtime/programs/cargo.toml:1: a grammar's file is named `<name>.program.toml` now" in check.stdout
    before = {p.name: p.read_bytes() for p in programs.iterdir()}
    migrate = run_cli("migrate", "--json", cwd=repo)
    assert migrate.returncode == 0, migrate.stderr
    assert {r["new"] for r in json.loads(migrate.stdout)["renamed"]} == {f".agent-runtime/programs/{n}.program.toml"
                                                                        for n in TOOLS}
    after = {p.name: p.read_bytes() for p in programs.iterdir()}
    assert after == {f"{Path(name).stem}.program.toml": data for name, data in before.items()}  # renamed, not changed
    assert _run([str(BIN / "ruff"), "check", "."], repo, tmp_path).returncode == 0
    assert run_cli("lint", cwd=repo).returncode == 0
    again = run_cli("migrate", "--check", cwd=repo)
    assert again.returncode == 0 and again.stdout == ""


def test_migrate_refuses_a_rename_onto_an_existing_grammar_and_writes_nothing(tmp_path):
    repo = tmp_path / "repo"
    programs = _project(repo, old_names=True)
    shutil.copyfile(programs / "npm.toml", programs / "npm.program.toml")
    before = {p.name: p.read_bytes() for p in programs.iterdir()}
    proc = run_cli("migrate", cwd=repo)
    assert proc.returncode == 1
    assert proc.stderr.strip() == ("error: .agent-runtime/programs/npm.toml:1: has the old name, and `npm.program.toml` "
                                   "exists too: keep one of them (the grammar is read from the new name only)")
    assert {p.name: p.read_bytes() for p in programs.iterdir()} == before
