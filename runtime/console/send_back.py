"""Send an agent's work back from the console: the person's line comments and note become the first message
of a new series of attempts under the same task (`runtime again ID --feedback FILE`, started here as its own
process, in the repository the console was opened in, so it outlives the console and shows on its page).

The request is checked before anything starts: at most `MAX_COMMENTS` comments, each naming a line the
change really has (its text is quoted from the change, never from the request), text within bounds, and
an agent that may go again (`runtime.spawn.again.again_record`). One `runtime again` per agent at a time.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runtime.errors import UsageError
from runtime.printable import printable
from runtime.spawn.again import MAX_FEEDBACK, again_record

if TYPE_CHECKING:
    from runtime.console.diff_view import FileChange
    from runtime.spawn.state import StateDir

MAX_COMMENTS = 100
MAX_COMMENT = 4000
MAX_NOTE = 8000


class Refused(Exception):
    """Why nothing was sent: one line for the person."""


@dataclass(frozen=True)
class Comment:
    path: str
    side: str  # new (an added or kept line) or old (a removed one)
    line: int
    text: str


def comments_from(payload: Any) -> tuple[list[Comment], str]:
    """The request's comments and note, typed, or Refused."""
    if not isinstance(payload, dict) or set(payload) - {"comments", "note"}:
        raise Refused("send {\"comments\": [...], \"note\": \"...\"}")
    note = payload.get("note") or ""
    raw = payload.get("comments") or []
    if not isinstance(note, str) or not isinstance(raw, list):
        raise Refused("the note is text and the comments a list")
    if len(note) > MAX_NOTE:
        raise Refused(f"the note is {len(note)} characters; at most {MAX_NOTE}")
    if len(raw) > MAX_COMMENTS:
        raise Refused(f"{len(raw)} comments; at most {MAX_COMMENTS} at once")
    out = []
    for c in raw:
        if not isinstance(c, dict) or set(c) != {"path", "side", "line", "text"}:
            raise Refused("each comment is {\"path\", \"side\", \"line\", \"text\"}")
        if not isinstance(c["path"], str) or c["side"] not in ("new", "old") or not isinstance(c["line"], int) \
                or isinstance(c["line"], bool) or not isinstance(c["text"], str):
            raise Refused("a comment's path and text are text, its side new or old, its line a number")
        if not c["text"].strip() or len(c["text"]) > MAX_COMMENT:
            raise Refused(f"a comment is empty or over {MAX_COMMENT} characters")
        out.append(Comment(c["path"], c["side"], c["line"], c["text"].strip()))
    if not out and not note.strip():
        raise Refused("nothing to send: comment on a line or write a note")
    return out, note.strip()


def feedback(comments: list[Comment], note: str, files: list[FileChange]) -> str:
    """What the agent reads: the note, then each comment under the line it names, quoted from the change."""
    # A page names a file as it shows it (made printable): a name with a control character is found by that too.
    by_path = {**{printable(f.path): f for f in files}, **{f.path: f for f in files}}
    parts = [note] if note else []
    if comments:
        parts.append("Comments on lines of your change (the file, the line as the change has it, then the comment):")
    for c in comments:
        change = by_path.get(c.path)
        line = change.line(c.side, c.line) if change is not None else None
        if change is None or line is None:
            raise Refused(f"{printable(c.path)} has no {c.side} line {c.line} in this change")
        where = f"line {c.line}" if c.side == "new" else f"removed line {c.line} (of the base)"
        quoted = "\n".join(f"    {t}" for t in c.text.splitlines())
        parts.append(f"- `{printable(change.path)}`, {where}: `{line.text.strip()}`\n{quoted}")
    text = "\n\n".join(parts)
    if len(text) > MAX_FEEDBACK - 100:
        raise Refused(f"what would be sent is {len(text)} characters; at most {MAX_FEEDBACK - 100}")
    return text


class SendBack:
    """Starts `runtime again` for an agent, one at a time per agent, its output kept in the run's folder."""

    def __init__(self, state: StateDir, repo: Path | None) -> None:
        self.state, self.repo = state, repo
        self._running: dict[str, subprocess.Popen[bytes]] = {}
        self._lock = threading.Lock()

    def why_not(self, agent_id: str) -> str | None:
        """None when the agent's work may be sent back now, else why not (one line)."""
        if self.repo is None:
            return "the console was opened outside a repository: send back with `runtime again` in the repository"
        with self._lock:
            proc = self._running.get(agent_id)
            if proc is not None and proc.poll() is None:
                return f"agent {agent_id} was sent back and is running again"
        try:
            again_record(self.state, agent_id)
        except UsageError as exc:
            return str(exc)
        return None

    def start(self, agent_id: str, text: str) -> Path:
        """Start `runtime again ID --feedback FILE`; returns the file its output goes to."""
        why = self.why_not(agent_id)
        if why is not None:
            raise Refused(why)
        assert self.repo is not None  # why_not says so otherwise
        folder = self.state.run(agent_id)
        n = sum(1 for _ in folder.glob("sent-back-*.md")) + 1
        note, log = folder / f"sent-back-{n}.md", folder / f"sent-back-{n}.log"
        note.write_text(text + "\n", encoding="utf-8")
        argv = [sys.executable, "-m", "runtime.cli.main", "again", agent_id, "--feedback", str(note),
                "--state-dir", str(self.state.root)]
        env = {k: v for k, v in os.environ.items() if k != "RUNTIME_STATE_DIR"}
        with self._lock, open(log, "wb") as out:
            # Its own session: it goes on when the console stops, and a Ctrl-C of the console is not its.
            self._running[agent_id] = subprocess.Popen(argv, cwd=self.repo, stdin=subprocess.DEVNULL, stdout=out,
                                                       stderr=subprocess.STDOUT, env=env, start_new_session=True)
        return log

    def close(self) -> None:
        """Reap what finished (what still runs goes on: it is a spawn of its own)."""
        with self._lock:
            for agent_id, proc in list(self._running.items()):
                if proc.poll() is not None:
                    del self._running[agent_id]
