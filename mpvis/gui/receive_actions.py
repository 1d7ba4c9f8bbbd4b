"""What the window shows of one wildcard receive, on request.

Two entries of the diagram's event menu, installed by :func:`install`:

* *Races of this recv(-1,-1)*: :func:`show_nonadjacent` computes the
  receive's non-adjacent receive pairs (MPVisualizer's classifier over every
  later receive, not only the next one) and lists them in the race panel; a
  click on such a receive does the same (:func:`is_any_recv`).
* *Conflicting sends (exact)*: :func:`show_conflicting_sends` draws dashed
  ghost lines from every send the exact test (Cypher and Leu) says could have
  matched the receive instead, reading the run's records again (the trace file,
  or the model's records rebuilt for a live run).

Typed against :class:`~mpvis.gui.window_api.WindowApi`: this module does not
import the window.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from PySide6 import QtCore, QtWidgets

from mpvis.analysis.exact_offline import conflicting_sends
from mpvis.gui.window_api import WindowApi
from mpvis.model.races import Race
from mpvis.model.record_batch import rank_records
from mpvis.protocol import records as rec_kinds
from mpvis.protocol.record_types import Record
from mpvis.scene.race_marks import ghost_overlay
from mpvis.scene.symbols import CODE as SYMBOL_CODE
from mpvis.tracefile.reader import TraceFileError, iter_records

__all__ = ["install", "is_any_recv", "show_conflicting_sends", "show_nonadjacent"]

_ANY_RECV = SYMBOL_CODE["recv_any"]


def install(win: WindowApi) -> None:
    """Add both entries to the diagram's event menu."""
    d = win.diagram
    d.add_event_action("Races of this recv(-1,-1)", lambda g: show_nonadjacent(win, g),
                       lambda g: is_any_recv(win, g))
    d.add_event_action("Conflicting sends (exact)", lambda g: show_conflicting_sends(win, g),
                       lambda g: _is_wild_source_recv(win, g))


def is_any_recv(win: WindowApi, g: int) -> bool:
    """Event ``g`` is a ``recv(ANY_SOURCE, ANY_TAG)`` of the diagram's layout."""
    lay = win.diagram.layout_
    return lay is not None and 0 <= g < lay.count and int(lay.cls[g]) == _ANY_RECV


def _is_wild_source_recv(win: WindowApi, g: int) -> bool:
    """Event ``g`` is a consumed receive from ``ANY_SOURCE`` (any tag)."""
    m = win.model
    if m is None or not 0 <= g < m.event_count:
        return False
    e = m.event_at(g)
    return e.kind == rec_kinds.RECV and e.peer == -1 and e.consume is not None


def _records(win: WindowApi) -> Iterable[Record]:
    """Every record of the shown run: from the trace file, or rebuilt from the model."""
    m = win.model
    assert m is not None
    if win.live_run is None and win.source and Path(win.source).is_file():
        return (rec for _, rec in iter_records(win.source))
    return (rec for r in range(m.nprocs) for rec in rank_records(m, r))


def show_conflicting_sends(win: WindowApi, g: int) -> list[tuple[int, int]]:
    """Draw dashed ghost lines from every send that could have matched receive
    ``g`` (exact test); returns those sends as ``(rank, seq)``."""
    m = win.model
    if m is None or not _is_wild_source_recv(win, g):
        return []
    r, s = m.event_at(g).key
    QtWidgets.QApplication.setOverrideCursor(QtCore.Qt.CursorShape.WaitCursor)
    try:
        sends = conflicting_sends(_records(win), m.nprocs, r, s)
    except TraceFileError as exc:
        win.show_message(f"cannot read the trace again: {exc}", error=True)
        return []
    finally:
        QtWidgets.QApplication.restoreOverrideCursor()
    win.diagram.set_overlay("ghosts", ghost_overlay(m, g, sends))
    win.statusBar().showMessage(
        f"recv {r}:{s}: {len(sends)} conflicting send(s) by the exact test "
        "(dashed: they could have been matched instead)",
        15000,
    )
    return sends


def show_nonadjacent(win: WindowApi, g: int) -> list[Race]:
    """Compute the non-adjacent races of the ``recv(-1,-1)`` ``g`` and list them."""
    m = win.model
    if m is None or not is_any_recv(win, g):
        return []
    r, s = m.event_at(g).key
    found = m.nonadjacent_races(r, s)
    win.races.add_nonadjacent(found)
    n = sum(x.verdict in ("legitimate", "unverified") for x in found)
    win.statusBar().showMessage(
        f"recv(ANY_SOURCE, ANY_TAG) {r}:{s}: {len(found)} non-adjacent receive pairs, "
        f"{n} of them races (listed in the race panel)",
        15000,
    )
    if found:
        win.docks["races"].show()
        win.docks["races"].raise_()
    return found
