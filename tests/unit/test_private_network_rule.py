"""The private-network rule's address classes (render/_page/private_network.py),
on address literals: no lookup, no browser."""

from __future__ import annotations

import ipaddress

import pytest

from scrapy_cdp_pool.render._page.private_network import is_public, refused

PUBLIC_PAGE = frozenset({ipaddress.ip_address("93.184.216.34")})
LOCAL_PAGE = frozenset({ipaddress.ip_address("127.0.0.1")})


@pytest.mark.parametrize(
    "address",
    ["127.0.0.1", "127.9.9.9", "::1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "100.64.0.1",
     "169.254.169.254", "fe80::1", "fc00::1", "fd12::1", "0.0.0.0", "::",  # noqa: S104 "::ffff:127.0.0.1",
     "::ffff:10.0.0.1"],
)  # fmt: skip
def test_a_public_page_reaches_no_private_address(address: str) -> None:
    target = frozenset({ipaddress.ip_address(address)})
    assert not is_public(next(iter(target)))
    assert refused(target, PUBLIC_PAGE) == target


@pytest.mark.parametrize("address", ["8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8"])
def test_public_addresses_are_reached(address: str) -> None:
    target = frozenset({ipaddress.ip_address(address)})
    assert not refused(target, PUBLIC_PAGE)
    assert not refused(target, LOCAL_PAGE)


SAME_MACHINE = ["127.0.0.1", "::1", "0.0.0.0", "::", "::ffff:127.0.0.1"]  # noqa: S104


@pytest.mark.parametrize("address", SAME_MACHINE)
def test_a_local_page_reaches_its_own_machine(address: str) -> None:
    assert not refused(frozenset({ipaddress.ip_address(address)}), LOCAL_PAGE)


@pytest.mark.parametrize("address", ["127.0.0.2", "10.0.0.1", "169.254.169.254"])
def test_a_local_page_reaches_no_other_private_address(address: str) -> None:
    target = frozenset({ipaddress.ip_address(address)})
    assert refused(target, LOCAL_PAGE) == target


def test_one_private_address_among_a_hosts_addresses_refuses_it() -> None:
    mixed = frozenset({ipaddress.ip_address("8.8.8.8"), ipaddress.ip_address("10.0.0.1")})
    assert refused(mixed, PUBLIC_PAGE) == {ipaddress.ip_address("10.0.0.1")}
