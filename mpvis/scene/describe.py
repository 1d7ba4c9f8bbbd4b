"""Words for events: the one-line hover summary and the details panel's fields.

Both describe an :class:`~mpvis.model.entities.Event` view (the model's class
for an event, ``model.event_at(g)``); the model is passed for what it knows of
the run beyond the event (dead ranks)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mpvis.protocol import records as rec_kinds

if TYPE_CHECKING:
    from mpvis.model.entities import Event
    from mpvis.model.manager import ModelManager


def _arg(v: int, wildcard: str) -> str:
    return wildcard if v == -1 else str(v)


def summary(m: ModelManager, e: Event) -> str:
    """One line: ``2:5 recv(ANY_SOURCE, 7) @ file.py:12`` (events are ``rank:seq``)."""
    rec = e.fields  # the model's checked record, typed by its kind
    head = f"{rec['rank']}:{rec['seq']} "
    if rec["kind"] == rec_kinds.SEND:
        mode = "ssend" if rec.get("sync") else ("send" if rec["blocking"] else "isend")
        body = f"{mode} to {rec['dest']} tag {rec['tag']}"
    elif rec["kind"] == rec_kinds.RECV:
        mode = "recv" if rec["blocking"] else "irecv"
        body = f"{mode}({_arg(rec['src'], 'ANY_SOURCE')}, {_arg(rec['tag'], 'ANY_TAG')})"
        if rec["src"] == -1 and rec["tag"] == -1:
            body += " [wildcard: click for its races]"
    elif rec["kind"] == rec_kinds.CONSUME:
        body = (f"consume of recv {rec['rank']}:{rec['recv']}: message from rank {rec['src']} "
                f"tag {rec['tag']}")
    elif rec["kind"] == rec_kinds.COLL or rec["kind"] == rec_kinds.COLL_EXIT:
        body = f"{'enter' if rec['kind'] == rec_kinds.COLL else 'exit'} {rec.get('op', '?')}"
    elif rec["kind"] in (rec_kinds.LOCK, rec_kinds.LOCKED, rec_kinds.UNLOCK):
        body = f"{rec['kind']} {rec.get('lock', '')}"
    elif rec["kind"] == rec_kinds.WAIT:
        body = f"wait reqs {rec.get('reqs')}"
    elif rec["kind"] == rec_kinds.STATE:
        body = "state " + ", ".join(f"{k}={v}" for k, v in rec.get("vars", {}).items())
    else:
        body = rec["kind"]
    site = rec.get("site")
    r, s = int(rec["rank"]), int(rec["seq"])
    died = (f"  | rank {r} died here: {m.dead[r]}"
            if r in m.dead and s == m.count(r) - 1 else "")
    return head + body + (f"  @ {site}" if site else "") + died


def details(m: ModelManager, e: Event) -> list[tuple[str, Any]]:
    """Every field of the event, then what the model knows about it (name, value) pairs."""
    r, s = e.key
    rec = e.fields
    rows: list[tuple[str, Any]] = [(k, v) for k, v in rec.items()]
    partner = e.partner
    if partner is not None:
        rows.append(("message partner", f"{partner.rank}:{partner.seq}"))
    elif rec["kind"] == rec_kinds.SEND:
        rows.append(("message partner", "not consumed"))
    elif rec["kind"] == rec_kinds.CONSUME and m.input_ended:
        lost = m.rules.lost_send_of(e.index)
        if lost is not None:
            q, qs = lost
            rows.append(("message partner", f"a lost send of rank {q} ("
                         + (f"seq {qs}" if qs >= 0 else "matched by channel, seq unknown")
                         + "): the rank died before recording it"))
    if rec["kind"] == rec_kinds.RECV:
        cons = e.consume
        rows.append(("consumed by", "nothing (yet)" if cons is None else f"{r}:{cons.seq}"))
    rows.append(
        (
            "vector clock",
            e.vector_clock
            if m.clock_ready((r, s))
            else "not known yet (causes still missing)",
        )
    )
    rows.append(("global index", e.index))
    if r in m.dead:
        rows.append(("rank status", f"dead: {m.dead[r]}"))
    return rows
