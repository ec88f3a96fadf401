"""What every request to the console must show before it is served.

- **The token, held by this console's origin alone.** `runtime console` makes a random token and prints a
  URL holding it (`/?token=T`); a link to any page may hold it too. No cookie carries it: a browser sends a
  site's cookies to every port of the host, so any other service on 127.0.0.1 (a dev server, something an
  agent started) would receive it. A page the browser opens gets the **shell** (`pages.shell`): no data,
  no CSRF value, only the console's script, which keeps the token in this origin's own storage (scoped to
  scheme, host and port), takes it out of the address bar and the history entry, and fetches the page's
  content, its live sections and its event stream with the token in the `X-Console-Token` header. Every
  request but the shell and the static files must carry that header; compared in constant time, never
  logged.
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

TOKEN_HEADER = "x-console-token"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
HEADERS = {"content-security-policy": CSP, "x-content-type-options": "nosniff", "referrer-policy": "no-referrer",
           "x-frame-options": "DENY", "cache-control": "no-store"}
SAFE_METHODS = frozenset({"GET", "HEAD"})
PUBLIC = ("/static/", "/highlight.css", "/favicon.ico")  # the last: a 404, not a refusal in the log


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

    def shell(self, method: str, host: str | None, token: str | None, path: str, accept: str | None,
              dest: str | None) -> bool:
        """Whether a request is the browser opening a page, which gets the shell (no data) whatever it holds:
        a GET from this console's own Host, without the token header, for a document."""
        return (method in SAFE_METHODS and host in self.hosts and token is None and not path.startswith(PUBLIC)
                and (dest == "document" or "text/html" in (accept or "")))

    def public(self, method: str, host: str | None, path: str) -> bool:
        """The console's own script, styles and highlighting: the same for everyone, no data."""
        return method in SAFE_METHODS and host in self.hosts and path.startswith(PUBLIC)

    def refusal(self, method: str, host: str | None, token: str | None, csrf: str | None,
                origin: str | None) -> str | None:
        """Why a request is refused, or None when it may be served."""
        if host not in self.hosts:
            return "this console answers only at 127.0.0.1 or localhost and its own port"
        if token is None or not hmac.compare_digest(token.encode(), self.token.encode()):
            return "open the URL `runtime console` printed (it holds the token)"
        if method not in SAFE_METHODS:
            if csrf is None or not hmac.compare_digest(csrf.encode(), self.csrf.encode()):
                return "a request that changes anything needs the console's CSRF token"
            if origin is not None and origin not in {f"http://{h}" for h in self.hosts}:
                return "a request from another origin"
        return None
