"""The per-machine collector: gathers the ranks' records and forwards them reliably.

MPVisualizer, section 2: each rank sends its events to a collector on its own
machine, which forwards them to the central process.  :class:`Collector` is an
asyncio server in a background thread (:mod:`mpvis.collector.loopthread`) that

* accepts ranks on loopback (they find it through ``MPVIS_COLLECTOR``) that
  present the run's token; a rank whose connection closes without BYE, or
  breaks the protocol, is reported as crashed with the reason;
* forwards the ranks' ``COMPACT`` batches as they came, their shape checked
  (:func:`~mpvis.protocol.compact.check_compact`), tagged with the rank and
  the number of its connection: the central process expands them once
  (neither the ranks nor the collector do per-record work), and takes
  ``RECORDS`` batches of ready-made records too (the simulated programs);
* merges them into envelopes numbered from 0 (:mod:`mpvis.protocol.messages`),
  sealed every ``batch_records`` records or ``flush_interval`` seconds, and
  whenever a rank's batches switch between the two kinds (an envelope applies
  its records before its compact batches, so each rank's order is kept);
* keeps every envelope until the central process acknowledges it.  When the
  connection drops it reconnects with exponential backoff and resends the
  unacknowledged envelopes in order; the central process drops the duplicates,
  so no record is lost or doubled.  While more than ``max_unacked_bytes`` wait
  for acknowledgement it stops reading from the ranks (back-pressure rather
  than loss).

A REFUSED from the central process (wrong token, busy window) is final: the
collector stops forwarding and reports the reason (:attr:`refused`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import threading
from collections import deque

from mpvis.collector.auth import Address, format_address, token_matches
from mpvis.collector.loopthread import Connections, LoopThread
from mpvis.collector.refusal import refuse
from mpvis.collector.symbolize import SiteSymbolizer
from mpvis.collector.tls import TlsError, check_pin, client_context
from mpvis.protocol import messages as m
from mpvis.protocol.compact import check_compact
from mpvis.protocol.framing import (
    EOF,
    MAX_PAYLOAD,
    NEED_DATA,
    FrameDecoder,
    Message,
    MsgType,
    ProtocolError,
    encode_frame,
)
from mpvis.protocol.record_types import Record

__all__ = ["Collector"]

log = logging.getLogger(__name__)

READ_SIZE = 1 << 18
#: Before HELLO: the largest frame accepted, the connections that may wait to
#: authenticate at once, and the refusals logged one by one (then counted).
HELLO_MAX_PAYLOAD = 64 << 10
MAX_UNAUTHENTICATED = 64
LOGGED_REFUSALS = 5
#: Seconds without a new rank connection after which the ranks are taken as done.
SETTLE = 0.1


class Collector:
    """One machine's collector for one run (see the module docstring).

    ``token`` is presented to the central process; ranks must present
    ``rank_token`` (default: ``token``).  ``header``, when given, is sent in the
    first envelope (``mpvis run`` knows ``nprocs`` when ``-n`` is given); else
    the first HEADER a rank sends is forwarded.
    """

    def __init__(
        self,
        central: Address,
        token: str | None,
        run: str,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        rank_token: str | None = None,
        header: Record | None = None,
        collector_id: str | None = None,
        batch_records: int = 4096,
        flush_interval: float = 0.02,
        max_unacked_bytes: int = 256 * 1024 * 1024,
        reconnect_max: float = 2.0,
        hello_timeout: float = 10.0,
        max_payload: int = MAX_PAYLOAD,
        tls_pin: str | None = None,
    ) -> None:
        self.central = central
        #: With a pin, the link to the central process is TLS and its certificate
        #: must have this fingerprint (:mod:`mpvis.collector.tls`).
        self.tls_pin = tls_pin
        self.token = token
        self.run = run
        self.host = host
        self.port = port
        self.rank_token = rank_token if rank_token is not None else token
        self.collector_id = collector_id or (
            f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}"
        )
        self.batch_records = batch_records
        self.refusals = 0  # connections refused before they authenticated
        self._unauthenticated = 0
        self.flush_interval = flush_interval
        self.max_unacked_bytes = max_unacked_bytes
        self.reconnect_max = reconnect_max
        self.hello_timeout = hello_timeout
        self.max_payload = max_payload
        # Next envelope's contents.
        self._header: Record | None = header
        self._records: list[Record] = []
        # COMPACT bodies to forward, with the records each expands to (at most)
        self._compact: list[tuple[Record, int]] = []
        self._compact_records = 0
        self._next_conn = 0  # numbers the rank connections (a decoder each at the central)
        self._ends: list[Record] = []
        self._end: Record | None = None
        self._header_sent = False
        # Sealed envelopes awaiting ACK: (batch, frame).
        self._unacked: deque[tuple[int, bytes]] = deque()
        self._unacked_bytes = 0
        self._unacked_records: dict[int, int] = {}  # batch -> records in it
        self._next_batch = 0
        self._open_ranks = 0
        self._address: Address | None = None
        self._thread = LoopThread("mpvis-collector")
        self._wake: asyncio.Event | None = None
        self._room: asyncio.Event | None = None
        self._idle: asyncio.Event | None = None
        self._closing = False
        self._conns = Connections()
        self._accepted = 0
        self._symbolize = SiteSymbolizer()
        #: Set once the central process has welcomed this collector.
        self.welcomed = threading.Event()
        #: Set when the central process says the run is over (or refused us).
        self.stopped_by_central = threading.Event()
        #: Set when the central process asks the launcher to stop the program.
        self.halt_requested = threading.Event()
        #: Where the central process journals this run (when it says so).
        self.journal: str | None = None
        #: Texts the central process asked the launcher to print (``STATUS notice``).
        self.notices: deque[str] = deque()
        #: The central process's reason, when it refused this collector.
        self.refused: str | None = None
        #: Reconnections after a lost connection to the central process.
        self.reconnects = 0
        #: Records received from ranks.
        self.received = 0

    # -- public API (any thread) ------------------------------------------

    def start(self) -> Collector:
        """Listen for ranks and connect to the central process, in a background thread."""
        self._thread.start(self._main)
        return self

    @property
    def address(self) -> Address:
        """``(host, port)`` where ranks connect (the value of ``MPVIS_COLLECTOR``)."""
        if self._address is None:
            raise RuntimeError("the collector is not started")
        return self._address

    def wait_welcome(self, timeout: float) -> bool:
        """Whether the central process welcomed this collector within ``timeout`` s."""
        self._wait_either(self.welcomed, timeout)
        return self.welcomed.is_set() and self.refused is None

    def _wait_either(self, event: threading.Event, timeout: float) -> None:
        step = 0.02
        waited = 0.0
        while waited < timeout and not event.is_set() and self.refused is None:
            event.wait(step)
            waited += step

    def finish(self, end: Record | None = None, timeout: float = 30.0) -> bool:
        """Forward everything the ranks sent, then ``end`` (the run is over when given).

        Waits up to ``timeout`` s for the ranks to disconnect and for every
        envelope to be acknowledged; returns whether all were.
        """
        if not self._thread.running:
            return not self._unacked
        fut = self._thread.submit(self._finish(end, timeout))
        try:
            return fut.result(timeout + 5.0)
        except TimeoutError:
            return False

    def stop(self) -> None:
        """Close everything; unacknowledged envelopes are abandoned."""
        self._thread.stop()

    @property
    def unacked(self) -> int:
        """Envelopes not yet acknowledged by the central process."""
        return len(self._unacked)

    @property
    def unacked_records(self) -> int:
        """Records in the envelopes not yet acknowledged (lost if it never comes)."""
        return sum(self._unacked_records.values())

    # -- the loop ----------------------------------------------------------

    async def _main(self, stop: asyncio.Event) -> None:
        self._wake = asyncio.Event()
        self._room = asyncio.Event()
        self._room.set()
        self._idle = asyncio.Event()
        self._idle.set()
        server = await asyncio.start_server(self._serve_rank, self.host, self.port)
        sock = server.sockets[0].getsockname()
        self._address = (sock[0], sock[1])
        log.info("collector %s listening on %s", self.collector_id, format_address(self._address))
        uplink = asyncio.create_task(self._uplink())
        flusher = asyncio.create_task(self._flusher())
        self._thread.ready()
        async with server:
            await stop.wait()
            self._closing = True
            server.close()
            await self._conns.close_all()
            for task in (uplink, flusher):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def _finish(self, end: Record | None, timeout: float) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        assert self._idle is not None
        # Connections of ranks that just ended may still wait in the accept queue:
        # the ranks are done once none is open and none arrived for SETTLE seconds.
        while loop.time() < deadline:
            accepted = self._accepted
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._idle.wait(), max(0.0, deadline - loop.time()))
            await asyncio.sleep(SETTLE)
            if self._idle.is_set() and accepted == self._accepted:
                break
        if self._open_ranks:
            log.warning("collector: %d rank connections still open at the end", self._open_ranks)
        self._end = end
        self._seal()
        while self._unacked and self.refused is None and loop.time() < deadline:
            await asyncio.sleep(0.01)
        return not self._unacked

    async def _flusher(self) -> None:
        while True:
            await asyncio.sleep(self.flush_interval)
            if (self._records or self._compact or self._ends
                    or (self._header is not None and not self._header_sent)):
                self._seal()

    def _seal(self) -> None:
        """Turn the pending contents into numbered envelope(s) awaiting ACK."""
        header = None if self._header_sent else self._header
        records, self._records = self._records, []
        compact, self._compact, self._compact_records = self._compact, [], 0
        ends, self._ends = self._ends, []
        end, self._end = self._end, None
        if header is None and not records and not compact and not ends and end is None:
            return
        self._header_sent = self._header_sent or header is not None
        # An envelope holds records or compact batches (see _take); each part
        # is a list of (item, records in it), halved while its frame is too large.
        chunks: list[list[tuple[Record, int]]] = (
            [[(b, n) for b, n in compact]] if compact else [[(r, 1) for r in records]])
        while chunks:
            part = chunks.pop(0)
            last = not chunks
            items = [item for item, _ in part]
            body = m.envelope_body(
                self._next_batch,
                [] if compact else items,
                header=header,
                ends=ends if last else None,
                end=end if last else None,
                compact=items if compact else None,
            )
            try:
                frame = encode_frame(MsgType.RECORDS, body)
            except ProtocolError:
                if len(part) < 2:
                    log.error("collector: a record too large to forward was dropped")
                    chunks.insert(0, [])
                    continue
                half = len(part) // 2
                chunks[:0] = [part[:half], part[half:]]
                continue
            header = None
            self._unacked.append((self._next_batch, frame))
            self._unacked_bytes += len(frame)
            self._unacked_records[self._next_batch] = sum(n for _, n in part)
            self._next_batch += 1
        assert self._wake is not None and self._room is not None
        if self._unacked_bytes > self.max_unacked_bytes:
            self._room.clear()
        self._wake.set()

    # -- ranks -------------------------------------------------------------

    async def _serve_rank(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._accepted += 1
        with self._conns.track(writer):
            await self._converse(reader, writer)

    async def _converse(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._unauthenticated >= MAX_UNAUTHENTICATED:
            self._refusal("too many connections waiting to authenticate")
            writer.close()
            return
        self._unauthenticated += 1
        # Until HELLO: small frames only, one deadline for the whole HELLO.
        dec = FrameDecoder(min(HELLO_MAX_PAYLOAD, self.max_payload))
        deadline = asyncio.get_running_loop().time() + self.hello_timeout
        rank: int | None = None
        conn = -1
        said_bye = False
        detail = "connection closed without BYE"
        assert self._room is not None and self._idle is not None
        try:
            while not said_bye:
                await self._room.wait()
                if rank is None:
                    left = deadline - asyncio.get_running_loop().time()
                    data = await asyncio.wait_for(reader.read(READ_SIZE), max(left, 0.0))
                else:
                    data = await reader.read(READ_SIZE)
                dec.receive_data(data)
                while not said_bye:
                    ev = dec.next_event()
                    if ev is NEED_DATA or ev is EOF:
                        break
                    assert isinstance(ev, Message)
                    if rank is None:
                        rank = self._rank_hello(ev)
                        self._unauthenticated -= 1
                        dec.limit(self.max_payload)
                        conn, self._next_conn = self._next_conn, self._next_conn + 1
                        self._open_ranks += 1
                        self._idle.clear()
                    else:
                        said_bye = self._rank_message(rank, ev, conn)
                if not data:
                    break
        except TimeoutError:
            self._refusal("a rank connection sent no HELLO in time")
        except m.RefusedError as exc:
            self._refusal(f"refused a rank connection: {exc}")
            await refuse(reader, writer, str(exc))
        except ProtocolError as exc:
            detail = f"protocol error: {exc.reason}"
            if rank is None:
                self._refusal(f"a rank connection before HELLO: {detail}")
            else:
                log.warning("collector: rank %s: %s", rank, detail)
        except (ConnectionError, OSError) as exc:
            detail = f"connection lost: {exc}"
        finally:
            if rank is None:
                self._unauthenticated -= 1
            with contextlib.suppress(Exception):
                writer.close()
            if rank is not None:
                if not said_bye:
                    self._ends.append(m.bye_body(rank, m.CRASHED, detail))
                    self._seal()
                self._open_ranks -= 1
                if not self._open_ranks:
                    self._idle.set()

    def _refusal(self, reason: str) -> None:
        """A connection refused before it authenticated: the first few are logged,
        the rest counted (:attr:`refusals`)."""
        self.refusals += 1
        if self.refusals <= LOGGED_REFUSALS:
            log.warning("collector: %s", reason)
        elif self.refusals == LOGGED_REFUSALS + 1:
            log.warning("collector: further refused connections are counted, not logged")

    def _rank_hello(self, msg: Message) -> int:
        if msg.type != MsgType.HELLO:
            raise m.RefusedError(f"expected HELLO, got {msg.type.name}")
        body = m.check_hello(msg.body)
        if not token_matches(self.rank_token, body.get("token")):
            raise m.RefusedError("wrong token")
        if body["role"] != m.ROLE_RANK:
            raise m.RefusedError("only ranks connect to a collector")
        rank: int = body["rank"]
        return rank

    def _rank_message(self, rank: int, msg: Message, conn: int) -> bool:
        """Take one message of a rank (on its connection number ``conn``); return
        whether it was its BYE."""
        if msg.type == MsgType.COMPACT:
            n = check_compact(msg.body)
            if self._records:
                self._seal()  # this rank's earlier records go first
            self._compact.append(({**msg.body, "rank": rank, "conn": conn}, n))
            self._compact_records += n
            self.received += n
            if self._compact_records >= self.batch_records:
                self._seal()
            return False
        if msg.type == MsgType.RECORDS:
            recs = m.check_rank_records(msg.body)
            own = [r for r in recs if isinstance(r, dict) and r.get("rank") == rank]
            if len(own) != len(recs):
                log.warning(
                    "collector: rank %d sent %d records not its own", rank, len(recs) - len(own)
                )
            # compiled programs send site ids and their names (mpvis/instrument/pmpi)
            self._symbolize.name_sites(rank, msg.body.get("sites"), own)
            self._take(own)
            return False
        if msg.type == MsgType.HEADER:
            if self._header is None:
                self._header = msg.body
            return False
        if msg.type == MsgType.BYE:
            body = m.check_bye(msg.body)
            if body["rank"] != rank:
                raise ProtocolError(f"BYE for rank {body['rank']} on rank {rank}'s connection")
            detail = self._symbolize.in_text(str(body.get("detail", "")))
            self._ends.append(m.bye_body(rank, body["status"], detail))
            self._seal()
            return True
        raise ProtocolError(f"a rank may not send {msg.type.name}")

    def _take(self, records: list[Record]) -> None:
        if self._compact:
            self._seal()  # this rank's earlier compact batches go first
        self._records.extend(records)
        self.received += len(records)
        if len(self._records) >= self.batch_records:
            self._seal()

    # -- central process -----------------------------------------------------

    async def _uplink(self) -> None:
        delay = 0.05
        first = True
        while self.refused is None and not self.stopped_by_central.is_set():
            if not first:
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.reconnect_max)
            first = False
            try:
                reader, writer = await asyncio.open_connection(
                    *self.central, ssl=client_context() if self.tls_pin else None,
                    ssl_handshake_timeout=self.hello_timeout if self.tls_pin else None)
            except OSError as exc:
                log.info("collector: cannot reach %s: %s", format_address(self.central), exc)
                continue
            if self.tls_pin is not None:
                try:
                    check_pin(writer.get_extra_info("ssl_object"), self.tls_pin)
                except TlsError as exc:
                    writer.close()
                    self.refused = str(exc)
                    log.error("collector: %s", exc)
                    self.stopped_by_central.set()
                    break
            try:
                await self._pump(reader, writer)
            except (ConnectionError, OSError) as exc:
                log.info("collector: connection to the central process lost: %s", exc)
            finally:
                with contextlib.suppress(Exception):
                    writer.close()
            if self.welcomed.is_set():
                delay = 0.05
            if self.refused is None and not self.stopped_by_central.is_set():
                self.reconnects += 1
                log.warning("collector: reconnecting to %s", format_address(self.central))

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Send HELLO, then every unacknowledged envelope, until the connection ends."""
        hello = m.hello_collector(
            self.collector_id, self.run, self.token, pid=os.getpid(), host=socket.gethostname()
        )
        writer.write(encode_frame(MsgType.HELLO, hello))
        acks = asyncio.create_task(self._read_replies(reader))
        assert self._wake is not None
        sent = -1
        try:
            while True:
                # Cleared before the scan, not after the drain: an envelope sealed
                # while drain() waits sets it again, so no wake-up is lost.
                self._wake.clear()
                for batch, frame in list(self._unacked):
                    if batch > sent:
                        writer.write(frame)
                        sent = batch
                await writer.drain()
                if acks.done():
                    break
                waker = asyncio.create_task(self._wake.wait())
                await asyncio.wait({acks, waker}, return_when=asyncio.FIRST_COMPLETED)
                waker.cancel()
        finally:
            acks.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await acks

    async def _read_replies(self, reader: asyncio.StreamReader) -> None:
        dec = FrameDecoder()
        while True:
            data = await reader.read(READ_SIZE)
            dec.receive_data(data)
            while True:
                try:
                    ev = dec.next_event()
                except ProtocolError as exc:
                    log.warning("collector: protocol error from the central process: %s", exc)
                    return
                if ev is NEED_DATA:
                    break
                if ev is EOF:
                    return
                assert isinstance(ev, Message)
                self._reply(ev)
            if not data:
                return

    def _reply(self, msg: Message) -> None:
        if msg.type == MsgType.ACK:
            acked = msg.body.get("batch")
            if type(acked) is not int:
                return
            while self._unacked and self._unacked[0][0] <= acked:
                batch, frame = self._unacked.popleft()
                self._unacked_bytes -= len(frame)
                self._unacked_records.pop(batch, None)
            assert self._room is not None
            if self._unacked_bytes <= self.max_unacked_bytes:
                self._room.set()
        elif msg.type == MsgType.STATUS:
            if isinstance(msg.body.get("journal"), str):
                self.journal = msg.body["journal"]
            if msg.body.get("halt"):
                self.halt_requested.set()
            if isinstance(msg.body.get("notice"), str):
                self.notices.append(msg.body["notice"])
            if msg.body.get("welcome") and not msg.body.get("compact"):
                # An older central process ignores forwarded COMPACT batches: stop
                # with a reason rather than lose them.
                self.refused = ("the central process is an older mpvis, which cannot take "
                                "COMPACT batches: run the same mpvis version on every host")
                log.error("collector: %s", self.refused)
                self.stopped_by_central.set()
            elif msg.body.get("welcome"):
                self.welcomed.set()
            if msg.body.get("stop"):
                self.stopped_by_central.set()
        elif msg.type == MsgType.REFUSED:
            self.refused = str(msg.body.get("reason", "refused"))
            log.error("collector: the central process refused us: %s", self.refused)
            self.stopped_by_central.set()
