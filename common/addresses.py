"""Whether an address is this machine's loopback: what is sent there never crosses a network,
so plain HTTP is allowed there only (the agent's and the API's listeners, the agents' and the
OIDC issuer's URLs, a context's server)."""

from __future__ import annotations

from ipaddress import ip_address
from urllib.parse import urlsplit


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, IPv6 with or without brackets) is ``localhost``,
    ``127.0.0.0/8`` or ``::1``."""
    clean = host.strip("[]").lower()
    if clean == "localhost":
        return True
    try:
        return ip_address(clean).is_loopback
    except ValueError:
        return False


def is_loopback_url(url: str) -> bool:
    """Whether ``url``'s host is this machine's loopback."""
    return is_loopback(urlsplit(url).hostname or "")
