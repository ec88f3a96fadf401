"""Who reads a deny reason, and the words that fit there.

A spawned agent works on a task for the orchestrator, which commits its
verified work: its reasons may say "say in your report" and speak of the
orchestrator. A person's own Claude Code session (`runtime hook install`)
has no orchestrator and no report: the model there talks with the person, so
its reasons say "ask the person". The compiled policy states its audience
(`agent` unless a session's hook compiled it); each phrase that differs is
here once, in both forms, so no reason of a session ever names what is not
there (`tests/gate/test_audience.py` checks every shipped refusal).
"""

from __future__ import annotations

AGENT = "agent"
SESSION = "session"
AUDIENCES = (AGENT, SESSION)

_PHRASES = {
    "dependencies": ("say in your report what you need", "ask the person to change them"),
    "network": ("work with what the worktree holds, and say in your report what you needed from the network",
                "work with what the repository holds, and ask the person for what you needed from the network"),
    "read-only": ("report what should change instead", "tell the person what should change instead"),
    "git": ("agents never run git; the orchestrator commits your verified work, so just edit files and report",
            "this role does not run git; ask the person to run it"),
    "git-variable": ("agents never run git", "this role does not run git"),
    "control-file": (
        "which agents never change; leave it, and say in your report what should change (only a task file given to "
        "`runtime spawn` may allow it, in `[scope] control-files`)",
        "which this session never changes; leave it, and tell the person what should change"),
}


def phrase(audience: str, key: str) -> str:
    """The words for ``key`` that fit ``audience`` (the agent's for anything unknown: the stricter wording)."""
    agent, session = _PHRASES[key]
    return session if audience == SESSION else agent
