"""An agent's change as the console reads and shows it, in a worker process of its own.

Reading a change of megabytes (git's diff, its parsing, highlighting) is work for the interpreter, and the
console's one process serves every page and event stream: in a thread it would hold them all up. So the
change page is made in a separate process (`Renderer`, one worker, started at the first change asked for),
and what comes back is the page's HTML; a worker that cannot start or breaks leaves the work to a thread.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.console.diff_view import FileChange, diff_page, parse_diff
from runtime.orchestration.overview import change_of
from runtime.workspace.git import GitError

if TYPE_CHECKING:
    from runtime.spawn.state import RunRecord


def read_change(repo: Path | None, record: RunRecord) -> tuple[str, str, list[FileChange]] | str:
    """The agent's branch against the base it started from, in the repository the console was opened in:
    (base, head, files), or why there is none to show."""
    if repo is None:
        return "no change of that agent here"
    try:
        head, shown = change_of(repo, record)
    except GitError as exc:
        return f"the change cannot be read: {exc}"
    if head is None:
        return "no change of that agent here"
    return record.base, head, parse_diff(shown)


def change_page(repo: Path | None, record: RunRecord, sendable: str | None, file: str) -> tuple[int, str]:
    """(200, the change page's body), or (404, why there is none). ``file``: the index of the file shown
    whole, as the page's `?file=` gave it ("" for every file, a page's worth)."""
    found = read_change(repo, record)
    if isinstance(found, str):
        return 404, found
    base, head, files = found
    edits = {e for a in record.attempts for c in a.checks for e in c.test_edits}
    whole = int(file) if file.isdigit() and len(file) < 7 and int(file) < len(files) else None
    return 200, diff_page(record.agent_id, base, head, files, edits, sendable, whole)


class Renderer:
    """One worker process for the change pages, started when first needed and stopped with the console."""

    def __init__(self) -> None:
        self._pool: ProcessPoolExecutor | None = None

    async def change_page(self, repo: Path | None, record: RunRecord, sendable: str | None,
                          file: str) -> tuple[int, str]:
        try:
            if self._pool is None:
                self._pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
            return await asyncio.wrap_future(self._pool.submit(change_page, repo, record, sendable, file))
        except (BrokenProcessPool, OSError, RuntimeError):
            self.close()
            return await asyncio.to_thread(change_page, repo, record, sendable, file)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
