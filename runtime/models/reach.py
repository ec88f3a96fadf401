"""Is a model server on this machine up? One GET of its model list, before a run creates anything.

Asked only of a server on the loopback (`localhost`, 127.0.0.0/8, ::1): there the usual mistake is a
server not started, or started and broken, and asking costs nothing (no tokens, no turn of a script,
milliseconds). A remote `api-base` or a hosted provider is not asked: it is reached through the
proxies and TLS settings litellm's client applies, which a probe of its own would have to mirror (or
it would refuse runs that work), and a hosted API counts every request against its rate limits; there
the key check of `runtime.models.llm.model_problem` is what can be known in advance.

Only a server that cannot be reached, or that answers the list with a 5xx, is a problem: any other
answer (a 404 of a server without `/models`, a 401 of one that wants a key the probe does not send)
says that something listens and leaves the verdict to the model call. Standard library only, no
proxy: a loopback server is never reached through one.
"""

from __future__ import annotations

import ipaddress
import ssl
import urllib.error
import urllib.parse
import urllib.request

PROBE_TIMEOUT_S = 5.0
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


def is_loopback(api_base: str) -> bool:
    host = (urllib.parse.urlsplit(api_base).hostname or "").rstrip(".").lower()
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified  # 0.0.0.0 reaches this machine


def local_server_problem(api_base: str, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """Why the loopback model server at ``api_base`` cannot serve a run, or None (also for any other server)."""
    parts = urllib.parse.urlsplit(api_base)
    if parts.scheme not in ("http", "https") or not is_loopback(api_base):
        return None
    url = api_base.rstrip("/") + "/models"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(urllib.request.Request(url, method="GET"), timeout=timeout_s):
            return None
    except urllib.error.HTTPError as exc:
        if exc.code < 500:
            return None
        return (f"the model server at {api_base} answers HTTP {exc.code} ({exc.reason}) to GET {url}: "
                "fix or restart it, then run again")
    except (ssl.SSLError, ssl.CertificateError):
        return None  # a TLS setting of its own (a self-signed certificate): litellm's client decides
    except (TimeoutError, urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", None) or exc
        if isinstance(reason, (ssl.SSLError, ssl.CertificateError)):
            return None
        return f"cannot reach the model server at {api_base} ({reason}): start it, or correct `api-base`"
