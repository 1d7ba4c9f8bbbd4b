"""What to show for a race: its events, its tags, and its rows for export (no Qt)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from mpvis.analysis.exact_events import ExactRace
from mpvis.model.races import Race
from mpvis.scene.overlay import Overlay

if TYPE_CHECKING:
    from mpvis.model.manager import ModelManager

RACE_COLOR = "#d50000"
GHOST_COLOR = "#6a1b9a"
CONFIRMED_COLOR = "#2e7d32"


def race_overlay(m: ModelManager, race: Race, color: str = RACE_COLOR) -> Overlay:
    """Both receives (and their consumes) highlighted, both messages drawn thick."""
    marks, segs = [], []
    for s in race.recvs:
        marks.append(m.gidx(race.rank, s))
    for c in race.consumes:
        if c is not None:
            marks.append(m.gidx(race.rank, c))
    for msg, c in zip(race.messages, race.consumes, strict=True):
        if msg is not None and c is not None:
            sg = m.gidx(*msg)
            segs.append((sg, m.gidx(race.rank, c)))
            marks.append(sg)
    return Overlay(
        highlight=np.array(marks, dtype=np.int64),
        segments=np.array(segs, dtype=np.int64).reshape(-1, 2),
        color=color,
        width=3.0,
        label=f"race #{race.id}",
        z=5,
    )


def races_overlay(m: ModelManager, races: list[Race], label: str,
                  color: str = RACE_COLOR) -> Overlay:
    """Several classifier races at once (e.g. every race of one receive): the union
    of their :func:`race_overlay` marks and message lines."""
    parts = [race_overlay(m, r, color) for r in races]
    return Overlay(
        highlight=np.unique(np.concatenate([p.highlight for p in parts] or [np.zeros(0, int)])),
        segments=np.concatenate([p.segments for p in parts] or [np.zeros((0, 2), int)]),
        color=color, width=3.0, label=label, z=5,
    )


def ghost_overlay(m: ModelManager, recv: int, sends: list[tuple[int, int]]) -> Overlay:
    """Dashed ghost lines from each conflicting send ``(rank, seq)`` to receive ``recv``.

    Cypher and Leu's exact test: each of these sends could have been matched by
    the receive instead of the message it got; the sends are ringed too.
    """
    gs = [m.gidx(r, s) for r, s in sends]
    r, s = int(m.c_rank[recv]), int(m.c_seq[recv])
    return Overlay(
        highlight=np.array([recv, *gs], dtype=np.int64),
        segments=np.array([(g, recv) for g in gs], dtype=np.int64).reshape(-1, 2),
        color=GHOST_COLOR,
        width=2.0,
        dashed=True,
        label=f"could also match recv {r}:{s} (exact test)",
        z=4,
    )


def exact_race_overlay(m: ModelManager, race: ExactRace) -> Overlay:
    """An exact race: the receive ringed, a ghost line from the send that could have matched it."""
    recv = m.gidx(race.rank, race.recv)
    s1, s2 = m.gidx(*race.s1), m.gidx(*race.s2)
    return Overlay(
        highlight=np.array([recv, s1, s2], dtype=np.int64),
        segments=np.array([(s2, recv)], dtype=np.int64),
        color=GHOST_COLOR,
        width=2.5,
        dashed=True,
        label=f"exact race: {race.s2[0]}:{race.s2[1]} could match recv {race.rank}:{race.recv}",
        z=5,
    )


def confirmed_overlay(m: ModelManager, race: Race) -> Overlay:
    """A green ring on the first receive of a classifier race that the exact test confirms."""
    return Overlay(
        highlight=np.array([m.gidx(race.rank, race.recvs[0])], dtype=np.int64),
        color=CONFIRMED_COLOR,
        width=2.0,
        label="✓ confirmed by the exact test",
        z=6,
    )


def race_tags(m: ModelManager, race: Race) -> set[int]:
    """Tags of a race: its receives' tag arguments and its messages' tags (wildcards left out)."""
    tags = set()
    for s in race.recvs:
        tags.add(int(m.c_tag[m.gidx(race.rank, s)]))
    for msg in race.messages:
        if msg is not None:
            tags.add(int(m.c_tag[m.gidx(*msg)]))
    tags.discard(-1)
    return tags


CSV_FIELDS = (
    "id",
    "method",
    "scope",
    "rank",
    "comm",
    "recv1",
    "recv2",
    "situation",
    "verdict",
    "consumption",
    "message1",
    "message2",
    "site1",
    "site2",
)


def _key(k: tuple[int, int] | None) -> str:
    return "" if k is None else f"{k[0]}:{k[1]}"


def races_csv(races: list[Race], exact: Sequence[ExactRace] = ()) -> str:
    """The race list as CSV (one header line, one line per race; exact races,
    Cypher and Leu's, after the classifier's: receive, message and conflicting send)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(CSV_FIELDS)
    for r in races:
        w.writerow(
            [
                r.id,
                "classifier",
                r.scope,
                r.rank,
                r.comm,
                r.recvs[0],
                r.recvs[1],
                r.situation,
                r.verdict,
                r.consumption,
                _key(r.messages[0]),
                _key(r.messages[1]),
                r.sites[0] or "",
                r.sites[1] or "",
            ]
        )
    for e in exact:
        w.writerow(["", "exact", "", e.rank, "", e.recv, "", "", "legitimate", "",
                    _key(e.s1), _key(e.s2), "", ""])
    return out.getvalue()


def races_json(races: list[Race], exact: Sequence[ExactRace] = ()) -> str:
    """The race list as JSON: ``{"races": [entry, ...]}`` with the spec's report entries
    (the classifier's, then the exact test's)."""
    entries = [{"id": r.id, **r.to_report()} for r in races] + [e.to_report() for e in exact]
    return json.dumps({"races": entries}, indent=1)
