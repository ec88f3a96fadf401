"""Which hosts an agent may reach: the domain allowlist, shared by the gate and the egress proxy.

Standard library only: the gate imports this in a fresh hook process per tool
call. A pattern is an exact name (`pypi.org`) or `*.` and a suffix
(`*.githubusercontent.com`: its subdomains, not the suffix itself), compared
case-insensitively without a trailing dot. IP literals never match a name:
a name is what a person declared, an address is what it resolves to, and the
proxy checks the resolved address separately.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from runtime.lang.audience import AGENT, phrase

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call
if TYPE_CHECKING:
    from collections.abc import Sequence

_LABEL = re.compile(r"(?!-)[a-z0-9-]{1,63}(?<!-)")  # matched whole: `$` would take a label ending in a newline
WEB_PORTS = (80, 443)


def normalise_host(host: str) -> str | None:
    """The host as compared (lower case, no trailing dot), or None when it is not a plain DNS name."""
    if not isinstance(host, str):
        return None
    name = host.strip().rstrip(".").lower()
    if not name or len(name) > 253:
        return None
    labels = name.split(".")
    if not all(_LABEL.fullmatch(label) for label in labels) or labels[-1].isdigit():
        return None  # IDNA and anything else unusual (a declared punycode name still matches); an address
    return name


def is_ip_literal(host: str) -> bool:
    import ipaddress  # only where an address may be given: the hook's policy load never needs it

    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def pattern_error(pattern: object) -> str | None:
    """Why ``pattern`` is not a valid allowlist entry, or None."""
    if not isinstance(pattern, str):
        return "a domain pattern must be a string"
    suffix = pattern[2:] if pattern.startswith("*.") else pattern
    if normalise_host(suffix) is None:
        return (f"`{pattern}` is not a domain name or `*.` and a domain name (IP addresses, ports, paths, "
                "schemes and other wildcards are not allowed)")
    if pattern.startswith("*.") and "." not in suffix.rstrip("."):
        return f"`{pattern}` would cover a whole top-level domain"
    return None


def domain_allowed(patterns: Sequence[str], host: str) -> bool:
    """Whether ``host`` (a name, never an address) is covered by one of ``patterns``."""
    name = normalise_host(host)
    if name is None:
        return False
    for pattern in patterns:
        if pattern_error(pattern) is not None:
            continue
        pattern = pattern.rstrip(".").lower()
        if pattern.startswith("*."):
            if name.endswith(pattern[1:]) and len(name) > len(pattern) - 1:
                return True
        elif name == pattern:
            return True
    return False


def url_shape_refusal(url: object, ports: Sequence[int] = WEB_PORTS) -> str | None:
    """Why ``url`` is never fetched whatever the domains (not http(s), unparsable, credentials, a port off the
    list), or None."""
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        return "only http(s) URLs can be fetched"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "the URL cannot be parsed"
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        return "URLs with credentials (`user@host`) are not fetched; drop them from the URL"
    if (port or (443 if parts.scheme == "https" else 80)) not in ports:
        return f"only ports {', '.join(map(str, ports))} are reachable"
    return None


def internal_host(host: str) -> bool:
    """Whether ``host`` names the machine itself or its private network by address (loopback, link-local, the
    cloud metadata address, private ranges) or as `localhost`: never asked of a person, who cannot tell from a
    prompt what such an address serves."""
    import ipaddress  # only for a web call no rule decides

    name = host.strip("[]").rstrip(".").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        addr = ipaddress.ip_address(name)
    except ValueError:
        import socket

        try:  # the forms a resolver also takes for an address: `0x7f000001`, `127.1`, `2130706433`
            addr = ipaddress.ip_address(socket.inet_aton(name))
        except (OSError, ValueError):
            return name.split(".")[-1].isdigit()  # no DNS name ends in a number
    return addr.is_private or addr.is_loopback or addr.is_link_local or addr.is_reserved or addr.is_unspecified


def url_refusal(patterns: Sequence[str], url: object, ports: Sequence[int] = WEB_PORTS, audience: str = AGENT) -> str | None:
    """Why the agent may not fetch ``url``, or None when the allowlist covers it."""
    shape = url_shape_refusal(url, ports)
    if shape is not None:
        return shape
    assert isinstance(url, str)  # url_shape_refusal refused anything else
    host = urlsplit(url).hostname or ""
    if not patterns:
        return ("this role declares no domains it may reach (the task's `network.allowed-domains`); "
                f"{phrase(audience, 'network')}")
    if not domain_allowed(patterns, host):
        return (f"`{host}` is not in the domains this agent may reach ({', '.join(patterns)}); an address or a "
                "name off the list is never fetched: use one of those")
    return None
