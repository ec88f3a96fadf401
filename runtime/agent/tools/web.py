"""WebFetch: only for roles that show it, and only where the sandbox has a network."""

from __future__ import annotations

import urllib.request

from runtime.agent.tools.inputs import string

TYPE_CHECKING = False  # typing's, without importing typing: the agent is a fresh process in the sandbox
if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONObject

MAX_BYTES = 200_000


def web_fetch(inp: JSONObject, root: str) -> tuple[str, bool]:
    url = string(inp, "url")
    try:
        with urllib.request.urlopen(url, timeout=30) as resp:  # noqa: S310 - the gate checked the scheme
            body = resp.read(MAX_BYTES).decode("utf-8", errors="replace")
    except OSError as exc:
        return f"cannot fetch {url}: {exc}", True
    return body, False
