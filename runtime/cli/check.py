"""``runtime check``: the PreToolUse hook for Claude Code (and any agent that gates itself).

This module runs in a fresh process for every tool call. Its options are
parsed by hand and nothing heavier than the gate is imported: no argparse,
no pydantic, no rich. With ``--role``, a policy is compiled on first use and
cached (see ``runtime.gate.cache``).

With ``--approvals SOCK`` (the orchestrator's approvals socket of a spawned
agent), an ``ask`` becomes a blocking approval request: the hook waits for a
person's decision and answers allow (exit 0) or deny (exit 2). The wait is at
most ``--approval-wait`` seconds (default and maximum 25, see
``runtime.approvals.HOOK_WAIT_MAX_S``), plus a 2 s grace for the answer:
Claude Code kills a hook after 30 s (and then blocks the call: the hooks the runtime
writes carry `onFailure: block`), so the hook must answer before that. A request not decided in time has expired: a deny.
Without ``--approvals`` an ``ask`` is answered as ``ask`` (Claude Code then asks the person at its own
prompt); with ``--unattended`` (a run nobody watches) it is a deny at once, saying so.

With ``--resident`` (``runtime hook install --resident``) the call is answered by a resident process of this
user's when one runs (``runtime.cli.resident``: started on demand, over a socket only this user reaches),
and cold here otherwise, or whenever its answer is not one.

``--on-allow`` says what an allowed call is answered: ``allow`` (the default, for spawned agents
under ``dontAsk``, where the gate is the permission system) or ``defer`` (no decision at all, for
interactive sessions: Claude Code's own rules and prompts then still apply, and only denies and
asks come from the gate; ``runtime hook install`` writes this).
"""

from __future__ import annotations

import os
import sys

from runtime.lang.shapes import is_role_name

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call
if TYPE_CHECKING:
    from collections.abc import Callable

    from runtime.gate.decision import GateDecision
    from runtime.gate.hook import HookAnswer
    from runtime.gate.policy import Policy
    from runtime.lang.jsontypes import JSONObject

USAGE = (
    "usage: runtime check (--policy FILE | --role NAME [--task FILE]) [--catalog DIR] [--root DIR]"
    " [--main-session ROLE|defer|gate] [--on-allow allow|defer] [--approvals SOCK [--approval-wait SECONDS]"
    " | --unattended] [--resident]"
)
_OPTIONS = {"--policy", "--role", "--task", "--catalog", "--root", "--main-session", "--approvals", "--approval-wait",
            "--on-allow"}
_FLAGS = {"--unattended"}
# Answered by a resident process of this user's when one runs (started on demand), else here: `runtime.cli.resident`.
RESIDENT = "--resident"


def parse(argv: list[str]) -> dict[str, str]:
    opts: dict[str, str] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        key, eq, value = arg.partition("=")
        if arg in _FLAGS:
            if arg in opts:
                raise ValueError(f"`{arg}` given twice")
            opts[arg] = ""
            i += 1
            continue
        if key not in _OPTIONS:
            raise ValueError(f"unknown argument `{arg}`")
        if not eq:
            if i + 1 >= len(argv):
                raise ValueError(f"`{arg}` needs a value")
            value = argv[i + 1]
            i += 1
        if key in opts:
            raise ValueError(f"`{key}` given twice")
        opts[key] = value
        i += 1
    if "--policy" in opts and ({"--role", "--task"} & set(opts)):
        raise ValueError("--policy cannot be combined with --role or --task")
    main = opts.get("--main-session", "gate")
    if main not in ("gate", "defer") and not is_role_name(main):
        raise ValueError("--main-session must be a role name (`session`), defer or gate")
    if opts.get("--on-allow", "allow") not in ("allow", "defer"):
        raise ValueError("--on-allow must be allow or defer")
    if "--approval-wait" in opts:
        from runtime.approvals import HOOK_WAIT_MAX_S

        if "--approvals" not in opts:
            raise ValueError("--approval-wait needs --approvals")
        try:
            wait = float(opts["--approval-wait"])
        except ValueError:
            raise ValueError("--approval-wait must be a number of seconds") from None
        if not 0 < wait <= HOOK_WAIT_MAX_S:
            raise ValueError(f"--approval-wait must be more than 0 and at most {HOOK_WAIT_MAX_S} s "
                             "(Claude Code stops the hook after 30 s)")
    if "--approvals" in opts and "--unattended" in opts:
        raise ValueError("--unattended refuses what --approvals would ask a person: give one of them")
    if "--approvals" in opts and not opts["--approvals"].startswith("/"):
        raise ValueError("--approvals must be the absolute path of the orchestrator's approvals socket")
    return opts


def approval_asker(opts: dict[str, str]) -> Callable[[JSONObject, GateDecision], GateDecision] | None:
    """``on_ask`` for ``run_hook``: ask the orchestrator, answer what a person decided; with --unattended, refuse
    at once (None without either: the ask goes to Claude Code's own prompt)."""
    if "--unattended" in opts:
        from runtime.gate.decision import unattended

        return lambda data, decision: unattended(decision)
    socket_path = opts.get("--approvals")
    if socket_path is None:
        return None

    def on_ask(data: JSONObject, decision: GateDecision) -> GateDecision:
        from runtime.approvals import HOOK_WAIT_MAX_S
        from runtime.approvals.service import ask_orchestrator
        from runtime.gate.decision import ALLOW, allow, deny

        wait = float(opts.get("--approval-wait", HOOK_WAIT_MAX_S))
        tool = data.get("tool_name")
        if not isinstance(tool, str):  # always a str: the gate asks only about a call that names its tool
            return decision  # not an allow or a deny: run_hook denies the call
        verdict, why = ask_orchestrator(socket_path, tool, data.get("tool_input"), decision.reason, wait)
        if verdict == ALLOW:
            return allow(f"{why}; the gate had asked: {decision.reason}", decision.atom, decision.rule)
        return deny(why, decision.atom, decision.rule)

    return on_ask


def role_file(catalog: str, role: str) -> str:
    from runtime.manifests.locate import role_file as located  # not on a resident server's client path

    found: str = located(catalog, role)
    return found


def _ancestors(catalog: str, role: str) -> list[str]:
    """``role`` and the roles it extends, nearest first: the roles a subagent of ``role`` may narrow to.

    A role extends its parent by adding atoms (the parent's restrictions stay unless relaxed); the
    caller still checks that the parent shows no tool the child lacks (read-only shows WebFetch,
    explorer does not). The chain is read from the role files alone (tomllib); a role that cannot
    be read ends it.
    """
    import tomllib

    from runtime.manifests.locate import role_file_below

    chain: list[str] = []
    name: object = role
    path: str | None = role_file(catalog, role)
    while isinstance(name, str) and is_role_name(name) and path is not None and len(chain) < 16:
        if name not in chain:
            chain.append(name)
        try:
            with open(path, "rb") as fh:
                doc = tomllib.load(fh)
        except (OSError, ValueError):
            break
        parent = (doc.get("capabilities") or {}).get("extends")
        if parent == name:  # a project role adding to the role of its own name in the layer below
            path = role_file_below(catalog, name, path)
        elif isinstance(parent, str) and is_role_name(parent) and parent not in chain:
            path = role_file(catalog, parent)
        else:
            path = None
        name = parent
    return chain


def _task_role(task: str) -> str | None:
    """The role a task manifest names, read with tomllib (the hook does not load manifests fully)."""
    import tomllib

    try:
        with open(task, "rb") as fh:
            role = (tomllib.load(fh).get("task") or {}).get("role")
    except (OSError, ValueError):
        return None
    return role if isinstance(role, str) else None


def policy_selector(opts: dict[str, str]) -> Callable[[JSONObject], Policy | None]:
    """A function from hook input to the Policy that judges it (None = defer)."""
    if "--policy" in opts:
        from runtime.gate.policy import load_policy

        policy = load_policy(opts["--policy"])
        return lambda data: policy

    def compiled(catalog: str, role: str, task: str | None, data: JSONObject) -> Policy:
        from runtime.gate.cache import cached_policy

        if not os.path.isfile(role_file(catalog, role)):
            raise ValueError(f"role `{role}` is not in the catalog {catalog}")
        root = _project_root(opts, data)
        if root is None:
            raise ValueError("no absolute worktree root (pass --root, or set CLAUDE_PROJECT_DIR)")
        return cached_policy(catalog, role, os.path.realpath(task) if task else None, os.path.realpath(root))

    def select(data: JSONObject) -> Policy | None:
        from runtime.manifests.locate import PROJECT_FOLDER, find_catalog, project_catalog

        agent_type = data.get("agent_type")
        role = opts.get("--role")
        task = opts.get("--task")
        catalog = find_catalog(opts.get("--catalog"), search_cwd=False)
        if "--catalog" not in opts and not os.environ.get("RUNTIME_CATALOG"):
            # The repository's own catalog, when it has one (its roles and the rules `runtime allow` wrote):
            # found at the project's root, never searched for upward from wherever the call runs.
            root = _project_root(opts, data)
            if root is not None:
                catalog = project_catalog(os.path.join(root, PROJECT_FOLDER)) or catalog
        main = opts.get("--main-session", "gate")
        if role is None and agent_type is not None and main not in ("gate", "defer"):
            # A subagent of a person's session: held to the role its type names where the session's policy
            # lists it (a spawnable role, or Claude Code's Explore and Plan as the closest one), else to the
            # session's own rules: the very map by which the gate let the subagent start.
            session = compiled(catalog, main, None, data)
            mapped = session.subagents.get(agent_type) if isinstance(agent_type, str) else None
            if mapped is None:
                return session
            return compiled(catalog, mapped, task if task is not None and _task_role(task) == mapped else None, data)
        from runtime.manifests.kinds import BUILTIN_SUBAGENTS

        if role is None and agent_type in BUILTIN_SUBAGENTS and not os.path.isfile(role_file(catalog, agent_type)):
            mapped = BUILTIN_SUBAGENTS[agent_type]
            if mapped is None:
                raise ValueError(f"Claude Code's built-in `{agent_type}` subagent has no role here, so it may do "
                                 "nothing; use one of the roles as a subagent (`runtime export claude-agents`)")
            agent_type = mapped
        if agent_type is not None:
            # A Claude Code subagent is gated by the role of the same name; but it may only narrow
            # the role the hook was started with: a session gated as `read-only` whose subagent
            # calls itself `explorer` must not get a shell. Narrower: a role the session's role
            # extends (directly or not) that shows no tool the session's role lacks; anything else
            # is judged as the session's own role.
            if not isinstance(agent_type, str) or not is_role_name(agent_type):
                raise ValueError(f"subagent type {agent_type!r} is not a role name")
            if role is None:
                # Without a session role, `--task` scopes the subagent of the task's own role (an edit
                # role needs the task's write scope); any other subagent type gets its role alone.
                role, task = agent_type, (task if task is not None and _task_role(task) == agent_type else None)
            elif agent_type != role and agent_type in _ancestors(catalog, role):
                session = compiled(catalog, role, task, data)
                narrower = compiled(catalog, agent_type, None, data)
                if set(narrower.tools) <= set(session.tools):
                    return narrower
                return session
        if role is None:
            if main == "defer":
                return None
            if main == "gate":
                raise ValueError("no role for this call: pass --policy FILE or --role NAME (or --main-session ROLE)")
            # The main session of a person's own Claude Code (no agent_type): judged by its own role,
            # `session` as `runtime hook install` writes it, over the whole project (no task scope).
            return compiled(catalog, main, None, data)
        return compiled(catalog, role, task, data)

    return select


def _project_root(opts: dict[str, str], data: JSONObject) -> str | None:
    """The project a call belongs to: `--root`, else Claude Code's CLAUDE_PROJECT_DIR, else the call's cwd; None
    when none of them is an absolute path."""
    root = opts.get("--root") or os.environ.get("CLAUDE_PROJECT_DIR") or data.get("cwd")
    return root if isinstance(root, str) and root.startswith("/") else None


def _person_decided(opts: dict[str, str], data: JSONObject, decision: GateDecision) -> bool:
    """Whether a call the gate asks about only because no rule decides it is one the person's own Claude Code
    rules allow (`permissions.allow`): then the hook defers, and Claude Code applies their rule (and its own
    deny and ask rules). An ask a rule says to make, and every deny, stand."""
    from runtime.gate.decision import ASK

    if decision.verdict != ASK or not decision.undecided:
        return False
    from runtime.gate.claude_setup import person_allows

    root, tool = _project_root(opts, data), data.get("tool_name")
    if root is None or not isinstance(tool, str):
        return False
    return person_allows(os.path.realpath(root), tool, data.get("tool_input")) is not None


def _reviewed(opts: dict[str, str], data: JSONObject, result: HookAnswer,
              reviewer: dict[str, str | None]) -> HookAnswer:
    """An ask no rule decides, put to the session's reviewer model (`[session] reviewer`,
    `runtime.approvals.reviewer`): its allow is answered `allow` (Claude Code's own deny rules still apply), anything
    else stays the person's question, with the reviewer's reason beside the gate's. Audited either way."""
    from runtime.gate.decision import ASK, allow, ask
    from runtime.gate.hook import answer

    decision = result.decision
    if decision is None or decision.verdict != ASK or not decision.undecided:
        return result
    from pathlib import Path

    from runtime.approvals.reviewer import audit, review_ask
    from runtime.gate import deadline
    from runtime.spawn.state import default_state_dir

    found_root, tool = _project_root(opts, data), data.get("tool_name")
    if found_root is None or not isinstance(tool, str):
        return result
    root = os.path.realpath(found_root)
    deadline.disarm()  # the reviewer has a bound of its own (runtime.approvals.reviewer.TIMEOUT_S)
    found = review_ask(reviewer, tool, data.get("tool_input"), decision.reason, root)
    try:
        audit(default_state_dir(Path(root)) / "audit.jsonl", tool, data.get("tool_input"), decision.reason, found)
    except Exception as exc:  # noqa: BLE001 - an answer that cannot be audited is not acted on: the person decides
        return answer(ask(f"{decision.reason} (the session's reviewer could not be audited: {exc})", decision.atom,
                          decision.rule, undecided=True))
    if found.allowed:
        return answer(allow(f"the session's reviewer ({found.model}) allowed it: {found.reason} (the gate had asked: "
                            f"{decision.reason})", decision.atom, decision.rule))
    return answer(ask(f"{decision.reason}. The session's reviewer ({found.model}) leaves it to you: {found.reason}",
                      decision.atom, decision.rule, undecided=True))


def respond(argv: list[str], raw: bytes) -> tuple[str, str, int]:
    """The hook's answer to one call: its stdout, stderr and exit code. Never raises: a failure is a deny."""
    from runtime.gate.decision import deny
    from runtime.gate.hook import DEFER, answer, run_hook

    try:
        opts = parse(argv)
        try:
            select = policy_selector(opts)
        except Exception as exc:  # noqa: BLE001 - a policy that cannot load denies every call
            result = answer(deny(f"no usable policy: {exc}", None, "policy"))
        else:
            # The call as read and the policy that judged it, for what a session's hook does with an ask.
            chosen: list[tuple[JSONObject, Policy | None]] = []

            def selecting(data: JSONObject) -> Policy | None:
                chosen.append((data, select(data)))
                return chosen[-1][1]

            result = run_hook(raw, selecting, approval_asker(opts))
            if opts.get("--on-allow") == "defer" and result.decision is not None:
                data, policy = chosen[-1] if chosen else ({}, None)
                if result.decision.allowed or _person_decided(opts, data, result.decision):
                    result = DEFER
                elif policy is not None and policy.reviewer is not None:
                    result = _reviewed(opts, data, result, policy.reviewer)
    except Exception as exc:  # noqa: BLE001 - fail closed, never exit 1
        result = answer(deny(f"runtime check: {exc}. {USAGE}", None, "usage"))
    return result.stdout, result.stderr, result.exit_code


def main(argv: list[str]) -> int:
    if argv in (["--help"], ["-h"]):  # a person asking; Claude Code never passes these
        print(__doc__.strip() + "\n\n" + USAGE)
        return 0
    resident = RESIDENT in argv
    if resident:
        argv = [a for a in argv if a != RESIDENT]
    try:
        raw = sys.stdin.buffer.read()
    except Exception:  # noqa: BLE001 - unreadable input: the gate below denies the empty call
        raw = b""
    if resident and "--approvals" not in argv:
        from runtime.cli import resident as server

        served = server.ask(argv, raw)  # None: no server, or an answer that is not one; then the cold path
        if served is not None:
            return _write(*served)
    from runtime.gate import deadline
    from runtime.gate.decision import deny
    from runtime.gate.hook import answer

    late = answer(deny(f"the gate did not decide within {deadline.seconds():g} s, so the call is denied; split the "
                       "command into smaller ones", None, "deadline"))
    deadline.arm(late.stdout.encode(), late.stderr.encode())
    out, err, code = respond(argv, raw)
    deadline.disarm()
    code = _write(out, err, code)
    if resident and "--approvals" not in argv:
        server.start()  # for the next call, which this one answered without
    return code


def _write(out: str, err: str, code: int) -> int:
    sys.stdout.write(out)
    sys.stderr.write(err)
    sys.stdout.flush()
    return code
