"""Claude Code's own sandbox for Bash, set from a role's compiled policy by `runtime hook install`.

The CLI runs each Bash command in a sandbox of its own (bubblewrap and socat on Linux and WSL2,
Seatbelt on macOS) when its settings say so. The `sandbox` block written here, as Claude Code
2.1.332 reads it (its binary's settings schema and behaviour, not older documentation):

- `enabled`, `failIfUnavailable` (a CLI that cannot start the sandbox refuses to start instead of
  running commands on the host with a warning) and `allowUnsandboxedCommands: false` (a call's
  `dangerouslyDisableSandbox` is ignored; the gate refuses such a call as well).
- `filesystem.allowWrite`: the folders of the role's write scope (a glob's part before its first
  wildcard, or the path it names). The CLI always lets commands write in its working folder and
  knows no "new names only" folder, and a deny covering an allowed folder wins over it (measured:
  `denyWrite: ["."]` with `allowWrite: ["./src"]` left `src` read-only). So a scope narrower than
  the repository is drawn as the runtime's own sandbox draws it: every existing file and folder
  outside it is in `denyWrite`, in each folder leading to it (the top included), and new names may
  still be made there (scratch such as `.pytest_cache`), as in a spawned agent's sandbox.
- `filesystem.denyWrite`: the control files at the top (`.git`, `.gitmodules`, `.claude`,
  `.mcp.json`, `.agent-runtime`, present or not: the CLI refuses creating an absent one), the
  catalog and submodule folders the policy protects, and the denylist's plain paths (a pattern has
  no form in these settings; the gate holds it). A role whose shell rules run git to stage or commit
  (`session`) keeps `.git` writable but for what makes git run code (`hooks`, `config`,
  `config.worktree`, `info`, `modules`, `worktrees`): with `.git` read-only, its own `git commit`
  would fail inside the sandbox.
- `network.allowedDomains`: the role's egress domains (`net::egress-allowlist`), or none. The CLI's
  proxy judges names only: the ports and address ranges the runtime's own proxy also holds a role
  to are not carried over, and `strictAllowlist` is not written because the CLI ignores it in a
  project's settings (a person may be asked about a domain off the list; a session run with `-p`
  is refused it).

Paths are relative (`./src`) in the project's own settings files, which the CLI resolves against the
project's root, so a committed file works on every clone; absolute in any other file.

Why the gate stays in strict mode beside this sandbox. Spawned agents get the lenient, sandboxed
mode because the gate can prove, per call, that it runs inside the runtime's own bubblewrap
(`runtime.gate.confinement`). A hook of Claude Code runs on the host before the command, and
nothing tells it whether this call will be sandboxed: the hook's input has no such field; the
settings files are no witness (after a settings file turned the sandbox on, the CLI ran the next two
commands on the host before it reloaded them: measured with 2.1.332); and the CLI holds states no
file shows ("Commands run WITHOUT sandboxing until you restart Claude Code", folders added to its
write list while it runs, `--settings` given inline). Even where it is on, it cannot hold what the
sandboxed mode leaves to a sandbox: the working folder is always writable (a narrower scope's new
files stay, with no verify after a person's session to reject them), and `.git` is either writable
(a script could rewrite history) or read-only (the session's own commits fail). So it backs the
strict gate up (code the allowed programs run, a test suite, a Makefile, stays inside it) and never
replaces it. As root it is no boundary at all: the CLI's sandbox runs commands as host root
(`kernel.core_pattern` writable, root's home readable).
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.errors import FatalError
from runtime.lang.globs import check_glob, literal_parts
from runtime.manifests.catalog import Catalog
from runtime.manifests.control import CONTROL, control_name
from runtime.manifests.role import load_role
from runtime.manifests.task import Task
from runtime.policy.compile import compile_document
from runtime.policy.document import PolicyDocument
from runtime.tooling.claude import SESSION_ROLE

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSON, JSONDict

# What of `.git` makes git run code (hooks, configuration naming programs, submodules' and linked
# worktrees' own copies of both): read-only even for a role that commits.
GIT_RUNS = ("hooks", "config", "config.worktree", "info", "modules", "worktrees")
# Subcommands of git that only read the repository: a role whose git rules go no further gets `.git`
# read-only whole.
_GIT_READS = frozenset({"status", "diff", "log", "show", "blame", "rev-parse", "ls-files", "grep", "describe",
                        "shortlog", "cat-file", "ls-tree", "show-ref", "for-each-ref", "rev-list", "--version"})
# The keys this module owns in the `sandbox` block; every other key there is the person's and stays.
OWNED = (("enabled",), ("failIfUnavailable",), ("allowUnsandboxedCommands",), ("filesystem", "allowWrite"),
         ("filesystem", "denyWrite"), ("network", "allowedDomains"))


@dataclass(frozen=True)
class SandboxBlock:
    """The `sandbox` settings of one role, and what they mean, for the install's one line."""

    role: str
    allow: tuple[str, ...]
    deny: tuple[str, ...]
    domains: tuple[str, ...]
    outside: int  # existing files and folders outside the scope made read-only

    def settings(self) -> JSONDict:
        return {"enabled": True, "failIfUnavailable": True, "allowUnsandboxedCommands": False,
                "filesystem": {"allowWrite": list(self.allow), "denyWrite": list(self.deny)},
                "network": {"allowedDomains": list(self.domains)}}

    def summary(self) -> str:
        others = f"{self.outside} existing files and folders outside the scope and " if self.outside else ""
        if self.allow in ((".",), ()) and not self.outside:
            writes = "anywhere in the repository but its control files" if self.allow else "nothing but new files"
        elif self.allow:
            writes = f"only in {', '.join(self.allow)} ({others}the control files read-only)"
        else:
            writes = f"no existing file of the repository ({others}the control files read-only)"
        net = ", ".join(self.domains) if self.domains else "no domain"
        return (f"Claude Code's sandbox set for role `{self.role}`: Bash writes {writes}, network to {net}; "
                "a call asking to leave the sandbox is refused")


def _scope(policy: PolicyDocument) -> set[str]:
    """The write scope as worktree-relative paths (`""`: the whole worktree); empty for no writes."""
    if policy.has_gate("read-only"):
        return set()
    out = set()
    for params in policy.gate_params("write-whitelist"):
        for glob in params["globs"]:
            out.add("/".join(literal_parts(glob)))
    return out


def _git_writes(policy: PolicyDocument) -> bool:
    """Whether a shell rule of the role runs git beyond reading (a rule with no subcommands allows all)."""
    for params in policy.gate_params("bash-allowlist"):
        for rule in params["rules"]:
            if rule["program"] == "git" and (not rule["subcommands"]
                                             or any((s.split() or [""])[0] not in _GIT_READS for s in rule["subcommands"])):
                return True
    return False


def _outside_scope(root: Path, scope: set[str]) -> list[str]:
    """The existing entries, in each folder leading to the scope, that lie outside it (relative paths)."""
    if "" in scope:
        return []
    leading = {""} | {"/".join(p.split("/")[:i]) for p in scope for i in range(1, p.count("/") + 1)}
    out = []
    for folder in sorted(leading):
        path = root / folder if folder else root
        if path.is_symlink() or not path.is_dir():
            continue  # a symlinked folder is denied as an entry of its parent, never entered
        try:
            names = sorted(os.listdir(path))
        except OSError:
            continue
        for name in names:
            rel = f"{folder}/{name}" if folder else name
            if not folder and control_name(name) is not None:
                continue  # denied on their own, present or not
            entry = root / rel
            if rel in scope and not entry.is_symlink():
                continue
            if rel in leading and entry.is_dir() and not entry.is_symlink():
                continue  # walked in turn
            out.append(rel)
    return out


def _through_link(root: Path, rel: str) -> bool:
    parts = rel.split("/") if rel else []
    return any((root.joinpath(*parts[:i])).is_symlink() for i in range(1, len(parts) + 1))


def _protected(policy: PolicyDocument, root: Path) -> list[str]:
    """The policy's protected paths (catalog files, submodule folders) that lie in the worktree."""
    out = []
    for path in policy.protected:
        rel = os.path.relpath(path, root)
        if rel != "." and not rel.startswith("..") and control_name(rel) is None:
            out.append(rel)
    return out


def sandbox_block(policy: PolicyDocument, root: Path, relative: bool) -> SandboxBlock:
    """The sandbox settings for a compiled ``policy`` anchored at ``root``; ``relative``: paths as `./x`."""
    root = Path(os.path.realpath(root))

    def spell(rel: str) -> str:
        if relative:
            return "./" + rel if rel else "."
        return str(root / rel) if rel else str(root)

    scope = _scope(policy)
    if _git_writes(policy) and (root / ".git").is_dir() and not (root / ".git").is_symlink():
        control = [f".git/{part}" for part in GIT_RUNS]
    else:
        control = [".git"]
    control += [name for name in CONTROL if name != ".git"]
    denylist = [g for params in policy.gate_params("write-denylist") for g in params["globs"]
                if "/".join(literal_parts(g)) == check_glob(g)]
    outside = _outside_scope(root, scope)
    deny = list(dict.fromkeys(control + _protected(policy, root) + denylist + outside))
    # A folder reached through a symlink is never allowed: the CLI would follow it out of the repository.
    allow = sorted(p for p in scope if not _through_link(root, p))
    domains: list[str] = []
    if not policy.has_gate("no-network"):
        for params in policy.gate_params("egress-allowlist"):
            domains += [d for d in params["domains"] if d not in domains]
    return SandboxBlock(role=policy.role, allow=tuple(spell(p) for p in allow), deny=tuple(spell(p) for p in deny),
                        domains=tuple(domains), outside=len(outside))


def merge_sandbox(settings: JSONDict, block: SandboxBlock) -> list[str]:
    """Put ``block`` into ``settings`` (in place): the owned keys set, every other key under `sandbox` kept.
    Returns the kept keys (dotted), which the install names: some widen the sandbox (`excludedCommands`)."""
    ours = block.settings()
    sandbox = _object(settings.setdefault("sandbox", ours), "sandbox")
    for key in ("filesystem", "network"):
        _object(sandbox.setdefault(key, {}), f"sandbox.{key}")
    for path in OWNED:
        where, value = sandbox, ours
        for part in path[:-1]:
            where, value = _object(where[part], f"sandbox.{part}"), _object(value[part], f"sandbox.{part}")
        where[path[-1]] = value[path[-1]]
    owned = {".".join(p) for p in OWNED}
    kept = [k for k in sandbox if k not in ("filesystem", "network") and k not in owned]
    kept += [f"{k}.{sub}" for k in ("filesystem", "network") for sub in _object(sandbox[k], f"sandbox.{k}")
             if f"{k}.{sub}" not in owned]
    return sorted(kept)


def _object(value: JSON, where: str) -> JSONDict:
    """A table of the settings file, which the install writes into in place."""
    if not isinstance(value, dict):
        raise FatalError(f"settings: `{where}` is not an object; fix it by hand before installing")
    return value


def strict_reason(as_root: bool) -> str:
    """Why the hook judges Bash in strict mode beside this sandbox, in one line."""
    if as_root:
        return ("the gate judges Bash in strict mode: this session runs as root, and Claude Code's sandbox runs "
                "commands as host root (kernel.core_pattern writable, root's home readable), so it is no boundary here")
    return ("the gate judges Bash in strict mode: a hook cannot tell whether Claude Code sandboxes a given call (its "
            "input does not say, and the CLI runs commands unsandboxed at times its settings files do not show), so "
            "the sandbox backs the gate up rather than replacing it")


def unavailable_note() -> str | None:
    """What keeps the sandbox from starting on this machine, where the settings make the CLI refuse to start."""
    if sys.platform == "darwin":
        return None  # Seatbelt ships with the system
    if not sys.platform.startswith("linux"):
        return (f"Claude Code's sandbox on {sys.platform} is not one these settings were measured with: where it cannot "
                "start, the CLI refuses to start (failIfUnavailable)")
    missing = [name for name, program in (("bubblewrap", "bwrap"), ("socat", "socat")) if shutil.which(program) is None]
    if missing:
        return (f"{' and '.join(missing)} not found: Claude Code refuses to start here until they are installed "
                f"(apt-get install {' '.join(missing)}), rather than run commands outside its sandbox")
    return None


def role_sandbox(catalog: Catalog, role: str | None, task: Task | None, root: Path, settings_file: Path) -> SandboxBlock:
    """The sandbox of the role whose Bash commands the session runs: ``role`` (with ``task``), else the main
    session's role. Subagents share the CLI's one sandbox, and their roles only narrow the session's."""
    resolved = task.role if task is not None else load_role(catalog, role or SESSION_ROLE)
    policy = compile_document(resolved, task, root, catalog)
    project = Path(os.path.realpath(root)) / ".claude"
    relative = Path(os.path.realpath(settings_file.parent)) == project and settings_file.name in (
        "settings.json", "settings.local.json")
    return sandbox_block(policy, root, relative)
