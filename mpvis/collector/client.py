"""A blocking rank-side client of a collector, for programs that are not MPI.

The simulated programs of :mod:`mpvis.sim`, the tests and the benchmarks use
:class:`RankClient` to stream records exactly as an instrumented rank would
(``HELLO``, ``HEADER`` from rank 0, numbered ``RECORDS`` batches, ``BYE``).
The in-rank library (:mod:`mpvis.instrument`) may not import this package and
speaks the same frames through :mod:`mpvis.protocol` directly.
"""

from __future__ import annotations

import os
import socket
from types import TracebackType

from mpvis.collector.auth import Address, parse_address
from mpvis.protocol import messages as m
from mpvis.protocol.framing import MsgType, encode_frame

__all__ = ["RankClient"]

from mpvis.protocol.record_types import Record


class RankClient:
    """One rank's connection to its collector (blocking socket; one thread).

    ``RankClient.from_env(rank)`` reads ``MPVIS_COLLECTOR`` and ``MPVIS_TOKEN``
    as set by ``mpvis run``.  Closing without :meth:`bye` (or leaving the
    ``with`` block by an exception) makes the collector report the rank as
    crashed.
    """

    def __init__(self, address: Address, token: str | None, rank: int, timeout: float = 30.0):
        self.rank = rank
        self._batch = 0
        self._sock = socket.create_connection(address, timeout=timeout)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        hello = m.hello_rank(rank, token, pid=os.getpid(), host=socket.gethostname())
        self._sock.sendall(encode_frame(MsgType.HELLO, hello))

    @classmethod
    def from_env(cls, rank: int) -> RankClient:
        """Connect to the collector named by ``MPVIS_COLLECTOR`` with ``MPVIS_TOKEN``."""
        address = parse_address(os.environ["MPVIS_COLLECTOR"])
        return cls(address, os.environ.get("MPVIS_TOKEN") or None, rank)

    def send_header(self, header: Record) -> None:
        """Send the run's trace header (rank 0 does this once, first)."""
        self._sock.sendall(encode_frame(MsgType.HEADER, header))

    def send_records(self, records: list[Record]) -> None:
        """Send one batch of this rank's records, in ``seq`` order."""
        body = {"batch": self._batch, "records": records}
        self._sock.sendall(encode_frame(MsgType.RECORDS, body))
        self._batch += 1

    def bye(self, status: str = m.FINAL, detail: str = "") -> None:
        """Say goodbye (normal termination by default) and close."""
        self._sock.sendall(encode_frame(MsgType.BYE, m.bye_body(self.rank, status, detail)))
        self.close()

    def close(self) -> None:
        """Close the connection (without BYE this reads as a crash)."""
        self._sock.close()

    def __enter__(self) -> RankClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None and self._sock.fileno() != -1:
            self.bye()
        else:
            self.close()
