"""tools::bash-allowlist: every simple command must match a per-program rule.

A rule names a program, the subcommands it may run, flags it may not use,
flags whose value is a path (inside the worktree, or inside the write scope),
whether its positional arguments are files it writes, and whether inline code
(``python -c``) is allowed. Paths go through the same write checks as the
Write tool.
"""

from __future__ import annotations

from runtime.gate.decision import ALLOW, DENY, allow, ask, deny
from runtime.gate.interpreters import inline_code
from runtime.gate.kinds.base import Gate, PolicyError, no_more
from runtime.gate.paths import PathError, relative_to, resolve

_RULE_KEYS = {
    "program", "subcommands", "deny-flags", "root-path-flags", "scope-path-flags",
    "positional-writes", "inline-code", "ask",
}


class Rule:
    __slots__ = ("program", "subcommands", "deny_flags", "root_flags", "scope_flags", "positional_writes", "inline_code", "ask")

    def __init__(self, raw: dict) -> None:
        if not isinstance(raw, dict) or set(raw) != _RULE_KEYS:
            raise PolicyError("a shell rule has missing or unknown keys")
        self.program = raw["program"]
        self.subcommands = sorted((tuple(s.split()) for s in raw["subcommands"]), key=len, reverse=True)
        self.deny_flags = tuple(raw["deny-flags"])
        self.root_flags = tuple(raw["root-path-flags"])
        self.scope_flags = tuple(raw["scope-path-flags"])
        self.positional_writes = bool(raw["positional-writes"])
        self.inline_code = bool(raw["inline-code"])
        self.ask = bool(raw["ask"])


def flag_matches(arg: str, flag: str) -> bool:
    """Does ``arg`` use ``flag``, in any spelling a parser would accept?"""
    if arg == flag or arg.startswith(flag + "="):
        return True
    if flag.startswith("--"):
        # argparse and nopt accept unambiguous prefixes: `--basete` is `--basetemp`.
        name = arg.split("=", 1)[0]
        return len(name) > 3 and name.startswith("--") and flag.startswith(name)
    if len(flag) == 2:
        # -p plugin, -pplugin, -vp plugin
        return arg.startswith(flag) and not arg.startswith("--") or (
            arg[:1] == "-" and arg[1:2] != "-" and arg[1:].isalpha() and flag[1] in arg[1:]
        )
    # single-dash long flags (go test -exec) are also accepted with two dashes
    return arg == "-" + flag or arg.startswith("-" + flag + "=")


def flag_values(args: list[str], flags: tuple[str, ...]):
    """Yield (flag, value) for each use of one of ``flags``; value None if missing."""
    i = 0
    while i < len(args):
        a = args[i]
        for f in flags:
            if not flag_matches(a, f):
                continue
            if "=" in a and a.startswith("-"):
                yield f, a.split("=", 1)[1]
            elif len(f) == 2 and len(a) > 2 and a.startswith(f):
                yield f, a[2:]
            else:
                yield f, args[i + 1] if i + 1 < len(args) else None
                i += 1
            break
        i += 1


class BashAllowlist(Gate):
    kind = "bash-allowlist"
    grants = True

    def configure(self, params):
        raw = params.pop("rules", None)
        if not isinstance(raw, list):
            raise PolicyError("parameter `rules` must be a list")
        self.rules = {r.program: r for r in map(Rule, raw)}
        self.programs = ", ".join(sorted(self.rules)) or "none"
        no_more(self.kind, params)

    def on_command(self, cmd, ctx):
        name = cmd.name
        rule = self.rules.get(name)
        if rule is None:
            return deny(f"`{name}` is not an allowed program for this role (allowed: {self.programs})", self.atom, name)
        args = cmd.args
        sub: tuple[str, ...] = ()
        if rule.subcommands:
            sub = next((s for s in rule.subcommands if tuple(args[: len(s)]) == s), ())
            if not sub:
                shown = ", ".join(f"`{name} {' '.join(s)}`" for s in reversed(rule.subcommands))
                return deny(f"`{name} {' '.join(args[:2])}` is not allowed; allowed forms: {shown} (options after the subcommand)", self.atom, name)
        for a in args:
            for f in rule.deny_flags:
                if flag_matches(a, f):
                    return deny(f"`{name} {f}` is not allowed for this role; run `{name}` without it", self.atom, f"{name} {f}")
        if not rule.inline_code:
            why = inline_code(name, args)
            if why:
                return deny(why, self.atom, name)
        if cmd.open_args and (rule.deny_flags or rule.root_flags or rule.scope_flags or rule.positional_writes):
            return deny(f"`xargs {name}` would append arguments the gate cannot check; pass them explicitly", self.atom, name)
        for flag, value in flag_values(args, rule.root_flags):
            d = self._inside_root(name, flag, value, cmd, ctx)
            if d is not None:
                return d
        pending = None
        for flag, value in flag_values(args, rule.scope_flags):
            if value is None:
                return deny(f"`{name} {flag}` needs a value", self.atom, f"{name} {flag}")
            d = ctx.check_write(value, cmd.cwds, f"{name} {flag}")
            if d.verdict == DENY:
                return d
            pending = pending if d.verdict == ALLOW else d
        if rule.positional_writes:
            for word in self._positionals(cmd.words, len(sub)):
                if word.glob or word.tilde:
                    return deny(f"`{name} {word.value}`: name the files explicitly (no globs or `~`) so the gate can check them", self.atom, name)
                d = ctx.check_write(word.value, cmd.cwds, name)
                if d.verdict == DENY:
                    return d
                pending = pending if d.verdict == ALLOW else d
        if pending is not None:
            return pending
        if rule.ask:
            return ask(f"`{name}` needs approval under this role's rules", self.atom, name)
        return allow(f"`{name}` is allowed by its rule", self.atom, name)

    def _inside_root(self, name, flag, value, cmd, ctx):
        if value is None:
            return deny(f"`{name} {flag}` needs a value", self.atom, f"{name} {flag}")
        for cwd in cmd.cwds:
            try:
                rel = relative_to(resolve(value, cwd), ctx.policy.root)
            except PathError as exc:
                return deny(f"`{name} {flag}`: {exc}", self.atom, f"{name} {flag}")
            if rel is None:
                return deny(f"`{name} {flag} {value}` points outside the worktree; keep it inside", self.atom, f"{name} {flag}")
        return None

    @staticmethod
    def _positionals(words, skip):
        rest, options = words[skip:], True
        for w in rest:
            if options and w.value == "--":
                options = False
            elif options and w.value.startswith("-") and w.value != "-":
                continue
            else:
                yield w
