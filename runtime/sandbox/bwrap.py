"""A declarative sandbox description turned into a bubblewrap command prefix.

`SandboxSpec(...).args()` returns `[bwrap, ..., "--"]`; append the agent's
command to it. Mount order matters because later mounts win:

1. the read-only root, a fresh /dev and /proc (of the new PID namespace), and
   a private tmpfs on /tmp — first, so the binds below (worktrees and run
   folders often live under /tmp) are mounted on top of the tmpfs instead of
   being hidden by it;
2. empty tmpfs over the `masked` folders (the orchestrator's own home, with
   its keys and tokens), then the private HOME and the extra binds (sockets,
   run folders, and whatever a masked folder holds that the agent needs, such
   as the Python interpreter) on top of them;
3. the worktree read-only (the tmpfs would hide a worktree under /tmp), then
   the writable paths inside it read-write, unless `read_only_worktree`;
4. the protected paths (`.git`, `.claude`, the policy folder) read-only, last,
   so no earlier read-write bind can uncover them.

Every path must exist: bubblewrap refuses to bind a missing source, so the
caller creates the folders and files it passes (a protected path that does not
exist cannot be protected by a mount; the gate still denies writes to it).
Paths are resolved before use, so a symlink the agent planted in the worktree
between two attempts cannot turn a writable path into one outside it.

As root, bubblewrap does not create a user namespace: `--cap-drop ALL` empties
the capability sets of the sandboxed process, and bubblewrap always sets
PR_SET_NO_NEW_PRIVS, so no exec inside can regain them. bubblewrap adds one
variable to the environment, PWD (the worktree), after `--chdir`.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from runtime.errors import FatalError

# Namespaces and process hygiene, the same for every sandbox.
_FIXED_FLAGS = (
    "--die-with-parent",  # the sandbox gets SIGKILL when bwrap (or its parent) dies
    "--new-session",  # no controlling terminal: no TIOCSTI keystroke injection
    "--unshare-pid",  # when the first process exits, the kernel kills the rest
    "--unshare-ipc",
    "--unshare-uts",
    "--cap-drop", "ALL",
)
_BASE_MOUNTS = (
    "--ro-bind", "/", "/",
    "--dev", "/dev",
    "--proc", "/proc",
    "--tmpfs", "/tmp",
)


class SandboxUnavailable(FatalError):
    """bubblewrap is not installed, so no OS sandbox can be built."""

    def __init__(self) -> None:
        super().__init__(
            "bubblewrap (bwrap) is not installed: install it (e.g. `apt-get install bubblewrap`) "
            "or pass --no-os-sandbox to run the agent without an OS sandbox"
        )


class SandboxSpecError(FatalError):
    """The sandbox description contradicts itself or points outside the worktree."""


def bwrap_path() -> str | None:
    """The bubblewrap executable, or None when it is not installed."""
    return shutil.which("bwrap")


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _overlaps(a: Path, b: Path) -> bool:
    return _inside(a, b) or _inside(b, a)


@dataclass
class SandboxSpec:
    """What one sandboxed process may see and touch.

    `writable` are existing paths inside the worktree bound read-write;
    `readonly` are protected paths re-bound read-only after them (the
    worktree's `.git`, `.claude`, the policy or bundle folder); the rest of the
    worktree is read-only. With `read_only_worktree` the whole worktree is
    read-only whatever `writable` says (a verify run reuses the task's spec
    that way). `home` is a private folder bound read-write; `extra_binds_rw` and
    `extra_binds_ro` are folders outside the worktree the agent needs (a folder
    holding a Unix socket, a run folder). `masked` folders are hidden behind an
    empty tmpfs (binds listed above are mounted on top again). `env` is the
    complete environment: nothing is inherited.
    """

    worktree: Path
    home: Path
    writable: list[Path] = field(default_factory=list)
    readonly: list[Path] = field(default_factory=list)
    read_only_worktree: bool = False
    network: bool = False
    extra_binds_rw: list[Path] = field(default_factory=list)
    extra_binds_ro: list[Path] = field(default_factory=list)
    masked: list[Path] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    # ("ro" | "rw", path) mounted in this order after the extra binds and before the worktree:
    # a read-only folder with writable folders inside it (the claude-code backend's ~/.claude).
    late_binds: list[tuple[str, Path]] = field(default_factory=list)

    def expose(self, paths) -> None:
        """Bind read-only whichever of ``paths`` the sandbox would hide: paths under a masked
        folder or under /tmp (which is private inside), outside the worktree and not yet bound."""
        hiding = [Path(m).resolve() for m in self.masked] + [Path("/tmp")]
        worktree = Path(self.worktree).resolve()
        bound = [Path(p).resolve() for p in (*self.extra_binds_ro, *self.extra_binds_rw, self.home)]
        for path in (Path(p).resolve() for p in paths):
            if not path.exists() or _overlaps(path, worktree) or any(_inside(path, b) for b in bound):
                continue
            if any(_inside(path, h) for h in hiding):
                self.extra_binds_ro.append(path)
                bound.append(path)

    def args(self, bwrap: str | None = None) -> list[str]:
        """The command prefix: the bwrap executable, its options, and `--`."""
        exe = bwrap or bwrap_path()
        if exe is None:
            raise SandboxUnavailable()
        worktree = self._resolve(self.worktree, "worktree")
        home = self._resolve(self.home, "home")
        writable = [self._resolve(p, "writable path") for p in self.writable]
        readonly = [self._resolve(p, "read-only path") for p in self.readonly]
        extra_rw = [self._resolve(p, "extra read-write bind") for p in self.extra_binds_rw]
        extra_ro = [self._resolve(p, "extra read-only bind") for p in self.extra_binds_ro]
        for path in writable:
            if not _inside(path, worktree):
                raise SandboxSpecError(f"writable path {path} is outside the worktree {worktree}")
        for path in (home, *extra_rw, *extra_ro):
            if _overlaps(path, worktree):
                raise SandboxSpecError(f"{path} overlaps the worktree {worktree}: bind it through writable or readonly")

        out = [exe, *_FIXED_FLAGS]
        if not self.network:
            out.append("--unshare-net")
        out += _BASE_MOUNTS
        for path in (self._resolve(p, "masked folder") for p in self.masked):
            out += ["--tmpfs", str(path)]
        out += ["--bind", str(home), str(home)]
        for path in extra_rw:
            out += ["--bind", str(path), str(path)]
        for path in extra_ro:
            out += ["--ro-bind", str(path), str(path)]
        for mode, path in self.late_binds:
            if mode not in ("ro", "rw"):
                raise SandboxSpecError(f"late bind mode {mode!r} is neither ro nor rw")
            path = self._resolve(path, "late bind")
            if _overlaps(path, worktree):
                raise SandboxSpecError(f"{path} overlaps the worktree {worktree}: bind it through writable or readonly")
            out += ["--ro-bind" if mode == "ro" else "--bind", str(path), str(path)]
        out += ["--ro-bind", str(worktree), str(worktree)]
        for path in [] if self.read_only_worktree else writable:
            out += ["--bind", str(path), str(path)]
        for path in readonly:
            out += ["--ro-bind", str(path), str(path)]
        out.append("--clearenv")
        for name, value in self.env.items():
            if not name or "=" in name or "\0" in name or "\0" in value:
                raise SandboxSpecError(f"environment variable {name!r} cannot be passed to the sandbox")
            out += ["--setenv", name, value]
        out += ["--chdir", str(worktree), "--"]
        return out

    @staticmethod
    def _resolve(path: Path, what: str) -> Path:
        path = Path(path)
        if not path.is_absolute():
            raise SandboxSpecError(f"{what} {path} must be an absolute path")
        return path.resolve()
