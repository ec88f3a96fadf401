"""A declarative sandbox description turned into a bubblewrap command prefix.

`SandboxSpec(...).args()` returns `[bwrap, ..., "--", (setpriv ... --)]`;
append the agent's command to it. `grant()` first lets the agent's uid write
what it may write on the host side (see `runtime.sandbox.identity`).

The root the agent sees is built from nothing, not the host's `/` bound
whole: the system folders programs need (`/usr`, `/etc`, `/opt` and the
merged-usr links) read-only, a fresh `/dev`, a `/proc` of the sandbox's own
PID namespace with the kernel's knobs (`/proc/sys`, `/proc/sysrq-trigger`,
`/proc/irq`, `/proc/bus`) bound read-only over it, private tmpfs on `/tmp`,
`/var/tmp`, `/dev/shm` and `/run`, each sized from the run's memory limit. Nothing else of the host exists inside: no
`/home`, `/root`, `/srv`, `/mnt`, `/var/run`, so no pathname socket of the host
(Docker, containerd, D-Bus, a test server's) can be reached; every sandbox has
its own network namespace, so neither can an abstract or TCP one.

Mount order matters because later mounts win:

1. the system folders, /dev, /proc and the tmpfs folders — first, so the binds
   below (worktrees and run folders often live under /tmp) are mounted on top
   of the tmpfs instead of being hidden by it;
2. empty tmpfs over the `masked` folders, then the private HOME and the extra
   binds (sockets, run folders, the interpreter and the runtime), then the
   `late_binds` in their order, then the run's layers of the toolchain's
   build caches read-write in its private /tmp (`cache_binds`);
3. the worktree read-only, then the folders of the scope's files and the
   writable paths inside it read-write, then the folders inside those folders
   read-only again, unless `read_only_worktree`; or, for verify's commands,
   a throwaway copy of the worktree read-write in its place (`scratch`);
4. the protected paths (`.git`, `.claude`, the policy folder) and the control
   paths read-only, last, so no earlier read-write bind can uncover them. A
   control path that does not exist is made for the sandbox's life (an empty
   folder or file, `make_placeholders`) and bound read-only too, so it cannot
   be created inside; it is removed when the sandbox has ended.

Every path must exist: bubblewrap refuses to bind a missing source, so the
caller creates the folders and files it passes. Paths are resolved before use,
so a symlink the agent planted in the worktree between two attempts cannot
turn a writable path into one outside it.

Who runs inside. A root orchestrator runs bubblewrap as root (it alone can
reach bind sources in root-only folders such as `/root/...`) and hands the
sandbox's first process only CAP_SETUID, CAP_SETGID and CAP_SETPCAP, which
`setpriv` spends at once: it switches to the agent's unprivileged host uid and
gid, clears the supplementary groups, empties the bounding and inheritable
sets and sets no_new_privs, then executes the agent. (A user namespace created
by root maps the inside uid to host uid 0, which still writes sysctls; an
unprivileged bubblewrap cannot reach root-only bind sources. The uid switch is
what the attacks needed undone.) An orchestrator that is not root runs
bubblewrap unprivileged in a new user namespace (`--unshare-user`,
`--disable-userns`: no nested one). Either way the seccomp filter of
`runtime.sandbox.seccomp` is loaded by bubblewrap from a descriptor before the
first exec. bubblewrap adds one variable to the environment, PWD (the
worktree), after `--chdir`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.errors import FatalError
from runtime.sandbox.identity import AgentUser, agent_user
from runtime.workspace.tree import walk

if TYPE_CHECKING:
    from runtime.sandbox.caches.kind import CacheSlot

# Namespaces and process hygiene, the same for every sandbox.
_FIXED_FLAGS = (
    "--die-with-parent",  # the sandbox gets SIGKILL when bwrap (or its parent) dies
    "--new-session",  # no controlling terminal: no TIOCSTI keystroke injection
    "--unshare-pid",  # when the first process exits, the kernel kills the rest
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-net",  # always: the only ways out are the relays the orchestrator binds in
    "--unshare-cgroup-try",
)
# Host folders every sandbox sees read-only (the ones that exist); merged-usr links are re-created as links.
SYSTEM_FOLDERS = ("/usr", "/etc", "/opt")
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
KERNEL_KNOBS = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus")
PRIVATE_TMPFS = ("/tmp", "/var/tmp", "/dev/shm", "/run")
# What each private tmpfs may hold, as a share of the run's memory limit (`SandboxSpec.tmpfs_mb`): /tmp
# takes builds (cargo's target folder) and test files, the others little. Their pages are memory, charged
# to the run's cgroup with the rest; where there is none, these sizes are the only bound on them, and
# together they hold at most 1.5 times the memory limit plus TMPFS_SMALL_MB for each small mount.
TMPFS_SHARE = {"/tmp": 1.0, "/var/tmp": 0.25, "/dev/shm": 0.25}
TMPFS_SMALL_MB = 16  # /run and the empty tmpfs over masked folders
# The capabilities setpriv needs to drop to the agent's uid; it leaves none.
_SWITCH_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP")
# The folders inside the scope's file folders bound read-only again, at most, in one sandbox: bubblewrap's
# set-up time grows with the square of its mounts (measured with 0.8: 50 binds 47 ms, 128 binds 166 ms,
# 500 binds 1.3 s). A file folder whose folders do not fit stays writable whole; verify judges it.
MAX_READ_ONLY_AGAIN = 64
# The same for the existing files beside the scope's files (`README.md` beside `setup.py`), bound read-only
# again so that a script can neither rewrite nor delete them (a mount point cannot be unlinked or renamed
# over). Past the budget, the rest stay writable; verify rejects a change of any of them.
MAX_READ_ONLY_FILES = 64


class SandboxUnavailable(FatalError):
    """No OS sandbox can be built here (bubblewrap missing, no user namespaces, ...)."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (
            "bubblewrap (bwrap) is not installed: install it (e.g. `apt-get install bubblewrap`) "
            "or pass --no-os-sandbox to run the agent without an OS sandbox"
        ))


class SandboxSpecError(FatalError):
    """The sandbox description contradicts itself or points outside the worktree."""


def bwrap_path() -> str | None:
    """The bubblewrap executable, or None when it is not installed."""
    return shutil.which("bwrap")


def setpriv_path() -> str:
    """util-linux's setpriv, which a root orchestrator's sandboxes start with."""
    path = shutil.which("setpriv") or ("/usr/bin/setpriv" if os.path.exists("/usr/bin/setpriv") else None)
    if path is None:
        raise SandboxUnavailable("setpriv (util-linux) is not installed, so a root orchestrator cannot run its "
                                 "agents as an unprivileged user: install util-linux or run as another user")
    return path


@cache
def check_user_namespaces(bwrap: str) -> None:
    """An unprivileged bubblewrap needs user namespaces: refuse with one line when the kernel has none."""
    probe = subprocess.run([bwrap, "--unshare-user", "--ro-bind", "/", "/", "true"], capture_output=True, text=True,
                           timeout=30)
    if probe.returncode != 0:
        detail = (probe.stderr.strip().splitlines() or ["no detail"])[-1]
        raise SandboxUnavailable(
            f"this kernel does not let an unprivileged user create user namespaces ({detail}), so no sandbox "
            "can be built: enable them (sysctl user.max_user_namespaces, kernel.unprivileged_userns_clone), run "
            "the orchestrator as root, or pass --no-os-sandbox")


def _inside(path: Path, root: Path) -> bool:
    # By the strings of resolved absolute paths: `root in path.parents` builds and compares a Path
    # per ancestor, and a sandbox's spec asks this thousands of times.
    p, r = str(path), str(root)
    return p == r or p.startswith(r if r.endswith("/") else r + "/")


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _overlaps(a: Path, b: Path) -> bool:
    return _inside(a, b) or _inside(b, a)


def _tmpfs(name: str, memory_mb: int | None) -> list[str]:
    """bubblewrap's options for a private tmpfs at ``name``, sized from the run's memory limit."""
    if memory_mb is None:
        return ["--tmpfs", name]
    size = max(1, int(memory_mb * TMPFS_SHARE[name])) if name in TMPFS_SHARE else min(TMPFS_SMALL_MB, memory_mb)
    return ["--size", str(size * 1024 * 1024), "--tmpfs", name]


def _system_mounts(tmpfs_mb: int | None = None) -> list[str]:
    out: list[str] = []
    for name in SYSTEM_LINKS:
        if os.path.islink(name):
            out += ["--symlink", os.readlink(name), name]
        elif os.path.isdir(name):
            out += ["--ro-bind", name, name]
    for name in SYSTEM_FOLDERS:
        if os.path.isdir(name):
            out += ["--ro-bind", name, name]
    out += ["--dev", "/dev", "--proc", "/proc"]
    for name in KERNEL_KNOBS:
        out += ["--ro-bind-try", name, name]
    for name in PRIVATE_TMPFS:
        out += ["--perms", "1777", *_tmpfs(name, tmpfs_mb)]
    return out


def _parents(paths: Iterable[Path]) -> list[Path]:
    """Every ancestor of ``paths`` the sandbox's own root does not already provide, shallowest first."""
    provided = [Path(n) for n in (*SYSTEM_FOLDERS, *SYSTEM_LINKS, "/dev", "/proc")]
    out: set[Path] = set()
    for path in paths:
        for parent in path.parents:
            if parent != Path("/") and str(parent) not in PRIVATE_TMPFS and not any(_inside(parent, p) for p in provided):
                out.add(parent)
    return sorted(out, key=lambda p: (len(p.parts), str(p)))


def system_visible(path: Path) -> bool:
    """Whether the sandbox shows ``path`` (resolved) without a bind of its own."""
    return any(_inside(path, Path(name)) for name in SYSTEM_FOLDERS) and not any(
        _inside(path, Path(name)) for name in PRIVATE_TMPFS)


def _grant_tree(root: Path, gid: int) -> None:
    """Make ``root`` and everything under it group-writable by ``gid`` without changing owners.

    Owners stay the orchestrator's, so git's `safe.directory` ownership check still trusts the
    worktree; the setgid bit on folders gives what the agent creates the same group. Symlinks are
    never followed, and a file with more than one hard link is left alone: it may be a link the
    agent planted to a file it must not be handed. The walk is descriptor-relative
    (`runtime.workspace.tree`): what an earlier attempt left (any depth, any mode) cannot stop it.
    """
    try:
        st = os.lstat(root)
    except FileNotFoundError:
        return
    if stat.S_ISREG(st.st_mode):
        _grant_entry(os.open(root.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), root.name, gid, close=True)
        return
    if not stat.S_ISDIR(st.st_mode):
        return
    parent = os.open(root.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        _grant_entry(parent, root.name, gid)
    finally:
        os.close(parent)
    for folder in walk(root, paths=False):
        for name in [*folder.dirs, *(e.name for e in folder.others)]:
            _grant_entry(folder.fd, name, gid)


def _grant_folder(folder: Path, names: Iterable[str], gid: int) -> None:
    """Let ``gid`` make, rename and remove entries in ``folder`` (not in the folders inside it), and
    write the existing regular files among ``names`` in it."""
    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            return
    except FileNotFoundError:
        return
    parent = os.open(folder.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        _grant_entry(parent, folder.name, gid)
    finally:
        os.close(parent)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                if stat.S_ISREG(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                    _grant_entry(fd, name, gid)
    finally:
        os.close(fd)


def _subfolders(folder: Path) -> list[Path]:
    """The folders directly inside ``folder`` (never a symlink: binding one would bind its target)."""
    with os.scandir(folder) as entries:
        return sorted(folder / e.name for e in entries if e.is_dir(follow_symlinks=False))


def _files(folder: Path) -> list[Path]:
    """The regular files directly inside ``folder`` (never a symlink: binding one would bind its target)."""
    with os.scandir(folder) as entries:
        return sorted(folder / e.name for e in entries if e.is_file(follow_symlinks=False))


def _grant_entry(fd: int, name: str, gid: int, *, close: bool = False) -> None:
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        is_dir, is_reg = stat.S_ISDIR(st.st_mode), stat.S_ISREG(st.st_mode)
        if not (is_dir or is_reg) or (is_reg and st.st_nlink > 1):
            return
        wanted = stat.S_IMODE(st.st_mode) | stat.S_IRGRP | stat.S_IWGRP
        if is_dir:
            wanted |= stat.S_IXGRP | stat.S_ISGID
        if st.st_gid != gid:
            os.chown(name, -1, gid, dir_fd=fd, follow_symlinks=False)
        # chown clears setgid bits. No symlink stands here (lstat said otherwise, and nothing runs in the
        # tree while the orchestrator grants it); Linux has no fchmodat(AT_SYMLINK_NOFOLLOW).
        if stat.S_IMODE(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode) != wanted:
            os.chmod(name, wanted, dir_fd=fd)
    except FileNotFoundError:
        pass
    finally:
        if close:
            os.close(fd)


def alive_check(fd: int) -> list[str]:
    """The sandbox's first command: stop unless the orchestrator still holds the pipe behind ``fd``,
    and leave a watcher that kills everything inside the moment the orchestrator lets go of it.

    bubblewrap arms --die-with-parent in its inner process only after it has set the sandbox up; an
    orchestrator that dies before leaves that process running, with no one to kill it. The check
    covers a death before this runs: the orchestrator (the only holder of the pipe's write end,
    which it never writes) died if and only if the pipe reads as ended, and then nothing starts.

    The watcher covers the rest. bubblewrap's init (pid 1 of the sandbox) arms its own parent-death
    signal only after it has forked the command, so a death just after the check can leave init,
    and the command with it, running on: seen once in CI. The watcher blocks on the pipe and, when
    it ends, SIGKILLs every process of the sandbox's PID namespace it may signal (kill -1 reaches
    nothing outside: --unshare-pid is always on, and pid 1 ignores it). Its output goes nowhere, so
    it never holds the agent's pipes open; it dies with the namespace when the command ends.
    """
    script = (f'if read -t 0 -u {fd}; then echo "the orchestrator died before the sandbox started" >&2; exit 125; fi; '
              f'{{ read -r -u {fd}; kill -KILL -1; }} </dev/null >/dev/null 2>&1 & '
              f'exec {fd}<&-; exec /usr/bin/env -u SHLVL -u _ "$@"')  # the environment bash adds, taken back
    return ["/bin/bash", "-c", script, "bash"]


@dataclass
class SandboxSpec:
    """What one sandboxed process may see and touch.

    `writable` are existing paths inside the worktree bound read-write, with
    all they hold; `file_folders` are folders bound read-write for the files
    the scope names in them, with the folders inside them read-only again;
    `readonly` are protected paths re-bound read-only after them (the
    worktree's `.git`, `.claude`, the policy or bundle folder); the rest of the
    worktree is read-only. With `read_only_worktree` the whole worktree is
    read-only whatever `writable` says. With `scratch`, a throwaway copy is
    shown read-write in the worktree's place instead (verify's commands). `home` is a private folder bound read-write; `extra_binds_rw` and
    `extra_binds_ro` are folders outside the worktree the agent needs (a folder
    holding a Unix socket, a run folder, the interpreter). `masked` folders are
    hidden behind an empty tmpfs (binds listed above are mounted on top again).
    `env` is the complete environment: nothing is inherited. `user` is the host
    identity the processes switch to: by default the agent user of a root
    orchestrator, None (stay as the orchestrator) otherwise; a root
    orchestrator can never run a sandbox as root.
    """

    worktree: Path
    home: Path
    writable: list[Path] = field(default_factory=list)
    # (folder, the names in it the write scope holds): the folder of a file the scope names, and the nearest
    # existing folder of a path it names that does not exist yet. An atomic write (Claude Code's Edit and
    # Write) makes a temporary file beside its target and renames it over the target, so the folder itself
    # must take new names, and the target must not be a mount point of its own (a rename over one fails).
    # The folders and the other files inside it are bound read-only again (see MAX_READ_ONLY_AGAIN and
    # MAX_READ_ONLY_FILES); a file made there that the scope does not name is refused by the gate and thrown
    # away before verify (runtime.spawn.scratch_writes). Granted: the folder and those names.
    file_folders: list[tuple[Path, tuple[str, ...]]] = field(default_factory=list)
    readonly: list[Path] = field(default_factory=list)
    read_only_worktree: bool = False
    # A throwaway copy of the worktree (`runtime.sandbox.scratch`), made for `user`, shown read-write at the
    # worktree's path in its place (and at the main checkout's path, where the toolchain shows the worktree):
    # tests and checks may write scratch files anywhere in the tree, as on their developers' machines, and
    # nothing they write reaches the worktree. `.git`, the control files and the toolchain stay read-only.
    scratch: Path | None = None
    # Files of the scratch copy (relative paths) bound read-only over themselves: what a test run must hold as
    # the orchestrator laid it (a sealed test's stub, `runtime.verify.sealed`): neither changed nor replaced.
    scratch_readonly: tuple[str, ...] = ()
    extra_binds_rw: list[Path] = field(default_factory=list)
    extra_binds_ro: list[Path] = field(default_factory=list)
    masked: list[Path] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    # ("ro" | "rw", path) mounted in this order after the extra binds and before the worktree:
    # a read-only folder with writable folders inside it (the claude-code backend's ~/.claude).
    late_binds: list[tuple[str, Path]] = field(default_factory=list)
    # (source, destination) read-only, mounted after the writable paths (and before the protected ones):
    # the repository's toolchain, in the worktree and at the main checkout's paths (runtime.sandbox.toolchain).
    toolchain_binds: list[tuple[Path, Path]] = field(default_factory=list)
    # (path, is a folder) inside the worktree, read-only whether or not they exist: the control files
    # (runtime.manifests.control) and the base's submodule folders. One that is absent gets a
    # placeholder for the sandbox's life; a symlink is bound at its target, or left out when dangling.
    control: list[tuple[Path, bool]] = field(default_factory=list)
    user: AgentUser | None = field(default_factory=agent_user)
    # The run's memory limit, in MiB, which sizes the private tmpfs mounts (TMPFS_SHARE); None: unsized.
    tmpfs_mb: int | None = None
    # The toolchain's build caches this sandbox starts from (`runtime.sandbox.caches`): each start gets a fresh
    # layer of its own (`runtime.sandbox.launch.sandboxed`), which it binds read-write as `cache_binds`:
    # (the layer, where the sandbox shows it: a folder of its private /tmp).
    caches: tuple[CacheSlot, ...] = ()
    cache_binds: tuple[tuple[Path, Path], ...] = ()

    def expose(self, paths: Iterable[Path]) -> None:
        """Bind read-only whichever of ``paths`` the sandbox would not show: anything outside the
        system folders, or under a masked folder or a private tmpfs; never the worktree, never twice."""
        masked = [Path(m).resolve() for m in self.masked]
        worktree = Path(self.worktree).resolve()
        bound = [Path(p).resolve() for p in (*self.extra_binds_ro, *self.extra_binds_rw, self.home)]
        for path in (Path(p).resolve() for p in paths):
            if not path.exists() or _overlaps(path, worktree) or any(_inside(path, b) for b in bound):
                continue
            if not system_visible(path) or any(_inside(path, m) for m in masked):
                self.extra_binds_ro.append(path)
                bound.append(path)

    def make_placeholders(self) -> list[tuple[Path, int]]:
        """Create the control paths that do not exist (an empty folder, or an empty read-only file), so the
        sandbox can bind them read-only; returns them for `remove_placeholders`."""
        made: list[tuple[Path, int]] = []
        for path, folder in self.control:
            if os.path.lexists(path) or not os.path.isdir(path.parent) or os.path.islink(path.parent):
                continue
            if folder:
                os.mkdir(path, 0o755)
            else:
                os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, 0o444))
            made.append((path, os.lstat(path).st_ino))
        return made

    @staticmethod
    def remove_placeholders(made: list[tuple[Path, int]]) -> None:
        """Remove the placeholders the sandbox no longer covers, if they are still the empty ones made."""
        for path, ino in made:
            try:
                st = os.lstat(path)
                if st.st_ino != ino:
                    continue
                if stat.S_ISDIR(st.st_mode):
                    os.rmdir(path)  # fails, and stays, if anything is inside
                elif stat.S_ISREG(st.st_mode) and st.st_size == 0:
                    os.unlink(path)
            except OSError:
                pass

    def grant(self) -> None:
        """Let the agent's uid write what the sandbox binds writable: its home (it owns it) and the
        writable worktree paths (group-writable, owners unchanged). Nothing to do without a `user`."""
        if self.user is None:
            return
        home = self._resolve(self.home, "home")
        os.chown(home, self.user.uid, self.user.gid, follow_symlinks=False)
        os.chmod(home, 0o700)
        if self.read_only_worktree or self.scratch is not None:
            return  # a scratch copy is made for the user already
        for path in self.writable:
            _grant_tree(self._resolve(path, "writable path"), self.user.gid)
        for folder, names in self.file_folders:
            _grant_folder(self._resolve(folder, "file folder"), names, self.user.gid)

    def args(self, bwrap: str | None = None, *, seccomp_fd: int | None = None, alive_fd: int | None = None) -> list[str]:
        """The command prefix: bwrap, its options, `--`, (for a root orchestrator) the uid switch, and
        with ``alive_fd`` the check that the orchestrator still lives (``runtime.sandbox.launch``)."""
        exe = bwrap or bwrap_path()
        if exe is None:
            raise SandboxUnavailable()
        root = os.geteuid() == 0
        if root and self.user is None:
            raise SandboxSpecError("a root orchestrator must run its sandboxes as an unprivileged user")
        if self.user is not None and (self.user.uid == 0 or self.user.gid == 0):
            raise SandboxSpecError("the agent user must not be uid or gid 0")
        worktree = self._resolve(self.worktree, "worktree")
        home = self._resolve(self.home, "home")
        writable = [self._resolve(p, "writable path") for p in self.writable]
        folders = sorted({self._resolve(p, "file folder") for p, _ in self.file_folders}, key=lambda p: (len(p.parts), str(p)))
        scratch = None if self.scratch is None else self._resolve(self.scratch, "scratch copy")
        readonly = [self._resolve(p, "read-only path") for p in self.readonly]
        extra_rw = [self._resolve(p, "extra read-write bind") for p in self.extra_binds_rw]
        extra_ro = [self._resolve(p, "extra read-only bind") for p in self.extra_binds_ro]
        late = [(mode, self._resolve(p, "late bind")) for mode, p in self.late_binds]
        tools = [(self._resolve(src, "toolchain folder"), Path(os.path.normpath(dest))) for src, dest in self.toolchain_binds]
        for _, dest in tools:
            if not dest.is_absolute():
                raise SandboxSpecError(f"toolchain destination {dest} must be an absolute path")
        for path in (*writable, *folders):
            if not _inside(path, worktree):
                raise SandboxSpecError(f"writable path {path} is outside the worktree {worktree}")
        if scratch is not None and _overlaps(scratch, worktree):
            raise SandboxSpecError(f"the scratch copy {scratch} overlaps the worktree {worktree}")
        for path in (home, *extra_rw, *extra_ro, *(p for _, p in late)):
            if _overlaps(path, worktree):
                raise SandboxSpecError(f"{path} overlaps the worktree {worktree}: bind it through writable or readonly")
        for layer, inside in self.cache_binds:
            if _overlaps(self._resolve(layer, "cache layer"), worktree):
                raise SandboxSpecError(f"the cache layer {layer} overlaps the worktree {worktree}")
            if not any(_inside(Path(os.path.normpath(inside)), Path(t)) and str(inside) != t for t in PRIVATE_TMPFS):
                raise SandboxSpecError(f"a cache is shown at {inside}, which is not inside a private tmpfs")
        for mode, _ in late:
            if mode not in ("ro", "rw"):
                raise SandboxSpecError(f"late bind mode {mode!r} is neither ro nor rw")

        out = [exe, *_FIXED_FLAGS]
        if root:
            out += ["--cap-drop", "ALL"] + [arg for cap in _SWITCH_CAPS for arg in ("--cap-add", cap)]
        else:
            check_user_namespaces(exe)
            out += ["--unshare-user", "--disable-userns", "--cap-drop", "ALL"]
        out += _system_mounts(self.tmpfs_mb)
        masked = [self._resolve(p, "masked folder") for p in self.masked]
        # bubblewrap makes the folders leading to a bind point 0700, which the agent's uid could not
        # traverse: create them first, world-traversable (they hold nothing but the mount points).
        outside = [dest for _, dest in tools if not _inside(dest, worktree)]
        for parent in _parents([*masked, home, *extra_rw, *extra_ro, *(p for _, p in late), worktree, *outside]):
            out += ["--perms", "0755", "--dir", str(parent)]
        for path in masked:
            out += _tmpfs(str(path), self.tmpfs_mb)
        out += ["--bind", str(home), str(home)]
        for path in extra_rw:
            out += ["--bind", str(path), str(path)]
        for path in extra_ro:
            out += ["--ro-bind", str(path), str(path)]
        for mode, path in late:
            out += ["--ro-bind" if mode == "ro" else "--bind", str(path), str(path)]
        for layer, inside in self.cache_binds:
            out += ["--bind", str(layer), str(inside)]
        if scratch is not None:
            out += ["--bind", str(scratch), str(worktree)]
            for rel in self.scratch_readonly:
                if rel.startswith("/") or ".." in rel.split("/") or not _regular(scratch / rel):
                    raise SandboxSpecError(f"read-only file {rel} is not a file of the scratch copy")
                out += ["--ro-bind", str(scratch / rel), str(worktree / rel)]
        else:
            out += ["--ro-bind", str(worktree), str(worktree)]
            if not self.read_only_worktree:
                out += self._writable_binds(writable, folders, readonly)
        for src, dest in tools:
            if scratch is not None and src == worktree:  # the worktree mirrored at the main checkout's path
                out += ["--bind", str(scratch), str(dest)]
            else:
                out += ["--ro-bind", str(src), str(dest)]
        for path in readonly:
            out += ["--ro-bind", str(path), str(path)]
        for path, _ in self.control:
            if not _inside(Path(os.path.abspath(path)), worktree):
                raise SandboxSpecError(f"control path {path} is outside the worktree {worktree}")
            if os.path.lexists(path) and os.path.exists(path):  # a dangling symlink has nothing to bind
                real = self._resolve(path, "control path")
                out += ["--ro-bind", str(real), str(real)]
        if seccomp_fd is not None:
            out += ["--seccomp", str(seccomp_fd)]
        out.append("--clearenv")
        for name, value in self.env.items():
            if not name or "=" in name or "\0" in name or "\0" in value:
                raise SandboxSpecError(f"environment variable {name!r} cannot be passed to the sandbox")
            out += ["--setenv", name, value]
        out += ["--chdir", str(worktree), "--"]
        if root:
            assert self.user is not None
            # --pdeathsig: the kernel clears the parent-death signal bwrap's --die-with-parent set when the
            # uid changes; setpriv sets it again after the switch, so the agent still dies with the sandbox.
            out += [setpriv_path(), f"--reuid={self.user.uid}", f"--regid={self.user.gid}", "--clear-groups",
                    "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--pdeathsig", "KILL", "--"]
        if alive_fd is not None:
            out += alive_check(alive_fd)
        return out

    def _writable_binds(self, writable: list[Path], folders: list[Path], readonly: list[Path]) -> list[str]:
        """The file folders read-write (shallowest first), the writable paths read-write, then the folders
        inside each file folder read-only again but those leading to something writable, and the existing
        files in each that the scope does not name."""
        folders = [f for f in folders if not any(_inside(f, w) for w in writable)]  # a writable path holds it
        out: list[str] = []
        for path in (*folders, *writable):
            out += ["--bind", str(path), str(path)]
        keep = {*writable, *folders, *readonly, *(Path(os.path.realpath(p)) for p, _ in self.control)}
        budget = MAX_READ_ONLY_AGAIN
        for folder in folders:
            inner = [d for d in _subfolders(folder) if not any(_inside(k, d) for k in keep)]
            if len(inner) > budget:
                continue  # writable whole, as a writable path is: verify rejects what the scope does not hold
            budget -= len(inner)
            for path in inner:
                out += ["--ro-bind", str(path), str(path)]
        named = {self._resolve(f, "file folder"): set(names) for f, names in self.file_folders}
        budget = MAX_READ_ONLY_FILES
        for folder in folders:
            others = [f for f in _files(folder) if f.name not in named.get(folder, ()) and f not in keep]
            for path in others[:budget]:
                out += ["--ro-bind", str(path), str(path)]
            budget -= min(budget, len(others))
        return out

    @staticmethod
    def _resolve(path: Path, what: str) -> Path:
        path = Path(path)
        if not path.is_absolute():
            raise SandboxSpecError(f"{what} {path} must be an absolute path")
        return path.resolve()
