"""The `[agent]` table of a task: which backend runs the agent, and its limits.

Each field is acted on by the spawn pipeline: the backend chooses how the
agent process is launched, `model`, `script` and `api-base` configure the
model broker (builtin) or the CLI (claude-code), `command` is the program of
the command backend, `env` names the only variables passed in from the
orchestrator's environment, `retries` is the budget of attempts after a
rejection, and every limit is held by the kernel where the machine lets it (runtime.sandbox.supervise).
Fields that make no sense for the chosen backend are errors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field

from runtime.errors import ManifestError
from runtime.manifests import kinds
from runtime.manifests.kinds import AGENT_BACKENDS
from runtime.manifests.tomlsrc import TomlSource
from runtime.model import Model
from runtime.timeouts import DEFAULT_APPROVAL_TIMEOUT_S as DEFAULT_TIMEOUT_S
from runtime.timeouts import HOOK_TIMEOUT_S, HOOK_WAIT_MAX_S

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class LimitsSection(Model):
    timeout_s: int = Field(default=900, gt=0)
    max_turns: int = Field(default=60, gt=0)
    max_tool_calls: int = Field(default=300, gt=0)
    max_tokens: int | None = Field(default=None, gt=0)
    max_cost_usd: float | int | None = Field(default=None, gt=0)
    memory_mb: int = Field(default=4096, gt=0)
    # The agent runs pinned to this many CPUs (runtime.sandbox.cpus); a cluster reserves them. None: not pinned.
    cpus: int | None = Field(default=None, gt=0, le=1024)
    max_processes: int = Field(default=512, gt=0)  # tasks, threads included (each takes a pid)
    # Bytes the agent and its checks may write to disk while they run; unset: the change the role
    # allows plus a slack (runtime.sandbox.budget).
    disk_mb: int | None = Field(default=None, gt=0)
    model_timeout_s: int = Field(default=120, gt=0)  # one model call (builtin: the broker's deadline)
    # How long a call the gate answers `ask` waits for a person's decision before it is denied.
    # claude-code: at most HOOK_WAIT_MAX_S (25), and that is its default (see check_agent).
    approval_timeout_s: int = Field(default=DEFAULT_TIMEOUT_S, gt=0)
    # Bytes of stdout (and, separately, of stderr) stored per attempt: head and tail, the rest counted.
    max_output_bytes: int = Field(default=4 * 1024 * 1024, ge=64 * 1024, le=1024 * 1024 * 1024)


class AgentSection(Model):
    # One of AGENT_BACKENDS, read when a task loads: a backend is one folder of runtime.spawn.backends and
    # one entry in the registries, not a type to edit here (the schema lists them: json_schema_extra).
    backend: str = Field(json_schema_extra={"enum": list(AGENT_BACKENDS)})
    model: str | None = None
    script: str | None = None
    api_base: str | None = None
    command: list[str] | None = Field(default=None, min_length=1)
    env: list[str] = Field(default_factory=list)
    retries: int = Field(default=1, ge=0, le=10)
    limits: LimitsSection = Field(default_factory=LimitsSection)


@dataclass(frozen=True)
class AgentSpec:
    backend: str
    model: str | None
    script: Path | None
    api_base: str | None
    command: tuple[str, ...] | None
    env: tuple[str, ...]
    retries: int
    limits: LimitsSection


def check_agent(section: AgentSection, src: TomlSource, task_dir: Path) -> AgentSpec:
    """Cross-field rules of `[agent]`; each violation names its line."""
    def err(key: str, message: str) -> ManifestError:
        return src.error(("agent", key), message)

    backend = section.backend
    spec = kinds.AGENT_BACKENDS.get(backend)
    if spec is None:
        raise err("backend", f"unknown backend `{backend}`: one of {', '.join(kinds.AGENT_BACKENDS)}")
    if spec.command:
        if not section.command:
            raise err("backend", f"the {backend} backend needs `command = [program, args...]`")
    elif section.command is not None:
        raise err("command", f"`command` is only for a backend that runs one (command), not {backend}")
    if spec.model == "none":
        for key in ("model", "script", "api_base"):
            if getattr(section, key) is not None:
                raise err(key.replace("_", "-"), f"`{key.replace('_', '-')}` is not used by the {backend} backend")
    if spec.model == "required" and not section.model:
        raise err("backend", f"the {backend} backend needs `model` (a litellm model name, or scripted/<name>)")
    if spec.model != "required" and "model_timeout_s" in section.limits.model_fields_set:
        raise src.error(("agent", "limits", "model-timeout-s"),
                        f"`model-timeout-s` applies to the model calls of a backend that makes them itself (builtin), "
                        f"not {backend}")
    limits = section.limits
    if spec.approval_in_hook:
        # The harness kills a PreToolUse hook after HOOK_TIMEOUT_S and then blocks the call, so the
        # hook (`runtime check --approvals`) must have its answer well before that.
        if "approval_timeout_s" not in limits.model_fields_set:
            limits = limits.model_copy(update={"approval_timeout_s": HOOK_WAIT_MAX_S})
        elif limits.approval_timeout_s > HOOK_WAIT_MAX_S:
            raise src.error(("agent", "limits", "approval-timeout-s"),
                            f"`approval-timeout-s` is at most {HOOK_WAIT_MAX_S} for the {backend} backend: an approval "
                            f"is awaited inside its PreToolUse hook, which Claude Code stops after {HOOK_TIMEOUT_S} s "
                            "(and then blocks the call), so the decision must come before that")
    scripted = bool(section.model and section.model.startswith("scripted/"))
    if scripted and spec.model != "required":
        raise err("model", f"the scripted model runs only in a backend that calls its model itself (builtin), not {backend}")
    if scripted != (section.script is not None):
        raise err("script" if section.script else "model", "`script` goes with a `scripted/<name>` model, and only with it")
    if section.api_base is not None and not re.match(r"^https?://[^\s/]+", section.api_base):
        raise err("api-base", "`api-base` must be an http(s) URL")
    for n, name in enumerate(section.env):
        if not ENV_NAME.fullmatch(name):
            raise src.error(("agent", "env", n), f"`{name}` is not an environment variable name")
    script = None
    if section.script is not None:
        script = (task_dir / section.script).resolve()
        if not script.is_file():
            raise err("script", f"script file {section.script} does not exist")
    return AgentSpec(
        backend, section.model, script, section.api_base,
        tuple(section.command) if section.command else None, tuple(section.env), section.retries, limits,
    )
