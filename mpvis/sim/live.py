"""Stream a scenario live through the real collector path.

The simulated ranks behave like instrumented ones: a :class:`Collector` is
started for the run (as ``mpvis run`` does) and connects to the central
process at ``address``; each simulated rank opens its own
:class:`~mpvis.collector.client.RankClient` to that collector, rank 0 sends
the header, and every rank sends its records in batches released at their
simulated times scaled by ``speed`` (:mod:`mpvis.sim.pacing`).  A rank says
BYE ``final`` right after its ``final`` record.

Ranks that the scenario leaves blocked keep their connections open, like a
hung program, until the stream ends: at once by default, or, with
``hold_stuck``, until ``stop_event`` is set (the user stops the run).  They
then leave with BYE ``killed`` and the place they were blocked at.  Setting
``stop_event`` earlier interrupts the stream: the ranks still running leave
as killed and the run's end says ``interrupted``; so does the end of a run
that left ranks blocked (they were stopped, not crashed: the report shows them
suspended, like ``mpvis check`` on the trace).
"""

from __future__ import annotations

import datetime as dt
import threading
import time
import uuid
from dataclasses import dataclass

from mpvis.collector.auth import Address
from mpvis.collector.client import RankClient
from mpvis.collector.collector import Collector
from mpvis.errors import MpvisError
from mpvis.protocol import messages as m
from mpvis.protocol.record_types import Record
from mpvis.sim.catalog import run
from mpvis.sim.pacing import DEFAULT_INTERVAL, paced_batches

__all__ = ["DemoStreamError", "StreamOutcome", "stream_scenario"]


class DemoStreamError(MpvisError, RuntimeError):
    """The central process refused the demo run or could not be reached."""


@dataclass(frozen=True)
class StreamOutcome:
    """What a stream did: records sent, ranks left blocked, how it ended."""

    run_id: str
    records: int
    stuck: dict[int, str]
    interrupted: bool
    acknowledged: bool


def _now_iso() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def stream_scenario(  # noqa: PLR0917 (the signature agreed with the GUI)
    name: str,
    address: Address,
    token: str | None,
    seed: int = 0,
    speed: float = 1.0,
    stop_event: threading.Event | None = None,
    *,
    hold_stuck: bool = False,
    run_id: str | None = None,
    interval: float = DEFAULT_INTERVAL,
    welcome_timeout: float = 10.0,
) -> StreamOutcome:
    """Simulate scenario ``name`` and stream it to the central process at ``address``.

    Blocks until the run has ended and the collector has forwarded everything
    (or ``stop_event`` interrupted it).  Raises :class:`DemoStreamError` when
    the central process refuses the run (a wrong ``token``, a busy window) or
    does not answer within ``welcome_timeout`` seconds.
    """
    sim = run(name, seed)
    stop = stop_event or threading.Event()
    run_id = run_id or uuid.uuid4().hex
    header = {**sim.header, "started": _now_iso()}
    collector = Collector(address, token, run_id).start()
    clients: list[RankClient] = []
    try:
        if not collector.wait_welcome(welcome_timeout):
            reason = collector.refused or "the central process did not answer"
            raise DemoStreamError(f"cannot stream the demo: {reason}")
        clients = [RankClient(collector.address, token, r) for r in range(sim.header["nprocs"])]
        clients[0].send_header(header)
        open_ranks = set(range(len(clients)))
        sent, interrupted = _pump(
            sim.records, clients, open_ranks, speed=speed, interval=interval, stop=stop
        )
        if hold_stuck and open_ranks and not interrupted:
            stop.wait()
        for rank in sorted(open_ranks):
            detail = "demo stopped" if interrupted else "simulated rank left blocked"
            where = sim.stuck.get(rank)
            clients[rank].bye(m.KILLED, f"{detail} ({where})" if where else detail)
        _await_received(collector, sent, timeout=welcome_timeout)
        end = {
            "nprocs": len(clients),
            "exit_code": 0 if not open_ranks else None,
            # ranks left blocked were stopped, as a user stops a hung run: the
            # report shows them suspended where they blocked (and the deadlock
            # that holds them), as `mpvis check` does on the same trace
            "interrupted": interrupted or bool(open_ranks),
        }
        acknowledged = collector.finish(end)
    finally:
        for c in clients:
            c.close()
        collector.stop()
    return StreamOutcome(run_id, sent, sim.stuck, interrupted, acknowledged)


def _await_received(collector: Collector, count: int, timeout: float) -> None:
    """Wait until the collector has read ``count`` records from the ranks.

    :meth:`Collector.finish` seals the run's end once no rank connection is
    open; a connection it has not accepted yet does not count as open, so
    finishing right after the last send could overtake the ranks' data.
    """
    deadline = time.monotonic() + timeout
    while collector.received < count and time.monotonic() < deadline:
        time.sleep(0.005)


def _pump(
    records: list[Record],
    clients: list[RankClient],
    open_ranks: set[int],
    *,
    speed: float,
    interval: float,
    stop: threading.Event,
) -> tuple[int, bool]:
    """Send the paced batches; return (records sent, whether ``stop`` interrupted)."""
    start = time.monotonic()
    sent = 0
    for due, batch in paced_batches(records, speed, interval):
        remaining = start + due - time.monotonic()
        if (remaining > 0 and stop.wait(remaining)) or stop.is_set():
            return sent, True
        per_rank: dict[int, list[Record]] = {}
        for rec in batch:
            per_rank.setdefault(rec["rank"], []).append(rec)
        for rank, recs in per_rank.items():
            clients[rank].send_records(recs)
            if recs[-1]["kind"] == "final":
                clients[rank].bye(m.FINAL)
                open_ranks.discard(rank)
        sent += len(batch)
    return sent, False
