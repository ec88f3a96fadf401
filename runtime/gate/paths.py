"""Path resolution for the gate: absolute, `..` collapsed, symlinks followed.

Paths are compared by components: a resolved path is inside ``root`` when it
equals it or starts with ``root + "/"`` (so ``src_evil`` is never inside
``src``). On Linux the directory part is resolved with one ``O_PATH`` open and a
``/proc/self/fd`` read-back (a few syscalls whatever the depth); elsewhere, or
when anything is unusual, ``os.path.realpath`` does the work.

A `..` has two readings: the kernel applies it to wherever the path got so far
(through a symlink, to the link's target's parent), while Python's os.path,
Node's path.resolve (Claude Code's file tools), cargo and bash's `cd` drop the
previous name first; and `mkdir -p` creates the name a `..` then leaves
(`.git/index.lock/../../x`). The two agree only when every name a `..` takes
back is a folder that exists and is not a symlink, so that is required:
any other `..` is refused, and what remains has one meaning.
"""

from __future__ import annotations

import os
import stat

from runtime.lang.audience import AGENT, phrase
from runtime.manifests.control import CONTROL, NEVER_EXEMPT, control_name, exempted

_O_PATH = getattr(os, "O_PATH", 0)
_PROC_FD = "/proc/self/fd/"
_DEV_WRITABLE = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
# The kernel's limits (PATH_MAX, NAME_MAX): a longer path or name fails anyway, and bounding them keeps
# every check on a path (the scope's globs included) short whatever the agent sends.
PATH_MAX = 4096
NAME_MAX = 255


class PathError(ValueError):
    """A path the gate cannot interpret: always a deny."""


def resolve(path: object, cwd: str) -> str:
    """The canonical absolute form of ``path`` taken relative to ``cwd``."""
    if not isinstance(path, str):
        raise PathError("a path must be a string")
    if not path:
        raise PathError("the path is empty")
    if "\x00" in path:
        raise PathError("the path contains a NUL byte")
    full = path if path[0] == "/" else f"{cwd}/{path}"
    if len(full) > PATH_MAX:
        raise PathError(f"the path is longer than {PATH_MAX} characters")
    if "/.." in full:
        full = collapse(full)
    elif len(full) > NAME_MAX and max(map(len, full.split("/"))) > NAME_MAX:
        raise PathError(f"a name in the path is longer than {NAME_MAX} characters")
    if not _O_PATH:
        return os.path.realpath(full)
    full = os.path.normpath(full)
    if full.startswith("//"):
        full = "/" + full.lstrip("/")
    parent, _, name = full.rpartition("/")
    try:
        fd = os.open(parent or "/", _O_PATH | os.O_DIRECTORY)
    except FileNotFoundError:
        # A new folder: resolve the deepest folder that exists. Nothing below
        # it exists, so the rest of the path holds no symlink.
        base, _, tail = parent.rpartition("/")
        while base:
            try:
                fd = os.open(base, _O_PATH | os.O_DIRECTORY)
            except FileNotFoundError:
                base, _, more = base.rpartition("/")
                tail = f"{more}/{tail}"
                continue
            except OSError:
                return os.path.realpath(full)
            try:
                real = os.readlink(f"{_PROC_FD}{fd}")
            except OSError:
                return os.path.realpath(full)
            finally:
                os.close(fd)
            if real[:1] != "/" or real.endswith(" (deleted)"):
                return os.path.realpath(full)
            return f"{real.rstrip('/')}/{tail}/{name}"
        return os.path.realpath(full)
    except OSError:
        return os.path.realpath(full)
    try:
        real_parent = os.readlink(f"{_PROC_FD}{fd}")
        if real_parent[:1] != "/" or real_parent.endswith(" (deleted)"):
            return os.path.realpath(full)
        if not name:
            return real_parent
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return f"{real_parent}/{name}" if real_parent != "/" else f"/{name}"
        if stat.S_ISLNK(st.st_mode):
            return os.path.realpath(full)
        return f"{real_parent}/{name}" if real_parent != "/" else f"/{name}"
    except OSError:
        return os.path.realpath(full)
    finally:
        os.close(fd)


def collapse(full: str) -> str:
    """``full`` (absolute) with `.` and `..` taken out, or PathError when a `..` follows a name that is
    not an existing folder: a symlink (read one way by the kernel, another by the program) or a
    name that does not exist yet (`mkdir -p` would create it)."""
    stack: list[str] = []
    for name in full.split("/"):
        if name == ".." and stack:
            folder = "/" + "/".join(stack)
            try:
                st = os.lstat(folder)
            except OSError:
                raise PathError(f"`..` follows `{stack[-1]}`, which does not exist (yet): programs would create it "
                                "or read the path differently; write the path without `..`") from None
            if stat.S_ISLNK(st.st_mode):
                raise PathError(f"`..` follows the symlink `{stack[-1]}`: the file system goes to the parent of "
                                "its target, programs to the folder that holds the link; write the path without "
                                "`..`") from None
            if not stat.S_ISDIR(st.st_mode):
                raise PathError(f"`..` follows `{stack[-1]}`, which is not a folder; write the path without `..`")
            stack.pop()
        elif name not in ("", ".", ".."):
            if len(name) > NAME_MAX:
                raise PathError(f"a name in the path is longer than {NAME_MAX} characters")
            stack.append(name)
    return "/" + "/".join(stack)


def relative_to(resolved: str, root: str) -> str | None:
    """``resolved`` relative to ``root`` ("" for the root itself), or None if outside."""
    if resolved == root:
        return ""
    if root == "/":
        return resolved[1:]
    if resolved.startswith(root) and resolved[len(root)] == "/":
        return resolved[len(root) + 1:]
    return None


def protected_reason(resolved: str, protected: tuple[str, ...], exempt: tuple[str, ...] = (),
                     root: str | None = None, audience: str = AGENT) -> str | None:
    """Why a write to ``resolved`` is never allowed, or None. ``exempt``: control files this task may change
    (never `.git`). Inside ``root`` only the components below it are control names: a worktree that itself
    lives in a `.claude` folder (Claude Code's own worktrees) is not all control files."""
    inside = relative_to(resolved, root) if root is not None else None
    name = control_name(inside if inside is not None else resolved)
    if name is not None and (name in NEVER_EXEMPT or not exempted(resolved, exempt)):
        return f"`{name}` holds {CONTROL[name]}, {phrase(audience, 'control-file')}"
    for p in protected:
        if resolved == p or resolved.startswith(p + "/"):
            return "this path holds the runtime's own policy or catalog files, which are never written from here"
    if resolved.lower().startswith(("/dev/", "/proc/", "/sys/")) and resolved not in _DEV_WRITABLE:
        return "writing to device, /proc or /sys files is not allowed"
    return None


def holder_reason(resolved: str, protected: tuple[str, ...], root: str) -> str | None:
    """Why ``resolved`` may not be written as a whole (removed, renamed, replaced), or None: it holds the
    runtime's catalog or policy files, or the worktree with its control folders (which exist or not:
    `.claude` and the project catalog are judged by name, wherever they are made)."""
    if resolved == root or holds(resolved, root):
        return "this is the worktree itself (or a folder holding it), with git's data and the control files in it"
    for p in protected:
        if holds(resolved, p):
            return "this folder holds the runtime's own policy or catalog files, which are never removed or moved from here"
    return None


def holds(folder: str, path: str) -> bool:
    """Is ``path`` strictly inside ``folder`` (both resolved)?"""
    return folder == "/" and path != "/" or path.startswith(folder + "/")


_SINKS = frozenset({"/dev/null", "/dev/tty"})
_STD_STREAMS = frozenset({"/dev/stdout", "/dev/stderr", "/dev/fd/1", "/dev/fd/2", "/proc/self/fd/1", "/proc/self/fd/2",
                          "/proc/thread-self/fd/1", "/proc/thread-self/fd/2"})


def descriptor_kind(path: str) -> str | None:
    """What a write target (normalised, not resolved) names when it is not a plain file.

    "sink" (/dev/null, /dev/tty), "std" (standard output or error, by any of their names), "other"
    (any other descriptor: /dev/stdin, /dev/fd/N, /proc/*/fd/N — opening one for writing re-opens
    whatever file the descriptor holds, even one the command opened only for reading), or None.
    """
    if path in _SINKS:
        return "sink"
    if path in _STD_STREAMS:
        return "std"
    if path == "/dev/stdin" or path.startswith("/dev/fd/") or (path.startswith("/proc/") and "/fd/" in path):
        return "other"
    return None
