"""Which requests a page may send to non-public addresses (``CDP_POOL_ALLOW_PRIVATE_NETWORKS``).

A request the page starts itself (a subresource, ``fetch()``/XHR, an iframe,
a navigation of its own) to an address that is not public, after DNS
resolution on the crawl's machine, is refused before it leaves the browser,
unless that address is one of the addresses of the request's own host: a
page of a local site (the spider asked for ``http://127.0.0.1:8000/``) may
reach that address, any port, as a browser's Private Network Access lets a
local page reach its own address space; a public page reaches no private
one. Not public: loopback (127.0.0.0/8, ``::1``), private (RFC 1918,
100.64.0.0/10, ``fc00::/7``), link-local (169.254.0.0/16, ``fe80::/10``),
unspecified (``0.0.0.0``, ``::``) and every other range Python's
:mod:`ipaddress` does not call global. ``::1``, ``0.0.0.0`` and ``::`` count
as ``127.0.0.1`` (they reach the same machine), an IPv4-mapped IPv6 address
as its IPv4 one.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from urllib.parse import urlsplit

_IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_SAME_MACHINE = ipaddress.IPv4Address("127.0.0.1")
_AS_SAME_MACHINE = frozenset(
    {
        ipaddress.IPv6Address("::1"),
        ipaddress.IPv6Address("::"),
        ipaddress.IPv4Address("0.0.0.0"),  # noqa: S104 (an address compared, nothing bound)
    }
)


def canonical(address: _IPAddress) -> _IPAddress:
    """``address`` as compared with the page's own: an IPv4-mapped IPv6
    address as its IPv4 one; ``::1``, ``::`` and ``0.0.0.0`` as ``127.0.0.1``."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return _SAME_MACHINE if address in _AS_SAME_MACHINE else address


def is_public(address: _IPAddress) -> bool:
    """Whether ``address`` is a public (global) one."""
    return canonical(address).is_global


def literal_address(host: str) -> _IPAddress | None:
    """``host`` as an IP address when it is one (``[::1]`` too), else ``None``."""
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def refused(targets: frozenset[_IPAddress], own: frozenset[_IPAddress]) -> frozenset[_IPAddress]:
    """The addresses of ``targets`` a page whose own host has the addresses
    ``own`` may not reach: each non-public one that is not one of the
    page's own (compared :func:`canonical`)."""
    mine = {canonical(a) for a in own}
    return frozenset(a for a in targets if not is_public(a) and canonical(a) not in mine)


class AddressBook:
    """The addresses of hosts, looked up once per render (a literal needs no
    lookup); a host that does not resolve has none (the browser then fails
    to reach it too)."""

    def __init__(self) -> None:
        self._known: dict[str, frozenset[_IPAddress]] = {}

    async def addresses(self, host: str) -> frozenset[_IPAddress]:
        host = host.lower()
        known = self._known.get(host)
        if known is not None:
            return known
        literal = literal_address(host)
        if literal is not None:
            found: frozenset[_IPAddress] = frozenset({literal})
        else:
            try:
                infos = await asyncio.get_running_loop().getaddrinfo(
                    host, None, type=socket.SOCK_STREAM
                )
            except (OSError, UnicodeError):
                infos = []
            found = frozenset(
                ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos
            )
        self._known[host] = found
        return found


class PrivateNetworkRule:
    """The rule for one page: its own host is the host of the URL the spider
    asked for (the request's main document)."""

    def __init__(self, page_url: str) -> None:
        self.own_host = urlsplit(page_url).hostname or ""
        self.book = AddressBook()

    async def refuses(self, url: str) -> bool:
        """Whether the page may not send a request to ``url`` (only
        ``http``/``https`` URLs are checked)."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return False
        targets = await self.book.addresses(parts.hostname)
        if all(is_public(a) for a in targets):
            return False
        own = await self.book.addresses(self.own_host) if self.own_host else frozenset()
        return bool(refused(targets, own))
