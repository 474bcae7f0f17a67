"""Engine IP whitelists: parsing entries and matching a caller's address."""

from __future__ import annotations

import ipaddress

from shared.errors import Forbidden, Invalid

IP_DENIED = "Access denied: IP address not in whitelist"


def normalise_entry(entry: str) -> str:
    """An address or CIDR range in canonical form; Invalid when it is neither."""
    text = entry.strip()
    try:
        if "/" in text:
            return str(ipaddress.ip_network(text, strict=False))
        return str(ipaddress.ip_address(text))
    except ValueError as exc:
        raise Invalid(f"'{entry}' is not an IP address or CIDR range") from exc


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
