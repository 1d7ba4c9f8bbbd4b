"""Exact (Cypher and Leu) race detection benchmark.

    python benchmarks/exact.py            # scaling: time per event vs Ne, Np, Nx
    python benchmarks/exact.py --million  # 1,000,000 events on 64 ranks vs the model

Scaling uses its own pattern: rounds in which a rotating master posts Nx
nonblocking ``recv(-1,-1)`` (Nx overlapping posted operations), Nx other ranks
send to it, and the master consumes and waits.  The paper's bound is
O(Ne Np Nx): time per event should stay flat as Ne grows and grow at most
linearly with Np and Nx.

``--million`` feeds :func:`mpvis.sim.synthetic.generate_records` (1M events, 64
ranks) to :class:`mpvis.model.manager.ModelManager` alone, to the detector
alone, and to the manager with the detector registered as an analyzer, and
prints events per second and the detector's added share of the ingest time
(target: at most +50%).  Timings are noisy on a shared 2-core machine.
"""

from __future__ import annotations

import argparse
import functools
import time
from collections.abc import Callable
from typing import Any

from mpvis.analysis.exact_races import ExactRaceDetector
from mpvis.protocol.record_types import Record


def pattern(n_events: int, nprocs: int, overlap: int) -> list[Record]:
    """About ``n_events`` records of the gather pattern described above."""
    seq = [0] * nprocs
    out: list[Record] = []

    def ev(rank: int, kind: str, **fields: Any) -> Record:
        rec = {"rank": rank, "seq": seq[rank], "kind": kind, "comm": 0, **fields}
        seq[rank] += 1
        out.append(rec)
        return rec

    k = 0
    while len(out) < n_events:
        master = k % nprocs
        others = [(master + 1 + (k + j) % (nprocs - 1)) % nprocs for j in range(overlap)]
        posts = [
            ev(master, "recv", src=-1, tag=-1, blocking=False, req=j)["seq"] for j in range(overlap)
        ]
        sends = [ev(q, "send", dest=master, tag=k % 3, blocking=True, sync=False) for q in others]
        for post, s in zip(posts, sends, strict=True):
            ev(
                master,
                "consume",
                recv=post,
                src=s["rank"],
                tag=s["tag"],
                send=[s["rank"], s["seq"]],
            )
        ev(master, "wait", reqs=list(range(overlap)))
        k += 1
    return out


def timed(records: list[Record], make: Callable[[], Any], batch: int = 1000) -> float:
    """Best of two runs of feeding ``records`` in batches, then finishing."""
    best = float("inf")
    for _ in range(2):
        sink = make()
        start = time.perf_counter()
        for i in range(0, len(records), batch):
            sink.feed(records[i : i + batch])
        sink.finish()
        best = min(best, time.perf_counter() - start)
    return best


def scaling() -> None:
    print(f"{'events':>9} {'ranks':>5} {'Nx':>3} {'us/event':>9} {'held':>6}")
    rows = [(n, 16, 4) for n in (25_000, 50_000, 100_000, 200_000)]
    rows += [(100_000, p, 4) for p in (8, 32, 64, 128)]
    rows += [(100_000, 64, x) for x in (1, 8, 16, 32)]
    for n, p, x in rows:
        records = pattern(n, p, x)
        seconds = timed(records, functools.partial(ExactRaceDetector, p))
        det = ExactRaceDetector(p)
        det.feed(records)
        print(
            f"{len(records):>9} {p:>5} {x:>3} {1e6 * seconds / len(records):>9.2f} {det.held():>6}"
        )


class _Manager:
    """Adapts ModelManager to feed/finish for :func:`timed`."""

    def __init__(self, nprocs: int, with_detector: bool) -> None:
        from mpvis.model.manager import ModelManager

        header = {"kind": "header", "format": "mpvis-trace", "version": 1, "nprocs": nprocs}
        self.manager = ModelManager(header)
        if with_detector:
            self.manager.analyzers.append(ExactRaceDetector(nprocs))

    def feed(self, batch: list[Record]) -> None:
        self.manager.add_batch(batch)

    def finish(self) -> None:
        self.manager.finish()


def million(n_events: int, nprocs: int) -> None:
    from mpvis.sim.synthetic import generate_records

    records = list(generate_records(n_events, nprocs, 1))
    n = len(records)
    model = timed(records, lambda: _Manager(nprocs, False))
    alone = timed(records, lambda: ExactRaceDetector(nprocs))
    both = timed(records, lambda: _Manager(nprocs, True))
    print(f"{n} events, {nprocs} ranks")
    print(f"model alone      {model:7.2f} s  {n / model:10.0f} events/s")
    print(f"detector alone   {alone:7.2f} s  {n / alone:10.0f} events/s")
    print(
        f"model + detector {both:7.2f} s  {n / both:10.0f} events/s  "
        f"(+{100 * (both - model) / model:.0f}% over the model; target +50%)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--million", action="store_true", help="the 1M-event 64-rank figure")
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--ranks", type=int, default=64)
    args = ap.parse_args()
    if args.million:
        million(args.events, args.ranks)
    else:
        scaling()


if __name__ == "__main__":
    main()
