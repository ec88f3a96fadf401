"""The exception hierarchy.

Misuse and bad input (``FatalError`` and its children) end a command with one
line and exit 1. Gate denials are not exceptions: they are values
(``runtime.gate.decision.GateDecision``) because a denial is an ordinary answer.
"""

from __future__ import annotations


class FatalError(Exception):
    """An error that ends the command with one line on stderr and exit code 1."""

    exit_code = 1


class UsageError(FatalError):
    """The command line itself is wrong."""


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


class RunFailure(Exception):
    """An agent run that ended badly: it is reported as an outcome, not as a crash."""

    outcome = "failed"

    def __init__(self, detail: str, message: str) -> None:
        self.detail = detail
        self.message = message
        super().__init__(f"{self.outcome}({detail}): {message}")


class AgentFailed(RunFailure):
    """failed(kind): the agent, its model or its workspace broke (kind says which)."""


class LimitExhausted(RunFailure):
    """exhausted(limit): the run hit one of its limits and was stopped."""

    outcome = "exhausted"
