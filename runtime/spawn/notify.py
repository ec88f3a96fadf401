"""Telling the person's own command (``[notify]``, `runtime.manifests.notify`) when an agent waits or a run ends.

The event goes to the command as one JSON object on its standard input:

- ``waiting``: ``agent``, ``request`` (the id `runtime approve` takes), ``call`` (the call's one-line,
  redacted summary), ``reason`` (the gate's), ``expires_at``;
- ``finished``: ``agent``, ``label`` (ok, rejected, failed(kind), ...), ``commit``, ``message`` (its
  first line);
- ``plan-finished``: ``run``, ``status``, ``report`` (the report's path).

Every event also has ``event``, ``time`` and ``state_dir``. The command starts at once and is never waited
for by the run: a thread reaps it, and stops it after its ``timeout-s``; how it ended goes to the audit log
(``notify``). A command that fails is the person's to fix, never the run's failure.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from typing import TYPE_CHECKING, Any

from runtime.audit.records import Notified

if TYPE_CHECKING:
    from pathlib import Path

    from runtime.audit.log import AuditLog
    from runtime.manifests.notify import Notify


class Notifier:
    def __init__(self, config: Notify, state_dir: Path, audit: AuditLog | None = None) -> None:
        self.config, self.state_dir, self.audit = config, state_dir, audit
        self._threads: list[threading.Thread] = []

    def send(self, event: str, agent: str | None = None, **fields: Any) -> bool:
        """Start the command with the event, if it wants that event; whether it was started."""
        if not self.config.wants(event):
            return False
        payload = {"event": event, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                   "state_dir": str(self.state_dir), **({"agent": agent} if agent else {}), **fields}
        data = (json.dumps(payload, ensure_ascii=True) + "\n").encode()
        try:
            proc = subprocess.Popen(list(self.config.command), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, close_fds=True)
        except OSError as exc:
            self._audit(agent, Notified(event=event, command=self.config.command[0],
                                        error=f"could not start: {exc.strerror or exc}"))
            return False
        # The event is handed over here, not by the reaping thread: a process that ends right after sending (a
        # plan's last event) would take a daemon thread, and the event, with it. One line, far below a pipe's
        # buffer: the write does not wait for the command to read it.
        assert proc.stdin is not None
        try:
            proc.stdin.write(data)
            proc.stdin.close()
            proc.stdin = None  # handed over: `communicate` below only reads stderr and waits
        except OSError as exc:  # it closed its stdin before reading: the event was not taken
            proc.kill()
            proc.wait()
            self._audit(agent, Notified(event=event, command=self.config.command[0],
                                        error=f"did not read the event: {exc.strerror or exc}"))
            return False
        thread = threading.Thread(target=self._reap, args=(proc, event, agent), daemon=True, name="notify")
        thread.start()
        self._threads.append(thread)
        return True

    def wait(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` for the commands started to end (their end audited): before a process exits."""
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def _reap(self, proc: subprocess.Popen[bytes], event: str, agent: str | None) -> None:
        try:
            _, err = proc.communicate(timeout=self.config.timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            self._audit(agent, Notified(event=event, command=self.config.command[0],
                                        error=f"stopped after {self.config.timeout_s} s"))
            return
        tail = err.decode("utf-8", errors="replace").strip().splitlines()[-1:] if err else []
        self._audit(agent, Notified(event=event, command=self.config.command[0], exit_code=proc.returncode,
                                    stderr=tail[0][:300] if tail else None))

    def _audit(self, agent: str | None, record: Notified) -> None:
        if self.audit is not None:
            self.audit.append(record, agent)
