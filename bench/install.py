"""Install-size benchmark, run on demand (`make bench`), never as a timed test.

What installing the runtime costs a machine: the wheel is built from this checkout and installed
with uv into fresh virtual environments, and the installed size (every file under site-packages,
in MB of 10^6 bytes) and the number of distributions (the runtime's own included) are printed side
by side for

1. the core install, `agent-role-runtime` alone: the gate, the hook, spawn and run with scripted
   models and the claude-code backend;
2. with the `models` extra (litellm, for the builtin backend's real models, and mcp, which litellm
   imports without declaring it);
3. the all-in install it was before litellm and mcp left the core (the same packages as 2).

The goal for the core is checked here: under 40 MB and under 20 packages, or the script exits 1.
Downloads come from the package index uv is configured with and are cached by uv, so a second run
measures the same files without fetching them again.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GOAL_MB, GOAL_PACKAGES = 40.0, 20


def uv() -> str:
    found = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if found is None:
        sys.exit("bench/install.py needs uv (in the dev extra: pip install -e '.[dev]')")
    return found


def build_wheel(out: Path) -> Path:
    subprocess.run([uv(), "build", "--wheel", "--quiet", "--out-dir", str(out), str(REPO)], check=True)
    (wheel,) = out.glob("agent_role_runtime-*.whl")
    return wheel


def measure(venv: Path, requirements: list[str]) -> tuple[float, int]:
    """The installed size in MB and the number of distributions of a fresh venv holding ``requirements``."""
    subprocess.run([uv(), "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
    subprocess.run([uv(), "pip", "install", "--quiet", "--python", str(venv / "bin/python"), *requirements], check=True)
    (site,) = venv.glob("lib/python*/site-packages")
    size = sum(p.stat().st_size for p in site.rglob("*") if p.is_file() and not p.is_symlink())
    # `uv venv` seeds no pip or setuptools: every distribution here is one the install pulled.
    packages = sum(1 for p in site.glob("*.dist-info") if p.is_dir())
    return size / 1e6, packages


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="bench-install-") as tmp:
        root = Path(tmp)
        wheel = build_wheel(root / "dist")
        print(f"wheel: {wheel.name}, {wheel.stat().st_size / 1e6:.2f} MB")
        rows = [
            ("core", [str(wheel)]),
            ("[models]", [f"agent-role-runtime[models] @ {wheel.as_uri()}"]),
            ("before: [models] + mcp", [f"agent-role-runtime[models] @ {wheel.as_uri()}", "mcp>=1.0"]),
        ]
        results = {}
        print(f"{'install':<24} {'MB':>8} {'packages':>9}")
        for name, requirements in rows:
            mb, packages = measure(root / f"venv-{len(results)}", requirements)
            results[name] = (mb, packages)
            print(f"{name:<24} {mb:>8.1f} {packages:>9}")
        mb, packages = results["core"]
        before_mb, before_packages = results["before: [models] + mcp"]
        print(f"core against before: {mb / before_mb:.0%} of the size, {packages} of {before_packages} packages")
        ok = mb < GOAL_MB and packages < GOAL_PACKAGES
        print(f"goal (core under {GOAL_MB:.0f} MB and {GOAL_PACKAGES} packages): {'met' if ok else 'MISSED'}")
        return 0 if ok else 1


if __name__ == "__main__":
    os.environ.setdefault("UV_NO_PROGRESS", "1")
    sys.exit(main())
