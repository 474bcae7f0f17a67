"""Where a webhook may go: the address rule, and the one resolution its connection is pinned to.

Outside dev a webhook reaches only globally routable unicast addresses. An IPv6 address that
carries an IPv4 one (IPv4-mapped, IPv4-compatible, NAT64 64:ff9b::/96, 6to4 2002::/16) is judged
by the IPv4 address it leads to, since that is where a translator or relay delivers it. The name
is resolved once; the POST connects to those checked addresses and no others (adapters/http.py),
so a resolver that answers differently the second time (DNS rebinding) cannot redirect it.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass

import httpx

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

_MAPPED = ipaddress.ip_network("::ffff:0:0/96")
_COMPATIBLE = ipaddress.ip_network("::/96")  # deprecated IPv4-compatible; holds :: and ::1 too
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")  # RFC 8215: a site's own translators
_SIX_TO_FOUR = ipaddress.ip_network("2002::/16")
_TEREDO = ipaddress.ip_network("2001::/32")  # its IPv4 address is obfuscated: never followed


class Refused(Exception):
    """The webhook target may not be reached; the message is for the log."""


class NotPublic(Refused):
    """The target resolves to a loopback, private or otherwise non-public address."""


@dataclass(frozen=True)
class Target:
    """A webhook URL and the checked addresses its connection may use, in resolver order."""

    url: httpx.URL
    addresses: tuple[str, ...]


def embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address leads to, for the forms that carry one."""
    if address in _MAPPED:
        return address.ipv4_mapped
    if address in _SIX_TO_FOUR:
        return address.sixtofour
    if address in _NAT64 or address in _COMPATIBLE:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def is_refused(address: Address) -> bool:
    """Whether a webhook may not connect to `address` outside dev: anything not global unicast."""
    if isinstance(address, ipaddress.IPv6Address):
        if address in _TEREDO or address in _NAT64_LOCAL or address.is_site_local:
            return True
        embedded = embedded_ipv4(address)
        if embedded is not None:
            return is_refused(embedded)
    return (
        not address.is_global
        or address.is_private
        or address.is_multicast
        or address.is_reserved
        or address.is_loopback
        or address.is_link_local
        or address.is_unspecified
    )


def resolve(url: str, *, allow_private: bool) -> Target:
    """The URL with every address its host resolves to, each checked; Refused otherwise."""
    try:
        parsed = httpx.URL(url)
        host = parsed.raw_host.decode("ascii")
    except (httpx.InvalidURL, UnicodeError, ValueError) as exc:
        raise Refused("not a usable URL") from exc
    if parsed.scheme not in ("http", "https") or not host:
        raise Refused("not an http(s) URL with a host")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise Refused("the host does not resolve") from exc
    addresses: list[str] = []
    for family, *_, sockaddr in infos:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        text = str(sockaddr[0]).split("%")[0]
        if not allow_private and is_refused(ipaddress.ip_address(text)):
            raise NotPublic("the host resolves to an address that is not public")
        if text not in addresses:
            addresses.append(text)
    if not addresses:
        raise Refused("the host has no IP address")
    return Target(parsed, tuple(addresses))
