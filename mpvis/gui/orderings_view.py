"""POEG subgroups on the diagram, and a race's orderings explored from the window (issue 17).

*Shade POEG subgroups* (right-click any event, or View > POEG subgroups)
decomposes the run's POEG (Schaeli et al.; :mod:`mpvis.analysis.poeg_decompose`)
and shades, along each rank's line, each subgroup of its events in
alternating colours, with the number of orderings it admits written above it
when there is more than one.  The status bar gives the totals before and after
decomposition.

*Explore its orderings* (right-click a receive of a recorded race, in a run
recorded with ``mpvis run --record``) asks first (the program comes from
the trace's header, as for a flip), then runs ``mpvis explore --from-record
... --receive RANK:SEQ`` in the background: every other order of that
receive's subgroup is replayed and compared with an exact replay of the
recording.  A dialog lists the orders that change the outcome, and the first
one's run opens in a second window placed beside this one.
"""

from __future__ import annotations

import json
import sys
import tempfile
from typing import Any

import numpy as np
from PySide6 import QtCore, QtGui, QtWidgets

from mpvis.analysis.linext import CountLimitError, approx
from mpvis.analysis.poeg import PoegError, poeg_of
from mpvis.analysis.poeg_decompose import Decomposition, decompose
from mpvis.gui.bands import RankBands
from mpvis.gui.diagram import DiagramView
from mpvis.gui.flip_action import FlipController
from mpvis.gui.keep_run import shown_file
from mpvis.model.manager import ModelManager

SHADES = ("#6a1b9a", "#00897b")
#: Downsets the window's count may visit (about a second here): it runs on the GUI thread.
GUI_COUNT_LIMIT = 200_000
#: Narrowest band (pixels) that gets its count written above it.
LABEL_MIN_WIDTH = 14.0


class SubgroupBands(RankBands):
    """One band per subgroup: ``rank``, first and last event (global indices), count."""

    def __init__(self, diagram: DiagramView) -> None:
        super().__init__(diagram)
        self._brushes = []
        for color in SHADES:
            c = QtGui.QColor(color)
            c.setAlpha(55)
            self._brushes.append(QtGui.QBrush(c))
        self.counts: list[int] = []

    def set_groups(self, rank: list[int], first: list[int], last: list[int],
                   counts: list[int]) -> None:
        self.counts = list(counts)
        self.set_bands(rank, first, last)

    def rects(self) -> tuple[np.ndarray, np.ndarray]:
        """Bands as ``(k, 4)`` rows ``x0, y0, x1, y1`` (data coordinates) and the
        subgroup each row draws."""
        return self.bands()

    def paint(self, painter: QtGui.QPainter, *args: Any) -> None:
        r, idx = self.rects()
        if not len(r):
            return
        placed = [(rect, int(i)) for rect, i in zip(self.on_screen(painter, r), idx, strict=True)]
        painter.save()
        painter.resetTransform()
        painter.setPen(QtCore.Qt.PenStyle.NoPen)
        for parity, brush in enumerate(self._brushes):
            painter.setBrush(brush)
            painter.drawRects([rect for rect, i in placed if i % 2 == parity])
        painter.setPen(QtGui.QColor("#333333"))
        flags = int(QtCore.Qt.AlignmentFlag.AlignHCenter | QtCore.Qt.AlignmentFlag.AlignTop)
        for rect, i in placed:
            n = self.counts[i]
            if n > 1 and rect.width() >= LABEL_MIN_WIDTH:
                painter.drawText(rect.adjusted(0, -14, 0, 0), flags, _short(n))
        painter.restore()


def _short(n: int) -> str:
    return str(n) if n < 10**6 else approx(n, 2)


class OrderingsController(QtCore.QObject):
    """The subgroup shading and the exploration of a race (module docstring)."""

    def __init__(self, window: Any) -> None:
        super().__init__(window)
        self.window = window
        self.shown = False
        self.decomposition: Decomposition | None = None
        self.bands = SubgroupBands(window.diagram)
        self.bands.setZValue(-2.2)  # under the cones' bands and the process lines
        window.diagram.getPlotItem().addItem(self.bands, ignoreBounds=True)
        window.diagram.view_changed.connect(self.bands.layout_changed)
        window.model_replaced.connect(self.set_model)
        self.process: QtCore.QProcess | None = None
        self.dialog: QtWidgets.QDialog | None = None
        self.result: dict[str, Any] | None = None
        self.beside: Any = None  # the window showing a differing run
        self.toggle = QtGui.QAction("POEG subgroups", self)
        self.toggle.setCheckable(True)
        self.toggle.toggled.connect(self.show_subgroups)

    # ------------------------------------------------------------ subgroups
    def set_model(self, model: ModelManager | None) -> None:
        self.decomposition = None
        self.bands.set_groups([], [], [], [])
        if self.shown and model is not None:
            self.show_subgroups(True)

    def show_subgroups(self, on: bool) -> None:
        """Shade (or stop shading) each rank's subgroups with their counts."""
        self.shown = bool(on)
        if self.toggle.isChecked() != self.shown:
            self.toggle.setChecked(self.shown)
        m = self.window.model
        if not on or m is None:
            self.bands.set_groups([], [], [], [])
            return
        try:
            d = self.decomposition = decompose(poeg_of(m), limit=GUI_COUNT_LIMIT)
        except (PoegError, CountLimitError) as exc:
            self.window.statusBar().showMessage(f"POEG subgroups: {exc}", 8000)
            return
        rank, first, last, counts = [], [], [], []
        for part in d.ranks:
            for g in part.subgroups:
                rank.append(part.rank)
                first.append(m.gidx(part.rank, g.events[0]))
                last.append(m.gidx(part.rank, g.events[-1]))
                counts.append(g.orderings)
        self.bands.set_groups(rank, first, last, counts)
        total = "not counted" if d.orderings is None else _short(d.orderings)
        self.window.statusBar().showMessage(
            f"POEG: {total} orderings; after process partitioning {_short(d.after_process)}, "
            f"after subgroup partitioning {_short(d.after_subgroups)}", 15000)

    # ------------------------------------------------------------ exploring
    def _flips(self) -> FlipController | None:
        found = self.window.findChild(FlipController)
        return found if isinstance(found, FlipController) else None

    def can_explore(self, g: int) -> bool:
        """A receive of a recorded race, while no exploration runs."""
        flips = self._flips()
        return self.process is None and flips is not None and flips.can_flip(g)

    def explore(self, g: int) -> None:
        """Explore the orderings of the subgroup of receive ``g`` (module docstring)."""
        m = self.window.model
        trace = shown_file(self.window)  # the live run's journal, or the opened trace
        if m is None or trace is None or not self.can_explore(g):
            return
        header = m.header
        event = m.event_at(g)
        which = f"{event.rank}:{event.seq}"
        workdir = tempfile.mkdtemp(prefix="mpvis-explore-")
        command = [sys.executable, "-m", "mpvis", "explore", "-n", str(m.nprocs),
                   "--from-record", header["record"], "--trace", str(trace),
                   "--receive", which, "--json", "--workdir", workdir, "--",
                   *map(str, header["argv"])]
        cwd = header["cwd"] if isinstance(header.get("cwd"), str) else None
        flips = self._flips()
        if flips is None:
            return
        # The program comes from the trace's header: ask first, as a flip does.
        flips._confirm(command, cwd, lambda: self._start(command, cwd, which))
        if flips.confirmation is not None:
            flips.confirmation.setText(
                "Exploring the orderings of this race runs the program named in this trace "
                "file, once per order. Run it only if you trust the file.")

    def _start(self, command: list[str], cwd: str | None, which: str) -> None:
        proc = QtCore.QProcess(self)
        if cwd is not None:
            proc.setWorkingDirectory(cwd)
        proc.finished.connect(lambda *_: self._done(which))
        self.process = proc
        self.window.statusBar().showMessage(f"exploring the orderings of receive {which}…")
        proc.start(command[0], command[1:])

    def _done(self, which: str) -> None:
        proc, self.process = self.process, None
        if proc is None:
            return
        out = bytes(proc.readAllStandardOutput().data()).decode(errors="replace")
        err = bytes(proc.readAllStandardError().data()).decode(errors="replace")
        try:
            self.result = json.loads(out)
        except ValueError:
            self.result = None
        text = _describe(self.result) if self.result is not None else err.strip()
        self.window.statusBar().showMessage(f"orderings of {which} explored", 8000)
        self._show(f"Orderings of receive {which}", text)
        diffs = (self.result or {}).get("differences") or []
        if diffs:
            self._open_beside(diffs[0])

    def _show(self, title: str, text: str) -> None:
        dlg = QtWidgets.QDialog(self.window)
        dlg.setWindowTitle(title)
        box = QtWidgets.QPlainTextEdit(text)
        box.setReadOnly(True)
        box.setFont(QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont))
        buttons = QtWidgets.QDialogButtonBox(QtWidgets.QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(dlg.reject)
        lay = QtWidgets.QVBoxLayout(dlg)
        lay.addWidget(box)
        lay.addWidget(buttons)
        dlg.resize(760, 360)
        dlg.show()
        self.dialog = dlg

    def _open_beside(self, diff: dict[str, Any]) -> None:
        """The differing run in a second window, to the right of this one."""
        # a window of the class of the one this controller serves (the window
        # module imports this one, so this one does not import it: no cycle)
        win = type(self.window)()
        win.setWindowTitle(f"mpvis: order {diff['order']} (differs from the recording)")
        geo = self.window.frameGeometry()
        win.resize(self.window.size())
        win.move(geo.right() + 1, geo.top())
        win.show()
        win.open_trace(diff["trace"])
        self.beside = win


def _describe(result: dict[str, Any]) -> str:
    lines = [f"orders of the subgroup: {result['orderings_after_decomposition']:,}; "
             f"runs made: {result['runs']} (the reference replay included)"]
    for u in result.get("unrealised") or []:
        lines.append(f"order {u['order']} could not be forced")
    diffs = result.get("differences") or []
    if not diffs:
        lines.append("no order changed the outcome: the race looks harmless")
    for d in diffs:
        lines.append(f"order {d['order']} changes the outcome:")
        lines += [f"    {w}" for w in d["what"]]
        lines.append(f"  replay it: {d['replay']}")
    return "\n".join(lines)


def install(window: Any) -> OrderingsController:
    """The window's orderings controller, with its context-menu entries and View item."""
    ctl = OrderingsController(window)
    d = window.diagram
    d.add_event_action("Shade POEG subgroups", lambda g: ctl.show_subgroups(not ctl.shown))
    d.add_event_action("Explore its orderings", ctl.explore, ctl.can_explore)
    for act in window.menuBar().actions():
        menu = act.menu()
        if menu is not None and act.text().replace("&", "") == "View":
            menu.addAction(ctl.toggle)
            break
    return ctl
