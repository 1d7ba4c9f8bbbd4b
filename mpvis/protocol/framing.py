"""Frames of the wire protocol between ranks, collectors and the central process.

MPVisualizer (section 2) has every rank send its events to a collector on its
machine, and every collector forward them to a central process.  This module is
the byte format they speak, with no I/O (the "sans-IO" style of h11): the
sockets live in :mod:`mpvis.collector` and :mod:`mpvis.instrument`, and both
feed received bytes to a :class:`FrameDecoder`.

A frame is an 8-byte header followed by a payload::

    b"MV"  version (1 byte, 1)  type (1 byte, MsgType)  length (4 bytes, big-endian)

The payload is one msgpack map (``msgpack.packb(obj, use_bin_type=True)``),
decoded with ``raw=False`` and ``strict_map_key=True``; msgpack extension types
are refused, and nothing is ever unpickled or evaluated.  A payload longer than
:data:`MAX_PAYLOAD` is oversized and refused from its header alone, before its
bytes arrive.

Contract of :class:`FrameDecoder`: ``receive_data(b"")`` means end of stream;
``next_event()`` returns a :class:`Message`, :data:`NEED_DATA` or :data:`EOF`
(a clean end, between frames), and raises :class:`ProtocolError` on garbage,
a bad magic or version, an unknown type, an oversized frame, an undecodable
payload or an end of stream inside a frame (truncated).  After an error the
stream cannot be resynchronised: every later call raises the same error.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass
from typing import Any, Final

import msgpack

from mpvis.errors import MpvisError

__all__ = [
    "EOF",
    "HEADER_SIZE",
    "MAGIC",
    "MAX_PAYLOAD",
    "NEED_DATA",
    "OUT_OF_LINE",
    "PROTOCOL_VERSION",
    "FrameDecoder",
    "Message",
    "MsgType",
    "ProtocolError",
    "encode_frame",
    "encode_frame_parts",
]

MAGIC: Final = b"MV"
PROTOCOL_VERSION: Final = 1
HEADER_SIZE: Final = 8
MAX_PAYLOAD: Final = 16 * 1024 * 1024

_HEADER = struct.Struct(">2sBBI")
_BIN32 = struct.Struct(">BI")  # msgpack's bin 32 header


class MsgType(enum.IntEnum):
    """Message types; the payload of each is a msgpack map (see ``wire.md``)."""

    HELLO = 1  # {"role": "rank"|"collector", "token", "rank" | "collector", "pid", "host"}
    HEADER = 2  # the run's trace header dict
    RECORDS = 3  # {"batch": int, "records": [record dicts]}
    BYE = 4  # {"rank": int, "status": "final"|"crashed"|"killed", "detail": str}
    ACK = 5  # {"batch": int}: every batch up to this one is journaled
    REFUSED = 6  # {"reason": str}
    STATUS = 7  # free-form control dict
    COMPACT = 8  # a rank's records in binary form (mpvis.protocol.compact)


class ProtocolError(MpvisError):
    """The byte stream breaks the protocol; ``reason`` says how (for the log)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Message:
    """One decoded frame: its type and its payload (a dict)."""

    type: MsgType
    body: dict[str, Any]


class _Signal(enum.Enum):
    NEED_DATA = "NEED_DATA"
    EOF = "EOF"


#: ``next_event`` needs more bytes before it can return a message.
NEED_DATA: Final = _Signal.NEED_DATA
#: The stream ended cleanly, between two frames.
EOF: Final = _Signal.EOF

_TYPES: Final = frozenset(int(t) for t in MsgType)


#: Top-level ``bytes`` values from this size on are left out of line by
#: :func:`encode_frame_parts` (a rank's ``COMPACT`` records: no copy of them).
OUT_OF_LINE: Final = 1 << 16


def encode_frame_parts(msg_type: int, obj: Any) -> list[bytes]:
    """The frame carrying ``obj`` (a dict) as a message of type ``msg_type``, in pieces.

    Their concatenation is the frame; ``bytes`` values of the map of at least
    :data:`OUT_OF_LINE` bytes are pieces of their own, not copies, so that a
    sender can hand them to ``socket.sendmsg`` as they are.  Raises
    :class:`ProtocolError` if the type is unknown or the payload would exceed
    :data:`MAX_PAYLOAD` (the sender must split its batch).
    """
    if int(msg_type) not in _TYPES:
        raise ProtocolError(f"unknown message type {msg_type}")
    if not isinstance(obj, dict):
        raise ProtocolError(f"a payload must be a map, got {type(obj).__name__}")
    if not any(type(v) is bytes and len(v) >= OUT_OF_LINE for v in obj.values()):
        payload = [msgpack.packb(obj, use_bin_type=True)]
    else:
        packer = msgpack.Packer(use_bin_type=True)
        payload = [packer.pack_map_header(len(obj))]
        for key, value in obj.items():
            if type(value) is bytes and len(value) >= OUT_OF_LINE:
                payload += [packer.pack(key) + _BIN32.pack(0xC6, len(value)), value]
            else:
                payload.append(packer.pack(key) + packer.pack(value))
    size = sum(len(b) for b in payload)
    if size > MAX_PAYLOAD:
        raise ProtocolError(f"oversized frame: {size} bytes > {MAX_PAYLOAD}")
    return [_HEADER.pack(MAGIC, PROTOCOL_VERSION, int(msg_type), size), *payload]


def encode_frame(msg_type: int, obj: Any) -> bytes:
    """The frame carrying ``obj`` (a dict) as a message of type ``msg_type``
    (:func:`encode_frame_parts`, joined)."""
    return b"".join(encode_frame_parts(msg_type, obj))


def _refuse_ext(code: int, data: bytes) -> Any:
    raise ValueError(f"msgpack extension type {code} is not allowed")


class FrameDecoder:
    """Incremental decoder of one byte stream; does no I/O.

    ``max_payload`` may lower (never raise) the :data:`MAX_PAYLOAD` bound.
    """

    def __init__(self, max_payload: int = MAX_PAYLOAD) -> None:
        self._buf = bytearray()
        self._eof = False
        self._error: ProtocolError | None = None
        self._max = min(max_payload, MAX_PAYLOAD)

    def limit(self, max_payload: int) -> None:
        """Set the bound on payloads from now on (at most :data:`MAX_PAYLOAD`): a
        server keeps it small until the peer has authenticated."""
        self._max = min(max_payload, MAX_PAYLOAD)

    def receive_data(self, data: bytes) -> None:
        """Append received bytes; ``b""`` means the peer closed the stream."""
        if not data:
            self._eof = True
        elif self._eof:
            raise RuntimeError("receive_data after end of stream")
        else:
            self._buf += data

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as messages."""
        return len(self._buf)

    def next_event(self) -> Message | _Signal:
        """The next complete message, :data:`NEED_DATA` or :data:`EOF`."""
        if self._error is not None:
            raise self._error
        try:
            return self._next()
        except ProtocolError as exc:
            self._error = exc
            self._buf.clear()
            raise

    def _next(self) -> Message | _Signal:
        buf = self._buf
        if len(buf) < HEADER_SIZE:
            # Check what has arrived so far, so garbage is refused at once.
            if buf and not MAGIC.startswith(bytes(buf[:2])):
                raise ProtocolError(f"garbage: bad magic {bytes(buf[:2])!r}")
            if not self._eof:
                return NEED_DATA
            if buf:
                raise ProtocolError(f"truncated stream: {len(buf)} bytes of a frame header")
            return EOF
        magic, version, mtype, length = _HEADER.unpack_from(buf)
        if magic != MAGIC:
            raise ProtocolError(f"garbage: bad magic {magic!r}")
        if version != PROTOCOL_VERSION:
            raise ProtocolError(
                f"unsupported protocol version {version} (this mpvis speaks {PROTOCOL_VERSION})"
            )
        if mtype not in _TYPES:
            raise ProtocolError(f"unknown message type {mtype}")
        if length > self._max:
            raise ProtocolError(f"oversized frame: {length} bytes > {self._max}")
        end = HEADER_SIZE + length
        if len(buf) < end:
            if self._eof:
                raise ProtocolError(
                    f"truncated stream: frame of {length} bytes, {len(buf) - HEADER_SIZE} received"
                )
            return NEED_DATA
        try:
            with memoryview(buf) as view, view[HEADER_SIZE:end] as payload:  # not copied
                body = msgpack.unpackb(
                    payload, raw=False, strict_map_key=True, use_list=True, ext_hook=_refuse_ext
                )
        except Exception as exc:  # msgpack raises several unrelated exception types
            raise ProtocolError(f"undecodable payload: {exc}") from None
        del buf[:end]
        if not isinstance(body, dict):
            raise ProtocolError(f"a payload must be a map, got {type(body).__name__}")
        return Message(MsgType(mtype), body)
