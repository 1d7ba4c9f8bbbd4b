"""Telling a peer it is refused so that it can read why.

A server that writes REFUSED and closes at once loses the message when the
peer has already sent more (a HELLO followed by records, the usual case): the
bytes the server never read make the kernel answer the close with a reset,
and the peer's kernel then drops the REFUSED frame it had not handed to the
program yet (RFC 1122 section 4.2.2.13; Linux does so).  So :func:`refuse`
writes the frame, half-closes (the peer reads the frame, then end of
stream), and reads and discards what the peer still sends until it closes
too, for at most :data:`LINGER_S` seconds and :data:`LINGER_BYTES` bytes: a
hostile peer cannot hold the connection longer than that.
"""

from __future__ import annotations

import asyncio
import contextlib

from mpvis.protocol.framing import MsgType, encode_frame

__all__ = ["LINGER_BYTES", "LINGER_S", "refuse"]

#: Longest wait for the refused peer to close after the REFUSED frame (s).
LINGER_S = 2.0
#: Most bytes read and discarded from a refused peer before closing anyway.
LINGER_BYTES = 1 << 20


async def refuse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 reason: str) -> None:
    """Send ``REFUSED {"reason": reason}``, then let the peer read it before the
    connection closes (see the module docstring).  The caller still closes
    ``writer``; a peer gone meanwhile is not an error here."""
    # TimeoutError: the peer kept the connection open past the bound; close anyway
    with contextlib.suppress(ConnectionError, OSError, TimeoutError):
        writer.write(encode_frame(MsgType.REFUSED, {"reason": reason}))
        if writer.can_write_eof():
            writer.write_eof()
        await asyncio.wait_for(_discard(reader), LINGER_S)


async def _discard(reader: asyncio.StreamReader) -> None:
    """Read and drop what the peer sends until it closes or :data:`LINGER_BYTES`."""
    left = LINGER_BYTES
    while left > 0:
        data = await reader.read(min(left, 65536))
        if not data:
            return
        left -= len(data)
