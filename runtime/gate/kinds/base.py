"""What every gate kind looks like.

A gate kind reads its parameters once, when the policy loads, and then
answers some of three questions; the ones it does not override are never
called (the policy lists each gate only under the questions it answers):

- ``on_tool(tool, tool_input, ctx)``: about the call as a whole;
- ``on_write(resolved, rel, ctx)``: about one file the call would write
  (``rel`` is the path relative to the worktree root, ``None`` outside it);
- ``on_command(command, ctx)``: about one simple shell command.

Each returns a GateDecision (deny, ask, or allow meaning "granted") or None
(no opinion). Writes and shell commands need a grant from some gate: with no
scope atom there are no writes, with no shell rules there are no commands.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call

if TYPE_CHECKING:  # annotations only: the hook imports nothing it does not run
    from typing import ClassVar

    from runtime.gate.decision import GateDecision
    from runtime.gate.engine import Context
    from runtime.lang.jsontypes import JSONObject
    from runtime.lang.shell_types import Command

from runtime.policy.document import PolicyError  # noqa: F401 - the kinds raise it from here

__all__ = ["Gate", "PolicyError", "no_more", "take_list"]


class Gate:
    kind: ClassVar[str] = ""
    grants: ClassVar[bool] = False  # True for the kinds that can allow a write or a command

    def on_tool(self, tool: str, tool_input: JSONObject, ctx: Context) -> GateDecision | None:
        return None

    def on_write(self, resolved: str, rel: str | None, ctx: Context) -> GateDecision | None:
        return None

    def on_command(self, cmd: Command, ctx: Context) -> GateDecision | None:
        return None

    def answers(self, question: str) -> bool:
        """Whether this kind answers ``on_tool``, ``on_write`` or ``on_command`` (overrides the default)."""
        return getattr(type(self), question) is not getattr(Gate, question)

    def __init__(self, atom: str, params: JSONObject) -> None:
        self.atom = atom
        self.configure(dict(params))

    def configure(self, params: dict[str, object]) -> None:
        if params:
            raise PolicyError(f"{self.kind}: unexpected parameters {sorted(params)}")


def take_list(params: dict[str, object], key: str) -> list[str]:
    value = params.pop(key, None)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PolicyError(f"parameter `{key}` must be a list of strings")
    return value


def no_more(kind: str, params: dict[str, object]) -> None:
    if params:
        raise PolicyError(f"{kind}: unexpected parameters {sorted(params)}")
