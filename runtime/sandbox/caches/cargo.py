"""cargo's target folder (CARGO_TARGET_DIR): the compiled dependencies a build starts from.

cargo judges a unit fresh when none of its source files is newer than its last build, and it names a
workspace crate's files relative to the crate: a unit built from one tree is fresh in another whose files are
older. Modification times are the agent's to set (a copy of its work keeps them), so only units built from
files no run can change are shared: those whose every source (as rustc's dep-info lists them) lies outside the
fill's tree (the registry's crates in cargo's home, the standard library, a build script's output in the
target folder itself). Every other unit is taken out before the seal, with its artifacts, and builds in the
run's own layer.

The fill builds the base's tests (``cargo test --no-run``) over a checkout in which every Rust file of the
workspace is an empty program: the registry's crates build with the features and profiles the manifests ask
for, and no code of the project runs (no build script, no procedural macro, no test). A checkout with a
cargo configuration of its own (`.cargo/config.toml`: a wrapper, a linker, a runner) is not filled at all.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from runtime.sandbox.bwrap import PRIVATE_TMPFS
from runtime.sandbox.caches.kind import FillSite

# What the layers copy rather than link: a unit's fingerprint files and dep-info, the target's own small
# files (cargo rewrites them in place); an artifact (an rlib, an rmeta, a shared object) is written once.
_LINK_FROM_BYTES = 16 * 1024
_EMPTY_PROGRAM = "fn main() {}\n"


class Unsafe(Exception):
    """The checkout would run code of its own while it builds."""


class CargoCache:
    name = "cargo"
    probe = "rust"
    variable = "CARGO_TARGET_DIR"
    fill = "cargo test --no-run --no-fail-fast --offline"

    def prepare(self, tree: Path) -> None:
        for top, dirs, files in os.walk(tree):
            dirs[:] = [d for d in dirs if d not in (".git", "target")]
            if os.path.basename(top) == ".cargo" and any(f in files for f in ("config", "config.toml")):
                raise Unsafe(f"{os.path.relpath(top, tree)}: a cargo configuration of the project's own")
            for name in files:
                path = os.path.join(top, name)
                if name.endswith(".rs") and not os.path.islink(path):
                    with open(path, "w", encoding="utf-8") as fh:
                        fh.write(_EMPTY_PROGRAM)

    def prune(self, folder: Path, site: FillSite) -> None:
        for profile in _profiles(folder):
            kept = {u.name for u in (profile / ".fingerprint").iterdir() if _shared(profile, u.name, site)}
            hashes = {name.rpartition("-")[2] for name in kept}
            for entry in list(profile.iterdir()):
                if entry.name in (".fingerprint", "build", "deps") and entry.is_dir() and not entry.is_symlink():
                    for inner in list(entry.iterdir()):
                        keep = (inner.name in kept if entry.name != "deps"
                                else _unit_hash(inner.name) in hashes)
                        if not keep:
                            _remove(inner)
                else:
                    _remove(entry)  # incremental/, examples/, the workspace's uplifted artifacts, .cargo-lock

    def linked(self, rel: str, size: int) -> bool:
        return size >= _LINK_FROM_BYTES and "/.fingerprint/" not in f"/{rel}" and not rel.endswith(".d")


def _profiles(folder: Path) -> list[Path]:
    """The profile folders (`debug`, `release`, `<target>/debug`): those holding fingerprints."""
    out = []
    for depth in ("*", "*/*"):
        out += [p.parent for p in folder.glob(f"{depth}/.fingerprint") if p.is_dir() and not p.is_symlink()]
    return out


def _shared(profile: Path, unit: str, site: FillSite) -> bool:
    """Whether a unit may be shared: rustc's dep-info of it is there, and names only sources no run can
    change (`_fixed`). A unit without one (a build script's run) is built again in the run's layer."""
    digest = unit.rpartition("-")[2]
    infos = [*profile.glob(f"deps/*-{digest}.d"), *(profile / "build" / unit).glob("*.d")]
    return bool(infos) and all(_fixed(info, site) for info in infos)


def _fixed(info: Path, site: FillSite) -> bool:
    """Whether every source a dep-info file (make's syntax: `target: source source`, spaces escaped) names
    is an absolute path outside the fill's tree and outside the sandbox's private folders (but for what it
    showed read-only there, and the target folder itself, where a build script writes what it generates)."""
    try:
        text = info.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    tree, fixed = str(site.tree), [str(p) for p in site.fixed]
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        for token in line.replace("\\ ", "\0").split():
            path = token.replace("\0", " ")
            if path.endswith(":"):
                continue  # a target: what rustc wrote
            if not path.startswith("/") or _under(path, tree):
                return False
            if any(_under(path, p) for p in PRIVATE_TMPFS) and not any(_under(path, p) for p in fixed):
                return False
    return True


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _unit_hash(name: str) -> str:
    """The unit hash in an artifact's name: `libfoo-0123abcd.rlib`, `foo-0123abcd.d`, `foo-0123abcd`."""
    stem = name.split(".", 1)[0]
    return stem.rpartition("-")[2]


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


CARGO = CargoCache()
