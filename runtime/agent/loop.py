"""The builtin agent loop: model turn, gate, tool, repeat, until a final report.

Run as `python -I -m runtime.agent --bundle B --policy P --broker SOCK --root DIR
[--feedback F] [--approvals SOCK [--approval-timeout S]]` inside the sandbox. `-I` keeps the
worktree (which may hold a `runtime` package of its own) off the import path.

A call the gate answers `ask` is refused, unless the orchestrator serves an approvals socket
(`--approvals`): then the agent asks there and waits until a person approves it (the call runs),
denies it or lets it expire (it is refused, and the model reads why). The decision is the
orchestrator's: nothing the agent sends can approve a call.
"""

from __future__ import annotations

import argparse
import os
import time

from runtime.agent.events import emit
from runtime.agent.schemas import tool_schemas
from runtime.agent.tools import TOOLS
from runtime.approvals import DEFAULT_TIMEOUT_S
from runtime.gate.decision import ALLOW, ASK, DENY, unattended
from runtime.gate.engine import decide
from runtime.gate.policy import Policy, load_policy
from runtime.models.broker import BrokerClient
from runtime.models.types import ModelError
from runtime.policy.document import PolicyError

TYPE_CHECKING = False  # typing's, without importing typing: the agent is a fresh process in the sandbox
if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONObject

KICKOFF = "Begin the task. Work in {root}. When you are done, answer with your final report and no tool calls."
RETRY = ("Your previous attempt was not accepted:\n\n{feedback}\n\n"
         "Fix this in the same worktree (your earlier changes are still there), then answer with your final report.")


def run_tool(name: str, args: JSONObject, root: str) -> tuple[str, bool]:
    tool = TOOLS.get(name)
    if tool is None:
        return f"`{name}` is not implemented by this agent", True
    try:
        return tool(args, root)
    except Exception as exc:  # noqa: BLE001 - a tool failure is the model's to read
        return f"`{name}` failed: {type(exc).__name__}: {exc}", True


def _stamp(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


def _current(policy: Policy, path: str, seen: tuple[int, int, int] | None) -> tuple[Policy, tuple[int, int, int] | None]:
    """The policy as its file holds it now: the orchestrator writes a new one when a person's decision adds a
    rule ("always"), and the next call is judged by it; a file that does not load leaves the one in force."""
    now = _stamp(path)
    if now is None or now == seen:
        return policy, seen
    try:
        return load_policy(path), now
    except PolicyError:
        return policy, now


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="runtime.agent")
    for opt in ("--bundle", "--policy", "--broker", "--root"):
        parser.add_argument(opt, required=True)
    parser.add_argument("--feedback")
    parser.add_argument("--approvals", help="the orchestrator's approvals socket (without it, `ask` is refused)")
    parser.add_argument("--approval-timeout", type=float, default=float(DEFAULT_TIMEOUT_S))
    args = parser.parse_args(argv)
    try:
        policy = load_policy(args.policy)
    except PolicyError as exc:
        emit("error", kind="policy", message=str(exc))
        return 3
    seen = _stamp(args.policy)
    with open(args.bundle, encoding="utf-8") as fh:
        bundle = fh.read()
    first = KICKOFF.format(root=args.root)
    if args.feedback:
        with open(args.feedback, encoding="utf-8") as fh:
            first = RETRY.format(feedback=fh.read())
    messages: list[JSONObject] = [{"role": "system", "content": bundle}, {"role": "user", "content": first}]
    schemas = tool_schemas([name for name in TOOLS if name in policy.tools])
    client = BrokerClient(args.broker)
    turn = 0
    while True:
        turn += 1
        emit("turn", n=turn)
        try:
            reply = client.complete(messages, schemas)
        except ModelError as exc:
            emit("error", kind=exc.kind, message=str(exc))
            return 3
        messages.append(reply.assistant_message())
        if not reply.tool_calls:
            emit("final", content=reply.content or "")
            return 0
        for call in reply.tool_calls:
            if call.error:
                # Arguments that were not a JSON object: nothing to judge or run.
                emit("tool", tool=call.name, input={}, decision=DENY, reason=call.error, atom=None,
                     rule="input", is_error=True, result=call.error)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": call.error})
                continue
            started = time.perf_counter()
            policy, seen = _current(policy, args.policy, seen)
            decision = decide(policy, call.name, call.arguments, args.root)
            gate_ms = (time.perf_counter() - started) * 1000
            if decision.verdict == ASK and not args.approvals:
                decision = unattended(decision)  # nobody approves in this run: refused at once
            verdict, reason, extra = decision.verdict, decision.reason, {}
            if verdict == ASK and args.approvals:
                # Held pending in the orchestrator until a person decides (or it expires: a deny).
                from runtime.approvals.service import ask_orchestrator  # only a run a person may answer asks

                answer, why = ask_orchestrator(args.approvals, call.name, call.arguments, decision.reason,
                                               args.approval_timeout)
                extra = {"gate": ASK, "approval": answer}
                if answer == ALLOW:
                    verdict, reason = ALLOW, f"{why}; the gate had asked: {decision.reason}"
                else:
                    verdict, reason = DENY, f"this call needs a person's approval ({decision.reason}); {why}"
            if verdict == ALLOW:
                text, is_error = run_tool(call.name, call.arguments, args.root)
            elif extra:
                text, is_error = f"Not run: {reason}", True
            else:
                text, is_error = f"Refused by the runtime's gate: {reason}", True
            emit("tool", tool=call.name, input=call.arguments, decision=verdict, reason=reason,
                 atom=decision.atom, rule=decision.rule, is_error=is_error, result=text[:400], gate_ms=round(gate_ms, 4),
                 **extra)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
