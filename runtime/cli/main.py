"""The ``runtime`` command: one module per verb, each a ``run(args) -> int``.

Verb modules are imported only when their verb runs, so ``runtime --help``
and ``runtime check`` (a fresh process per tool call) stay light. Errors
become one line and an exit code here, in one place: the user's to fix
(``FatalError``) exit 1, a run that ended badly (``RunFailure``, a model call
that failed among them) exits 2 as its outcome.
"""

from __future__ import annotations

import os
import sys


def printable(text: str) -> str:
    """runtime.printable's, imported only when an error is printed: the hook's calls never need unicodedata."""
    from runtime.printable import printable as made_safe

    return made_safe(text)

TYPE_CHECKING = False  # typing's, without importing typing: `runtime check` is a fresh process per call
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from typing import Any, NoReturn

VERBS = {
    "lint": "runtime.cli.lint",
    "schema": "runtime.cli.schema",
    "roles": "runtime.cli.roles",
    "compose": "runtime.cli.compose",
    "hook": "runtime.cli.hook",
    "export": "runtime.cli.export",
    "doc-roles": "runtime.cli.doc_roles",
    "migrate": "runtime.cli.migrate",
    "explain": "runtime.cli.explain",
    "init": "runtime.cli.init",
    "spawn": "runtime.cli.spawn",
    "again": "runtime.cli.again",
    "run": "runtime.cli.run",
    "memory": "runtime.cli.memory",
    "verify": "runtime.cli.verify",
    "audit": "runtime.cli.audit",
    "status": "runtime.cli.status",
    "show": "runtime.cli.show_agent",
    "doctor": "runtime.cli.doctor",
    "prune": "runtime.cli.prune",
    "approve": "runtime.cli.approve",
    "deny": "runtime.cli.approve",
    "approvals": "runtime.cli.approve",
    "allow": "runtime.cli.allow",
    "console": "runtime.cli.console",
}


def build_parser() -> argparse.ArgumentParser:
    import argparse  # not at module level: `runtime check` never needs it

    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:  # usage errors exit 1, like every other user error
            self.print_usage(sys.stderr)
            self.exit(1, f"{self.prog}: error: {message}\n")

    parser = Parser(
        prog="runtime",
        description="Role-sandboxed multi-agent runtime: capability atoms, roles, and a fail-closed PreToolUse gate.",
    )
    parser.add_argument("--version", action="version", version=f"runtime {_version()}")
    common = Parser(add_help=False)
    common.add_argument("--catalog", metavar="DIR", help="folder with capabilities/ and roles/ (default: found upward from here, then the shipped one)")
    sub = parser.add_subparsers(dest="verb", metavar="COMMAND")
    sub.required = True
    add = sub.add_parser

    def verb(name: str, **kw: Any) -> argparse.ArgumentParser:
        return add(name, parents=[common], **kw)

    p = verb("lint", help="validate atoms, roles and task manifests; run every atom example")
    p.add_argument("paths", nargs="*", metavar="PATH", help="task manifests or folders of them (default: manifests/)")
    p.add_argument("--json", action="store_true", help="print findings as JSON")

    p = verb("schema", help="write JSON Schemas for capability, role and task files")
    p.add_argument("--out", metavar="DIR", help="folder to write to (default: <catalog>/schemas)")
    p.add_argument("--check", action="store_true", help="exit 1 if the written schemas are stale")

    p = verb("roles", help="list the roles")
    p.add_argument("--json", action="store_true")

    p = verb("compose", help="print the prompt bundle of a task (or of a role)")
    p.add_argument("task", nargs="?", metavar="TASK", help="a task manifest")
    p.add_argument("--role", help="compose a role without a task")
    p.add_argument("--root", metavar="DIR", help="worktree root the policy is anchored at (default: .)")
    p.add_argument("--json", action="store_true", help="print the bundle and the compiled policy as JSON")
    p.add_argument("--policy-out", metavar="FILE", help="also write the compiled policy to FILE")

    add("check", help="PreToolUse hook: read a Claude Code hook call on stdin, answer allow/deny/ask",
                   add_help=False)

    p = sub.add_parser("init", help="start a project catalog (.agent-runtime/) that extends the shipped one")
    p.add_argument("path", nargs="?", metavar="DIR", help="the repository (default: .)")
    p.add_argument("--json", action="store_true", help="what was found, from where, and what was written, as JSON")
    p.add_argument("--probe", action="store_true",
                   help="run the task template's test and check commands once at HEAD, as verify does, and set "
                        "test-count-min and baseline from what they do there")
    p.add_argument("--no-os-sandbox", action="store_true", help="with --probe: run them without bubblewrap")

    p = add("allow", help="write the rule that allows a command or an MCP tool into the repository's catalog "
                          "(.agent-runtime/roles)")
    p.add_argument("command", metavar="COMMAND", help="the Bash command the gate asked about, quoted as one word; or "
                                                      "an MCP tool (`mcp__SERVER__TOOL`, `mcp__SERVER__*` for all)")
    p.add_argument("--role", default="project",
                   help="the role to allow it for (default: project; a shipped role, `session` say, gets a file of "
                        "its name in .agent-runtime/roles that adds to it)")
    p.add_argument("--repo", metavar="DIR", help="the repository (default: the one around the working folder)")
    p.add_argument("--dry-run", action="store_true", help="show the change, write nothing")
    p.add_argument("--json", action="store_true", help="what was written, as JSON")

    p = verb("explain", help="would a tool call be allowed, and why? (the gate's answer, no hook JSON)")
    p.add_argument("subject", metavar="COMMAND_OR_PATH", help="a Bash command, or the path (URL, query) of --tool")
    p.add_argument("--role", help="the role to ask")
    p.add_argument("--task", metavar="FILE", help="a task manifest (its role and scope)")
    p.add_argument("--tool", default="Bash", help="Bash (default), Read, Write, Edit, MultiEdit, NotebookEdit, Glob, Grep, WebFetch, WebSearch")
    p.add_argument("--root", metavar="DIR", help="the worktree root (default: .)")
    p.add_argument("--cwd", metavar="DIR", help="the working folder of the call (default: the root)")
    p.add_argument("--mode", help="the policy's mode: strict (default; the drop-in hook, --no-os-sandbox) or "
                   "sandboxed (a spawned agent inside the OS sandbox)")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("hook", help="install the PreToolUse hook and the role's sandbox into Claude Code settings")
    hook_sub = p.add_subparsers(dest="action", metavar="ACTION")
    hook_sub.required = True
    h = hook_sub.add_parser("install", parents=[common], help="merge the hook and the role's sandbox settings into .claude/settings.json (idempotent)")
    h.add_argument("--settings", metavar="FILE", help="the settings file (default .claude/settings.json, or "
                   ".claude/settings.local.json when the command names this machine's paths)")
    h.add_argument("--role", help="gate the main session with this role (default: leave it to Claude Code; gate subagents by their role)")
    h.add_argument("--command", metavar="PATH", help="the runtime executable to call (default: this one)")
    h.add_argument("--task", metavar="FILE", help="scope the subagent of this task's role (or the --role session) by the task")
    h.add_argument("--resident", action=argparse.BooleanOptionalAction, default=True,
                   help="answer each call from a resident process of yours, over a socket only you reach (started on "
                        "demand, gone after 15 idle minutes; a call it cannot answer is answered cold); the default: "
                        "--no-resident answers every call from a fresh process")
    h.add_argument("--json", action="store_true")

    p = sub.add_parser("export", help="export roles for other tools")
    ex_sub = p.add_subparsers(dest="target", metavar="TARGET")
    ex_sub.required = True
    e = ex_sub.add_parser("claude-agents", parents=[common], help="write .claude/agents/<role>.md for every spawnable role")
    e.add_argument("--out", metavar="DIR", default=".claude/agents")
    e.add_argument("--task", metavar="FILE", help="export only this task's role, with the task's scope in its prompt")
    e.add_argument("--json", action="store_true")

    p = verb("doc-roles", help="regenerate docs/AGENT-ROLES.md from the role and atom files")
    p.add_argument("--check", action="store_true", help="exit 1 with a diff when the file is stale")
    p.add_argument("--out", metavar="FILE", help="file to write (default: <catalog>/docs/AGENT-ROLES.md)")
    p.add_argument("--json", action="store_true")

    p = verb("migrate", help="rewrite deprecated atom names, old shell rules and old size examples, rename old grammar files")
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="TOML files or folders (default: roles/, manifests/ and capabilities/; the catalog's programs/ "
                   "is always checked for grammar files of the old naming)")
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 listing each deprecated use")
    p.add_argument("--diff", action="store_true", help="show the change as a diff (nothing written)")
    p.add_argument("--json", action="store_true", help="what changed (or would), as JSON")
    p = add("doctor", help="what this machine gives a spawned agent: the OS sandbox, and which limits the kernel holds")
    p.add_argument("--json", action="store_true")

    p = verb("spawn", help="run one agent on a task: sandbox, gate, verify, retry, commit")
    p.add_argument("task", metavar="TASK")
    p.add_argument("--base", metavar="REV", help="the revision to branch from (default: HEAD)")
    p.add_argument("--merge", action="store_true", help="merge verified work into the base after re-checking the merge")
    p.add_argument("--keep", action="store_true", help="keep the worktree afterwards")
    p.add_argument("--afresh", action="store_true",
                   help="an agent id whose run finished (rejected, say, and its task file fixed since): start again from "
                        "the current base and the task file as it is now, the old branch kept as "
                        "refs/agent-runtime/previous/ID/N")
    p.add_argument("--no-os-sandbox", action="store_true", help="run without bubblewrap (loudly warned; the gate still applies)")
    p.add_argument("--unattended", action="store_true",
                   help="nobody watches this run: what the gate would ask a person is refused at once, and control "
                        "files are never merged (default: asked through `runtime approvals` and the console)")
    p.add_argument("--state-dir", metavar="DIR", help="where runs, worktrees and the audit log live")
    p.add_argument("--json", action="store_true", help="print the outcome as JSON")

    p = add("again", help="a new series of attempts for an agent whose run finished, on its work, with what you send back")
    p.add_argument("agent", metavar="ID", help="the agent id (`runtime status` lists them)")
    p.add_argument("--feedback", metavar="FILE", help="what the agent is told first: a file, or - for standard input")
    p.add_argument("--merge", action="store_true", help="merge verified work into the branch it came from")
    p.add_argument("--state-dir", metavar="DIR", help="where runs, worktrees and the audit log live")
    p.add_argument("--json", action="store_true", help="print the outcome as JSON")

    p = verb("run", help="many agents on one goal: plan, fan out, verify, merge, judge, replan")
    p.add_argument("plan", nargs="?", metavar="PLAN", help="a plan.toml")
    p.add_argument("--goal", help="ask the planner model for the plan")
    p.add_argument("--resume", metavar="RUN_ID", help="continue a run that was interrupted")
    p.add_argument("--merge", action="store_true", help="merge the accepted result into the base branch")
    p.add_argument("--save-plan", metavar="FILE", help="write the plan (with its [agent] tables) to FILE")
    p.add_argument("--no-os-sandbox", action="store_true", help="run agents without bubblewrap (loudly warned)")
    p.add_argument("--unattended", action="store_true",
                   help="nobody watches this run: every agent refuses at once what the gate would ask a person")
    p.add_argument("--state-dir", metavar="DIR")
    p.add_argument("--json", action="store_true", help="an event stream, one JSON object per line")
    p.add_argument("--executor", choices=("local", "ray"), default=None,
                   help="where subtasks run: this machine, or the nodes of a Ray cluster (default: the plan's "
                        "[plan] executor, else local)")
    p.add_argument("--ray-address", metavar="HOST:PORT",
                   help="the Ray cluster to join (default: $RAY_ADDRESS, else the one running on this machine)")
    p.add_argument("--planner-model", help="litellm model (or scripted/NAME) that writes plans and replans")
    p.add_argument("--planner-api-base", metavar="URL")
    p.add_argument("--planner-script", metavar="FILE", help="the scripted planner's playback file")
    p.add_argument("--planner-retries", type=int, default=2, metavar="N", help="invalid plans sent back (default 2)")
    from runtime.manifests.kinds import AGENT_BACKENDS

    p.add_argument("--agent-backend", default="builtin", choices=AGENT_BACKENDS)
    p.add_argument("--agent-model", help="the model of planned subtasks' agents")
    p.add_argument("--agent-api-base", metavar="URL")
    p.add_argument("--agent-scripts", metavar="DIR", help="scripted agents: DIR/<subtask id>.toml")

    p = verb("memory", help="the shared memory of accepted runs: show, search, curate learnings")
    mem = p.add_subparsers(dest="action", metavar="ACTION")
    mem.required = True
    m = mem.add_parser("show", parents=[common], help="results, facts and pending learnings")
    m.add_argument("--state-dir", metavar="DIR")
    m.add_argument("--json", action="store_true")
    m = mem.add_parser("search", parents=[common], help="full-text search of results and facts")
    m.add_argument("query")
    m.add_argument("--tag", action="append", help="only entries with this tag (repeatable)")
    m.add_argument("--state-dir", metavar="DIR")
    m.add_argument("--json", action="store_true")
    m = mem.add_parser("curate", parents=[common], help="promote pending learnings into facts, or discard them")
    m.add_argument("--promote", nargs="*", default=[], metavar="ID")
    m.add_argument("--discard", nargs="*", default=[], metavar="ID")
    m.add_argument("--state-dir", metavar="DIR")
    m.add_argument("--json", action="store_true")

    p = verb("verify", help="run the verify step alone on an agent-authored worktree (for CI)")
    p.add_argument("task", metavar="TASK")
    p.add_argument("--worktree", metavar="DIR", required=True)
    p.add_argument("--base", metavar="REV", required=True)
    p.add_argument("--report", metavar="FILE", help="the agent's final report, for the report checks")
    p.add_argument("--no-os-sandbox", action="store_true", help="run the check commands without bubblewrap")

    p = verb("audit", help="the audit log: verify its chain, show its records")
    audit_sub = p.add_subparsers(dest="action", metavar="ACTION")
    audit_sub.required = True
    a = audit_sub.add_parser("verify", parents=[common], help="detect edited, deleted or reordered records")
    a.add_argument("--state-dir", metavar="DIR")
    a.add_argument("--json", action="store_true")
    a = audit_sub.add_parser("show", parents=[common], help="print records, filtered")
    a.add_argument("--state-dir", metavar="DIR")
    a.add_argument("--agent", help="only this agent's records")
    a.add_argument("--kind", help="only records of this kind (spawn, gate, tool, check, retry, commit, merge, outcome)")
    a.add_argument("--json", action="store_true", help="one JSON record per line")

    p = verb("status", help="the runs of this repository and their state")
    p.add_argument("agent", nargs="?", help="one agent id")
    p.add_argument("--state-dir", metavar="DIR")
    p.add_argument("--json", action="store_true")

    p = verb("show", help="what an agent did: its outcome, attempts, checks, report and change against the base")
    p.add_argument("agent", metavar="ID", help="the agent id (`runtime status` lists them)")
    p.add_argument("--stat", action="store_true", help="the change as a stat (files and lines), not the whole diff")
    p.add_argument("--state-dir", metavar="DIR")
    p.add_argument("--json", action="store_true", help="the run's record and the diff, as JSON")

    p = verb("console", help="the runs of this repository in a browser, live (local, behind a token)")
    p.add_argument("--no-open", action="store_true", help="print the URL and serve; do not open a browser")
    p.add_argument("--port", type=int, default=0, help="the port on 127.0.0.1 (default: any free one)")
    p.add_argument("--state-dir", metavar="DIR")

    p = verb("prune", help="clean up finished runs: state, worktrees, merged agent branches (frees their agent ids)")
    p.add_argument("--older-than", type=float, default=0, metavar="DAYS", help="only runs last updated this many days ago")
    p.add_argument("--unmerged", action="store_true", help="also delete agent branches not merged into their base")
    p.add_argument("--dry-run", action="store_true", help="say what would go, change nothing")
    p.add_argument("--state-dir", metavar="DIR")
    p.add_argument("--json", action="store_true")

    p = verb("approve", help="approve an agent's call that waits for a decision (the gate said ask)")
    p.add_argument("id", metavar="ID", help="the request id (see `runtime approvals`)")
    p.add_argument("--reason", help="why (recorded, and told to the agent)")
    p.add_argument("--state-dir", metavar="DIR")
    p.add_argument("--json", action="store_true", help="print the decided request as JSON")

    p = verb("deny", help="deny an agent's call that waits for a decision")
    p.add_argument("id", metavar="ID", help="the request id (see `runtime approvals`)")
    p.add_argument("--reason", required=True, help="why: the agent reads it instead of the call's result")
    p.add_argument("--state-dir", metavar="DIR")
    p.add_argument("--json", action="store_true", help="print the decided request as JSON")

    p = verb("approvals", help="list the agents' calls that wait for a decision")
    p.add_argument("--agent", help="only this agent's requests")
    p.add_argument("--all", action="store_true", help="also decided and expired requests (the last 200)")
    p.add_argument("--state-dir", metavar="DIR")
    p.add_argument("--json", action="store_true")
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    from runtime import DISTRIBUTION

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["check"]:  # the hook: a fresh process per tool call, which imports only what it needs
        from runtime.cli import check

        return check.main(argv[1:])
    import importlib

    from runtime.errors import INTERNAL_ERROR, FatalError, ManifestErrors, RunFailure

    args = build_parser().parse_args(argv)
    try:
        module = importlib.import_module(VERBS[args.verb])
        run: Callable[[argparse.Namespace], int] = module.run  # every verb module's `run(args) -> int`
        return run(args)
    except ManifestErrors as exc:
        for err in exc.errors:
            print(printable(f"error: {err}"), file=sys.stderr)
        return exc.exit_code
    except FatalError as exc:
        print(printable(f"error: {exc}"), file=sys.stderr)
        return exc.exit_code
    except RunFailure as exc:  # met outside a spawn, which records its own (a planner's model, say)
        print(printable(f"error: {exc.outcome}({exc.detail}): {exc.message}"), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 - one line for the user; the traceback in a file
        if os.environ.get("RUNTIME_DEBUG"):
            raise
        log = _crash_log(argv)
        where = f"the traceback is in {log}" if log else "set RUNTIME_DEBUG=1 for the traceback"
        print(printable(f"error: internal error ({type(exc).__name__}: {exc}); {where}"), file=sys.stderr)
        return INTERNAL_ERROR


def _crash_log(argv: list[str]) -> str | None:
    """Write the traceback being handled to a new file of this user's (0600), for a bug report."""
    import tempfile
    import traceback

    try:
        fd, path = tempfile.mkstemp(prefix="runtime-internal-error-", suffix=".log")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(f"runtime {_version()}: {' '.join(argv)}\n\n{traceback.format_exc()}")
    except OSError:
        return None
    return path


if __name__ == "__main__":
    sys.exit(main())
