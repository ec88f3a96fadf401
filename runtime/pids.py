"""Whether a process a record names still exists: the one check behind every "is its holder gone?"."""

from __future__ import annotations

import os


def alive(pid: int) -> bool:
    """Whether ``pid`` exists (another user's process counts: it exists, we may not signal it)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True
