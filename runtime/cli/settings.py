"""What each verb is given: one frozen record of settings per verb, made once from the arguments.

Each record's fields are the verb's arguments, each declared once, typed, with what argparse needs to
parse and document it (flags, help, default, choices, nargs, metavar) as its field's `arg()`. The
parser is derived from the records in the order they are declared here (`runtime --help` lists them so,
and docs/CLI.md is generated from it); `parse` turns the parsed arguments into the chosen verb's record,
and `runtime.cli.main` hands it to the verb's `run`. A verb module takes its own record, so the type
checker checks every read.

The records are dataclasses to the type checker (frozen, keyword-only; `typing.dataclass_transform`)
and a small record class at run time: every `runtime` start imports this module, and importing
`dataclasses` and making thirty of them would nearly double `runtime --help`'s time. Standard library
only, for the same reason; verb modules are imported only when their verb runs.
"""

from __future__ import annotations

import argparse
import sys

TYPE_CHECKING = False  # typing's, without importing typing: every `runtime` start imports this module
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from typing import Any, ClassVar, NoReturn, Self, TypedDict, Unpack, dataclass_transform

    class Keywords(TypedDict, total=False):
        """The keywords of `add_argument` a field declares, only those: argparse tells an absent one from
        None (a flag's store_true takes no metavar, a positional no `required`, and `default` is the action's)."""

        action: str | type[argparse.Action]
        nargs: str
        default: Any
        type: Callable[[str], Any]
        required: bool
        help: str | None
        metavar: str

    class Derived(TypedDict, total=False):
        """The keywords of `add_argument` the parser adds: the choices a function gives, an option's field name."""

        choices: Iterable[str]
        dest: str
else:
    def dataclass_transform(**_: object):  # read by the type checker alone
        return lambda cls: cls


class Argument:
    """One field's argument: its flags (none for a positional, named by its field), its keywords, and its
    choices, or the function that gives them when the parser is made (a registry of another package,
    imported then rather than with this module)."""

    __slots__ = ("choices", "flags", "keywords")

    def __init__(self, flags: tuple[str, ...], keywords: Keywords,
                 choices: Iterable[str] | Callable[[], Iterable[str]] | None) -> None:
        self.flags, self.keywords, self.choices = flags, keywords, choices


def arg(*flags: str, choices: Iterable[str] | Callable[[], Iterable[str]] | None = None,
        **keywords: Unpack[Keywords]) -> Any:
    """A field's argument: `add_argument`'s flags and keywords."""
    return Argument(flags, keywords, choices)


def flag(*flags: str, help: str | None = None) -> Any:
    """A field that is True when its flag is given."""
    return arg(*flags, action="store_true", help=help)


@dataclass_transform(frozen_default=True, kw_only_default=True, field_specifiers=(arg, flag))
class Settings:
    """A verb's settings. A subclass declares its fields with `arg()` or `flag()`; one that names its
    `command` is a verb (or, with `group`, a subcommand of one)."""

    verb: ClassVar[str]  # the word after `runtime`: `runtime.cli.main.VERBS` maps it to the verb's module
    _arguments: ClassVar[dict[str, Argument]] = {}
    _command: ClassVar[str]
    _help: ClassVar[str]

    def __init_subclass__(cls, *, command: str | None = None, help: str = "", group: Group | None = None) -> None:
        super().__init_subclass__()
        arguments = dict(cls._arguments)  # a base's fields first, as dataclasses order them
        for name in cls.__annotations__:
            declared = cls.__dict__.get(name)
            if not isinstance(declared, Argument):
                raise TypeError(f"{cls.__name__}.{name}: declare it with arg() or flag()")
            arguments[name] = declared
        cls._arguments = arguments
        if command is None:
            return
        cls.verb, cls._command, cls._help = group.name if group else command, command, help
        if group:
            group.members[command] = cls
        else:
            _VERBS.append(cls)

    def __init__(self, **values: object) -> None:
        unknown = values.keys() - self._arguments.keys()
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {', '.join(sorted(unknown))}")
        for name, argument in self._arguments.items():
            if name in values:
                object.__setattr__(self, name, values[name])
            elif "default" in argument.keywords:
                object.__setattr__(self, name, argument.keywords["default"])
            else:
                raise TypeError(f"{type(self).__name__} needs {name}")

    @classmethod
    def parsed(cls, values: Mapping[str, object]) -> Self:
        """The record of argparse's values: its lists (nargs, append) become tuples, as a frozen record's are."""
        return cls(**{name: _frozen(values[name]) for name in cls._arguments})

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is frozen: its {name} is set once, from the arguments")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is frozen: its {name} is set once, from the arguments")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{name}={getattr(self, name)!r}' for name in self._arguments)})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self._arguments)

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, name) for name in self._arguments))


def _frozen(value: object) -> object:
    return tuple(value) if isinstance(value, list) else value


class Group:
    """A verb that takes a subcommand (`runtime hook install`): each subcommand is a record of its own,
    declared with `group=`; the verb's own parser may take --catalog too (parsed, then the subcommand's
    own --catalog's value replaces it)."""

    def __init__(self, name: str, help: str, *, dest: str, catalog: bool = False) -> None:
        self.name, self.help, self.dest, self.catalog = name, help, dest, catalog
        self.members: dict[str, type[Settings]] = {}
        _VERBS.append(self)


class ParsedByHand:
    """A verb whose module reads its own arguments (`runtime check`: no argparse in the hook's process);
    declared here so that `runtime --help` lists it in its place."""

    def __init__(self, name: str, help: str) -> None:
        self.name, self.help = name, help
        _VERBS.append(self)


_VERBS: list[type[Settings] | Group | ParsedByHand] = []  # in the order `runtime --help` lists them


def _name(verb: type[Settings] | Group | ParsedByHand) -> str:
    return verb.name if isinstance(verb, Group | ParsedByHand) else verb._command


def _agent_backends() -> Iterable[str]:
    from runtime.manifests.kinds import AGENT_BACKENDS

    return AGENT_BACKENDS


class WithCatalog(Settings):
    """The verbs that read a catalog: --catalog is their first option."""

    catalog: str | None = arg("--catalog", metavar="DIR", help="folder with capabilities/ and roles/ (default: found "
                              "upward from here, then the shipped one)")


class Lint(WithCatalog, command="lint", help="validate atoms, roles and task manifests; run every atom example"):
    paths: tuple[str, ...] = arg(nargs="*", metavar="PATH", help="task manifests or folders of them (default: manifests/)")
    json: bool = flag("--json", help="print findings as JSON")


class Schema(WithCatalog, command="schema", help="write JSON Schemas for capability, role and task files"):
    out: str | None = arg("--out", metavar="DIR", help="folder to write to (default: <catalog>/schemas)")
    check: bool = flag("--check", help="exit 1 if the written schemas are stale")


class Roles(WithCatalog, command="roles", help="list the roles"):
    json: bool = flag("--json")


class Compose(WithCatalog, command="compose", help="print the prompt bundle of a task (or of a role)"):
    task: str | None = arg(nargs="?", metavar="TASK", help="a task manifest")
    role: str | None = arg("--role", help="compose a role without a task")
    root: str | None = arg("--root", metavar="DIR", help="worktree root the policy is anchored at (default: .)")
    json: bool = flag("--json", help="print the bundle and the compiled policy as JSON")
    policy_out: str | None = arg("--policy-out", metavar="FILE", help="also write the compiled policy to FILE")


ParsedByHand("check", help="PreToolUse hook: read a Claude Code hook call on stdin, answer allow/deny/ask")


class Init(Settings, command="init", help="start a project catalog (.agent-runtime/) that extends the shipped one"):
    path: str | None = arg(nargs="?", metavar="DIR", help="the repository (default: .)")
    json: bool = flag("--json", help="what was found, from where, and what was written, as JSON")
    probe: bool = flag("--probe", help="run the task template's test and check commands once at HEAD, as verify does, "
                       "and set test-count-min and baseline from what they do there")
    no_os_sandbox: bool = flag("--no-os-sandbox", help="with --probe: run them without bubblewrap")


class Allow(Settings, command="allow", help="write the rule that allows a command or an MCP tool into the repository's "
            "catalog (.agent-runtime/roles)"):
    command: str = arg(metavar="COMMAND", help="the Bash command the gate asked about, quoted as one word; or an MCP "
                       "tool (`mcp__SERVER__TOOL`, `mcp__SERVER__*` for all)")
    role: str = arg("--role", default="project", help="the role to allow it for (default: project; a shipped role, "
                    "`session` say, gets a file of its name in .agent-runtime/roles that adds to it)")
    repo: str | None = arg("--repo", metavar="DIR", help="the repository (default: the one around the working folder)")
    dry_run: bool = flag("--dry-run", help="show the change, write nothing")
    json: bool = flag("--json", help="what was written, as JSON")


class Explain(WithCatalog, command="explain", help="would a tool call be allowed, and why? (the gate's answer, no hook "
              "JSON)"):
    subject: str = arg(metavar="COMMAND_OR_PATH", help="a Bash command, or the path (URL, query) of --tool")
    role: str | None = arg("--role", help="the role to ask")
    task: str | None = arg("--task", metavar="FILE", help="a task manifest (its role and scope)")
    tool: str = arg("--tool", default="Bash", help="Bash (default), Read, Write, Edit, MultiEdit, NotebookEdit, Glob, "
                    "Grep, WebFetch, WebSearch")
    root: str | None = arg("--root", metavar="DIR", help="the worktree root (default: .)")
    cwd: str | None = arg("--cwd", metavar="DIR", help="the working folder of the call (default: the root)")
    mode: str | None = arg("--mode", help="the policy's mode: strict (default; the drop-in hook, --no-os-sandbox) or "
                           "sandboxed (a spawned agent inside the OS sandbox)")
    json: bool = flag("--json")


HOOK = Group("hook", help="install the PreToolUse hook and the role's sandbox into Claude Code settings", dest="action")


class HookInstall(WithCatalog, group=HOOK, command="install", help="merge the hook and the role's sandbox settings into "
                  ".claude/settings.json (idempotent)"):
    settings: str | None = arg("--settings", metavar="FILE", help="the settings file (default .claude/settings.json, or "
                               ".claude/settings.local.json when the command names this machine's paths)")
    role: str | None = arg("--role", help="gate the main session with this role (default: leave it to Claude Code; gate "
                           "subagents by their role)")
    command: str | None = arg("--command", metavar="PATH", help="the runtime executable to call (default: this one)")
    task: str | None = arg("--task", metavar="FILE", help="scope the subagent of this task's role (or the --role "
                           "session) by the task")
    resident: bool = arg("--resident", action=argparse.BooleanOptionalAction, default=True,
                         help="answer each call from a resident process of yours, over a socket only you reach "
                              "(started on demand, gone after 15 idle minutes; a call it cannot answer is answered "
                              "cold); the default: --no-resident answers every call from a fresh process")
    json: bool = flag("--json")


EXPORT = Group("export", help="export roles for other tools", dest="target")


class ExportClaudeAgents(WithCatalog, group=EXPORT, command="claude-agents", help="write .claude/agents/<role>.md for "
                         "every spawnable role"):
    out: str = arg("--out", metavar="DIR", default=".claude/agents")
    task: str | None = arg("--task", metavar="FILE", help="export only this task's role, with the task's scope in its "
                           "prompt")
    json: bool = flag("--json")


class DocRoles(WithCatalog, command="doc-roles", help="regenerate docs/AGENT-ROLES.md from the role and atom files"):
    check: bool = flag("--check", help="exit 1 with a diff when the file is stale")
    out: str | None = arg("--out", metavar="FILE", help="file to write (default: <catalog>/docs/AGENT-ROLES.md)")
    json: bool = flag("--json")


class Migrate(WithCatalog, command="migrate", help="rewrite deprecated atom names, old shell rules and old size "
              "examples, rename old grammar files"):
    paths: tuple[str, ...] = arg(nargs="*", metavar="PATH", help="TOML files or folders (default: roles/, manifests/ "
                                 "and capabilities/; the catalog's programs/ is always checked for grammar files of the "
                                 "old naming)")
    check: bool = flag("--check", help="change nothing; exit 1 listing each deprecated use")
    diff: bool = flag("--diff", help="show the change as a diff (nothing written)")
    json: bool = flag("--json", help="what changed (or would), as JSON")


class Doctor(Settings, command="doctor", help="what this machine gives a spawned agent: the OS sandbox, and which "
             "limits the kernel holds"):
    json: bool = flag("--json")


class Spawn(WithCatalog, command="spawn", help="run one agent on a task: sandbox, gate, verify, retry, commit"):
    task: str = arg(metavar="TASK")
    base: str | None = arg("--base", metavar="REV", help="the revision to branch from (default: HEAD)")
    merge: bool = flag("--merge", help="merge verified work into the base after re-checking the merge")
    keep: bool = flag("--keep", help="keep the worktree afterwards")
    afresh: bool = flag("--afresh", help="an agent id whose run finished (rejected, say, and its task file fixed "
                        "since): start again from the current base and the task file as it is now, the old branch "
                        "kept as refs/agent-runtime/previous/ID/N")
    no_os_sandbox: bool = flag("--no-os-sandbox", help="run without bubblewrap (loudly warned; the gate still applies)")
    unattended: bool = flag("--unattended", help="nobody watches this run: what the gate would ask a person is refused "
                            "at once, and control files are never merged (default: asked through `runtime approvals` "
                            "and the console)")
    state_dir: str | None = arg("--state-dir", metavar="DIR", help="where runs, worktrees and the audit log live")
    json: bool = flag("--json", help="print the outcome as JSON")


class Again(Settings, command="again", help="a new series of attempts for an agent whose run finished, on its work, "
            "with what you send back"):
    agent: str = arg(metavar="ID", help="the agent id (`runtime status` lists them)")
    feedback: str | None = arg("--feedback", metavar="FILE", help="what the agent is told first: a file, or - for "
                               "standard input")
    merge: bool = flag("--merge", help="merge verified work into the branch it came from")
    state_dir: str | None = arg("--state-dir", metavar="DIR", help="where runs, worktrees and the audit log live")
    json: bool = flag("--json", help="print the outcome as JSON")


class Run(WithCatalog, command="run", help="many agents on one goal: plan, fan out, verify, merge, judge, replan"):
    plan: str | None = arg(nargs="?", metavar="PLAN", help="a plan.toml")
    goal: str | None = arg("--goal", help="ask the planner model for the plan")
    resume: str | None = arg("--resume", metavar="RUN_ID", help="continue a run that was interrupted")
    merge: bool = flag("--merge", help="merge the accepted result into the base branch")
    save_plan: str | None = arg("--save-plan", metavar="FILE", help="write the plan (with its [agent] tables) to FILE")
    no_os_sandbox: bool = flag("--no-os-sandbox", help="run agents without bubblewrap (loudly warned)")
    unattended: bool = flag("--unattended", help="nobody watches this run: every agent refuses at once what the gate "
                            "would ask a person")
    state_dir: str | None = arg("--state-dir", metavar="DIR")
    json: bool = flag("--json", help="an event stream, one JSON object per line")
    executor: str | None = arg("--executor", choices=("local", "ray"), default=None,
                               help="where subtasks run: this machine, or the nodes of a Ray cluster (default: the "
                                    "plan's [plan] executor, else local)")
    ray_address: str | None = arg("--ray-address", metavar="HOST:PORT", help="the Ray cluster to join (default: "
                                  "$RAY_ADDRESS, else the one running on this machine)")
    planner_model: str | None = arg("--planner-model", help="litellm model (or scripted/NAME) that writes plans and "
                                    "replans")
    planner_api_base: str | None = arg("--planner-api-base", metavar="URL")
    planner_script: str | None = arg("--planner-script", metavar="FILE", help="the scripted planner's playback file")
    planner_retries: int = arg("--planner-retries", type=int, default=2, metavar="N", help="invalid plans sent back "
                               "(default 2)")
    agent_backend: str = arg("--agent-backend", default="builtin", choices=_agent_backends)
    agent_model: str | None = arg("--agent-model", help="the model of planned subtasks' agents")
    agent_api_base: str | None = arg("--agent-api-base", metavar="URL")
    agent_scripts: str | None = arg("--agent-scripts", metavar="DIR", help="scripted agents: DIR/<subtask id>.toml")


MEMORY = Group("memory", help="the shared memory of accepted runs: show, search, curate learnings", dest="action",
               catalog=True)


class MemoryShow(WithCatalog, group=MEMORY, command="show", help="results, facts and pending learnings"):
    state_dir: str | None = arg("--state-dir", metavar="DIR")
    json: bool = flag("--json")


class MemorySearch(WithCatalog, group=MEMORY, command="search", help="full-text search of results and facts"):
    query: str = arg()
    tag: tuple[str, ...] | None = arg("--tag", action="append", help="only entries with this tag (repeatable)")
    state_dir: str | None = arg("--state-dir", metavar="DIR")
    json: bool = flag("--json")


class MemoryCurate(WithCatalog, group=MEMORY, command="curate", help="promote pending learnings into facts, or discard "
                   "them"):
    promote: tuple[str, ...] = arg("--promote", nargs="*", default=(), metavar="ID")
    discard: tuple[str, ...] = arg("--discard", nargs="*", default=(), metavar="ID")
    state_dir: str | None = arg("--state-dir", metavar="DIR")
    json: bool = flag("--json")


class Verify(WithCatalog, command="verify", help="run the verify step alone on an agent-authored worktree (for CI)"):
    task: str = arg(metavar="TASK")
    worktree: str = arg("--worktree", metavar="DIR", required=True)
    base: str = arg("--base", metavar="REV", required=True)
    report: str | None = arg("--report", metavar="FILE", help="the agent's final report, for the report checks")
    no_os_sandbox: bool = flag("--no-os-sandbox", help="run the check commands without bubblewrap")


AUDIT = Group("audit", help="the audit log: verify its chain, show its records", dest="action", catalog=True)


class AuditVerify(WithCatalog, group=AUDIT, command="verify", help="detect edited, deleted or reordered records"):
    state_dir: str | None = arg("--state-dir", metavar="DIR")
    json: bool = flag("--json")


class AuditShow(WithCatalog, group=AUDIT, command="show", help="print records, filtered"):
    state_dir: str | None = arg("--state-dir", metavar="DIR")
    agent: str | None = arg("--agent", help="only this agent's records")
    kind: str | None = arg("--kind", help="only records of this kind (spawn, gate, tool, check, retry, commit, merge, "
                           "outcome)")
    json: bool = flag("--json", help="one JSON record per line")


class AuditExport(WithCatalog, group=AUDIT, command="export", help="the records for another tool: OCSF events for a "
                  "SIEM, or the log's own lines"):
    state_dir: str | None = arg("--state-dir", metavar="DIR")
    format: str = arg("--format", default="ocsf", choices=("ocsf", "jsonl"),
                      help="ocsf: one OCSF 1.5.0 event per line (gate decisions as process, file, HTTP or API "
                      "activity with their disposition; egress as HTTP activity; the rest as base events); jsonl: the "
                      "log's lines as they are")
    agent: str | None = arg("--agent", help="only this agent's records")
    kind: str | None = arg("--kind", help="only records of this kind")
    since: str | None = arg("--since", metavar="TIME", help="only records at or after this ISO-8601 time (UTC if it "
                            "names no zone)")


ATTEST = Group("attest", help="signed provenance of the commits the runtime makes: show it, check it (a CI step, a "
               "server's pre-receive hook)", dest="action")


class AttestShow(Settings, group=ATTEST, command="show", help="a commit's attestation: what it says, and whether it "
                 "holds"):
    commit: str = arg(metavar="COMMIT", help="a commit (default HEAD)", nargs="?", default="HEAD")
    key: str | None = arg("--key", metavar="FILE", help="whose signatures hold: an allowed_signers file or a public "
                          "key (default: this machine's signing key)")
    json: bool = flag("--json", help="the finding and the in-toto statement, as JSON")


class AttestVerify(Settings, group=ATTEST, command="verify", help="check the attestations of commits: exit 1 when one "
                   "is invalid, or missing where required"):
    revs: tuple[str, ...] = arg(nargs="*", metavar="REV", help="commits and ranges, as git log takes them (A..B, "
                                "^X); default HEAD")
    key: str | None = arg("--key", metavar="FILE", help="whose signatures hold: an allowed_signers file or a public "
                          "key (default: this machine's signing key)")
    require: str = arg("--require", default="agent", choices=("none", "agent", "all"),
                       help="what must carry a valid attestation: the commits that say they are the runtime's (agent, "
                       "the default), every commit (all), or only what has one (none)")
    pre_receive: bool = flag("--pre-receive", help="as a server's pre-receive hook: read its `old new ref` lines and "
                             "check the commits the push brings to branches, with the notes the push brings")
    notes: str = arg("--notes", default="refs/notes/agent-runtime", metavar="REF",
                     help="where the attestations are (default refs/notes/agent-runtime)")
    json: bool = flag("--json", help="one JSON finding per commit")


class AttestKey(Settings, group=ATTEST, command="key", help="the orchestrator's signing key (made if there is none): "
                "where it is, and its line for an allowed_signers file"):
    json: bool = flag("--json", help="the key's path, public key, fingerprint and allowed_signers line, as JSON")


class Status(WithCatalog, command="status", help="the runs of this repository and their state"):
    agent: str | None = arg(nargs="?", help="one agent id")
    state_dir: str | None = arg("--state-dir", metavar="DIR")
    json: bool = flag("--json")


class Show(WithCatalog, command="show", help="what an agent did: its outcome, attempts, checks, report and change "
           "against the base"):
    agent: str = arg(metavar="ID", help="the agent id (`runtime status` lists them)")
    stat: bool = flag("--stat", help="the change as a stat (files and lines), not the whole diff")
    state_dir: str | None = arg("--state-dir", metavar="DIR")
    json: bool = flag("--json", help="the run's record and the diff, as JSON")


class Console(WithCatalog, command="console", help="the runs of this repository in a browser, live (local, behind a "
              "token)"):
    no_open: bool = flag("--no-open", help="print the URL and serve; do not open a browser")
    port: int = arg("--port", type=int, default=0, help="the port on 127.0.0.1 (default: any free one)")
    state_dir: str | None = arg("--state-dir", metavar="DIR")


class Prune(WithCatalog, command="prune", help="clean up finished runs: state, worktrees, merged agent branches (frees "
            "their agent ids)"):
    older_than: float = arg("--older-than", type=float, default=0, metavar="DAYS", help="only runs last updated this "
                            "many days ago")
    unmerged: bool = flag("--unmerged", help="also delete agent branches not merged into their base")
    dry_run: bool = flag("--dry-run", help="say what would go, change nothing")
    state_dir: str | None = arg("--state-dir", metavar="DIR")
    json: bool = flag("--json")


class Approve(WithCatalog, command="approve", help="approve an agent's call that waits for a decision (the gate said "
              "ask)"):
    id: str = arg(metavar="ID", help="the request id (see `runtime approvals`)")
    reason: str | None = arg("--reason", help="why (recorded, and told to the agent)")
    state_dir: str | None = arg("--state-dir", metavar="DIR")
    json: bool = flag("--json", help="print the decided request as JSON")


class Deny(WithCatalog, command="deny", help="deny an agent's call that waits for a decision"):
    id: str = arg(metavar="ID", help="the request id (see `runtime approvals`)")
    reason: str = arg("--reason", required=True, help="why: the agent reads it instead of the call's result")
    state_dir: str | None = arg("--state-dir", metavar="DIR")
    json: bool = flag("--json", help="print the decided request as JSON")


class Approvals(WithCatalog, command="approvals", help="list the agents' calls that wait for a decision"):
    agent: str | None = arg("--agent", help="only this agent's requests")
    all: bool = flag("--all", help="also decided and expired requests (the last 200)")
    state_dir: str | None = arg("--state-dir", metavar="DIR")
    json: bool = flag("--json")


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # usage errors exit 1, like every other user error
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")


class _Version(argparse._VersionAction):
    """argparse's --version, the version read only when asked: importlib.metadata and its search for the
    installed distribution take as long as the rest of `runtime --help`."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None) -> None:
        self.version = f"runtime {version()}"
        super().__call__(parser, namespace, values, option_string)


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    from runtime import DISTRIBUTION

    try:
        return installed(DISTRIBUTION)
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "unknown"


def parser() -> argparse.ArgumentParser:
    """The `runtime` command's parser, derived from the records above."""
    top = Parser(prog="runtime", description="Role-sandboxed multi-agent runtime: capability atoms, roles, and a "
                 "fail-closed PreToolUse gate.")
    top.add_argument("--version", action=_Version)
    verbs = top.add_subparsers(dest="verb", metavar="COMMAND")
    verbs.required = True
    for verb in _VERBS:
        if isinstance(verb, ParsedByHand):
            verbs.add_parser(verb.name, help=verb.help, add_help=False)
        elif isinstance(verb, Group):
            group = verbs.add_parser(verb.name, help=verb.help)
            if verb.catalog:
                _add_arguments(group, WithCatalog)
            members = group.add_subparsers(dest=verb.dest, metavar=verb.dest.upper())
            members.required = True
            for command, settings in verb.members.items():
                _add_arguments(members.add_parser(command, help=settings._help), settings)
        else:
            _add_arguments(verbs.add_parser(verb._command, help=verb._help), verb)
    return top


def _add_arguments(parser: argparse.ArgumentParser, settings: type[Settings]) -> None:
    for name, argument in settings._arguments.items():
        derived: Derived = {}
        if argument.choices is not None:
            derived["choices"] = argument.choices() if callable(argument.choices) else argument.choices
        if argument.flags:
            derived["dest"] = name  # the field's name, whatever the flag's spelling
        parser.add_argument(*argument.flags or (name,), **argument.keywords, **derived)


def parse(argv: list[str]) -> Settings:
    """The chosen verb's settings; a usage error exits 1 here, with argparse's message."""
    values = vars(parser().parse_args(argv))
    verb = next(verb for verb in _VERBS if _name(verb) == values["verb"])
    if isinstance(verb, ParsedByHand):
        raise ValueError(f"`runtime {verb.name}` reads its own arguments (runtime/cli/{verb.name}.py)")
    settings = verb.members[values[verb.dest]] if isinstance(verb, Group) else verb
    return settings.parsed(values)
