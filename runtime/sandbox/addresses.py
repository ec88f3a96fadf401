"""Which addresses the egress proxy may connect to: public unicast ones, judged from a table.

`ipaddress`'s `is_global` alone is not enough, and not used as the rule:

- it calls multicast global (224.0.0.1, ff0e::1) and the deprecated
  site-local fec0::/10 too;
- it judges an IPv6 address as IPv6 only, never the IPv4 address a packet to
  it ends up at: 2002:a9fe:a9fe::1 (6to4), 64:ff9b::a9fe:a9fe (NAT64) and
  ::a9fe:a9fe (IPv4-compatible) all carry 169.254.169.254, the cloud metadata
  address, and all are "global" on Python 3.11;
- its answer changes with the Python version (the IANA lists it copies were
  revised in 3.11.10, 3.12.4 and 3.13: 2002::/16, 64:ff9b:1::/48 and parts
  of 2001::/23 moved), and a security boundary must not move with a patch
  release.

So the rule is written out here, allowlist-minded: an IPv4 address is public
when it is in none of `NOT_PUBLIC_V4`; an IPv6 address is public only inside
global unicast (2000::/3) and outside `NOT_PUBLIC_V6`; the IPv6 forms that
carry an IPv4 address (`EMBEDDINGS`) are judged by every IPv4 address they
may carry. Anything the tables do not know is refused.

Teredo (2001::/32) is refused, not judged: it carries two IPv4 addresses (a
server's and a client's NAT mapping), the packet goes through whichever relay
the host's routing picks, and no web site a role names lives there; it sits
in 2001::/23, refused whole. IPv4-compatible addresses (::/96) are refused
whatever they carry: deprecated since RFC 4291, no resolver answers with one,
and where one goes depends on the host's tunnels.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# IANA's IPv4 special-purpose registry (RFC 6890 and successors), every range that is not globally
# routable unicast, with the name a refusal gives.
NOT_PUBLIC_V4: tuple[tuple[ipaddress.IPv4Network, str], ...] = tuple(
    (ipaddress.IPv4Network(cidr), why) for cidr, why in (
        ("0.0.0.0/8", "\"this network\""),
        ("10.0.0.0/8", "private"),
        ("100.64.0.0/10", "carrier-grade NAT"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local, cloud metadata"),
        ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "IETF protocol assignments"),  # .9 and .10 are anycast services, not web sites
        ("192.0.2.0/24", "documentation"),
        ("192.88.99.0/24", "deprecated 6to4 relay anycast"),
        ("192.168.0.0/16", "private"),
        ("198.18.0.0/15", "benchmarking"),
        ("198.51.100.0/24", "documentation"),
        ("203.0.113.0/24", "documentation"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved, broadcast"),
    ))

GLOBAL_UNICAST_V6 = ipaddress.IPv6Network("2000::/3")

# Inside 2000::/3, what is not public; outside it, names for the refusal of what is well known
# (everything outside is refused anyway). The longest match names the refusal.
NOT_PUBLIC_V6: tuple[tuple[ipaddress.IPv6Network, str], ...] = tuple(
    (ipaddress.IPv6Network(cidr), why) for cidr, why in (
        ("2001::/23", "IETF protocol assignments: Teredo, benchmarking, ORCHID, anycast services"),
        ("2001::/32", "Teredo"),
        ("2001:db8::/32", "documentation"),
        ("3fff::/20", "documentation"),
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("::/96", "IPv4-compatible, deprecated"),
        ("::ffff:0:0:0/96", "IPv4-translated"),
        ("100::/64", "discard"),
        ("fc00::/7", "unique-local"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local, deprecated"),
        ("ff00::/8", "multicast"),
    ))


def _bits_from(prefix: int) -> Callable[[ipaddress.IPv6Address], ipaddress.IPv4Address]:
    """The IPv4 address RFC 6052 puts after a prefix of ``prefix`` bits (bits 64-71 are skipped)."""
    def extract(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address:
        whole, value, taken, position = int(ip), 0, 0, prefix
        while taken < 32:
            if 64 <= position < 72:
                position = 72
                continue
            value = value << 1 | (whole >> (127 - position)) & 1
            position, taken = position + 1, taken + 1
        return ipaddress.IPv4Address(value)
    return extract


def _sixtofour(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address:
    return ipaddress.IPv4Address((int(ip) >> 80) & 0xFFFFFFFF)


# The IPv6 forms a packet leaves as IPv4, each with every position the IPv4 address may sit at.
# The local-use NAT64 prefix (RFC 8215) is subdivided as its operator chose (/48 to /96, RFC 6052):
# which layout is not knowable here, so every one is judged and all must be public.
EMBEDDINGS: tuple[tuple[ipaddress.IPv6Network, str, tuple[Callable[[ipaddress.IPv6Address],
                                                                    ipaddress.IPv4Address], ...]], ...] = (
    (ipaddress.IPv6Network("::ffff:0:0/96"), "IPv4-mapped", (_bits_from(96),)),
    (ipaddress.IPv6Network("64:ff9b::/96"), "NAT64", (_bits_from(96),)),
    (ipaddress.IPv6Network("64:ff9b:1::/48"), "local NAT64",
     (_bits_from(96), _bits_from(64), _bits_from(56), _bits_from(48))),
    (ipaddress.IPv6Network("2002::/16"), "6to4", (_sixtofour,)),
)


def parse(address: str) -> IPAddress:
    """The address without an IPv6 zone (`%eth0`); ValueError when it is not one."""
    return ipaddress.ip_address(address.split("%", 1)[0])


def carried_ipv4(ip: IPAddress) -> tuple[str, list[ipaddress.IPv4Address]] | None:
    """(form, every IPv4 address it may carry) for an embedding form, else None."""
    if isinstance(ip, ipaddress.IPv6Address):
        for network, form, extractors in EMBEDDINGS:
            if ip in network:
                return form, [extract(ip) for extract in extractors]
    return None


def _v4_refusal(ip: ipaddress.IPv4Address) -> str | None:
    for network, why in NOT_PUBLIC_V4:
        if ip in network:
            return why
    return None


def _v6_refusal(ip: ipaddress.IPv6Address) -> str | None:
    matches = [(network.prefixlen, why) for network, why in NOT_PUBLIC_V6 if ip in network]
    if matches:
        return max(matches)[1]
    if ip not in GLOBAL_UNICAST_V6:
        return "outside global unicast 2000::/3"
    return None


def address_refusal(ip: IPAddress) -> str | None:
    """Why ``ip`` is not a public unicast address (one line), or None when it is."""
    if (carried := carried_ipv4(ip)) is not None:
        form, inner = carried
        for v4 in inner:
            if (why := _v4_refusal(v4)) is not None:
                return f"{ip} carries {v4} ({form}), which is not a public address ({why})"
        return None
    why = _v4_refusal(ip) if isinstance(ip, ipaddress.IPv4Address) else _v6_refusal(ip)
    return None if why is None else f"{ip} is not a public address ({why})"
