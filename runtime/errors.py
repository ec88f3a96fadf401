"""The exception hierarchy: one root, two branches, each with its exit code.

``AgentRuntimeError``
- ``FatalError`` (exit 1): misuse and bad input, the user's to fix, found
  before anything runs.
- ``RunFailure`` (exit 2): something that ran ended badly; a spawn records it
  as its outcome (``failed(llm)``, ``exhausted(turns)``), and a command that
  meets one outside a spawn (a planner whose model cannot be reached) prints
  it as that outcome. A model call that fails is one (``ModelError``).

Anything else that escapes a command is the runtime's own bug: an internal error, exit
``INTERNAL_ERROR`` (70, sysexits' EX_SOFTWARE; 3 is taken by a plan's questions and by
`runtime explain`'s ask), with one line naming a log file that holds the traceback.

``runtime.cli.main`` maps them to exit codes in one place. Gate denials are
not exceptions: they are values (``runtime.gate.decision.GateDecision``)
because a denial is an ordinary answer.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing: every command imports this module, the hook too
if TYPE_CHECKING:
    from runtime.outcomes import OutcomeStatus

INTERNAL_ERROR = 70


class AgentRuntimeError(Exception):
    """The root of every error the runtime raises on purpose."""

    exit_code = 1


class FatalError(AgentRuntimeError):
    """An error that ends the command with one line on stderr and exit code 1."""

    exit_code = 1


class UsageError(FatalError):
    """The command line itself is wrong."""


class MissingExtra(FatalError):
    """An optional part of the installation is missing: one line naming the extra that brings it.

    The core install carries no model SDK and no cluster client (a hook in a project's own
    environment should not pull either); what needs one says which extra to add.
    """

    def __init__(self, what: str, extra: str) -> None:
        from runtime import DISTRIBUTION

        self.extra = extra
        super().__init__(f"{what} needs the `{extra}` extra, which this installation lacks: "
                         f"pip install '{DISTRIBUTION}[{extra}]' (for a uv tool: uv tool install "
                         f"'{DISTRIBUTION}[{extra}]')")


class ManifestError(FatalError):
    """A manifest file is wrong: reported as ``file:line: message``."""

    def __init__(self, path: object, line: int, message: str) -> None:
        self.path = str(path)
        self.line = max(int(line), 1)
        self.message = message
        super().__init__(f"{self.path}:{self.line}: {message}")


class ManifestErrors(FatalError):
    """Several manifest errors found in one pass (lint reports them all)."""

    def __init__(self, errors: list[ManifestError]) -> None:
        self.errors = errors
        super().__init__("\n".join(str(e) for e in errors))


class RunFailure(AgentRuntimeError):
    """An agent run that ended badly: it is reported as an outcome, not as a crash."""

    # The outcome's status by its value: the member (`outcome`) is made when asked, so that importing this
    # module (every command does, the hook too) never imports `enum`.
    status = "failed"
    exit_code = 2

    @property
    def outcome(self) -> OutcomeStatus:
        from runtime.outcomes import OutcomeStatus

        return OutcomeStatus(self.status)

    def __init__(self, detail: str, message: str) -> None:
        self.detail = detail
        self.message = message
        super().__init__(f"{self.outcome}({detail}): {message}")


class AgentFailed(RunFailure):
    """failed(kind): the agent, its model or its workspace broke (kind says which)."""


class LimitExhausted(RunFailure):
    """exhausted(limit): the run hit one of its limits and was stopped."""

    status = "exhausted"
