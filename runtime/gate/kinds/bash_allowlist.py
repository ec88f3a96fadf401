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
    "positional-writes", "inline-code", "arg-files", "option-style", "ask",
}
_STYLES = ("gnu", "exact", "go")


class FlagSet:
    """Flags a rule names, matched in every spelling the program accepts.

    All styles: `--flag` and `--flag=v`, a short `-p` also as `-pplugin`.
    ``gnu`` and ``exact``: a short flag inside a cluster (`-vp plugin`);
    ``gnu`` also: unambiguous prefixes of long options (`--basete`), which
    getopt_long and nopt accept. ``go``: every flag is one name, spelled
    with one dash or two (`-o`, `--o=x`), and there are no clusters.
    """

    __slots__ = ("flags", "style", "exact", "short", "longs")

    def __init__(self, flags, style: str = "gnu") -> None:
        if style not in _STYLES:
            raise PolicyError(f"unknown option style `{style}`")
        self.flags = tuple(flags)
        self.style = style
        self.exact: dict[str, str] = {}
        self.short: dict[str, str] = {}
        self.longs: list[str] = []
        for f in self.flags:
            if style == "go":
                self.exact[f.lstrip("-")] = f
                continue
            self.exact[f] = f
            if f.startswith("--"):
                self.longs.append(f)
            elif len(f) == 2:
                self.short[f[1]] = f
            else:
                self.exact["-" + f] = f

    def hit(self, arg: str) -> str | None:
        """The flag ``arg`` uses, or None."""
        if len(arg) < 2 or arg[0] != "-":
            return None
        name = arg.partition("=")[0]
        if self.style == "go":
            return self.exact.get(name[2:] if name.startswith("--") else name[1:])
        found = self.exact.get(name)
        if found is not None:
            return found
        if arg[1] == "-":
            if self.style == "gnu" and len(name) > 2:
                for f in self.longs:
                    if f.startswith(name):
                        return f
            return None
        found = self.short.get(arg[1])
        if found is not None:
            return found
        if self.short and arg[1:].isalpha():
            for ch in arg[2:]:
                if ch in self.short:
                    return self.short[ch]
        return None

    def values(self, args: list[str]):
        """Yield (flag, value) for each use; value None when it is missing."""
        i = 0
        while i < len(args):
            a = args[i]
            f = self.hit(a)
            if f is not None:
                if "=" in a:
                    yield f, a.split("=", 1)[1]
                elif self.style != "go" and len(f) == 2 and len(a) > 2 and a.startswith(f):
                    yield f, a[2:]
                else:
                    yield f, args[i + 1] if i + 1 < len(args) else None
                    i += 1
            i += 1


class Rule:
    __slots__ = ("program", "subcommands", "deny_flags", "root_flags", "scope_flags", "positional_writes",
                 "inline_code", "arg_files", "ask", "has_arg_checks")

    def __init__(self, raw: dict) -> None:
        if not isinstance(raw, dict) or set(raw) != _RULE_KEYS:
            raise PolicyError("a shell rule has missing or unknown keys")
        self.program = raw["program"]
        self.subcommands = sorted((tuple(s.split()) for s in raw["subcommands"]), key=len, reverse=True)
        style = raw["option-style"]
        self.deny_flags = FlagSet(raw["deny-flags"], style)
        self.root_flags = FlagSet(raw["root-path-flags"], style)
        self.scope_flags = FlagSet(raw["scope-path-flags"], style)
        self.positional_writes = bool(raw["positional-writes"])
        self.inline_code = bool(raw["inline-code"])
        self.arg_files = bool(raw["arg-files"])
        self.ask = bool(raw["ask"])
        self.has_arg_checks = bool(self.deny_flags.flags or self.root_flags.flags or self.scope_flags.flags or self.positional_writes)


def _expands(value: str) -> bool:
    """Whether bash could turn this path word into another path: `~`, glob or brace characters."""
    return value[:1] == "~" or any(ch in value for ch in "*?[{")


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
        if rule.deny_flags.flags:
            for a in args:
                f = rule.deny_flags.hit(a)
                if f is not None:
                    said = a.partition("=")[0]
                    if said.startswith("--") and said != f:
                        return deny(f"`{name} {said}` may be read as `{f}`, which this role may not use; spell options out in full", self.atom, f"{name} {f}")
                    return deny(f"`{name} {f}` is not allowed for this role; run `{name}` without it", self.atom, f"{name} {f}")
        if not rule.arg_files:
            for a in args:
                if a[:1] == "@":
                    return deny(f"`{name} {a}`: arguments starting with @ can name a file of more arguments, which the gate cannot check", self.atom, name)
        if not rule.inline_code:
            why = inline_code(name, args)
            if why:
                return deny(why, self.atom, name)
        if cmd.open_args and rule.has_arg_checks:
            return deny(f"`xargs {name}` would append arguments the gate cannot check; pass them explicitly", self.atom, name)
        for flags in (rule.root_flags, rule.scope_flags):
            if flags.flags:
                for flag, value in flags.values(args):
                    if value is not None and (_expands(value) or value == "{}"):
                        # bash expands `~`, globs and braces in a path word before the program sees
                        # it, through symlinks planted in scope; the gate judges the literal text.
                        return deny(f"`{name} {flag} {value}`: write the path out (no `~`, globs or braces), "
                                    "so the gate judges the path the program will use", self.atom, f"{name} {flag}")
        if rule.root_flags.flags:
            for flag, value in rule.root_flags.values(args):
                d = self._inside_root(name, flag, value, cmd, ctx)
                if d is not None:
                    return d
        pending = None
        if rule.scope_flags.flags:
            for flag, value in rule.scope_flags.values(args):
                if value is None:
                    return deny(f"`{name} {flag}` needs a value", self.atom, f"{name} {flag}")
                d = ctx.check_write(value, cmd.cwds, f"{name} {flag}")
                if d.verdict == DENY:
                    return d
                pending = pending if d.verdict == ALLOW else d
        if rule.positional_writes:
            for word in self._positionals(cmd.words, len(sub)):
                if word.value == "{}":
                    return deny(f"`{name} {{}}`: `find -exec` puts every found path there, which the gate cannot check "
                                "as a write; find the files, then name them", self.atom, name)
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
