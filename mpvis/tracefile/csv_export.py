"""A trace as two CSV tables, for spreadsheets and data frames.

:func:`write_csv` writes into a directory:

* ``events.csv``: one row per event, each rank's in ``seq`` order, with the
  columns :data:`EVENT_COLUMNS`; ``peer`` is a send's ``dest`` or a receive's
  or consume's ``src`` (``-1``: any), ``partner`` the other end of a message
  (``rank:seq``), and ``fields`` every other field of the record as JSON.
* ``messages.csv``: one row per send (:data:`MESSAGE_COLUMNS`), with the
  receive and consume that took it; a message never consumed keeps empty
  receiver columns, so that no send is left out.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import orjson

from mpvis.model.manager import ModelManager
from mpvis.protocol import records as R
from mpvis.protocol.record_types import SendRecord

__all__ = ["EVENT_COLUMNS", "MESSAGE_COLUMNS", "write_csv"]

EVENT_COLUMNS = ("rank", "seq", "kind", "t", "site", "comm", "peer", "tag", "blocking", "req",
                 "partner", "fields")
MESSAGE_COLUMNS = ("send_rank", "send_seq", "dest", "tag", "comm", "size", "sync", "send_t",
                   "recv_seq", "consume_seq", "consume_t")
_SHOWN = {"rank", "seq", "kind", "t", "site", "comm", "dest", "src", "tag", "blocking", "req"}


def _cell(v: Any) -> Any:
    return "" if v is None else v


def write_csv(m: ModelManager, out: str | Path) -> list[Path]:
    """Write ``events.csv`` and ``messages.csv`` into directory ``out``; return both."""
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    events, messages = d / "events.csv", d / "messages.csv"
    with events.open("w", newline="", encoding="utf-8") as ef, \
            messages.open("w", newline="", encoding="utf-8") as mf:
        ew, mw = csv.writer(ef), csv.writer(mf)
        ew.writerow(EVENT_COLUMNS)
        mw.writerow(MESSAGE_COLUMNS)
        for r in range(m.nprocs):
            for s in range(m.count(r)):
                rec = m.record(r, s)
                partner = m.partner(r, s)
                rest = {k: v for k, v in rec.items() if k not in _SHOWN}
                ew.writerow([r, s, rec["kind"], _cell(rec.get("t")), _cell(rec.get("site")),
                             rec.get("comm", 0), _cell(rec.get("dest", rec.get("src"))),
                             _cell(rec.get("tag")), _cell(rec.get("blocking")),
                             _cell(rec.get("req")),
                             "" if partner is None else f"{partner[0]}:{partner[1]}",
                             orjson.dumps(rest).decode() if rest else ""])
                if rec["kind"] == R.SEND:
                    mw.writerow(_message(m, rec, partner))
    return [events, messages]


def _message(m: ModelManager, send: SendRecord, consume: tuple[int, int] | None
             ) -> list[Any]:
    row = [send["rank"], send["seq"], send["dest"], send["tag"], send.get("comm", 0),
           _cell(send.get("size")), send["sync"], _cell(send.get("t"))]
    if consume is None:
        return [*row, "", "", ""]
    crec = m.record(*consume)
    recv = crec["recv"] if crec["kind"] == R.CONSUME else ""  # a send's partner: a consume
    return [*row, recv, consume[1], _cell(crec.get("t"))]
