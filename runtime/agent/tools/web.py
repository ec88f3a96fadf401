"""WebFetch: only for roles that show it, and only where the sandbox has a network."""

from __future__ import annotations

import urllib.request

MAX_BYTES = 200_000


def web_fetch(inp: dict, root: str) -> tuple[str, bool]:
    try:
        with urllib.request.urlopen(inp["url"], timeout=30) as resp:  # noqa: S310 - the gate checked the scheme
            body = resp.read(MAX_BYTES).decode("utf-8", errors="replace")
    except OSError as exc:
        return f"cannot fetch {inp['url']}: {exc}", True
    return body, False
