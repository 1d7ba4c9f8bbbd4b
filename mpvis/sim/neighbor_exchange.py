"""Figure 10 of Schaeli et al.: the neighbourhood exchange, as a trace generator.

Section 7's MPI pseudo-code, ``maxIter`` iterations on ``np`` ranks::

    for i in range(maxIter):
        rank 0:         Send(lower border to 1)
        0 < rank < np-1: Sendrecv(lower border to rank+1, lower border of rank-1)
        rank np-1:      Recv(lower border of np-2)
        rank 0:         Recv(top border of 1)
        0 < rank < np-1: Sendrecv(top border to rank-1, top border of rank+1)
        rank np-1:      Send(top border to np-2)

:func:`neighbor_exchange_trace` writes the trace the mpi4py library records for
it (``examples/neighbor_exchange.py`` is the real program): a ``Sendrecv`` is a
blocking ``send``, a blocking ``recv`` and its ``consume`` at one call site.
``with_calls`` adds the optional ``call`` field (one value per MPI call);
without it the POEG pairs the Sendrecv halves by site and adjacency.  Lower
borders travel with tag 0, top borders with tag 1.
"""

from __future__ import annotations

from typing import Any

from mpvis.protocol.records import make_header

__all__ = ["neighbor_exchange_trace"]

from mpvis.protocol.record_types import Record

LOWER, TOP = 0, 1
_SITE = "neighbor_exchange.py:{}"


def neighbor_exchange_trace(nprocs: int, iterations: int, *, with_calls: bool = True
                            ) -> tuple[Record, list[Record]]:
    """The header and records (rank by rank) of Figure 10's program (module docstring)."""
    if nprocs < 2 or iterations < 0:
        raise ValueError("Figure 10's program needs at least 2 ranks and iterations >= 0")
    last = nprocs - 1
    out: list[Record] = []
    # (src, dest, tag) -> seqs of its sends, in order (the consumes take them in order)
    sends: dict[tuple[int, int, int], list[int]] = {}
    taken: dict[tuple[int, int, int], int] = {}
    ranks: list[list[Record]] = [[] for _ in range(nprocs)]

    def emit(rank: int, call: int, kind: str, line: int, **fields: Any) -> int:
        recs = ranks[rank]
        rec: Record = {"rank": rank, "seq": len(recs), "kind": kind, "site": _SITE.format(line)}
        if with_calls:
            rec["call"] = call
        rec.update(fields)
        recs.append(rec)
        return int(rec["seq"])

    def send(rank: int, call: int, dest: int, tag: int, line: int) -> None:
        s = emit(rank, call, "send", line, dest=dest, tag=tag, blocking=True, sync=False)
        sends.setdefault((rank, dest, tag), []).append(s)

    def recv(rank: int, call: int, src: int, tag: int, line: int) -> None:
        r = emit(rank, call, "recv", line, src=src, tag=tag, blocking=True)
        emit(rank, call, "consume", line, recv=r, src=src, tag=tag, send=None)

    for rank in range(nprocs):
        call = 0
        for _ in range(iterations):
            if rank == 0:
                send(rank, call, 1, LOWER, 10)
            elif rank < last:
                send(rank, call, rank + 1, LOWER, 11)
                recv(rank, call, rank - 1, LOWER, 11)
            else:
                recv(rank, call, last - 1, LOWER, 12)
            call += 1
            if rank == 0:
                recv(rank, call, 1, TOP, 13)
            elif rank < last:
                send(rank, call, rank - 1, TOP, 14)
                recv(rank, call, rank + 1, TOP, 14)
            else:
                send(rank, call, last - 1, TOP, 15)
            call += 1
        emit(rank, call, "final", 16)
        if with_calls:
            del ranks[rank][-1]["call"]  # final is not an MPI call
    for recs in ranks:
        for rec in recs:
            if rec["kind"] == "consume":
                chan = (rec["src"], rec["rank"], rec["tag"])
                k = taken.get(chan, 0)
                taken[chan] = k + 1
                rec["send"] = [rec["src"], sends[chan][k]]
        out.extend(recs)
    return make_header(nprocs, program=f"neighbor_exchange np={nprocs} maxIter={iterations}"), out
