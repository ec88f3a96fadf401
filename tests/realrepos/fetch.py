"""Real open-source projects at pinned versions, fetched once from their registries and cached.

Each download is made with the registry's ordinary client (pip, npm, apt-get), checked against the
sha256 pinned here, and kept under the checkout's `.cache/real-repos/` (ignored by git), so the suite
reaches a registry only the first time on a machine. Several test workers may ask for the same file
at once: each download and unpacking holds a file lock, and a finished result is moved into place
whole, so a worker never sees half of one.

`python -m tests.realrepos.fetch` fetches everything ahead of a run (and prints what it has).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / ".cache" / "real-repos"


class FetchError(Exception):
    """A download that failed, or whose content is not the pinned one."""


@dataclass(frozen=True)
class Download:
    """One file of a registry: `pypi` (an sdist or a wheel), `npm` (a package tarball) or `debian`
    (a binary package of Debian's archive, fetched with `apt-get download`)."""

    registry: str
    name: str
    version: str
    sha256: str
    wheel: bool = False  # pypi: the wheel, not the sdist

    @property
    def key(self) -> str:
        return f"{self.registry}-{self.name.replace('/', '+')}-{self.version}{'-whl' if self.wheel else ''}"

    def fetch(self) -> Path:
        """The verified file in the cache, downloading it the first time."""
        folder = CACHE / "downloads" / self.key
        done = _only_file(folder)
        if done is not None:
            return done
        folder.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(folder) + ".lock"):
            done = _only_file(folder)
            if done is not None:
                return done
            with tempfile.TemporaryDirectory(dir=folder.parent, prefix=".part-") as tmp:
                got = self._download(Path(tmp))
                digest = _sha256(got)
                if digest != self.sha256:
                    raise FetchError(f"{self.registry} {self.name} {self.version}: {got.name} has sha256 {digest}, "
                                     f"pinned {self.sha256}")
                final = Path(tmp) / "final"
                final.mkdir()
                got.rename(final / got.name)
                final.rename(folder)
        result = _only_file(folder)
        assert result is not None
        return result

    def _download(self, into: Path) -> Path:
        if self.registry == "pypi":
            spec = f"{self.name}=={self.version}"
            kind = ["--only-binary", ":all:"] if self.wheel else ["--no-binary", ":all:"]
            _run([sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "-q", *kind,
                  "-d", str(into), spec], into, what=f"pip download {spec}")
        elif self.registry == "npm":
            spec = f"{self.name}@{self.version}"
            _run(["npm", "pack", "--silent", "--cache", str(CACHE / "npm-cache"), "--pack-destination", str(into), spec],
                 into, what=f"npm pack {spec}")
        elif self.registry == "debian":
            spec = f"{self.name}={self.version}"
            try:
                _run(["apt-get", "download", "-q", spec], into, what=f"apt-get download {spec}")
            except FetchError as exc:
                if "Unable to locate" not in str(exc) and "not found" not in str(exc):
                    raise
                # A machine whose package lists were never fetched (a fresh container) knows no package yet.
                _run(["apt-get", "update", "-qq"], into, what="apt-get update")
                _run(["apt-get", "download", "-q", spec], into, what=f"apt-get download {spec}")
        else:
            raise FetchError(f"unknown registry {self.registry!r}")
        found = [p for p in into.iterdir() if p.is_file()]
        if len(found) != 1:
            raise FetchError(f"{self.registry} {self.name} {self.version}: expected one file, got {[p.name for p in found]}")
        return found[0]


def unpacked(download: Download, member: str) -> Path:
    """The folder ``member`` of the download's archive, unpacked once into the cache (read it, never write it).

    ``member`` is a path inside the archive: `more-itertools-10.2.0` of an sdist, `package` of an npm
    tarball, `usr/share/cargo/registry/strsim-0.10.0` of a Debian package."""
    target = CACHE / "src" / download.key
    if (target / ".complete").is_file():
        return target / member
    archive = download.fetch()
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if (target / ".complete").is_file():
            return target / member
        shutil.rmtree(target, ignore_errors=True)
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=".part-") as tmp:
            out = Path(tmp) / "tree"
            out.mkdir()
            if archive.name.endswith(".deb"):
                _run(["dpkg-deb", "-x", str(archive), str(out)], out, what=f"dpkg-deb -x {archive.name}")
            else:
                with tarfile.open(archive) as tar:
                    tar.extractall(out, filter="data")
            if not (out / member).is_dir():
                raise FetchError(f"{archive.name} has no folder {member}")
            (out / ".complete").write_text(download.sha256 + "\n")
            out.rename(target)
    return target / member


def wheels(downloads: tuple[Download, ...]) -> Path:
    """A folder holding exactly these verified wheels, for `pip install --no-index --find-links`."""
    folder = CACHE / "wheels" / hashlib.sha256("\n".join(d.key for d in downloads).encode()).hexdigest()[:16]
    if (folder / ".complete").is_file():
        return folder
    files = [d.fetch() for d in downloads]
    folder.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder) + ".lock"):
        if not (folder / ".complete").is_file():
            shutil.rmtree(folder, ignore_errors=True)
            with tempfile.TemporaryDirectory(dir=folder.parent, prefix=".part-") as tmp:
                out = Path(tmp) / "w"
                out.mkdir()
                for path in files:
                    shutil.copy2(path, out / path.name)
                (out / ".complete").write_text("")
                out.rename(folder)
    return folder


def _only_file(folder: Path) -> Path | None:
    if not folder.is_dir():
        return None
    files = [p for p in folder.iterdir() if p.is_file()]
    return files[0] if len(files) == 1 else None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _run(argv: list[str], cwd: Path, *, what: str) -> None:
    if shutil.which(argv[0]) is None and not os.path.isabs(argv[0]):
        raise FetchError(f"{what}: `{argv[0]}` is not installed")
    try:
        proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise FetchError(f"{what}: no answer in 600 s") from None
    if proc.returncode != 0:
        raise FetchError(f"{what} failed ({proc.returncode}): {(proc.stderr or proc.stdout).strip()[-800:]}")


def npm_tools(specs: tuple[str, ...]) -> Path:
    """A cached `node_modules` holding the dev tools ``specs`` (`c8@10.1.2`) with what they need, installed by
    npm from its registry (lifecycle scripts off). The tools' own versions are pinned; npm resolves what they
    depend on, and npm's cache checks every tarball against the registry's integrity hash."""
    folder = CACHE / "npm-tools" / hashlib.sha256(" ".join(sorted(specs)).encode()).hexdigest()[:16]
    if (folder / "node_modules").is_dir():
        return folder / "node_modules"
    folder.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder) + ".lock"):
        if not (folder / "node_modules").is_dir():
            with tempfile.TemporaryDirectory(dir=folder.parent, prefix=".part-") as tmp:
                Path(tmp, "package.json").write_text("{}\n")
                _run(["npm", "install", "--no-save", "--no-package-lock", "--ignore-scripts", "--no-audit", "--no-fund",
                      "--loglevel=error", "--cache", str(CACHE / "npm-cache"), *specs], Path(tmp),
                     what=f"npm install {' '.join(specs)}")
                Path(tmp, "package.json").unlink()
                Path(tmp).rename(folder)
    return folder / "node_modules"


if __name__ == "__main__":
    from tests.realrepos.projects import PROJECTS

    for project in PROJECTS:
        for download in project.downloads():
            print(f"{download.fetch()}")
