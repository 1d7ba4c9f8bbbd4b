"""The central process: receives the collectors' batches, journals them, feeds the model.

MPVisualizer, section 2: ranks send their events to a collector on their
machine, the collectors forward them to a central process, and the central
process feeds the manager that builds the functional model.  Here the central
process is :class:`CentralProcess`, an asyncio server in a background thread
(:mod:`mpvis.collector.loopthread`); the window runs one and advertises it
(:mod:`mpvis.collector.rendezvous`), ``mpvis run`` runs a headless one when no
window is there.

Contract:

* Only collectors connect, and each must open with a HELLO carrying the token
  (compared in constant time) and its run id; anything else is answered with
  REFUSED, logged, and closed.  One run streams at a time.
* Envelopes (:mod:`mpvis.protocol.messages`) are numbered per collector.  A
  number already seen is a duplicate of a resent batch: dropped and acknowledged
  again.  Records are checked and appended to the run's :class:`Journal` and
  flushed *before* the ACK and before any callback sees them; so a collector
  that reconnects and resends its unacknowledged batches neither loses nor
  duplicates a record.
* Records that arrive before the run's header is known are held (not
  acknowledged) until it arrives.
* Consumes of buffer messages carry the channel ordinal ``chan`` instead of
  ``send``; :class:`~mpvis.protocol.chansend.SendResolver` names the send by
  the non-overtaking rule before the journal.  While a rank's first such
  consume waits for its sender's records (at most about one flush period of
  the sender), that rank's later records wait behind it, in memory, and are
  journaled when it is resolved; the batch that brought them is acknowledged
  (they are the central process's to keep now).  A rank's end is reported
  after its held records, a sender's end releases the consumes still waiting
  for it (without ``send``), and the end of the run releases everything.
* A protocol violation (garbage, oversized frame, truncated stream, a batch
  number out of order) closes that connection with a logged reason; the run
  goes on.

Callbacks run on the server thread, in this order per run: ``on_run_start``
once, then ``on_records`` and ``on_rank_end`` as data arrive, then
``on_run_end`` once; ``on_refused`` is told of each record refused before the
journal (it then reports it; the journal does not log it).  The live feed
(:mod:`mpvis.collector.feed`) turns them into typed messages for every
consumer.  An exception in a callback is logged and does not stop the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import os
import ssl
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Any

from mpvis.collector import rendezvous
from mpvis.collector.auth import Address, format_address, new_token, token_matches
from mpvis.collector.journal import Journal
from mpvis.collector.loopthread import Connections, LoopThread
from mpvis.collector.refusal import refuse
from mpvis.protocol import messages as m
from mpvis.protocol.chansend import SendResolver
from mpvis.protocol.compact import CompactDecoder, needs_channels
from mpvis.protocol.compact_columns import CompactColumns, compact_columns
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
from mpvis.protocol.records import RecordError, check_header, make_header

__all__ = ["CentralProcess", "RunEndCallback", "RunStartCallback"]

log = logging.getLogger(__name__)

RunStartCallback = Callable[[Record, Path], None]
#: Journaled records: a list of dicts, or a rank's compact batch as columns
#: (:class:`~mpvis.protocol.compact_columns.CompactColumns`, a sequence of the same dicts).
RecordsCallback = Callable[[Sequence[Record]], None]
RankEndCallback = Callable[[int, str, str], None]
RunEndCallback = Callable[[dict[str, Any]], None]
#: A record refused before the journal (the record as received, the reason).
RefusedCallback = Callable[[object, str], None]

READ_SIZE = 1 << 18
#: A connection's stream buffers up to twice this before it stops reading the socket
#: (asyncio's default, 64 KiB, paused and resumed it at every read of a busy collector).
STREAM_LIMIT = READ_SIZE
NO_END = "no end reported: never connected, or its collector was lost"
#: Before HELLO: the largest frame accepted (a HELLO is well under 1 KiB) ...
HELLO_MAX_PAYLOAD = 64 << 10
#: ... and the connections that may be waiting to authenticate at once.
MAX_UNAUTHENTICATED = 32
#: Incidents (refused connections...) logged one by one; later ones are counted.
LOGGED_INCIDENTS = 5


@dataclass
class _Collector:
    """What the central process remembers of a collector across its reconnections."""

    cid: str
    host: str
    expected: int = 0  # the next batch number it may send
    acked: int = -1  # every batch up to this one is journaled
    writer: asyncio.StreamWriter | None = None


@dataclass
class _Run:
    run_id: str
    header: Record | None = None
    journal: Journal | None = None
    held: list[tuple[_Collector, Record]] = field(default_factory=list)
    collectors: dict[str, _Collector] = field(default_factory=dict)
    ends: dict[int, tuple[str, str]] = field(default_factory=dict)
    max_rank: int = -1
    end_info: Record | None = None
    finished: bool = False
    resolver: SendResolver = field(default_factory=SendResolver)
    deferred_ends: list[Record] = field(default_factory=list)  # ends of ranks with held records
    owners: dict[int, str] = field(default_factory=dict)  # rank -> the collector that sent it
    journal_at: Path | None = None  # where the journal goes, fixed when first named
    # a decoder per rank connection of each collector: (collector, conn) -> decoder
    decoders: dict[tuple[str, int], CompactDecoder] = field(default_factory=dict)


class CentralProcess:
    """The central process of the live path (see the module docstring).

    ``token=None`` makes a fresh token (read it from :attr:`token`): a central
    process never accepts collectors without one.  ``journal_path`` fixes the
    journal of the (single) run; otherwise each run gets a file in
    ``journal_dir`` (default: the current directory).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        journal_dir: str | Path | None = None,
        *,
        journal_path: str | Path | None = None,
        on_run_start: RunStartCallback | None = None,
        on_records: RecordsCallback | None = None,
        on_rank_end: RankEndCallback | None = None,
        on_run_end: RunEndCallback | None = None,
        on_refused: RefusedCallback | None = None,
        max_payload: int = MAX_PAYLOAD,
        hello_timeout: float = 10.0,
        end_grace: float = 2.0,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.host = host
        #: TLS server context (runs across machines, :mod:`mpvis.collector.tls`)
        self.tls = tls
        self.port = port
        self.token = token if token is not None else new_token()
        self.journal_dir = Path(journal_dir) if journal_dir is not None else Path.cwd()
        self.journal_path = Path(journal_path) if journal_path is not None else None
        self.on_run_start = on_run_start
        self.on_records = on_records
        self.on_rank_end = on_rank_end
        self.on_run_end = on_run_end
        self.on_refused = on_refused
        self.max_payload = max_payload
        self.hello_timeout = hello_timeout
        self.end_grace = end_grace
        self._address: Address | None = None
        self._runs: dict[str, _Run] = {}
        self._active: _Run | None = None
        self._thread = LoopThread("mpvis-central")
        self._rendezvous: Path | None = None
        self._conns = Connections()
        #: Reasons of refused connections and protocol errors, for reports and tests.
        self.incidents: list[str] = []
        self.incident_count = 0  # every incident, logged or not
        self._unauthenticated = 0  # connections that have not sent their HELLO yet

    # -- public API (any thread) ------------------------------------------

    def start(self) -> CentralProcess:
        """Listen and serve in a background thread; returns once listening."""
        self._thread.start(self._main)
        return self

    @property
    def address(self) -> Address:
        """``(host, port)`` the central process listens on (after :meth:`start`)."""
        if self._address is None:
            raise RuntimeError("the central process is not started")
        return self._address

    def stop(self) -> None:
        """Stop serving; a run still open is ended (``stopped`` in its info)."""
        self._thread.stop()

    def request_halt(self) -> None:
        """Ask the launcher of the run in progress to stop its program (the
        window's Stop command): ``STATUS {"halt": true}`` to its collectors.
        The run then ends as after Ctrl-C, its records journaled."""
        self._thread.call(self._status, {"halt": True})

    def tell_run(self, text: str) -> None:
        """Send ``text`` to the launcher of the run in progress, which prints it
        (the window relays the deadlocks it proves: ``STATUS {"notice"}``)."""
        self._thread.call(self._status, {"notice": text})

    def _status(self, body: dict[str, Any]) -> None:
        run = self._active
        if run is None or run.finished:
            return
        for c in run.collectors.values():
            if c.writer is not None:
                c.writer.write(encode_frame(MsgType.STATUS, body))

    def advertise(self, path: Path | None = None) -> Path:
        """Publish this central process for ``mpvis run`` (the window calls this)."""
        self._rendezvous = rendezvous.advertise(self.address, self.token, path)
        return self._rendezvous

    def withdraw(self) -> None:
        """Remove the rendezvous file written by :meth:`advertise`."""
        if self._rendezvous is not None:
            rendezvous.withdraw(self._rendezvous)
            self._rendezvous = None

    # -- server ----------------------------------------------------------

    async def _main(self, stop: asyncio.Event) -> None:
        server = await asyncio.start_server(
            self._serve, self.host, self.port, ssl=self.tls, limit=STREAM_LIMIT,
            ssl_handshake_timeout=self.hello_timeout if self.tls is not None else None)
        sock = server.sockets[0].getsockname()
        self._address = (sock[0], sock[1])
        log.info("central process listening on %s", format_address(self._address))
        self._thread.ready()
        async with server:
            await stop.wait()
            server.close()
            for run in list(self._runs.values()):
                if not run.finished:
                    self._finish(run, stopped=True)
            await self._conns.close_all()

    def _incident(self, peer: str, reason: str) -> None:
        """Note a refused or broken connection: the first few are logged, the
        rest counted (a flood of garbage connections must not flood the terminal)."""
        self.incident_count += 1
        if len(self.incidents) < 100:
            self.incidents.append(f"{peer}: {reason}")
        if self.incident_count <= LOGGED_INCIDENTS:
            log.warning("central process: %s: %s", peer, reason)
        elif self.incident_count == LOGGED_INCIDENTS + 1:
            log.warning("central process: further refused connections are counted, "
                        "not logged")

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with self._conns.track(writer):
            await self._converse(reader, writer)

    async def _converse(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = _peer_name(writer)
        if self._unauthenticated >= MAX_UNAUTHENTICATED:
            self._incident(peer, "refused: too many connections waiting to authenticate")
            writer.close()
            return
        self._unauthenticated += 1
        # Until HELLO: small frames only, and one deadline for the whole HELLO
        # (a client sending a byte every few seconds does not stay).
        dec = FrameDecoder(min(HELLO_MAX_PAYLOAD, self.max_payload))
        deadline = asyncio.get_running_loop().time() + self.hello_timeout
        coll: _Collector | None = None
        run: _Run | None = None
        try:
            while True:
                if coll is None:
                    left = deadline - asyncio.get_running_loop().time()
                    data = await asyncio.wait_for(reader.read(READ_SIZE), max(left, 0.0))
                else:
                    data = await reader.read(READ_SIZE)
                dec.receive_data(data)
                while True:
                    ev = dec.next_event()
                    if ev is NEED_DATA or ev is EOF:
                        break
                    assert isinstance(ev, Message)
                    if coll is None:
                        run, coll = self._hello(ev, writer, peer)
                        self._unauthenticated -= 1
                        dec.limit(self.max_payload)
                    else:
                        assert run is not None
                        self._envelope(run, coll, ev)
                if not data:
                    return
                await writer.drain()
        except TimeoutError:
            self._incident(peer, "no HELLO in time")
        except m.RefusedError as exc:
            self._incident(peer, f"refused: {exc}")
            await refuse(reader, writer, str(exc))
        except ProtocolError as exc:
            self._incident(peer, f"protocol error: {exc.reason}")
        except (ConnectionError, OSError) as exc:
            log.info("central process: %s: connection lost: %s", peer, exc)
        except Exception as exc:  # a bug: close this connection (the collector resends)
            log.exception("central process: %s: internal error", peer)
            self._incident(peer, f"internal error, connection closed: {exc!r:.200}")
        finally:
            if coll is None:
                self._unauthenticated -= 1
            if coll is not None and coll.writer is writer:
                coll.writer = None
            with contextlib.suppress(Exception):
                writer.close()
            if run is not None and run.end_info is not None and not run.finished:
                self._maybe_finish(run)

    def _hello(
        self, msg: Message, writer: asyncio.StreamWriter, peer: str
    ) -> tuple[_Run, _Collector]:
        if msg.type != MsgType.HELLO:
            raise m.RefusedError(f"expected HELLO, got {msg.type.name}")
        body = m.check_hello(msg.body)
        if not token_matches(self.token, body.get("token")):
            raise m.RefusedError("wrong token")
        if body["role"] != m.ROLE_COLLECTOR:
            raise m.RefusedError("only collectors connect to the central process")
        run_id: str = body["run"]
        run = self._runs.get(run_id)
        if run is None:
            if self._active is not None and not self._active.finished:
                raise m.RefusedError(f"busy with run {self._active.run_id}")
            if self.journal_path is not None and self._runs:
                raise m.RefusedError("this central process records a single run")
            run = self._runs[run_id] = _Run(run_id)
            self._active = run
            log.info("run %s: first collector from %s", run_id, peer)
        elif run.finished:
            raise m.RefusedError(f"run {run_id} has ended")
        cid: str = body["collector"]
        coll = run.collectors.get(cid)
        if coll is None:
            coll = run.collectors[cid] = _Collector(cid, str(body.get("host", peer)))
        elif coll.writer is not None:
            coll.writer.close()  # a stale connection of a collector that reconnected
        coll.writer = writer
        journal = run.journal.path if run.journal else self._journal_path(run)
        writer.write(encode_frame(
            MsgType.STATUS, {"welcome": True, "acked": coll.acked, "journal": str(journal),
                             "compact": True}))
        log.info("run %s: collector %s connected from %s", run_id, cid, peer)
        return run, coll

    def _envelope(self, run: _Run, coll: _Collector, msg: Message) -> None:
        if msg.type != MsgType.RECORDS:
            raise ProtocolError(f"a collector may only send RECORDS, got {msg.type.name}")
        body = m.check_envelope(msg.body)
        batch: int = body["batch"]
        if batch < coll.expected:
            if coll.acked >= 0 and coll.writer is not None:
                coll.writer.write(encode_frame(MsgType.ACK, {"batch": coll.acked}))
            return
        if batch > coll.expected:
            raise ProtocolError(f"batch {batch} out of order (expected {coll.expected})")
        if run.finished:
            coll.expected += 1
            log.warning("run %s: batch %d after the end, ignored", run.run_id, batch)
            coll.acked = batch
            if coll.writer is not None:
                coll.writer.write(encode_frame(MsgType.ACK, {"batch": batch}))
            return
        header = body.get("header")
        if run.journal is None and header is not None:
            self._open_journal(run, header)
        if run.journal is None:
            coll.expected += 1
            run.held.append((coll, body))
            return
        self._apply(run, coll, body)
        # Counted once applied: if applying failed, the collector's resend of this
        # batch is applied, not dropped as a duplicate (the journal drops records
        # it already holds).
        coll.expected += 1

    def _journal_path(self, run: _Run) -> Path:
        """Where ``run`` is journaled: named once (the name holds the time, and the
        path a collector was told at its welcome must be the one written)."""
        if run.journal_at is None:
            run.journal_at = self.journal_path or self.journal_dir / _journal_name(run.run_id)
        return run.journal_at

    def _open_journal(self, run: _Run, header: Record) -> None:
        header = dict(header)
        header.setdefault("run", run.run_id)
        try:
            check_header(header)
        except RecordError as exc:
            raise ProtocolError(f"bad header: {exc}") from None
        run.header = header
        path = self._journal_path(run)
        refused = self.on_refused
        run.journal = Journal(path, header, None if refused is None else (
            lambda rec, why: self._callback(refused, rec, why)))
        log.info("run %s: journal %s", run.run_id, path)
        self._callback(self.on_run_start, header, path)
        held, run.held = run.held, []
        for coll, body in held:
            self._apply(run, coll, body)

    def _apply(self, run: _Run, coll: _Collector, body: Record) -> None:
        journal = run.journal
        assert journal is not None
        header = body.get("header")
        if header is not None and header.get("nprocs") != journal.nprocs:
            log.warning(
                "run %s: a second header says nprocs=%s, the journal's says %s",
                run.run_id,
                header.get("nprocs"),
                journal.nprocs,
            )
        # Malformed records are refused here, one by one, before the resolver sees
        # them: the rest of the batch goes on (a bad record once killed this handler).
        records = run.resolver.feed(self._owned(run, coll, journal.valid(body["records"])))
        for compact in body.get("compact", ()):
            got = self._from_compact(run, coll, compact)
            if isinstance(got, CompactColumns):
                self._journal(run, records)  # the records before it first
                records = []
                self._journal_columns(run, got)
            else:
                records += got
        ends = [e for e in body.get("ends", ()) if run.owners.get(e["rank"], coll.cid) == coll.cid]
        for end in ends:
            records += run.resolver.sender_ended(end["rank"])
        self._journal(run, records)
        coll.acked = body["batch"]
        if coll.writer is not None:
            coll.writer.write(encode_frame(MsgType.ACK, {"batch": coll.acked}))
        run.deferred_ends += ends
        self._report_ends(run)
        if "end" in body:
            run.end_info = body["end"]
            self._maybe_finish(run)
        elif run.end_info is not None:
            self._maybe_finish(run)

    def _from_compact(self, run: _Run, coll: _Collector, body: Record
                      ) -> list[Record] | CompactColumns:
        """What :meth:`_apply` does with records, for a rank's ``COMPACT`` batch: the
        rank's owner checked once (not per record); the batch as columns when
        :func:`~mpvis.protocol.compact_columns.compact_columns` takes it whole (its
        records checked on columns) and it continues its rank in the journal, with
        no record of its rank held by the send resolver; else its records expanded
        and checked one by one, and the send resolver skipped unless the batch
        holds buffer sends or channel consumes
        (:func:`~mpvis.protocol.compact.needs_channels`)."""
        journal = run.journal
        assert journal is not None
        decoder = self._decoder(run, coll, body)
        rank = body["rank"]
        if run.owners.setdefault(rank, coll.cid) != coll.cid:
            return self._owned(run, coll, journal.valid(self._expand(run, decoder, body)))
        if needs_channels(body):
            return run.resolver.feed(journal.valid(self._expand(run, decoder, body)))
        block = None
        if not run.resolver.holds(rank):
            block = compact_columns(decoder, body, journal.nprocs)
            if block is not None and journal.takes(block):
                return block
        records = self._expand(run, decoder, body) if block is None else block.records()
        return run.resolver.feed_plain(rank, journal.valid(records))

    @staticmethod
    def _decoder(run: _Run, coll: _Collector, body: Record) -> CompactDecoder:
        """The decoder of the rank connection a ``COMPACT`` batch of ``coll`` came from."""
        key = (coll.cid, body["conn"])
        decoder = run.decoders.get(key)
        if decoder is None:
            decoder = run.decoders[key] = CompactDecoder(body["rank"])
        elif decoder.rank != body["rank"]:
            raise ProtocolError(f"connection {body['conn']} of collector {coll.cid!r} "
                                f"carries rank {decoder.rank}, not {body['rank']}")
        return decoder

    @staticmethod
    def _expand(run: _Run, decoder: CompactDecoder, body: Record) -> list[Record]:
        """The records of a rank's ``COMPACT`` batch (expanded here, once; its shape
        was checked by the collector and the envelope's check).  A batch that
        cannot be fully expanded is logged and its good records kept."""
        records, error = decoder.decode(body)
        if error is not None:
            log.warning("run %s: rank %d: bad compact batch: %s", run.run_id, body["rank"], error)
        return records

    def _owned(self, run: _Run, coll: _Collector, records: list[Record]) -> list[Record]:
        """The records of ranks this collector serves: a rank belongs to the first
        collector that sends one of its records; another collector's records for
        it are refused (a rogue collector cannot speak for a rank)."""
        owners, cid = run.owners, coll.cid
        out = []
        for rec in records:
            owner = owners.setdefault(rec["rank"], cid)
            if owner == cid:
                out.append(rec)
            else:
                assert run.journal is not None
                run.journal.refuse(rec, f"sent by collector {cid!r}, but rank {rec['rank']} "
                                        f"is served by collector {owner!r}")
        return out

    def _journal(self, run: _Run, records: list[Record]) -> None:
        assert run.journal is not None
        good = run.journal.append(records, checked=True)
        if good:
            run.max_rank = max(run.max_rank, *map(itemgetter("rank"), good))
            self._callback(self.on_records, good)

    def _journal_columns(self, run: _Run, block: CompactColumns) -> None:
        assert run.journal is not None
        written = run.journal.append_columns(block)
        if written:
            run.max_rank = max(run.max_rank, block.rank)
            # the whole block, or what the disk took of it (the rest is counted as lost)
            self._callback(self.on_records, block if written == len(block)
                           else block.records()[:written])

    def _report_ends(self, run: _Run) -> None:
        """Report the ends of ranks that have no record held back (in arrival order)."""
        held = run.resolver.held_ranks
        waiting = []
        for end in run.deferred_ends:
            rank, status, detail = end["rank"], end["status"], end.get("detail", "")
            if rank in held:
                waiting.append(end)
                continue
            if rank in run.ends:
                continue
            run.ends[rank] = (status, detail)
            run.max_rank = max(run.max_rank, rank)
            if status != m.FINAL:
                log.info("run %s: rank %d %s: %s", run.run_id, rank, status, detail)
            self._callback(self.on_rank_end, rank, status, detail)
        run.deferred_ends = waiting

    def _maybe_finish(self, run: _Run) -> None:
        """End the run once its last envelope is in, after the other collectors' grace."""
        if run.finished:
            return
        nprocs = run.journal.nprocs if run.journal else run.max_rank + 1
        others = [c for c in run.collectors.values() if c.writer is not None]
        if len(others) <= 1 or all(r in run.ends for r in range(nprocs)):
            self._finish(run)
        else:
            asyncio.get_running_loop().call_later(self.end_grace, self._finish, run)

    def _finish(self, run: _Run, *, stopped: bool = False) -> None:
        if run.finished:
            return
        end = dict(run.end_info or {})
        if run.journal is None:
            nprocs = end.get("nprocs") or max(run.max_rank + 1, 1)
            self._open_journal(run, make_header(nprocs, started=_now()))
        journal = run.journal
        assert journal is not None
        self._journal(run, run.resolver.flush())
        self._report_ends(run)
        run.finished = True
        interrupted = bool(end.get("interrupted"))
        ranks = []
        for rank in range(journal.nprocs):
            if rank in journal.finals:
                status, detail = m.FINAL, ""
            elif rank in run.ends:
                status, detail = run.ends[rank]
            else:
                status, detail = (
                    "unknown",
                    "no end reported: never connected, or its collector was lost",
                )
            if status != m.FINAL and interrupted:
                status, detail = m.KILLED, f"stopped by the user ({detail})"
            ranks.append({"rank": rank, "status": status, "detail": detail})
        journal.close()
        info = {
            "run": run.run_id,
            "journal": str(journal.path),
            "header": run.header,
            "nprocs": journal.nprocs,
            "records": journal.written,
            "rejected": journal.rejected,
            "duplicates": journal.duplicates,
            "unwritten": journal.unwritten,
            "refused_connections": self.incident_count,
            "journal_error": journal.failed,
            "ranks": ranks,
            "exit_code": end.get("exit_code"),
            "interrupted": interrupted,
            "stopped": stopped,
        }
        log.info("run %s ended: %d records in %s", run.run_id, journal.written, journal.path)
        if self.incident_count > LOGGED_INCIDENTS:
            log.warning("central process: %d connections were refused or broken in all",
                        self.incident_count)
        self._callback(self.on_run_end, info)
        for c in run.collectors.values():
            if c.writer is not None:
                c.writer.write(encode_frame(
                    MsgType.STATUS, {"stop": True, "journal": str(journal.path)}))

    def _callback(self, fn: Callable[..., None] | None, *args: Any) -> None:
        if fn is None:
            return
        try:
            fn(*args)
        except Exception:
            log.exception("central process: a callback failed")


def _peer_name(writer: asyncio.StreamWriter) -> str:
    peer = writer.get_extra_info("peername")
    if isinstance(peer, tuple) and len(peer) >= 2:
        return format_address((str(peer[0]), int(peer[1])))
    return str(peer)


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _journal_name(run_id: str) -> str:
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return f"mpvis-run-{stamp}-{run_id[:8]}-{os.getpid()}.jsonl"
