"""Addresses and shared-secret tokens of the live path.

Listening is on loopback by default.  A run across machines listens on an
explicit address and every collector must present the run's secret token
(compared in constant time); anything else is refused and logged.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets

__all__ = ["format_address", "is_loopback", "new_token", "parse_address", "token_matches"]

Address = tuple[str, int]


def new_token() -> str:
    """A fresh secret token (URL-safe text, 256 bits)."""
    return secrets.token_urlsafe(32)


def token_matches(expected: str | None, given: object) -> bool:
    """Whether ``given`` is the expected token; ``expected=None`` accepts anything."""
    if expected is None:
        return True
    if not isinstance(given, str):
        return False
    return hmac.compare_digest(expected.encode(), given.encode())


def parse_address(text: str, *, default_host: str = "127.0.0.1") -> Address:
    """``HOST:PORT``, ``[V6]:PORT`` or ``:PORT`` as ``(host, port)``.

    Raises :class:`ValueError` with a message meant for the user.
    """
    host, sep, port_text = text.rpartition(":")
    if not sep:
        raise ValueError(f"address {text!r} is not HOST:PORT")
    host = host.strip("[]") or default_host
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"address {text!r}: port {port_text!r} is not a number") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"address {text!r}: port {port} is out of range")
    return host, port


def format_address(addr: Address) -> str:
    """The inverse of :func:`parse_address`."""
    host, port = addr
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine (``localhost`` or a loopback IP)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
