"""WebFetch: only for roles that show it, and only where the sandbox has a network."""

from __future__ import annotations

import urllib.request

TYPE_CHECKING = False  # typing's, without importing typing: the agent is a fresh process in the sandbox
if TYPE_CHECKING:
    from typing import Any

MAX_BYTES = 200_000


def web_fetch(inp: dict[str, Any], root: str) -> tuple[str, bool]:
    try:
        with urllib.request.urlopen(inp["url"], timeout=30) as resp:  # noqa: S310 - the gate checked the scheme
            body = resp.read(MAX_BYTES).decode("utf-8", errors="replace")
    except OSError as exc:
        return f"cannot fetch {inp['url']}: {exc}", True
    return body, False
