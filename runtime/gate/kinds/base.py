"""What every gate kind looks like.

A gate kind reads its parameters once, when the policy loads, and then
answers some of three questions; it leaves the others as ``None`` so the
engine never calls them:

- ``on_tool(tool, tool_input, ctx)``: about the call as a whole;
- ``on_write(resolved, rel, ctx)``: about one file the call would write
  (``rel`` is the path relative to the worktree root, ``None`` outside it);
- ``on_command(command, ctx)``: about one simple shell command.

Each returns a GateDecision (deny, ask, or allow meaning "granted") or None
(no opinion). Writes and shell commands need a grant from some gate: with no
scope atom there are no writes, with no shell rules there are no commands.
"""

from __future__ import annotations




class PolicyError(ValueError):
    """The compiled policy is missing, corrupt or not understood: the gate denies."""


class Gate:
    kind = ""
    grants = False  # True for the kinds that can allow a write or a command
    on_tool = None
    on_write = None
    on_command = None

    def __init__(self, atom: str, params: dict[str, object]) -> None:
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
