"""The fixed registries an atom may name, with the parameters each kind consumes.

Standard library only: the hook reads it. The gate kinds are listed here with the class that implements
each (``GATE_KINDS``); the verify kinds, with their modules, in ``runtime.verify.kinds.registry``.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing: the hook reads this module
if TYPE_CHECKING:
    from typing import Any

# Tools the runtime knows how to gate. A role can show only these; anything
# else an agent asks for (MCP tools, Agent/Task, future tools) is denied.
WORK_TOOLS: tuple[str, ...] = (
    "Read", "Glob", "Grep", "Write", "Edit", "MultiEdit", "NotebookEdit", "Bash", "WebFetch", "WebSearch",
)
WRITE_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})

# The harness's own bookkeeping tools, shown together by a role's `[tools] session = true`, each with
# the input fields it takes (any other field is denied, as for every tool). Each touches only the
# session's own state, reads nothing outside what the gate already shows the agent, and runs nothing.
# Delegating tools stay out, since their work does not pass this gate as one agent's: Agent/Task and
# Workflow start other agent loops (a person's session may start subagents: SUBAGENT_TOOLS), Skill loads
# instructions (and may fork a subagent) from files (a person's session may: PERSON_TOOLS),
# ScheduleWakeup, CronCreate and Monitor run or resume work later, LSP starts language servers,
# EnterWorktree makes a git worktree; so do tools nobody has described here yet.
SESSION_TOOLS: dict[str, frozenset[str]] = {
    # The session's checklist, held by the CLI in memory (2.x: TodoWrite; later: Task*).
    "TodoWrite": frozenset({"todos"}),
    "TodoRead": frozenset(),
    "TaskCreate": frozenset({"subject", "description", "activeForm", "metadata"}),
    "TaskGet": frozenset({"taskId"}),
    "TaskList": frozenset(),
    "TaskUpdate": frozenset({"taskId", "subject", "description", "activeForm", "status", "addBlocks",
                             "addBlockedBy", "owner", "metadata"}),
    # The output of a background command this gate allowed when it started (run_in_background).
    "BashOutput": frozenset({"bash_id", "filter"}),
    "TaskOutput": frozenset({"task_id", "block", "timeout"}),
    # Stopping a background command the session started: it only ends what the gate allowed.
    "KillShell": frozenset({"shell_id"}),
    "KillBash": frozenset({"shell_id"}),
    "TaskStop": frozenset({"task_id", "shell_id"}),
    # Loads the descriptions of deferred tools; each tool it reveals is still judged by its own name.
    "ToolSearch": frozenset({"query", "max_results"}),
}
# The harness's tools for a person at the keyboard: a role for a person's own session (`[role] for-sessions`)
# may show them; a spawned agent never does, as nobody is there to answer it. Each with the fields it takes
# (any other is denied) and why it is safe.
PERSON_TOOLS: dict[str, frozenset[str]] = {
    # Asks the person; the answer is theirs and comes back as the tool's result. It runs and reads nothing.
    "AskUserQuestion": frozenset({"questions", "answers", "annotations", "metadata"}),
    # Plan mode. Entering it narrows the session to reading and planning; leaving it shows the plan to the
    # person and waits for their approval. `allowedPrompts` are shown to them and grant nothing past this gate.
    "EnterPlanMode": frozenset(),
    "ExitPlanMode": frozenset({"plan", "allowedPrompts"}),
    # Loads a skill's instructions, from `.claude/skills` (control files no agent writes) or the person's own;
    # every call they lead to passes this gate as a call of its own.
    "Skill": frozenset({"skill", "args"}),
}
# Starting a subagent: a person's session only (a spawned agent's delegation would leave its task's scope).
# Every call the subagent makes passes the gate: under the role its type names (`subagent_type` -> role, or a
# built-in type mapped to one, BUILTIN_SUBAGENTS), any other type under the session's own rules.
SUBAGENT_TOOLS: dict[str, frozenset[str]] = {name: frozenset({
    "description", "prompt", "subagent_type", "model", "effort", "max_turns", "run_in_background", "resume",
    "isolation"}) for name in ("Agent", "Task")}
# Claude Code's own subagent types, gated as the closest role unless the catalog has a role of that name:
# Explore and Plan only read. general-purpose may do anything, which no role here grants: a person's session
# holds it to the session's own rules; without a session role (`--main-session defer`) it is refused.
BUILTIN_SUBAGENTS: dict[str, str | None] = {"Explore": "explorer", "Plan": "read-only", "general-purpose": None,
                                            "claude": None}
TOOLS: tuple[str, ...] = WORK_TOOLS + tuple(PERSON_TOOLS) + tuple(SUBAGENT_TOOLS)
READ_TOOLS = frozenset({"Read", "Glob", "Grep"})
NETWORK_TOOLS = frozenset({"WebFetch", "WebSearch"})

class Implemented:
    """A registry entry naming the class that implements it, as `module:Class`: imported by ``load`` when it is
    used, never when the registry is read (the hook reads it)."""

    __slots__ = ("implementation",)

    def __init__(self, implementation: str) -> None:
        self.implementation = implementation

    def load(self) -> Any:
        module, _, name = self.implementation.partition(":")
        return getattr(__import__(module, fromlist=[name]), name)


class GateKind(Implemented):
    """A gate kind an atom may name (`gate = "KIND"`): the parameters it consumes (name -> type) and the class
    that judges with them. The gate imports that class only when a policy names the kind
    (`runtime.gate.kinds.gate_class`). A new kind is its module and one entry below."""

    __slots__ = ("params",)

    def __init__(self, implementation: str, params: dict[str, str]) -> None:
        super().__init__(implementation)
        self.params = params


_GATES = "runtime.gate.kinds."
GATE_KINDS: dict[str, GateKind] = {
    "deny-tools": GateKind(_GATES + "deny_tools:DenyTools", {"tools": "tool-list"}),
    "bash-allowlist": GateKind(_GATES + "bash_allowlist:BashAllowlist",
                               {"rules": "program-rules", "repository-targets": "bool"}),
    "write-whitelist": GateKind(_GATES + "write_scope:WriteWhitelist",
                                {"globs": "glob-list", "control-files": "control-path-list"}),
    "write-denylist": GateKind(_GATES + "write_scope:WriteDenylist", {"globs": "glob-list"}),
    "secret-reads": GateKind(_GATES + "secrets:SecretReads", {"never": "secret-path-list", "asked": "secret-path-list"}),
    "read-only": GateKind(_GATES + "read_only:ReadOnly", {}),
    "no-git": GateKind(_GATES + "no_git:NoGit", {"programs": "str-list"}),
    "dep-files": GateKind(_GATES + "dep_files:DepFiles", {"globs": "glob-list", "commands": "str-list"}),
    "no-network": GateKind(_GATES + "no_network:NoNetwork", {"programs": "str-list", "tools": "tool-list"}),
    "egress-allowlist": GateKind(_GATES + "egress:EgressAllowlist",
                                 {"domains": "domain-list", "addresses": "cidr-list", "ports": "port-list",
                                  "credentials": "credential-list"}),
    "mcp-allowlist": GateKind(_GATES + "mcp:McpAllowlist", {"servers": "mcp-rules", "configured": "ask-or-deny"}),
}

SANDBOX_KINDS: dict[str, dict[str, str]] = {
    "no-network": {},
    "read-only-worktree": {},
}

# Task manifest fields an atom parameter may be bound to, with their types.
TASK_FIELDS: dict[str, str] = {
    "scope.files-whitelist": "glob-list",
    "scope.files-denylist": "glob-list",
    # Control files (`.claude/settings.json`, `.agent-runtime/roles/x.toml`) a task given to `runtime spawn`
    # may change; a plan's subtasks never may, and the change is merged only after an approval.
    "scope.control-files": "control-path-list",
    # The base's test files and test configuration a task lets the work change (adding tests needs no word).
    "scope.test-edits": "glob-list",
    "verification.test-command": "command",
    "verification.test-count-min": "int",
    "verification.check-commands": "command-list",
    # Judge the test and check commands by what the change adds to failures the base has already.
    "verification.baseline": "bool",
    # How the test command is judged: each test against the base's run (`per-test`, the default), or, for a
    # command no known runner reads, by its exit code alone (`exit-code`).
    "verification.test-results": "test-results",
    # Tests of the base the task lets go: id patterns (`tests/test_old.py::*`) that may be gone or stop passing.
    "verification.tests-removed": "str-list",
    # Tests the agent never sees, laid over the tree for verify alone: a folder outside the repository or a revision.
    "verification.hidden-tests": "test-source",
    # Files where blanket suppressions, or code that detects its tests, are the task's intent.
    "verification.allow-suppressions": "glob-list",
    "verification.allow-test-detection": "glob-list",
    # A model reads the change against the task after the checks; what it finds goes to a person.
    "verification.review": "bool",
    "output.report-fields-required": "str-list",
    "network.allowed-domains": "domain-list",
}


class AgentBackend(Implemented):
    """A backend a task's `[agent] backend` may name: the class that runs it (imported when a spawn uses it:
    ``runtime.spawn.backends.backend_for``) and what its `[agent]` table may hold, as data the manifests check
    (``runtime.manifests.agent``). A new backend is its folder and one entry below."""

    __slots__ = ("command", "model", "approval_in_hook")

    def __init__(self, implementation: str, *, command: bool = False, model: str = "optional",
                 approval_in_hook: bool = False) -> None:
        super().__init__(implementation)
        # It runs the task's own `command = [...]` (and takes no model), rather than a model's agent loop.
        self.command = command
        # "required": it needs `model`, and it alone calls it (`scripted/<name>`, `model-timeout-s` are its);
        # "optional": the model is the backend's own default unless given; "none": it takes no model.
        self.model = model
        # An approval is awaited inside a hook the agent's harness stops after a time (runtime.timeouts.HOOK_WAIT_MAX_S).
        self.approval_in_hook = approval_in_hook


_BACKENDS = "runtime.spawn.backends."
AGENT_BACKENDS: dict[str, AgentBackend] = {
    "builtin": AgentBackend(_BACKENDS + "builtin:BuiltinBackend", model="required"),
    "claude-code": AgentBackend(_BACKENDS + "claude_code:ClaudeCodeBackend", approval_in_hook=True),
    "command": AgentBackend(_BACKENDS + "command:CommandBackend", command=True, model="none"),
}
