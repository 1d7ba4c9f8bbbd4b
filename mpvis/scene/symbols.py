"""Symbol classes of the space-time diagram, and their look (Qt-free data).

MPVisualizer (``mpvisualizer-race-detection.txt`` section 2): "every kind of
communication event has its own graphical symbol drawn over the line-segment
of the corresponding process".  :func:`classify` refines the model's event
kinds into *symbol classes* so that a blocking, a nonblocking and a
synchronous send look different, and wildcard receives stand out: a
``recv(-1,-1)`` (the receive whose non-adjacent races are computed on demand,
section 3.2) gets the largest, reddest symbol of the diagram.

The GUI turns each :class:`SymbolSpec` into one pre-rendered pixmap; shapes
are named here and drawn in :mod:`mpvis.gui.symbol_art`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from mpvis.protocol import records as rec_kinds
from mpvis.protocol.codes import F_BLOCKING, F_SYNC

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class SymbolSpec:
    """How one symbol class looks: a shape name, a fill, an outline, a size in pixels."""

    name: str
    label: str
    shape: str  # circle, square, diamond, tri_up, tri_down, tri_right, star, bar, cross, ...
    fill: str | None  # None: hollow
    outline: str
    size: int


#: Symbol classes in drawing order: later classes are drawn on top.
SYMBOLS: Final[tuple[SymbolSpec, ...]] = (
    SymbolSpec("state", "state (variables)", "dot", "#9e9e9e", "#616161", 6),
    SymbolSpec("wait", "wait (requests complete)", "bar", "#795548", "#4e342e", 10),
    SymbolSpec("lock", "lock requested", "square", None, "#6a1b9a", 9),
    SymbolSpec("locked", "lock acquired", "square", "#8e24aa", "#4a148c", 9),
    SymbolSpec("unlock", "unlock", "square_x", None, "#6a1b9a", 9),
    SymbolSpec("coll", "collective: enter", "hex", "#26a69a", "#00695c", 10),
    SymbolSpec("coll_exit", "collective: exit", "hex", None, "#00695c", 10),
    SymbolSpec("send_blocking", "send (blocking)", "tri_right", "#1e88e5", "#0d47a1", 11),
    SymbolSpec("send_nonblocking", "isend (nonblocking)", "tri_right", None, "#1e88e5", 11),
    SymbolSpec("send_sync", "ssend (synchronous)", "tri_right_bar", "#0d47a1", "#002171", 12),
    SymbolSpec("consume", "consume (message delivered)", "circle", "#43a047", "#1b5e20", 9),
    SymbolSpec("recv_blocking", "recv (blocking)", "tri_down", "#7cb342", "#33691e", 11),
    SymbolSpec("recv_nonblocking", "irecv (nonblocking)", "tri_down", None, "#558b2f", 11),
    SymbolSpec("recv_wild", "recv with one wildcard (-1)", "diamond", "#ffa000", "#e65100", 12),
    SymbolSpec("recv_any", "recv(-1,-1): click for its races", "star", "#e53935", "#7f0000", 17),
    SymbolSpec("final", "final (normal end)", "end_bar", "#212121", "#000000", 14),
)
CODE: Final[dict[str, int]] = {s.name: i for i, s in enumerate(SYMBOLS)}
N_SYMBOLS: Final = len(SYMBOLS)

_K = rec_kinds.KIND_CODE
#: Default symbol class of each event kind code (sends and receives refined below).
_BY_KIND = np.zeros(len(rec_kinds.EVENT_KINDS), dtype=np.int8)
for _kind, _sym in (
    (rec_kinds.SEND, "send_blocking"),
    (rec_kinds.RECV, "recv_blocking"),
    (rec_kinds.CONSUME, "consume"),
    (rec_kinds.WAIT, "wait"),
    (rec_kinds.COLL, "coll"),
    (rec_kinds.COLL_EXIT, "coll_exit"),
    (rec_kinds.LOCK, "lock"),
    (rec_kinds.LOCKED, "locked"),
    (rec_kinds.UNLOCK, "unlock"),
    (rec_kinds.STATE, "state"),
    (rec_kinds.FINAL, "final"),
    (rec_kinds.WAITING, "wait"),
):
    _BY_KIND[_K[_kind]] = CODE[_sym]


def classify(
    kind: npt.NDArray[Any],
    flags: npt.NDArray[Any],
    peer: npt.NDArray[Any],
    tag: npt.NDArray[Any],
) -> npt.NDArray[np.int8]:
    """Symbol class of each event, from the model's columns (vectorised).

    ``flags`` are the model's (:data:`~mpvis.protocol.codes.F_BLOCKING`,
    ``F_SYNC``); ``peer`` is the receive's source (-1: any), ``tag`` its tag (-1: any).
    """
    out = _BY_KIND[np.asarray(kind, dtype=np.intp)].copy()
    send = kind == _K[rec_kinds.SEND]
    recv = kind == _K[rec_kinds.RECV]
    blocking = (flags & F_BLOCKING) != 0
    out[send & ~blocking] = CODE["send_nonblocking"]
    out[send & ((flags & F_SYNC) != 0)] = CODE["send_sync"]
    out[recv & ~blocking] = CODE["recv_nonblocking"]
    wild_src, wild_tag = peer == -1, tag == -1
    out[recv & (wild_src ^ wild_tag)] = CODE["recv_wild"]
    out[recv & wild_src & wild_tag] = CODE["recv_any"]
    return out


#: Markers of a rank's end state, drawn where the rank stopped.
SUSPENDED_COLOR: Final = "#ff6f00"
DEAD_COLOR: Final = "#b71c1c"
MESSAGE_COLOR: Final = "#546e7a"
UNCONSUMED_COLOR: Final = "#d81b60"
PROCESS_LINE_COLOR: Final = "#90a4ae"
