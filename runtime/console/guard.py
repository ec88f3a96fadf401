"""What every request to the console must show before it is served.

- **The token.** `runtime console` makes a random token and prints the URL holding it (`/?token=T`) as its
  first line. Opened once, it is swapped for a cookie (`HttpOnly`, `SameSite=Strict`) and the browser is
  sent on to the same page without it, so the token leaves the address bar and the history. Every
  request must carry it, as that cookie or as `?token=`; compared in constant time, never logged.
- **The Host header** names this console on loopback (`127.0.0.1:PORT`, `localhost:PORT`): a page of
  another site whose name an attacker points at 127.0.0.1 (DNS rebinding) sends its own name.
- **A CSRF token** on every request but GET and HEAD: the `X-CSRF-Token` header must equal one derived
  from the token, which only the console's own pages hold; an `Origin`, when sent,
  must be the console's own.
- **Headers on every answer**: a Content-Security-Policy that runs and loads only the console's own files
  (no inline script, nothing from elsewhere, no frames), `nosniff`, no referrer, no caching.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field

COOKIE = "runtime_console"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
HEADERS = {"content-security-policy": CSP, "x-content-type-options": "nosniff", "referrer-policy": "no-referrer",
           "x-frame-options": "DENY", "cache-control": "no-store"}
SAFE_METHODS = frozenset({"GET", "HEAD"})


@dataclass(frozen=True)
class Guard:
    port: int
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))

    @property
    def csrf(self) -> str:
        return hmac.new(self.token.encode(), b"csrf", hashlib.sha256).hexdigest()

    @property
    def hosts(self) -> frozenset[str]:
        return frozenset({f"127.0.0.1:{self.port}", f"localhost:{self.port}"})

    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/?token={self.token}"

    def refusal(self, method: str, host: str | None, cookie: str | None, query_token: str | None,
                csrf: str | None, origin: str | None) -> str | None:
        """Why a request is refused, or None when it may be served."""
        if host not in self.hosts:
            return "this console answers only at 127.0.0.1 or localhost and its own port"
        given = cookie if cookie is not None else query_token
        if given is None or not hmac.compare_digest(given.encode(), self.token.encode()):
            if query_token is None or not hmac.compare_digest(query_token.encode(), self.token.encode()):
                return "open the URL `runtime console` printed (it holds the token)"
        if method not in SAFE_METHODS:
            if csrf is None or not hmac.compare_digest(csrf.encode(), self.csrf.encode()):
                return "a request that changes anything needs the console's CSRF token"
            if origin is not None and origin not in {f"http://{h}" for h in self.hosts}:
                return "a request from another origin"
        return None
