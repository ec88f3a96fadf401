"""The secrets the egress proxy adds for declared hosts (`net::egress-allowlist`'s `credentials`), read by the
orchestrator before anything is made: from its own environment, a file, or a command's output. They live in the
orchestrator's memory and the proxy's requests alone: never in the sandbox's environment or files, and the
audit log and transcripts redact them by value (`runtime.audit.redact`)."""

from __future__ import annotations

import base64
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from runtime.errors import FatalError

if TYPE_CHECKING:
    from runtime.policy.compiled import CredentialJSON

COMMAND_TIMEOUT_S = 30


@dataclass(frozen=True, repr=False)
class Credential:
    """One host's credential, resolved: how it is sent and the secret."""

    host: str
    send: str  # bearer, basic, header, query
    name: str | None  # the header's name, the basic username, or the query parameter's name
    secret: str

    def __repr__(self) -> str:  # never the secret, in a traceback or a log
        return f"Credential(host={self.host!r}, send={self.send!r})"

    def header(self) -> tuple[bytes, bytes] | None:
        """The header the proxy adds (None for a query parameter)."""
        if self.send == "bearer":
            return b"authorization", b"Bearer " + self.secret.encode("latin-1")
        if self.send == "basic":
            pair = f"{self.name}:{self.secret}".encode("latin-1")
            return b"authorization", b"Basic " + base64.b64encode(pair)
        if self.send == "header" and self.name is not None:
            return self.name.lower().encode("ascii"), self.secret.encode("latin-1")
        return None

    def echoes(self) -> tuple[bytes, ...]:
        """Every form of the secret a site could send back (a reflected header, an error page quoting the
        request): the proxy blanks them in what a credentialed host answers, so that the agent never reads one."""
        found = {self.secret, quote(self.secret, safe=""), base64.b64encode(self.secret.encode()).decode()}
        added = self.header()
        if added is not None:
            found.add(added[1].decode("latin-1"))
            if self.send == "basic":
                found.add(added[1].decode("latin-1").removeprefix("Basic "))
        return tuple(sorted((f.encode("latin-1") for f in found if f), key=len, reverse=True))

    def forms(self) -> dict[str, str]:
        """What redaction looks for: the secret, and the basic pair as it travels."""
        out = {f"credential:{self.host}": self.secret}
        if self.send == "basic":
            out[f"credential:{self.host}:basic"] = base64.b64encode(f"{self.name}:{self.secret}".encode()).decode()
        return out


def _secret(rule: CredentialJSON, env: Mapping[str, str]) -> str:
    host = rule["host"]
    if rule["env"] is not None:
        value = env.get(rule["env"])
        if not value:
            raise FatalError(f"the credential for `{host}` reads the environment variable {rule['env']}, which is not "
                             "set here (the orchestrator's environment)")
        return value
    if rule["file"] is not None:
        path = Path(os.path.expanduser(rule["file"]))
        try:
            value = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise FatalError(f"the credential for `{host}` reads {path}: {exc}") from None
        if not value:
            raise FatalError(f"the credential for `{host}` reads {path}, which is empty")
        return value
    command = rule["command"] or []
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, env=dict(env),
                              stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FatalError(f"the credential for `{host}`: `{' '.join(command)}` did not run ({exc})") from None
    value = proc.stdout.strip()
    if proc.returncode != 0 or not value:
        raise FatalError(f"the credential for `{host}`: `{' '.join(command)}` exited {proc.returncode}"
                         + ("" if value else " and printed no secret"))
    return value


def resolve(rules: Sequence[CredentialJSON], env: Mapping[str, str] | None = None) -> tuple[Credential, ...]:
    """Each rule's secret, read now; a FatalError naming the host when one cannot be read."""
    env = os.environ if env is None else env
    out = []
    for rule in rules:
        secret = _secret(rule, env)
        if any(c in secret for c in "\r\n\0"):
            raise FatalError(f"the credential for `{rule['host']}` holds a line break or NUL: it cannot travel in a "
                             "header")
        name = {"basic": rule["username"], "header": rule["header"], "query": rule["query"]}.get(rule["send"])
        out.append(Credential(rule["host"], rule["send"], name, secret))
    return tuple(out)
