"""safety::no-secrets: the machine's credential stores are never read; a repository's own secrets are asked.

Judged where a person's session or a strict (unsandboxed) agent runs. In the sandboxed mode it judges
nothing: the OS sandbox shows none of these stores (`/home` and `/root` are empty there, the agent has a
home of its own) and a process's environment there is the agent's own, cleaned by the orchestrator. Each path a call names is resolved (`~` and
symlinks followed: a link planted by an earlier call points nowhere new) and matched against the
atom's two lists; a glob word is matched by what it expands to now. `Grep` and `Glob` search a folder
whole, so one above a credential store (the home folder, `/`) is refused too.

Hand-written: it runs on every call of the hook, which imports nothing it does not need.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call

from runtime.gate.decision import deny
from runtime.gate.kinds.base import Gate, no_more, take_list
from runtime.gate.kinds.write_scope import GlobMatch
from runtime.lang.audience import SESSION
from runtime.policy.document import SANDBOXED

if TYPE_CHECKING:
    from runtime.gate.decision import GateDecision
    from runtime.gate.engine import Context
    from runtime.lang.jsontypes import JSONObject
    from runtime.lang.shell_types import Command

MAX_MATCHES = 2000  # names a glob word is expanded to before it is judged by its pattern alone
_PATH_KEYS = {"Read": ("file_path",), "NotebookRead": ("notebook_path",), "Grep": ("path",), "Glob": ("path",)}


class _Paths:
    """Where globs of three shapes match an absolute path: `~/REL` below the home folder, `/ABS`, and
    `**/NAME` at any depth."""

    __slots__ = ("home", "below_home", "absolute", "anywhere", "stores")

    def __init__(self, globs: list[str], home: str) -> None:
        self.home = home.rstrip("/") or "/"
        self.below_home = GlobMatch([g[2:] for g in globs if g.startswith("~/")])
        self.absolute = GlobMatch([g[1:] for g in globs if g.startswith("/")])
        self.anywhere = GlobMatch([g for g in globs if not g.startswith(("~/", "/"))])
        # The folders a search must not hold: each glob's leading literal folder, as an absolute path.
        stores = []
        for g in globs:
            if g.startswith(("~/", "/")):
                base = self.home if g.startswith("~/") else ""
                parts = g[2 if base else 1:].split("/")
                literal = [p for p in parts[:-1] if not set(p) & set("*?[")]
                stores.append(os.path.join(base or "/", *literal) if literal else base or "/")
        self.stores = tuple(stores)

    def match(self, path: str) -> bool:
        """Whether ``path`` matches, or is a folder the globs match the names below (`~/.ssh` for `~/.ssh/**`)."""
        return self._match(path) or self._match(path.rstrip("/") + "/-")

    def _match(self, path: str) -> bool:
        if self.absolute.match(path[1:]) or self.anywhere.match(path[1:]):
            return True
        if path.startswith(self.home + "/"):
            return self.below_home.match(path[len(self.home) + 1:])
        return False

    def holds(self, folder: str) -> str | None:
        """The credential store a search of ``folder`` would walk into, or None."""
        top = folder.rstrip("/") + "/"
        return next((s for s in self.stores if (s + "/").startswith(top) or s == folder), None)


class SecretReads(Gate):
    kind = "secret-reads"

    def configure(self, params: dict[str, object]) -> None:
        home = os.path.realpath(os.path.expanduser("~"))
        self.never = _Paths(take_list(params, "never"), home)
        self.asked = _Paths(take_list(params, "asked"), home)
        no_more(self.kind, params)

    # -- the file tools ------------------------------------------------------------------------------
    def on_tool(self, tool: str, tool_input: JSONObject, ctx: Context) -> GateDecision | None:
        keys = _PATH_KEYS.get(tool)
        if keys is None or ctx.policy.mode == SANDBOXED:
            return None
        for key in keys:
            value = tool_input.get(key)
            if value is None and tool in ("Grep", "Glob"):
                value = ctx.cwd  # a search without a path searches the session's folder
            if isinstance(value, str) and value and "\x00" not in value:
                path = _resolve(os.path.expanduser(value) if value[:1] == "~" else value, ctx.cwd)
                found = self._judge(f"`{tool}` of `{value}`", path, ctx)
                if found is not None:
                    return found
                if tool in ("Grep", "Glob"):
                    store = self.never.holds(path)
                    if store is not None:
                        return deny(f"`{tool}` of `{value}` would search `{store}`, which holds credentials this "
                                    "session never reads; you may use a folder that does not hold it (the repository: "
                                    f"`{ctx.policy.root}`)", self.atom, "secrets")
        pattern = tool_input.get("pattern")
        if tool == "Glob" and isinstance(pattern, str) and pattern[:1] in ("/", "~"):
            return self._word(pattern, True, pattern[:1] == "~", (ctx.cwd,), f"`Glob` of `{pattern}`", ctx)
        return None

    # -- shell commands ------------------------------------------------------------------------------
    def on_command(self, cmd: Command, ctx: Context) -> GateDecision | None:
        if ctx.policy.mode == SANDBOXED:
            return None
        cwds = cmd.cwds or (ctx.cwd,)
        for word in cmd.words:
            for value in _candidates(word.value):
                found = self._word(value, word.glob, word.tilde and value == word.value, cwds,
                                   f"`{cmd.name}` given `{value}`", ctx)
                if found is not None:
                    return found
        for _name, value in cmd.assigns:
            for part in _candidates(value):
                found = self._word(part, False, False, cwds, f"`{cmd.name}` given `{part}`", ctx)
                if found is not None:
                    return found
        if cmd.stdin is not None and cmd.stdin.path is not None:
            return self._word(cmd.stdin.path, False, False, cwds, f"`{cmd.name} < {cmd.stdin.path}`", ctx)
        return None

    def _word(self, value: str, glob: bool, tilde: bool, cwds: tuple[str, ...], what: str,
              ctx: Context) -> GateDecision | None:
        if tilde or value[:1] == "~" and glob:
            value = os.path.expanduser(value)
        for cwd in cwds:
            path = os.path.normpath(os.path.join(cwd, value))
            paths = [path]
            if glob:
                import glob as globbing  # only for a glob word

                for n, name in enumerate(globbing.iglob(path)):
                    if n >= MAX_MATCHES:
                        break
                    paths.append(name)
            for one in paths:
                found = self._judge(what, _resolve(one, cwd), ctx)
                if found is not None:
                    return found
        return None

    def _judge(self, what: str, path: str, ctx: Context) -> GateDecision | None:
        if self.never.match(path):
            return deny(f"{what}: `{path}` holds credentials (keys, tokens, passwords), which are never read here; "
                        f"{_never_step(ctx)}", self.atom, "secrets")
        if self.asked.match(path):
            from runtime.gate.undecided import undecided

            return undecided(f"{what}: `{os.path.basename(path)}` may hold the repository's secrets", ctx.policy,
                             self.atom, "secrets", instead="a person removes the name from the role's "
                             '`[params."safety::no-secrets"] asked`')
        return None


def _never_step(ctx: Context) -> str:
    if ctx.policy.audience == SESSION:
        return "if the work needs one, ask the person to give it to the program the way it reads it (its environment)"
    return "the work never needs them: say in your report what you needed"


def _candidates(value: str) -> list[str]:
    """The paths a word may name: itself unless it is an option, and what follows `=` in `--key=PATH` or
    `NAME=PATH`."""
    out = [] if value.startswith("-") else [value]
    if "=" in value:
        out.append(value.split("=", 1)[1])
    return [v for v in out if v and "\x00" not in v]


def _resolve(path: str, cwd: str) -> str:
    """``path`` made absolute against ``cwd``, with the symlinks that exist now followed."""
    return os.path.realpath(os.path.join(cwd, path))
