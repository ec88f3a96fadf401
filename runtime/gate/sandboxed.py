"""Shell commands under a sandboxed policy: judged by the effects the gate can see.

Inside the runtime's OS sandbox a command can only do what the sandbox lets
it: no network, `.git` and the control files read-only, the worktree writable
only in the write scope, the host's folders read-only, a private `/tmp`. So
this mode does not ask for a typed rule per program. It reads the command
leniently (``runtime.gate.effects``) and refuses only what the sandbox would
refuse, or verify reject, anyway:

- every program a gate of the role refuses by name, however it is reached
  (wrappers, `sh -c`, `eval`, `find -exec`, `$(...)`, a path `/usr/bin/git`):
  git (`policy::no-git-ops`), network programs (`net::no-network`), dependency
  changes (`safety::no-dep-bump`), writers in a read-only role;
- network redirections (`/dev/tcp/...`) in a role without network;
- every write it can name (redirections; the files of rm, cp, mv, tee, sed -i
  and the other writers; the path-typed write options of the role's
  grammars) that the Write tool would be refused: outside the write scope,
  into control files, the runtime's files or dependency files; and removing
  the worktree or a folder above it. Writes below the sandbox's private
  scratch folders (/tmp, /var/tmp, /dev/shm) are allowed: they are the
  sandbox's own and vanish with it.

A program whose shell rule says it needs a person's approval (`ask`) still
asks. Everything else is allowed: scripts the agent wrote, interpreter one-liners,
loops, substitutions, variables, programs without a grammar. A command that
tree-sitter cannot parse is allowed too, for the effects it did see: bash
will refuse real syntax errors with a clearer message than the gate's, and
whatever it runs stays in the sandbox. Each denial says it is early feedback.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call

from runtime.gate.decision import ASK, DENY, GateDecision, allow, ask, deny
from runtime.gate.effects import is_static, read_effects
from runtime.gate.file_writes import written_by
from runtime.gate.kinds.bash_allowlist import BashAllowlist
from runtime.gate.paths import PathError, protected_reason, relative_to, resolve
from runtime.lang.shell_types import ShellDeny

if TYPE_CHECKING:
    from runtime.gate.effects import Target
    from runtime.gate.engine import Context
    from runtime.lang.shell_types import Command

EARLY = (" (refused before it runs: inside this sandbox it would fail, or the final checks would reject "
         "its result, so this saves you a turn)")
# The sandbox's private tmpfs folders: writable, its own, gone when it ends.
SCRATCH = ("/tmp/", "/var/tmp/", "/dev/shm/")
_MAX_MATCHES = 1000  # files a glob in a write target may name before the gate stops expanding it


def _early(d: GateDecision, ctx: Context) -> GateDecision:
    """A deny, saying it saves a turn where the sandbox stands behind the gate (not in strict mode, which reads a
    command this way only to refuse what is forbidden in what it cannot read strictly)."""
    from runtime.gate.policy import SANDBOXED

    return GateDecision(DENY, d.reason + EARLY if ctx.policy.mode == SANDBOXED else d.reason, d.atom, d.rule)


def judge_bash(ctx: Context, command: object) -> GateDecision:
    if not isinstance(command, str) or not command.strip():
        return deny("the command is empty", None, "input")
    try:
        effects = read_effects(command, ctx.cwd)
    except ShellDeny as exc:
        return deny(str(exc), None, "shell")
    ctx.streams_ok = not effects.streams_redirected
    policy = ctx.policy
    refusers = [g for g in policy.command_gates if not g.grants]
    rule_sets = [g for g in policy.command_gates if isinstance(g, BashAllowlist)]
    pending = None
    for cmd in effects.commands:
        for gate in refusers:
            d = gate.on_command(cmd, ctx)
            if d is None:
                continue
            if d.verdict == DENY:
                return _early(d, ctx)
            if d.verdict == ASK:
                pending = d
        wanted = _approval(cmd, rule_sets)
        if wanted is not None:
            pending = wanted
        for target in written_by(cmd, rule_sets):
            d = _write(ctx, target)
            if d is not None:
                if d.verdict == DENY:
                    return _early(d, ctx)
                pending = d
    if effects.network:
        from runtime.gate.kinds.no_network import NoNetwork

        closed = next((g for g in policy.gates if isinstance(g, NoNetwork)), None)
        if closed is not None:
            return _early(deny(f"`{effects.network[0]}` opens a network connection, which this role does not have",
                               closed.atom, "network-redirection"), ctx)
    for target in effects.writes:
        d = _write(ctx, target)
        if d is not None:
            if d.verdict == DENY:
                return _early(d, ctx)
            pending = d
    if pending is not None:
        return pending
    names = ", ".join(dict.fromkeys(c.name for c in effects.commands)) or "no program the gate can name"
    note = "; part of it could not be parsed (bash will say if it is wrong)" if effects.unparsed else ""
    return allow(f"sandboxed: nothing this command is seen to do is refused by the sandbox or the checks ({names}){note}",
                 None, "sandboxed")


def _scratch(resolved: str, root: str) -> bool:
    """Whether ``resolved`` (outside the worktree) lies in the sandbox's private scratch space: below /tmp,
    /var/tmp or /dev/shm, and not in a folder it shares with the worktree's own path (a state folder under
    /tmp, as in tests, holds the runtime's records on the host: a write aimed there is refused, not
    quietly put on the sandbox's tmpfs)."""
    for top in SCRATCH:
        if resolved.startswith(top):
            return os.path.commonpath([resolved, root]) in ("/", top.rstrip("/"))
    return False


def _approval(cmd: Command, rule_sets: list[BashAllowlist]) -> GateDecision | None:
    """A person's approval, when a shell rule of the role says the program needs one (`ask = true`): that is
    oversight the role asks for, not a risk the sandbox takes away, so it holds in this mode too."""
    for gate in rule_sets:
        for rule in gate.rules_for(cmd.name) or ():
            if rule.ask and (not rule.subcommands or any(tuple(cmd.args[: len(s)]) == s for s in rule.subcommands)):
                return ask(f"`{cmd.name}` needs approval under this role's rules (its rule says `ask = true`; drop `ask` "
                           "from the rule to allow it without asking)", gate.atom, cmd.name)
    return None


def _write(ctx: Context, target: Target) -> GateDecision | None:
    """None when every file ``target`` names may be written; else the deny (or ask) of the first that may not."""
    word = target.word
    if not is_static(word) or word.tilde or not word.value:
        return None  # a name only the run knows: the sandbox judges that write
    pending = None
    for cwd in target.cwds:
        for path in _expand(word.value, word.glob, cwd):
            d = _one(ctx, target, path, cwd)
            if d is not None:
                if d.verdict == DENY:
                    return d
                pending = d
    return pending


def _expand(value: str, glob: bool, cwd: str) -> list[str]:
    """The paths bash would pass for ``value``: a glob's matches (the pattern itself when none match)."""
    if not glob:
        return [value]
    if "{" in value or sum(any(ch in part for ch in "*?[") for part in value.split("/")) > 2:
        return []  # brace expansion, or a pattern that would walk a deep tree: left to the sandbox
    import glob as globbing

    found = []
    for n, match in enumerate(globbing.iglob(value, root_dir=None if value.startswith("/") else cwd)):
        if n >= _MAX_MATCHES:
            break
        found.append(match)
    return found or [value]


def _one(ctx: Context, target: Target, path: str, cwd: str) -> GateDecision | None:
    policy = ctx.policy
    try:
        resolved = resolve(path, cwd)
    except PathError as exc:
        return deny(f"{target.source}: {exc}", None, "path")
    if target.into is not None and os.path.isdir(resolved):
        path = os.path.join(path, target.into)
        resolved = os.path.join(resolved, target.into)
    rel = relative_to(resolved, policy.root)
    if target.kind == "remove" and (rel == "" or (rel is None and relative_to(policy.root, resolved) is not None)):
        return deny(f"{target.source} would remove the worktree (its .git and every file in it); remove only the "
                    "files you mean to", None, "remove-worktree")
    why = protected_reason(resolved, policy.protected, policy.exempt, policy.root, policy.audience)
    if why:
        return deny(f"{target.source}: writing `{resolved}` is not allowed: {why}", None, "protected")
    if target.kind == "inside":
        return None  # only what lies below is written: the sandbox refuses what is outside the scope
    if rel is None and _scratch(resolved, policy.root):
        return None
    d = ctx.check_write(path, (cwd,), target.source, folder=target.kind == "folder")
    return None if d.verdict not in (DENY, ASK) else d
