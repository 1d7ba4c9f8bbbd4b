"""Lost messages: sent, and never received by the time every rank finalized.

A message no receive consumed is lost: its data never reached the program,
and a blocking send of it returned only because MPI buffered it.  This is
decided only for runs in which every rank recorded ``final`` (a normal
end): when a rank crashed, was killed or was stopped on a deadlock, messages
sent to it are the consequence of that, not a bug of their own.

Each lost message is one entry of the report's ``errors`` list
(:func:`lost_messages`).
"""

from __future__ import annotations

from mpvis.analysis.deadlock_p2p import describe_p2p
from mpvis.analysis.deadlock_report import describe_site
from mpvis.model.manager import ModelManager
from mpvis.protocol import records as R

__all__ = ["lost_messages"]


def lost_messages(m: ModelManager) -> list[dict[str, object]]:
    """``lost_message`` error entries, one per unconsumed send, in (rank, seq) order.

    Each: ``kind``, ``ranks`` (sender, destination), ``events`` (``["rank:seq"]``
    of the send), ``site`` (or ``None``) and ``reason``.  Empty unless every
    rank finished normally.
    """
    if not all(m.finished) or m.dead:
        return []
    out: list[dict[str, object]] = []
    for send in sorted((msg.send for msg in m.unconsumed_messages()), key=lambda e: e.key):
        rank, seq = send.key
        rec = send.fields
        assert rec["kind"] == R.SEND  # a message's first event
        site = rec.get("site")
        out.append({
            "kind": "lost_message",
            "ranks": sorted({rank, rec["dest"]}),
            "events": [f"{rank}:{seq}"],
            "site": site,
            "reason": (f"Lost message: rank {rank} sent it with {describe_p2p(rec)}"
                       f"{describe_site(site)} (event {rank}:{seq}); rank {rec['dest']} "
                       "finalized without receiving it."),
        })
    return out
