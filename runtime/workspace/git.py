"""Git as the orchestrator runs it: hardened, bounded in time, never interactive.

Only the orchestrator runs git, never an agent. An agent may still have planted
something the orchestrator's next git call would obey (a hook, an fsmonitor
command), so every call turns those off on its command line, which beats every
config file; drops each ``GIT_*`` variable of the caller (``GIT_DIR``,
``GIT_CONFIG_*``, ``GIT_INDEX_FILE`` would redirect it); reads no stdin; and
has a timeout. Commands inside an agent's worktree name its git directory
explicitly, from the main repository's own records (``in_worktree``), so a
``.git`` file the agent rewrote cannot point the orchestrator elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Concatenate, ParamSpec, TypedDict, TypeVar, Unpack

from runtime.errors import FatalError
from runtime.workspace.hazards import guard
from runtime.workspace.objects import Entry, ObjectReader, ObjectStoreError, reader_for
from runtime.workspace.tree import remove_tree

HARDENING = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false",
             # commit and merge would start `git maintenance --auto`, which may detach into the background
             "-c", "maintenance.auto=false",
             # never into a submodule on its own: a checkout, fetch or status that recursed would run git
             # inside a repository the agent may have written (see runtime.workspace.hazards, which keeps
             # nested repositories away from every git call over a worktree)
             "-c", "submodule.recurse=false", "-c", "fetch.recurseSubmodules=false",
             "-c", "status.submoduleSummary=false")
IDENTITY = ("agent-runtime", "agent-runtime@localhost")
# author.* and committer.* beat user.* (git >= 2.22), so all three are pinned;
# signing would prompt or use the user's key for a commit the user did not make.
_IDENTITY = tuple(
    arg for who in ("user", "author", "committer")
    for arg in ("-c", f"{who}.name={IDENTITY[0]}", "-c", f"{who}.email={IDENTITY[1]}")
) + ("-c", "commit.gpgSign=false")


class GitError(FatalError):
    """A git command failed or was refused: the command, and git's stderr (or the reason)."""

    def __init__(self, command: Sequence[str], stderr: str | bytes, returncode: int | None = None) -> None:
        self.command = [str(a) for a in command]
        self.stderr = stderr.decode(errors="replace") if isinstance(stderr, bytes) else stderr
        self.returncode = returncode
        detail = " ".join(line.strip() for line in self.stderr.splitlines() if line.strip())
        line = f"git {shlex.join(self.command)}: {detail[:400] or f'exit status {returncode}'}"
        super().__init__(line.replace("\n", "\\n"))  # a message or path may hold newlines


class NotARepository(GitError):
    """The folder is not inside a git repository: one plain line, no git command line."""

    def __init__(self, path: str) -> None:
        self.command, self.stderr, self.returncode = ["rev-parse"], "not a git repository", 128
        FatalError.__init__(self, f"{path} is not inside a git repository: run this from your repository "
                                  "(or `git init` one)")


class BaseMoved(GitError):
    """The base branch is no longer at the commit the caller checked."""


class NothingToCommit(GitError):
    """The worktree has no change to commit."""


@dataclass(frozen=True)
class MergeSimulation:
    """``git merge-tree`` of base and branch: the merged tree when clean, else the conflicted paths."""

    clean: bool
    tree: str | None
    conflicts: list[str] = field(default_factory=list)
    base: str = ""
    head: str = ""


@dataclass(frozen=True)
class Worktree:
    path: Path
    head: str | None
    branch: str | None  # full ref name; None when detached


class RunKeywords(TypedDict, total=False):
    """The keywords of ``Git.run`` after the arguments, passed on by ``Git.text``."""

    cwd: str | os.PathLike[str] | None
    env: Mapping[str, str] | None
    ok: Sequence[int] | None
    input: bytes | None


class WorktreeKeywords(TypedDict):
    """``run`` keywords for a command inside a linked worktree (``Git.in_worktree``)."""

    cwd: str
    env: dict[str, str]


def _env(extra: Mapping[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_CONFIG_NOSYSTEM="1", LC_ALL="C")
    env.update(extra or {})
    return env


_MERGES: dict[tuple[str, str, str], MergeSimulation] = {}  # (shared git folder, base, head) -> the merge
OID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")  # SHA-1 or SHA-256
_TOPS: dict[str, tuple[str, str]] = {}  # a path -> its repository's top level and shared git folder
_BRANCH_NAMES: set[str] = set()  # names `check-ref-format --branch` accepted: it is asked once per name
# A name every rule of git's check_refname_format accepts (components of letters, digits, '.', '_' and '-', none
# starting with '.' or '-', no '..', none ending in '.lock' or '.'): checked here, on every spawn's path, rather
# than by a process; anything else is git's to judge.
_PLAIN_BRANCH = re.compile(r"(?!.*\.\.)(?!.*\.lock(?:/|$))(?!.*\.(?:/|$))[A-Za-z0-9_][A-Za-z0-9._-]*"
                           r"(?:/[A-Za-z0-9_][A-Za-z0-9._-]*)*")


@contextlib.contextmanager
def _reading(*command: str) -> Iterator[None]:
    """The object store's reader failing is a git command failing."""
    try:
        yield
    except ObjectStoreError as exc:
        raise GitError(list(command), str(exc)) from None


def _still(path: str, top: str, common: str) -> bool:
    """Whether ``path`` is still in the repository at ``top``: it is there, and no folder from ``path`` up to it
    became a repository of its own."""
    if not (os.path.isdir(common) and os.path.lexists(os.path.join(top, ".git"))):
        return False
    here = path
    while here != top:
        if os.path.lexists(os.path.join(here, ".git")):
            return False
        up = os.path.dirname(here)
        if up == here:
            return False  # not below its top after all (a symlink in the path): ask git
        here = up
    return True


def _branch_name(name: str) -> None:
    if name in _BRANCH_NAMES or (name != "HEAD" and _PLAIN_BRANCH.fullmatch(name)):
        return
    Git.check_branch_name(name)
    if len(_BRANCH_NAMES) > 4096:
        _BRANCH_NAMES.clear()
    _BRANCH_NAMES.add(name)


def _plain(value: str, what: str) -> str:
    # An argument starting with "-" would be read as an option.
    if not value or value.startswith("-"):
        raise GitError([what, value], f"refusing {what} {value!r}")
    return value


_REPO_LOCKS: dict[str, threading.RLock] = {}
_REPO_LOCKS_GUARD = threading.Lock()


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _serialised(method: Callable[Concatenate[Git, _P], _R]) -> Callable[Concatenate[Git, _P], _R]:
    """Calls that change a repository's refs, worktrees or config run one at a time per
    repository in this process: parallel spawns work from worker threads, and git's own
    lock files would make the losers fail rather than wait."""
    def wrapper(self: Git, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self.mutex:
            return method(self, *args, **kwargs)
    wrapper.__name__, wrapper.__doc__ = method.__name__, method.__doc__
    return wrapper


class Git:
    """One repository, given any path inside it; ``root`` is its top level, ``common_dir`` its shared git dir."""

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 120.0) -> None:
        self.timeout = timeout
        key = os.path.abspath(path)
        known = _TOPS.get(key)
        if known is not None and _still(key, *known):
            top, common = known  # asked before in this process, and the repository is still there, the same
        else:
            try:
                out = self.run("rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir", cwd=path)
            except GitError as exc:
                if "not a git repository" in exc.stderr:
                    raise NotARepository(os.fspath(path)) from None
                raise
            top, common = os.fsdecode(out.stdout).rstrip("\n").split("\n")
            if len(_TOPS) > 256:
                _TOPS.clear()
            _TOPS[key] = (top, common)
        self.root, self.common_dir = Path(top), Path(common)

    def run(self, *args: str, cwd: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None,
            ok: Sequence[int] | None = (0,), input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        """Run one hardened git command (``input``: its standard input, else none); a return code outside ``ok``
        (None: any) is a GitError."""
        cmd = ["git", "-C", str(cwd or self.root), *HARDENING, *args]
        try:
            if input is None:
                proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, env=_env(env), timeout=self.timeout)
            else:
                proc = subprocess.run(cmd, input=input, capture_output=True, env=_env(env), timeout=self.timeout)
        except subprocess.TimeoutExpired:
            raise GitError(args, f"timed out after {self.timeout:g}s") from None
        except OSError as exc:
            raise GitError(args, str(exc)) from None
        if ok is not None and proc.returncode not in ok:
            raise GitError(args, proc.stderr, proc.returncode)
        return proc

    def text(self, *args: str, **kw: Unpack[RunKeywords]) -> str:
        return os.fsdecode(self.run(*args, **kw).stdout).strip()

    @staticmethod
    def check_branch_name(name: str) -> None:
        """GitError unless git takes ``name`` as a branch's name (`check-ref-format --branch`)."""
        try:
            proc = subprocess.run(["git", *HARDENING, "check-ref-format", "--branch", name], stdin=subprocess.DEVNULL,
                                  capture_output=True, env=_env(None), timeout=60, cwd="/")
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise GitError(["check-ref-format", name], str(exc)) from None
        if proc.returncode != 0:
            raise GitError(["check-ref-format", "--branch", name], proc.stderr, proc.returncode)

    def head(self) -> str:
        return self.resolve("HEAD")

    def current_branch(self) -> str | None:
        ref = self.run("symbolic-ref", "-q", "HEAD", ok=(0, 1)).stdout.decode().strip()
        return ref.removeprefix("refs/heads/") if ref.startswith("refs/heads/") else None

    def objects(self) -> ObjectReader:
        """The object store's one batch reader for this tree (`runtime.workspace.objects`)."""
        return reader_for(self.root, ["git", "-C", str(self.root), *HARDENING, "cat-file", "--batch-command"],
                          _env(None))

    def _info(self, name: str) -> tuple[str, str, int] | None:
        with _reading("cat-file", "info", name):
            return self.objects().info(name)

    def resolve(self, rev: str) -> str:
        """The commit sha ``rev`` names; GitError if it names none."""
        spec = f"{_plain(rev, 'revision')}^{{commit}}"
        if "\n" in spec:
            raise GitError(["rev-parse", "--verify", rev], f"unknown revision {rev!r}")
        found = self._info(spec)
        if found is None or found[1] != "commit":
            raise GitError(["rev-parse", "--verify", rev], f"unknown revision {rev!r}")
        return found[0]

    def branch_exists(self, name: str) -> bool:
        _branch_name(_plain(name, "branch"))
        return self._ref_exists(f"refs/heads/{name}")

    def _ref_exists(self, ref: str) -> bool:
        # A full ref name is looked up as itself first; a name that is no ref at all may still match another
        # ref git's lookup rules build from it (refs/heads/refs/heads/x), which only this runtime could make.
        return "\n" not in ref and self._info(ref) is not None

    def _rev(self, branch_or_rev: str) -> str:
        # A tag may share a branch's name and wins git's lookup; spell branches out.
        ref = f"refs/heads/{branch_or_rev}"
        return self.resolve(ref if self._ref_exists(ref) else branch_or_rev)

    def worktrees(self) -> list[Worktree]:
        out = self.run("worktree", "list", "--porcelain", "-z").stdout
        trees = []
        for record in out.split(b"\0\0"):
            info = dict(os.fsdecode(f).partition(" ")[::2] for f in record.split(b"\0") if f)
            if "worktree" in info:
                trees.append(Worktree(Path(info["worktree"]), info.get("HEAD"), info.get("branch")))
        return trees

    def holding(self, ref: str) -> list[Path]:
        """The worktrees that have ``ref`` checked out, read from git's own HEAD files (the main checkout's and
        each linked worktree's record) rather than asked of `git worktree list`; anything unusual there (a
        bare repository, a HEAD that does not read as git writes it) is git's to answer."""
        found: list[Path] = []
        main = self.common_dir.parent
        heads = [(self.common_dir / "HEAD", main)] if self.common_dir.name == ".git" else []
        for record in sorted((self.common_dir / "worktrees").glob("*/gitdir")):
            try:
                heads.append((record.parent / "HEAD", Path(os.path.dirname(record.read_text().rstrip("\n")))))
            except (OSError, UnicodeDecodeError):
                continue  # being added or removed right now: not holding anything yet, or no longer
        for head, tree in heads:
            try:
                text = head.read_text(encoding="ascii")
            except FileNotFoundError:
                continue
            except (OSError, UnicodeDecodeError):
                return [w.path for w in self.worktrees() if w.branch == ref]
            if not (text.startswith("ref: ") or OID.fullmatch(text.strip())):
                return [w.path for w in self.worktrees() if w.branch == ref]
            if text.strip() == f"ref: {ref}":
                found.append(tree)
        return found

    def dirty_checkout(self, branch: str) -> Path | None:
        """The worktree that has ``branch`` checked out with uncommitted changes to tracked files, if any:
        a merge into it would have to overwrite them, so it is refused."""
        ref = f"refs/heads/{_plain(branch, 'branch')}"
        for tree in self.worktrees():
            if tree.branch == ref and tree.path.exists():
                if self.run("status", "--porcelain", "-z", "--untracked-files=no", cwd=tree.path).stdout:
                    return tree.path
        return None

    @property
    def mutex(self) -> threading.RLock:
        key = str(self.common_dir.resolve())
        with _REPO_LOCKS_GUARD:
            return _REPO_LOCKS.setdefault(key, threading.RLock())

    def worktree_gitdir(self, path: str | os.PathLike[str]) -> Path | None:
        """The admin dir git recorded for the worktree at ``path``, or None; never read from ``path``.

        The main working tree (a plain checkout, as CI has) answers with the
        common git dir, when that is its own `.git` folder.
        """
        if os.path.realpath(path) == os.path.realpath(self.root) and self.common_dir == Path(self.root) / ".git":
            return self.common_dir
        want = os.path.join(os.path.realpath(path), ".git")
        for record in sorted((self.common_dir / "worktrees").glob("*/gitdir")):
            try:
                recorded = record.read_text(errors="surrogateescape").rstrip("\n")
            except FileNotFoundError:
                continue  # another worktree being added or removed right now
            if os.path.join(os.path.realpath(os.path.dirname(recorded)), ".git") == want:
                return record.parent
        return None

    def in_worktree(self, path: str | os.PathLike[str]) -> WorktreeKeywords:
        """``run`` keywords for a command inside the linked worktree at ``path``, its git dir named explicitly."""
        gitdir = self.worktree_gitdir(path)
        if gitdir is None:
            raise GitError(["worktree", str(path)], f"{path} is not a worktree of {self.root}")
        top = os.path.realpath(path)
        return {"cwd": top, "env": {"GIT_DIR": str(gitdir), "GIT_WORK_TREE": top}}

    @_serialised
    def add_worktree(self, path: str | os.PathLike[str], branch: str, base: str | None = None) -> str:
        """Check out a new branch ``branch`` at ``base`` (default: HEAD) into ``path``; returns the base sha."""
        path, base_sha = Path(path).absolute(), self.resolve(base or "HEAD")
        if self.branch_exists(branch):
            raise GitError(["worktree", "add", "-b", branch], f"branch {branch!r} already exists")
        if os.path.lexists(path):
            raise GitError(["worktree", "add", str(path)], f"{path} already exists")
        self.run("worktree", "add", "-q", "-b", branch, str(path), base_sha)
        return base_sha

    def checkout_worktree(self, path: str | os.PathLike[str], branch: str) -> None:
        """Check the existing branch ``branch`` out into a new worktree at ``path`` (a resumed run)."""
        path = Path(path).absolute()
        if os.path.lexists(path):
            raise GitError(["worktree", "add", str(path)], f"{path} already exists")
        self.run("worktree", "add", "-q", str(path), branch)

    @_serialised
    def remove_worktree(self, path: str | os.PathLike[str]) -> None:
        """Remove the worktree whatever state the agent left it in, then prune git's records.

        The files go first, deleted by the orchestrator itself (`runtime.workspace.tree`): `git worktree
        remove` would walk the agent's tree (and any nested repository in it) with path strings, and stop
        at a folder deeper than PATH_MAX or one made unwritable. Then git drops its record of the
        worktree, which no longer exists."""
        path = Path(path).absolute()
        admin = self.worktree_gitdir(path)
        if admin is None:
            if os.path.lexists(path):
                raise GitError(["worktree", "remove", str(path)], f"{path} is not a worktree of {self.root}")
            self.run("worktree", "prune")
            return
        remove_tree(path)
        if admin.parent == self.common_dir / "worktrees":
            # What `worktree prune` would do for this one worktree, without a process: its record, found among
            # git's own (`worktree_gitdir`, never read from the agent's tree), goes with it.
            remove_tree(admin)
        else:
            self.run("worktree", "prune")

    @_serialised
    def delete_branch(self, name: str) -> None:
        self.run("branch", "-D", _plain(name, "branch"))

    @_serialised
    def add_notes(self, ref: str, notes: Sequence[tuple[str, str]]) -> None:
        """Note each (commit, text) under the notes ref ``ref`` (replacing a note there), as agent-runtime, in one
        notes commit: one `git fast-import`, which keeps the notes tree's fan-out as `git notes` does. Another
        process's notes on the same ref at the same moment make the ref's update refuse one of them: tried again."""
        ref = _plain(ref, "ref")
        if not ref.startswith("refs/notes/"):
            raise GitError(["notes", ref], f"{ref} is not a notes ref")
        for tries in range(20):
            parent = self._info(ref)
            stream = bytearray()
            message = f"Notes added by agent-runtime ({len(notes)})\n".encode()
            stream += f"commit {ref}\ncommitter {IDENTITY[0]} <{IDENTITY[1]}> {int(time.time())} +0000\n".encode()
            stream += b"data %d\n%s" % (len(message), message)
            if parent is not None:
                stream += f"from {parent[0]}\n".encode()
            for commit, text in notes:
                data = text.encode("utf-8")
                stream += f"N inline {_plain(commit, 'commit')}\n".encode() + b"data %d\n%s\n" % (len(data), data)
            stream += b"done\n"
            proc = self.run("fast-import", "--quiet", "--done", ok=None, input=bytes(stream))
            if proc.returncode == 0:
                return
            if tries == 19 or (b"not updating" not in proc.stderr and b"lock" not in proc.stderr):
                raise GitError(["fast-import", ref], proc.stderr, proc.returncode)
            time.sleep(0.02 * (tries + 1))

    def tree_of(self, commit: str) -> str:
        """The tree ``commit`` holds (the object store's reader: no process)."""
        with _reading("cat-file", "commit", commit):
            found = self.objects().info(f"{_plain(commit, 'commit')}^{{tree}}")
        if found is None:
            raise GitError(["cat-file", commit], f"{commit} names no commit")
        return found[0]

    def bundle(self, branch: str, path: str | os.PathLike[str]) -> None:
        """Write ``branch`` (and what it needs) to a bundle file: a branch's work as one artifact."""
        self.run("bundle", "create", "--quiet", str(path), f"refs/heads/{branch}")

    def import_bundle(self, path: str | os.PathLike[str], branch: str, commit: str) -> str:
        """Fetch ``branch`` from a bundle into this repository as ``branch``; it must point at ``commit``
        (GitError otherwise, and nothing is left behind). Returns the commit."""
        self.run("bundle", "verify", "--quiet", str(path))
        scratch = f"refs/runtime-import/{branch}"
        self.run("fetch", "--quiet", "--no-tags", str(path), f"+refs/heads/{branch}:{scratch}")
        try:
            got = self.resolve(scratch)
            if got != commit:
                raise GitError(["bundle", branch], f"the bundle's {branch} is {got}, not the reported {commit}")
            self.run("update-ref", f"refs/heads/{branch}", commit)
        finally:
            self.run("update-ref", "-d", scratch, ok=None)
        return commit

    def listing(self, rev: str) -> tuple[Entry, ...]:
        """Every entry ``rev``'s tree records, recursively (`ls-tree -r --full-tree`), from the object store alone."""
        tree = self._info(f"{self.resolve(rev)}^{{tree}}")
        if tree is None:
            raise GitError(["ls-tree", rev], f"no tree at {rev!r}")
        with _reading("ls-tree", rev):
            return self.objects().listing(tree[0])

    def gitlinks(self, rev: str) -> list[str]:
        """The paths ``rev`` records as submodules (gitlinks), from the object store alone."""
        return [e.path for e in self.listing(rev) if e.mode == "160000"]

    def files_at(self, rev: str) -> list[str]:
        """Every regular file ``rev`` records (paths from the top level), from the object store alone."""
        return [e.path for e in self.listing(rev) if e.mode in ("100644", "100755")]

    def read_file(self, rev: str, path: str) -> bytes | None:
        """The bytes of ``path`` (from the top level) at ``rev``; None when it is not a file there."""
        spec = f"{self.resolve(rev)}:{path.lstrip('/')}"
        if "\n" in spec:
            return None  # git records no such path that a line-based question could name
        with _reading("cat-file", "contents", spec):
            found = self.objects().contents(spec)
        return found[2] if found is not None and found[1] == "blob" else None

    def blob(self, oid: str) -> bytes:
        """The bytes of the blob ``oid``; GitError when it is none."""
        with _reading("cat-file", "blob", oid):
            found = self.objects().contents(oid)
        if found is None or found[1] != "blob":
            raise GitError(["cat-file", "blob", oid], f"no blob {oid}")
        return found[2]

    def size(self, oid: str) -> int | None:
        """The size in bytes of the object ``oid``; None when there is none."""
        found = self._info(oid)
        return found[2] if found is not None else None

    @_serialised
    def commit_all(self, worktree: str | os.PathLike[str], message: str, *, branch: str | None = None,
                   exclude: Sequence[str] = (), allow_empty: bool = False) -> str:
        """``add -A`` (but the ``exclude`` paths) and commit in ``worktree`` as agent-runtime, hooks off;
        returns the commit sha. ``allow_empty``: commit even when nothing changed (a verdict on earlier work)."""
        inside = self.in_worktree(worktree)
        guard(inside["cwd"])  # never `add` over a nested repository: git would run its configuration
        if branch is not None:
            on = self.run("symbolic-ref", "-q", "HEAD", ok=(0, 1), **inside).stdout.decode().strip()
            if on != f"refs/heads/{branch}":
                raise GitError(["commit"], f"worktree {worktree} is on {on or 'a detached HEAD'}, not {branch}")
        self._add_all(inside, [f":(exclude,literal){path}" for path in exclude])
        # --cleanup=whitespace: the default would drop message lines starting with '#'. Nothing staged: git
        # refuses the commit and says so (LC_ALL=C), which saves asking it first.
        proc = self.run(*_IDENTITY, "commit", "--no-verify", "-q", "--cleanup=whitespace",
                        *(["--allow-empty"] if allow_empty else []), "-m", message, ok=None, **inside)
        if proc.returncode != 0:
            said = proc.stdout + proc.stderr
            if proc.returncode == 1 and (b"nothing to commit" in said or b"no changes added to commit" in said):
                raise NothingToCommit(["commit"], f"nothing to commit in {worktree}")
            raise GitError(["commit"], proc.stderr or proc.stdout, proc.returncode)
        return self._head_of(inside)

    def _head_of(self, inside: WorktreeKeywords) -> str:
        """The commit a linked worktree's HEAD names, read from its HEAD file and answered by the object store's
        reader (refs are the repository's); anything but a branch or a commit id there is git's to read."""
        try:
            head = Path(inside["env"]["GIT_DIR"], "HEAD").read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            head = ""
        name = head.removeprefix("ref: ") if head.startswith("ref: refs/heads/") else head
        if name and (name.startswith("refs/heads/") or OID.fullmatch(name)):
            found = self._info(f"{name}^{{commit}}")
            if found is not None:
                return found[0]
        return self.text("rev-parse", "HEAD", **inside)

    def _add_all(self, inside: WorktreeKeywords, excludes: Sequence[str]) -> None:
        """``add -A`` of the worktree but ``excludes`` (pathspecs through a file: there may be thousands)."""
        with tempfile.TemporaryDirectory(prefix="agent-runtime-") as tmp:
            listing = os.path.join(tmp, "pathspecs")
            Path(listing).write_bytes(b"\0".join(os.fsencode(s) for s in [".", *excludes]))
            self.run("add", "-A", f"--pathspec-from-file={listing}", "--pathspec-file-nul", **inside)

    def unstaged_files(self, worktree: str | os.PathLike[str]) -> list[str]:
        """Modified and untracked (not ignored) files of ``worktree``, from stat data: no file is read."""
        inside = self.in_worktree(worktree)
        guard(inside["cwd"])
        out = self.run("ls-files", "-z", "--modified", "--others", "--exclude-standard", **inside)
        return list(dict.fromkeys(os.fsdecode(p) for p in out.stdout.split(b"\0") if p))

    def simulate_merge(self, base_sha: str, branch: str) -> MergeSimulation:
        """Merge ``branch`` into ``base_sha`` in the object store only; no ref or file changes. Kept by the two
        commits (a merge's result is theirs for good): a merge re-checked and then made asks git once."""
        base, head = self.resolve(base_sha), self._rev(branch)
        key = (os.fspath(self.common_dir), base, head)
        kept = _MERGES.get(key)
        if kept is not None:
            return kept
        out = self.run("merge-tree", "--write-tree", "--name-only", "-z", "--no-messages", base, head, ok=(0, 1))
        tree, *paths = out.stdout.split(b"\0")
        if out.returncode == 0:
            sim = MergeSimulation(True, tree.decode(), [], base, head)
        else:
            sim = MergeSimulation(False, None, list(dict.fromkeys(os.fsdecode(p) for p in paths if p)), base, head)
        if len(_MERGES) > 64:
            _MERGES.clear()
        _MERGES[key] = sim
        return sim

    def _commit_tree(self, tree: str, message: str, parents: Sequence[str]) -> str:
        parent_args = [arg for p in parents for arg in ("-p", p)]
        return self.text(*_IDENTITY, "commit-tree", *parent_args, "-m", message, _plain(tree, "tree"))

    @contextlib.contextmanager
    def checkout_tree(self, tree_or_commit: str, path: str | os.PathLike[str],
                      *, parents: Sequence[str] = ()) -> Iterator[Path]:
        """A detached temporary worktree holding ``tree_or_commit`` (a tree gets a throwaway commit); removed on exit."""
        path = Path(path).absolute()
        if os.path.lexists(path):
            raise GitError(["worktree", "add", str(path)], f"{path} already exists")
        kind = self.text("cat-file", "-t", _plain(tree_or_commit, "object"))
        if kind not in ("tree", "commit"):
            raise GitError(["cat-file", "-t", tree_or_commit], f"{tree_or_commit} is a {kind}, not a tree or commit")
        commit = self._commit_tree(tree_or_commit, "agent-runtime: simulated merge", parents) if kind == "tree" else tree_or_commit
        with self.mutex:
            self.run("worktree", "add", "-q", "--detach", str(path), commit)
        try:
            yield path
        finally:
            self.remove_worktree(path)

    @_serialised
    def merge(self, base_branch: str, branch: str, message: str, *, expected_base: str) -> str:
        """Merge ``branch`` into ``base_branch`` with a merge commit (``--no-ff``); returns its sha.

        The merge commit is built in the object store (``merge-tree`` + ``commit-tree``),
        so no index or working tree ever holds a half-done merge. If no worktree has
        the base checked out, the ref moves by ``update-ref <new> <old>``: git's ref
        lock makes that a compare-and-swap, so a base that moved meanwhile is refused,
        never overwritten. If a worktree has it checked out, moving the ref alone would
        leave that checkout showing the merge reversed as local changes; so the checkout
        must be clean and is fast-forwarded with ``merge --ff-only``, which checks every
        file before it writes one and refuses if the user committed meanwhile.
        """
        ref = f"refs/heads/{_plain(base_branch, 'branch')}"
        current = self.resolve(ref)
        if current != expected_base:
            raise BaseMoved(["merge", branch], f"{base_branch} moved from {expected_base[:12]} to {current[:12]}")
        sim = self.simulate_merge(current, branch)
        if not sim.clean:
            raise GitError(["merge", branch], f"merge conflicts in {', '.join(sim.conflicts) or 'the tree'}")
        commit = self._commit_tree(str(sim.tree), message, (current, sim.head))
        holders = self.holding(ref)
        if not holders:
            try:
                self.run("update-ref", "-m", f"agent-runtime: merge {branch}", ref, commit, current)
            except GitError as exc:
                raise BaseMoved(exc.command, exc.stderr, exc.returncode) from None
            return commit
        if len(holders) > 1:
            raise GitError(["merge", branch], f"{base_branch} is checked out in {len(holders)} worktrees")
        checkout = holders[0]
        if self.dirty_checkout(base_branch) is not None:
            raise GitError(["merge", branch], f"{base_branch} is checked out in {checkout} with uncommitted changes")
        self.run("merge", "--ff-only", "--no-autostash", "-q", commit, cwd=checkout)
        return commit
