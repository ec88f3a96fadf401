"""The egress proxy's address table: only public unicast addresses, IPv4 carried in IPv6 judged as IPv4.

The embeddings are built here from their RFCs (mapped and compatible RFC 4291,
6to4 RFC 3056, NAT64 RFC 6052 and 8215, Teredo RFC 4380), not with the
module's own extractors, so a wrong bit position there shows up as a failure.
"""

from __future__ import annotations

import ipaddress
from ipaddress import IPv4Address, IPv6Address

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.sandbox.addresses import NOT_PUBLIC_V4, address_refusal, parse
from runtime.sandbox.egress import EgressRules

RULES = EgressRules(("example.com",))
OPEN_ALL = EgressRules(("example.com",), ("0.0.0.0/0", "::/0"))


def mapped(v4: IPv4Address, _: int) -> IPv6Address:
    return IPv6Address(0xFFFF << 32 | int(v4))


def compatible(v4: IPv4Address, _: int) -> IPv6Address:
    return IPv6Address(int(v4))


def sixtofour(v4: IPv4Address, noise: int) -> IPv6Address:
    return IPv6Address(0x2002 << 112 | int(v4) << 80 | noise & (1 << 80) - 1)


def nat64(v4: IPv4Address, _: int) -> IPv6Address:
    return IPv6Address(0x64FF9B << 96 | int(v4))


def local_nat64(prefix: int):
    """RFC 6052 section 2.2: the IPv4 bits follow the prefix, skipping bits 64-71; the rest is anything."""
    positions = [p for p in range(prefix, 128) if not 64 <= p < 72][:32]

    def embed(v4: IPv4Address, noise: int) -> IPv6Address:
        value = 0x0064_FF9B_0001 << 80 | noise & (1 << 80) - 1
        for index, position in enumerate(positions):
            bit = int(v4) >> (31 - index) & 1
            value = value & ~(1 << (127 - position)) | bit << (127 - position)
        return IPv6Address(value)
    embed.__name__ = f"local_nat64_{prefix}"
    return embed


def teredo_server(v4: IPv4Address, noise: int) -> IPv6Address:
    return IPv6Address(0x2001_0000 << 96 | int(v4) << 64 | noise & (1 << 64) - 1)


def teredo_client(v4: IPv4Address, noise: int) -> IPv6Address:
    return IPv6Address(0x2001_0000 << 96 | (noise & (1 << 64) - 1) << 32 | int(v4) ^ 0xFFFFFFFF)


EMBEDDINGS = [mapped, compatible, sixtofour, nat64, *(local_nat64(p) for p in (48, 56, 64, 96)), teredo_server,
              teredo_client]


def _in(network: ipaddress.IPv4Network):
    return st.integers(int(network.network_address), int(network.broadcast_address)).map(IPv4Address)


private_v4 = st.sampled_from([network for network, _ in NOT_PUBLIC_V4]).flatmap(_in)
public_v4 = st.integers(0, 2**32 - 1).map(IPv4Address).filter(
    lambda ip: not any(ip in network for network, _ in NOT_PUBLIC_V4))
noise = st.integers(0, 2**80 - 1)


@pytest.mark.parametrize("address", [
    # the forms the review found open
    "2002:a9fe:a9fe::1", "fec0::1", "fec0::a9fe:a9fe", "192.0.0.1", "192.0.0.170",
    # IPv4 carried in IPv6
    "::ffff:169.254.169.254", "::169.254.169.254", "::127.0.0.1", "::8.8.8.8", "64:ff9b::10.0.0.1",
    "64:ff9b::169.254.169.254", "64:ff9b:1::a9fe:a9fe", "2002:7f00:1::", "2002:c0a8:101::1",
    "2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001::1",  # Teredo, even around public addresses
    # IPv4 that is not globally routable
    "0.1.2.3", "10.1.2.3", "100.64.0.1", "100.127.255.254", "127.0.0.1", "169.254.169.254", "172.31.0.1",
    "192.0.2.1", "192.88.99.1", "192.168.1.1", "198.18.0.1", "198.19.255.255", "198.51.100.1", "203.0.113.9",
    "224.0.0.1", "239.255.255.250", "240.0.0.1", "255.255.255.255",
    # IPv6 that is not globally routable
    "::", "::1", "::ffff:0:a00:1", "100::1", "2001:2::1", "2001:10::1", "2001:20::1", "2001:db8::1", "3fff::1",
    "fc00::1", "fd12:3456::1", "fe80::1", "fe80::1%eth0", "ff02::1", "ff0e::1", "4000::1", "1::1",
])
def test_non_public_addresses_are_refused(address):
    assert RULES.address_refusal(address) is not None
    assert OPEN_ALL.address_refusal(address) is None  # a role's explicitly opened range still wins


@pytest.mark.parametrize("address", [
    "93.184.216.34", "8.8.8.8", "1.1.1.1", "2606:4700::1111", "2a00:1450:4001:82b::200e", "::ffff:8.8.8.8",
    "2002:808:808::1", "64:ff9b::8.8.8.8",
])
def test_public_addresses_pass(address):
    assert RULES.address_refusal(address) is None


def test_a_refusal_names_what_the_address_carries():
    why = RULES.address_refusal("2002:a9fe:a9fe::1")
    assert why == ("2002:a9fe:a9fe::1 carries 169.254.169.254 (6to4), which is not a public address "
                   "(link-local, cloud metadata)")
    assert RULES.address_refusal("fec0::1") == "fec0::1 is not a public address (site-local, deprecated)"
    assert RULES.address_refusal("not an address") == "`not an address` is not an address"


def test_an_opened_ipv4_range_covers_its_mapped_form_only():
    rules = EgressRules(("example.com",), ("10.0.0.0/8",))
    assert rules.address_refusal("10.1.2.3") is None and rules.address_refusal("::ffff:10.1.2.3") is None
    assert rules.address_refusal("2002:a01:203::1") is not None  # 6to4 is not the IPv4 host itself


@given(private_v4, st.sampled_from(EMBEDDINGS), noise)
def test_a_private_ipv4_in_any_embedding_is_refused(v4, embed, bits):
    ip = embed(v4, bits)
    assert RULES.address_refusal(str(ip)) is not None, (embed.__name__, v4, ip)
    assert RULES.address_refusal(str(v4)) is not None


@given(public_v4, st.sampled_from([mapped, sixtofour, nat64]), noise)
def test_a_public_ipv4_in_a_routed_embedding_passes(v4, embed, bits):
    assert RULES.address_refusal(str(embed(v4, bits))) is None


@given(public_v4, st.sampled_from([compatible, teredo_server, teredo_client]), noise)
def test_deprecated_and_teredo_forms_are_refused_whatever_they_carry(v4, embed, bits):
    assert RULES.address_refusal(str(embed(v4, bits))) is not None


@given(st.integers(0, 2**128 - 1))
def test_ipv6_outside_global_unicast_passes_only_as_a_translated_public_ipv4(value):
    ip = IPv6Address(value)
    if ip in ipaddress.ip_network("2000::/3"):
        return
    carried = ip.ipv4_mapped or (IPv4Address(value & 0xFFFFFFFF) if ip in ipaddress.ip_network("64:ff9b::/96")
                                 else None)
    if RULES.address_refusal(str(ip)) is None:
        assert carried is not None or ip in ipaddress.ip_network("64:ff9b:1::/48"), ip


@given(st.one_of(st.integers(0, 2**32 - 1).map(IPv4Address),
                 st.integers(0, 2**125 - 1).map(lambda v: IPv6Address(1 << 125 | v))))
def test_never_looser_than_the_standard_library(ip):
    """What passes is global to `ipaddress` too (6to4 aside: newer Pythons call all of 2002::/16 private)."""
    if address_refusal(ip) is None and ip not in ipaddress.ip_network("2002::/16"):
        assert ip.is_global, ip


def test_parse_drops_a_zone():
    assert parse("fe80::1%eth0") == IPv6Address("fe80::1")
    with pytest.raises(ValueError):
        parse("example.com")
