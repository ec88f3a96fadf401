"""Limits judged on the change, not on what the repository already held.

A repository nobody here wrote has 1000-line modules and 100-line functions. A
limit judged on whole files would reject a one-line fix in one (and its
feedback would ask the agent for a refactor nobody wanted). So a measure (lines
of a file or function, bytes of a file) is judged against its value at the base:

- new (no value at the base): within the limit;
- within the limit at the base: stays within it;
- over the limit at the base already: may not grow;

and what the change did not touch keeps its value, so it always passes.
"""

from __future__ import annotations

NEW = "new"  # did not exist at the base, and is over the limit
CROSSED = "crossed"  # was within the limit at the base, and is over it now
GREW = "grew"  # was over the limit at the base, and is larger now


def breach(now: int, before: int | None, limit: int) -> str | None:
    """How ``now`` breaks ``limit`` given its value ``before`` at the base (None: it is new); None when it
    does not."""
    if now <= limit:
        return None
    if before is None:
        return NEW
    if before <= limit:
        return CROSSED
    return GREW if now > before else None
