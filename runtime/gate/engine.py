"""The gate: ``decide(policy, tool_name, tool_input, cwd) -> GateDecision``.

Default deny: a tool the role does not show is denied; writes need a grant
from a scope gate and shell commands a grant from the shell rules. Deny beats
ask beats allow. Any exception inside is a deny that says so.
"""

from __future__ import annotations

import os
import stat

from runtime.gate.decision import ASK, DENY, GateDecision, allow, deny
from runtime.gate.kinds.egress import EgressAllowlist
from runtime.gate.kinds.mcp import PREFIX as MCP_PREFIX
from runtime.gate.kinds.mcp import McpAllowlist, split_name
from runtime.gate.paths import PathError, descriptor_kind, holder_reason, protected_reason, relative_to, resolve
from runtime.gate.policy import SANDBOXED, Policy
from runtime.lang.audience import SESSION as SESSION_AUDIENCE
from runtime.lang.audience import phrase
from runtime.manifests.kinds import BUILTIN_SUBAGENTS, PERSON_TOOLS, SESSION_TOOLS, SUBAGENT_TOOLS

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call
if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONObject
    from runtime.lang.shell_types import Command

_WRITE_KEYS = {
    "Write": ("file_path", {"file_path", "content"}),
    "Edit": ("file_path", {"file_path", "old_string", "new_string", "replace_all"}),
    "MultiEdit": ("file_path", {"file_path", "edits"}),
    "NotebookEdit": ("notebook_path", {"notebook_path", "new_source", "cell_id", "cell_type", "edit_mode"}),
}
_READ_KEYS = {
    "Read": ("file_path", True, {"file_path", "offset", "limit", "pages", "allow_large"}),
    "Glob": ("path", False, {"pattern", "path"}),
    "Grep": ("path", False, {"pattern", "path", "glob", "type", "output_mode", "-A", "-B", "-C", "-n", "-i",
                             "multiline", "head_limit", "offset", "context"}),
}
_BASH_KEYS = {"command", "description", "timeout", "run_in_background", "dangerouslyDisableSandbox"}


class Context:
    """One decision's view of the policy, handed to gate kinds."""

    __slots__ = ("policy", "tool", "cwd", "streams_ok", "folder", "_inside")

    def __init__(self, policy: Policy, tool: str, cwd: str) -> None:
        self.policy = policy
        self.tool = tool
        self.cwd = cwd
        # Whether /dev/stdout and /dev/stderr are still the streams the call was given: true only for
        # a shell command none of whose redirections put a file (or another descriptor) there.
        self.streams_ok = False
        # Whether the write being checked creates a folder (mkdir), not a file: a folder above the
        # write scope (`docs` for `docs/**`) holds nothing yet and may be made.
        self.folder = False
        self._inside: dict[str, bool] = {}

    def folder_inside_root(self, folder: str) -> bool:
        """Whether ``folder``, symlinks followed, lies inside the worktree and outside its protected folders
        (`.git`, `.claude`, the policy's): a program run there writes its caches there (once per folder per decision)."""
        if folder == self.policy.root:  # the worktree itself (already resolved when the policy loaded)
            return True
        found = self._inside.get(folder)
        if found is None:
            try:
                resolved = resolve(folder, self.cwd)
                found = (relative_to(resolved, self.policy.root) is not None
                         and protected_reason(resolved, self.policy.protected, self.policy.exempt,
                                              self.policy.root) is None)
            except PathError:
                found = False
            self._inside[folder] = found
        return found

    def check_write(self, target: str, cwds: tuple[str, ...], source: str, folder: bool = False) -> GateDecision:
        """May ``target`` be written (``folder``: created as a folder), taken relative to each of ``cwds``?"""
        result = None
        self.folder = folder
        try:
            for cwd in cwds:
                d = self._write_one(target, cwd, source)
                if d.verdict == DENY:
                    return d
                if result is None or d.verdict == ASK:
                    result = d
        finally:
            self.folder = False
        return result if result is not None else deny("no working folder to resolve the path against")

    def _write_one(self, target: str, cwd: str, source: str) -> GateDecision:
        policy = self.policy
        if isinstance(target, str):
            kind = descriptor_kind(os.path.normpath(target if target[:1] == "/" else f"{cwd}/{target}"))
            if kind == "sink" or (kind == "std" and self.streams_ok):
                return allow(f"`{target}` is not a file")
            if kind is not None:
                return deny(f"{source}: writing through `{target}` would re-open whatever file that descriptor holds; "
                            "write to the file by its name", None, "descriptor")
        try:
            resolved = resolve(target, cwd)
        except PathError as exc:
            return deny(f"{source}: {exc}; name the file by a plain path", None, "path")
        why = protected_reason(resolved, policy.protected, policy.exempt, policy.root, policy.audience)
        rel = relative_to(resolved, policy.root)
        if why is None and rel is not None and not self.folder:
            # Outside the worktree the scope refuses anyway; making a folder that exists changes nothing in it.
            why = holder_reason(resolved, policy.protected, policy.root)
        if why:
            # A control file's reason says what to do; a device's or the catalog's, not yet.
            step = "" if "leave it" in why else "; write the files of your task instead"
            return deny(f"{source}: writing `{resolved}` is not allowed: {why}{step}", None, "protected")
        try:
            st = os.lstat(resolved)
        except OSError:
            st = None
        if st is not None and stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
            # Another name of the same file may be anywhere on the file system (.git/config): a write
            # through this one changes it too.
            return deny(f"{source}: `{rel if rel is not None else resolved}` has {st.st_nlink} hard links, so writing "
                        "it would change another file too; write a new file instead", None, "hard-link")
        # The same combination as for shell commands in _bash, written out in
        # both places on purpose: a shared helper (generator plus callback)
        # cost 15-30% of decisions per second on this per-call path.
        grant = pending = None
        for gate in policy.write_gates:
            d = gate.on_write(resolved, rel, self)
            if d is None:
                continue
            if d.verdict == DENY:
                return d
            if d.verdict == ASK:
                pending = d
            if gate.grants:
                grant = d  # allow, or ask: granted pending approval
        if grant is None:
            return deny(f"{source}: role `{policy.role}` has no write scope, so it may not write `{rel if rel is not None else resolved}`", None, "no-write-scope")
        return pending or grant


def decide(policy: Policy, tool_name: object, tool_input: object, cwd: object) -> GateDecision:
    """Decide one tool call. Never raises: a failure inside is a deny."""
    try:
        return _decide(policy, tool_name, tool_input, cwd)
    except Exception as exc:  # noqa: BLE001 - the gate fails closed on anything
        return deny(f"the gate could not judge this call ({type(exc).__name__}: {exc}); it is denied", None, "gate-error")


def leaves_sandbox(inp: object) -> GateDecision | None:
    """The deny of a call that asks to run outside the OS sandbox (Claude Code's `dangerouslyDisableSandbox` on
    Bash), in every mode and whatever the policy: any value but false asks for it (a string "false" is truthy
    to JavaScript). None for any other call."""
    if isinstance(inp, dict) and "dangerouslyDisableSandbox" in inp and inp["dangerouslyDisableSandbox"] is not False:
        return deny("commands run only inside the sandbox: run this one without `dangerouslyDisableSandbox`, and if it "
                    "cannot work inside the sandbox, say what it needs instead of running it", None, "leave-sandbox")
    return None


def _decide(policy: Policy, tool: object, inp: object, cwd: object) -> GateDecision:
    if not isinstance(tool, str) or not tool:
        return deny("the hook input names no tool (`tool_name` must be a non-empty string)", None, "input")
    if not isinstance(inp, dict):
        return deny(f"the input of `{tool}` is not an object (`tool_input` must be a JSON object)", None, "input")
    if not isinstance(cwd, str) or not cwd.startswith("/") or "\x00" in cwd:
        return deny("the hook input has no absolute cwd (`cwd` must be an absolute path)", None, "input")
    leaving = leaves_sandbox(inp)
    if leaving is not None:
        return leaving
    if policy.mode == SANDBOXED:
        outside = policy.outside_sandbox()
        if outside is not None:
            return deny(outside, None, "sandbox")
    if tool.startswith(MCP_PREFIX):
        return _mcp(policy, tool, inp, Context(policy, tool, cwd))
    if tool not in policy.tools:
        shown = ", ".join(sorted(policy.tools)) or "none"
        return deny(f"`{tool}` is not available to role `{policy.role}`; do the work yourself with the tools you may "
                    f"use: {shown}", None, "tools")
    ctx = Context(policy, tool, cwd)
    pending = None
    for gate in policy.tool_gates:
        d = gate.on_tool(tool, inp, ctx)
        if d is not None:
            if d.verdict == DENY:
                return d
            if d.verdict == ASK:
                pending = d
    handler = _HANDLERS.get(tool)
    if handler is None:
        return deny(f"`{tool}` is not a tool this gate knows how to check", None, "tools")
    d = handler(ctx, inp)
    if d.verdict == DENY or pending is None:
        return d
    return pending


def _mcp(policy: Policy, tool: str, inp: JSONObject, ctx: Context) -> GateDecision:
    """An MCP tool: decided by the role's `tools::mcp-allowlist` rules (a deny of any other gate first); one
    no rule names is refused, saying the rule that would allow it."""
    named = split_name(tool)
    decision = None
    for gate in policy.tool_gates:
        d = gate.on_tool(tool, inp, ctx)
        if d is not None and (d.verdict == DENY or decision is None or d.verdict == ASK):
            decision = d
            if d.verdict == DENY:
                return d
    if decision is not None:
        return decision
    if named is None:
        return deny(f"`{tool}` is not an MCP tool's name (`mcp__<server>__<tool>`)", None, "mcp")
    server, name = named
    if policy.audience == SESSION_AUDIENCE and any(isinstance(g, McpAllowlist) and g.configured == "ask"
                                                  for g in policy.tool_gates):
        from runtime.gate.claude_setup import server_configured
        from runtime.gate.undecided import undecided

        found = server_configured(policy.root, server)
        if found is not None:
            return undecided(f"`{tool}` is a tool of the MCP server `{server}`, which you configured in {found.where} "
                             "and which runs outside the sandbox", policy, "tools::mcp-allowlist", f"mcp:{server}",
                             instead=f"`runtime allow {tool} --role {policy.role}` writes the rule that allows this tool "
                                     f"(`runtime allow 'mcp__{server}__*' --role {policy.role}`: every tool of the "
                                     "server), or your own Claude Code settings allow it (`permissions.allow`)")
        return deny(f"`{tool}`: the MCP server `{server}` is not one you or the repository configure (the repository's "
                    "`.mcp.json`; your user or local scope in ~/.claude.json; an enabled plugin; managed settings), so "
                    "this session does not call it: an MCP server runs outside the sandbox. Once configured (`claude "
                    "mcp add`), its calls are asked of you", None, "mcp")
    return deny(f"no rule of role `{policy.role}` lets it call `{tool}` (the MCP server `{server}` runs outside the "
                f"sandbox). To allow it, add a rule to the project catalog (`.agent-runtime/roles/project.toml`): "
                f'`[[params."tools::mcp-allowlist".servers]]` with `server = "{server}"`, `tools = ["{name}"]` (and '
                "`ask = true` to be asked each time); or do the work with the tools you have", None, "mcp")


def _unknown_keys(tool: str, inp: JSONObject, known: set[str] | frozenset[str]) -> GateDecision | None:
    extra = set(inp) - known
    if extra:
        fields = ", ".join(sorted(known)) or "none"
        return deny(f"`{tool}` input has fields this gate does not know ({', '.join(sorted(map(str, extra)))}); call it "
                    f"with only the fields it checks ({fields})", None, "input")
    return None


def _read(ctx: Context, inp: JSONObject) -> GateDecision:
    key, required, known = _READ_KEYS[ctx.tool]
    bad = _unknown_keys(ctx.tool, inp, known)
    if bad:
        return bad
    if ctx.tool != "Read" and not isinstance(inp.get("pattern"), str):
        return deny(f"`{ctx.tool}` needs a string `pattern`", None, "input")
    path = inp.get(key)
    if path is None and not required:
        return allow(f"`{ctx.tool}` only reads")
    if not isinstance(path, str) or not path or "\x00" in path:
        return deny(f"`{ctx.tool}` needs `{key}` as a non-empty path without NUL bytes", None, "input")
    return allow(f"`{ctx.tool}` only reads")


def _write(ctx: Context, inp: JSONObject) -> GateDecision:
    key, known = _WRITE_KEYS[ctx.tool]
    bad = _unknown_keys(ctx.tool, inp, known)
    if bad:
        return bad
    if ctx.tool == "MultiEdit":
        edits = inp.get("edits")
        if not isinstance(edits, list) or not all(isinstance(e, dict) for e in edits):
            return deny("`MultiEdit` needs `edits` as a list of objects", None, "input")
    path = inp.get(key)
    if not isinstance(path, str):
        return deny(f"`{ctx.tool}` needs `{key}` as a string", None, "input")
    if path[:1] == "~":
        # Claude Code's file tools expand `~` to the home folder; the gate would read it as a name in cwd.
        return deny(f"`{ctx.tool}`: `{path}` starts with `~`, which the tool expands to your home folder; "
                    "write the absolute path", None, "path")
    return ctx.check_write(path, (ctx.cwd,), ctx.tool)


def _bash(ctx: Context, inp: JSONObject) -> GateDecision:
    from runtime.gate.shell import analyze
    from runtime.lang.shell_types import ShellDeny, ShellUnseen

    bad = _unknown_keys("Bash", inp, _BASH_KEYS)
    if bad:
        return bad
    command = inp.get("command")
    if ctx.policy.mode == SANDBOXED:
        from runtime.gate.sandboxed import judge_bash  # what the sandbox would let the command do

        return judge_bash(ctx, command)
    try:
        script = analyze(command, ctx.cwd)
    except ShellUnseen as exc:
        return _unseen(ctx, command, str(exc))
    except ShellDeny as exc:
        return deny(str(exc), None, "shell")
    ctx.streams_ok = not script.streams_redirected
    policy = ctx.policy
    pending = None
    commands = script.commands
    labels: dict[int, str] | None = None  # what a package script made of `npm test -- ARGS`, by command
    if any(c.name == "npm" and "--" in c.args for c in commands):
        found = _package_scripts(ctx, commands)
        if isinstance(found, GateDecision):
            return found
        commands, labels = found
    for cmd in commands:
        grant = None
        if cmd.path is not None:
            d = _by_path(ctx, cmd, cmd.path)
            if d is not None:
                if d.verdict == DENY:
                    return d if labels is None else _labelled(d, labels.get(id(cmd)))
                grant = d  # a script: asked, unless a gate below forbids what it is by name
                pending = pending or d
        for gate in policy.command_gates:
            if grant is not None and gate.grants:
                continue
            d = gate.on_command(cmd, ctx)
            if d is None:
                continue
            if d.verdict == DENY:
                return d if labels is None else _labelled(d, labels.get(id(cmd)))
            if d.verdict == ASK:
                # The first ask says what the person is asked about first; every later one is asked with it.
                pending = pending or (d if labels is None else _labelled(d, labels.get(id(cmd))))
            if gate.grants:
                grant = d  # allow, or ask: granted pending approval
        if grant is None:
            return deny(f"`{cmd.name}` cannot run: role `{policy.role}` has no shell rules", None, "no-shell-rules")
    for write in script.writes:
        d = ctx.check_write(write.target, write.cwds, f"redirection `{write.text}`")
        if d.verdict == DENY:
            return d
        if d.verdict == ASK:
            pending = d
    if pending is not None and pending.undecided:
        # No rule decides a command of it (a program or form no rule names): read leniently too, as a sandbox
        # would see it, for what any gate forbids by effect (`ln -s X .git/hooks/...`, `dd of=/etc/...`).
        from runtime.gate.sandboxed import judge_bash

        d = judge_bash(ctx, inp.get("command"))
        if d.verdict == DENY:
            return d
    if pending is not None:
        return pending
    names = ", ".join(dict.fromkeys(c.name for c in commands))
    return allow(f"every command is allowed ({names})", None, "shell")


def _package_scripts(ctx: Context, commands: list[Command]) -> tuple[list[Command], dict[int, str]] | GateDecision:
    """`npm test -- ARGS` becomes `npm test` and the commands of the script with ARGS, each judged on its own
    (a script's own redirections are judged there too: the command is refused if it has any)."""
    from runtime.gate.package_scripts import script_call

    out: list[Command] = []
    labels: dict[int, str] = {}
    for cmd in commands:
        if cmd.name != "npm" or "--" not in cmd.args:
            out.append(cmd)
            continue
        found = script_call(cmd, ctx.policy.package_scripts, ctx.policy.root)
        if isinstance(found, str):
            return deny(found, None, "package-script")
        own, inner, line = found
        if inner.writes:
            return deny(f"`npm {' '.join(own.args)} -- …` runs `{line[:80]}`, which redirects into files; run the "
                        "program directly if your rules allow it", None, "package-script")
        out.append(own)
        for inner_cmd in inner.commands:
            labels[id(inner_cmd)] = line
            out.append(inner_cmd)
    return out, labels


def _labelled(d: GateDecision, line: str | None) -> GateDecision:
    if line is None:
        return d
    return GateDecision(d.verdict, f"the package script runs `{line[:80]}`: {d.reason}", d.atom, d.rule, d.undecided)


def _by_path(ctx: Context, cmd: Command, path: str) -> GateDecision | None:
    """A program called by its ``path`` runs from a toolchain folder (`.venv/bin/pytest`), from every folder
    the shell may be in; the rules then judge it by its name like any other (None). From anywhere else it
    is a script or a program no rule names: undecided, so asked."""
    from runtime.gate.undecided import undecided

    folder = os.path.dirname(path)
    for cwd in cmd.cwds:
        full = os.path.normpath(os.path.join(cwd, folder))
        # Lexically and with symlinks followed, it is the declared folder: a symlink planted
        # elsewhere (`src/bin -> .venv/bin`) or in its place (`.venv/bin -> /tmp`) is no way in.
        ok = full in ctx.policy.tool_path and os.path.realpath(full) == full
        if not ok:
            allowed = ", ".join(os.path.relpath(p, ctx.policy.root) for p in ctx.policy.tool_path)
            where = f"only the toolchain's folders ({allowed}) may be" if allowed else "no toolchain folder is declared"
            return undecided(f"`{path}` runs a program by its path, which no rule names ({where}; a program the rules "
                             f"name runs by its name, `{cmd.name}`)", ctx.policy, None, "program-path", name=path)
    return None


def _unseen(ctx: Context, command: object, why: str) -> GateDecision:
    """A command holding what the strict reading cannot see through (`$(...)`, a loop, `eval`): read leniently,
    as the sandboxed mode reads it, for what any gate forbids by name or any write it can name; refused for
    that, else undecided, so asked."""
    from runtime.gate.sandboxed import judge_bash
    from runtime.gate.undecided import undecided

    d = judge_bash(ctx, command)
    if d.verdict == DENY:
        return d
    return undecided(why.rstrip("."), ctx.policy, d.atom if d.verdict == ASK else None, "shell")


def _web(ctx: Context, inp: JSONObject) -> GateDecision:
    from urllib.parse import urlsplit

    from runtime.gate.kinds.no_network import NoNetwork
    from runtime.lang.domains import domain_allowed, internal_host, url_refusal, url_shape_refusal  # only web calls pay for it

    # Allowlisted: a web tool reaches only the domains an egress-allowlist atom declares (none without it).
    gates = [g for g in ctx.policy.gates if isinstance(g, EgressAllowlist)]
    domains = [d for g in gates for d in g.domains]
    ports = tuple(p for g in gates for p in g.ports)
    atom = gates[0].atom if gates else None
    # Without `net::no-network` the network is not forbidden: a domain no rule names is undecided, so asked.
    open_net = not any(isinstance(g, NoNetwork) for g in ctx.policy.gates)
    if ctx.tool == "WebFetch":
        bad = _unknown_keys("WebFetch", inp, {"url", "prompt"})
        if bad:
            return bad
        why = url_refusal(domains, inp.get("url"), ports, ctx.policy.audience)
        # A URL of a shape never fetched, or of an address inside the machine or its network, stays refused.
        shaped = why is not None and open_net and url_shape_refusal(inp.get("url"), ports) is None
        host = (urlsplit(str(inp.get("url"))).hostname or "") if shaped else ""
        if shaped and internal_host(host):
            return deny(f"`WebFetch` refused: `{host}` is this machine or its private network (loopback, link-local, "
                        "cloud metadata, private ranges), never fetched by a web tool; "
                        f"{phrase(ctx.policy.audience, 'network')}", atom, "egress")
        if shaped:
            return _web_undecided(ctx, f"`WebFetch` of `{host}`: no rule of role `{ctx.policy.role}` names the domain",
                                  atom, host)
        if why:
            return deny(f"`WebFetch` refused: {why}", atom, "egress")
        return allow("the URL's host is in the domains this agent may reach", atom, "egress")
    bad = _unknown_keys("WebSearch", inp, {"query", "allowed_domains", "blocked_domains"})
    if bad or not isinstance(inp.get("query"), str):
        return bad or deny("`WebSearch` needs a string `query`", None, "input")
    wanted = inp.get("allowed_domains")
    if wanted is not None and not (isinstance(wanted, list) and all(isinstance(d, str) for d in wanted)):
        return deny("`WebSearch` needs `allowed_domains` as a list of domains", None, "input")
    if not wanted:
        if open_net:
            return _web_undecided(ctx, "`WebSearch` of the whole web: no rule of role "
                                       f"`{ctx.policy.role}` limits it to domains it names", atom, None)
        return deny("`WebSearch` needs `allowed_domains`, drawn from the domains this agent may reach "
                    f"({', '.join(domains) or 'none'})", atom, "egress")
    outside = [d for d in wanted if not domain_allowed(domains, d)]
    if outside and open_net:
        return _web_undecided(ctx, f"`WebSearch` of {', '.join(outside)}: no rule of role `{ctx.policy.role}` names "
                                   "the domain", atom, outside[0])
    if outside:
        return deny(f"`WebSearch` refused: {', '.join(outside)} not in the domains this agent may reach "
                    f"({', '.join(domains) or 'none'})", atom, "egress")
    return allow("the search is limited to domains this agent may reach", atom, "egress")


def _web_undecided(ctx: Context, reason: str, atom: str | None, host: str | None) -> GateDecision:
    from runtime.gate.undecided import undecided

    named = f'`domains = ["{host}"]`' if host else "the domains"
    return undecided(reason, ctx.policy, atom, "egress",
                     instead=f"a person may add {named} to the role's `[params.\"net::egress-allowlist\"]`")


def _session(ctx: Context, inp: JSONObject) -> GateDecision:
    """The harness's checklist and background-command tools (kinds.SESSION_TOOLS says why each is safe):
    allowed with the fields they are known to take, denied with any other."""
    bad = _unknown_keys(ctx.tool, inp, SESSION_TOOLS[ctx.tool])
    if bad:
        return bad
    return allow(f"`{ctx.tool}` only keeps the session's own state", None, "session-tools")


def _person(ctx: Context, inp: JSONObject) -> GateDecision:
    """A question to the person, plan mode, a skill (kinds.PERSON_TOOLS says why each is safe): allowed with
    the fields they are known to take, in a role for a person's own session."""
    bad = _unknown_keys(ctx.tool, inp, PERSON_TOOLS[ctx.tool])
    if bad:
        return bad
    if ctx.tool == "Skill" and not (isinstance(inp.get("skill"), str) and inp["skill"]):
        return deny("`Skill` needs the skill's name as a string `skill`", None, "input")
    return allow(_PERSON_REASONS[ctx.tool], None, "person-tools")


_PERSON_REASONS = {
    "AskUserQuestion": "a question to the person: their answer is the result",
    "EnterPlanMode": "plan mode narrows the session to reading and planning",
    "ExitPlanMode": "the plan goes to the person, who approves it or not",
    "Skill": "a skill's instructions: every call they lead to is gated as its own",
}


def _subagent(ctx: Context, inp: JSONObject) -> GateDecision:
    """Starting a subagent: allowed when its type names a role the hook gates its every call by."""
    bad = _unknown_keys(ctx.tool, inp, SUBAGENT_TOOLS[ctx.tool])
    if bad:
        return bad
    kind = inp.get("subagent_type")
    roles = ctx.policy.subagents
    if inp.get("isolation") not in (None, ""):
        return deny("a subagent in a worktree of its own (`isolation`) works under `.claude/worktrees`, which the gate "
                    "and the sandbox keep read-only: start it without `isolation`", None, "subagents")
    if ctx.policy.audience == SESSION_AUDIENCE and isinstance(kind, str) and kind and kind not in roles:
        # A person's own subagent (theirs, a plugin's, or one Claude Code ships): the hook holds each of its calls
        # to the rules of the session that starts it (`runtime check`, the `agent_type` of its calls).
        return allow(f"subagent `{kind}`: every call it makes is gated by the rules of this session (role "
                     f"`{ctx.policy.role}`)", None, "subagents")
    if not isinstance(kind, str) or kind not in roles:
        builtin = [f"`{k}` (as {v})" for k, v in roles.items() if v != k]
        own = [f"`{k}`" for k, v in roles.items() if v == k]
        named = f"`{kind}`" if isinstance(kind, str) else "no `subagent_type`"
        why = ("Claude Code's own catch-all subagent, which may do anything no role here grants"
               if kind in BUILTIN_SUBAGENTS else "no subagent type the gate can hold to a role, so its calls could not be "
                                                 "judged")
        return deny(f"{named} is {why}: start one of these instead: {', '.join(builtin) or 'none'}"
                    + (f"; or a role as its own type, once `runtime export claude-agents` has written the roles as "
                       f"subagents: {', '.join(own)}" if own else ""), None, "subagents")
    via = f" (Claude Code's built-in type, as role `{roles[kind]}`)" if roles[kind] != kind else ""
    return allow(f"subagent `{kind}`{via}: every call it makes is gated by its role", None, "subagents")


_HANDLERS = {
    "Read": _read, "Glob": _read, "Grep": _read,
    "Write": _write, "Edit": _write, "MultiEdit": _write, "NotebookEdit": _write,
    "Bash": _bash,
    "WebFetch": _web, "WebSearch": _web,
    **{name: _session for name in SESSION_TOOLS},
    **{name: _person for name in PERSON_TOOLS},
    **{name: _subagent for name in SUBAGENT_TOOLS},
}
