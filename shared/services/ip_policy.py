"""Engine IP whitelists: parsing entries and matching a caller's address."""

from __future__ import annotations

import ipaddress

from shared.errors import Forbidden, Invalid

IP_DENIED = "Access denied: IP address not in whitelist"


_IPV4_MAPPED = ipaddress.ip_network("::ffff:0:0/96")


def normalise_entry(entry: str) -> str:
    """An address or CIDR range in canonical form; Invalid when it is neither.

    IPv4-mapped IPv6 entries (``::ffff:192.0.2.1``) become their IPv4 form, since callers'
    mapped addresses are compared as IPv4 too.
    """
    text = entry.strip()
    try:
        network = ipaddress.ip_network(text, strict=False)
    except ValueError as exc:
        raise Invalid(f"'{entry}' is not an IP address or CIDR range") from exc
    if network.version == 6 and network.prefixlen >= 96 and network.subnet_of(_IPV4_MAPPED):
        network = ipaddress.IPv4Network((int(network.network_address) & 0xFFFFFFFF, network.prefixlen - 96))
    if "/" not in text:
        return str(network.network_address)
    return str(network)


def is_allowed(whitelist: list[str] | None, client_ip: str | None) -> bool:
    """Whether ``client_ip`` matches an entry of the whitelist."""
    if not client_ip:
        return False
    try:
        address = ipaddress.ip_address(client_ip)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    for entry in whitelist or []:
        try:
            if address in ipaddress.ip_network(entry, strict=False):
                return True
        except ValueError:
            continue
    return False


def enforce(engine, client_ip: str | None) -> None:
    """Refuse the caller when the engine's whitelist is on and does not list its address."""
    if engine is not None and engine.ip_whitelist_enabled and not is_allowed(engine.ip_whitelist, client_ip):
        raise Forbidden(IP_DENIED)
