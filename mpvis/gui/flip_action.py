"""Flip a recorded race from the window (re-execution mode, issue 8).

When the run shown was recorded (``mpvis run -n N --record DIR``: its header
names the record directory, the program and its working directory),
right-clicking a receive of a recorded race offers *Replay with this race
flipped*: ``mpvis replay DIR --flip RANK:SEQ --headless --out TRACE -- PROGRAM``
runs in the background (Netzer and Miller's replay, everything before the race
kept as recorded), once the user has confirmed the exact command (the
trace's header names the program: a trace file from elsewhere must not run
anything unasked), and writes the flipped run's trace into the record
directory (``DIR/flip-RANK-SEQ.jsonl``).  A dialog then shows the recorded and
the flipped run as two diagrams side by side, the first event where each rank
diverges ringed in both (:func:`mpvis.analysis.divergence.first_divergence`),
a summary in words and the replay's report below.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import numpy as np
from PySide6 import QtCore, QtGui, QtWidgets

from mpvis.analysis.divergence import first_divergence
from mpvis.gui.diagram import DiagramView
from mpvis.instrument.record_file import ReplayRecordError, read_record
from mpvis.model.manager import ModelManager
from mpvis.protocol import records as rec_kinds
from mpvis.scene.overlay import Overlay
from mpvis.scene.vocabulary import event
from mpvis.tracefile.reader import TraceFileError, load_trace


class FlipController(QtCore.QObject):
    """Offers the flip of recorded races and runs it (see the module docstring)."""

    def __init__(self, window: Any) -> None:
        super().__init__(window)
        self.window = window
        self._races: dict[str, set[tuple[int, int]]] = {}
        self.process: QtCore.QProcess | None = None
        self.dialog: QtWidgets.QDialog | None = None
        #: the flipped run's trace, once written, and its model
        self.flipped_path: Path | None = None
        self.flipped: ModelManager | None = None
        self.views: tuple[DiagramView, DiagramView] | None = None
        self.divergence: dict[int, int] = {}
        #: the question before a flip runs a program, while it is open
        self.confirmation: QtWidgets.QMessageBox | None = None

    def _recorded(self) -> tuple[dict[str, Any], set[tuple[int, int]]] | None:
        m = self.window.model
        header = m.header if m is not None else {}
        directory, argv = header.get("record"), header.get("argv")
        if not isinstance(directory, str) or not isinstance(argv, list) or not argv:
            return None
        if directory not in self._races:
            try:
                records = read_record(Path(directory))
            except (ReplayRecordError, OSError):
                records = []
            self._races[directory] = {
                (rec.rank, s)
                for rec in records
                for e in rec.races
                if e.prev is not None and e.comm == 0
                for s in (e.prev[0], e.recv)
            }
        return header, self._races[directory]

    def can_flip(self, g: int) -> bool:
        """Whether event ``g`` is a receive of a race the record holds."""
        m = self.window.model
        if m is None or g < 0 or self.process is not None:
            return False
        recv = m.event_at(g)
        if recv.kind != rec_kinds.RECV:
            return False
        found = self._recorded()
        return found is not None and recv.key in found[1]

    def flip(self, g: int) -> None:
        """Replay the recorded run with the race of receive ``g`` flipped."""
        found = self._recorded()
        m = self.window.model
        if found is None or m is None:
            return
        header = found[0]
        which = event(*m.event_at(g).key)
        out = Path(header["record"]) / f"flip-{which.replace(':', '-')}.jsonl"
        command = [sys.executable, "-m", "mpvis", "replay", header["record"], "--flip", which,
                   "--headless", "--out", str(out), "--", *map(str, header["argv"])]
        cwd = header["cwd"] if isinstance(header.get("cwd"), str) else None
        self._confirm(command, cwd, lambda: self._start(command, cwd, which, out))

    def _confirm(self, command: list[str], cwd: str | None, go: Any) -> None:
        """Ask before running a program a trace file names (a trace may come from
        anyone: its header decides what runs).  Shows the exact command; runs
        ``go`` only on *Run*.  Non-modal (:attr:`confirmation` while it is open)."""
        box = QtWidgets.QMessageBox(self.window)
        box.setObjectName("flipConfirm")
        box.setIcon(QtWidgets.QMessageBox.Icon.Warning)
        box.setWindowTitle("Run the program this trace names?")
        box.setText("Replaying the race flipped runs the program named in this trace file. "
                    "Run it only if you trust the file.")
        box.setInformativeText(f"Command:\n{shlex.join(command)}\n\n"
                               f"in directory: {cwd or Path.cwd()}")
        run = box.addButton("Run", QtWidgets.QMessageBox.ButtonRole.AcceptRole)
        cancel = box.addButton(QtWidgets.QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(cancel)

        def answered(button: QtWidgets.QAbstractButton) -> None:
            self.confirmation = None
            if button is run:
                go()

        box.buttonClicked.connect(answered)
        self.confirmation = box
        box.open()

    def _start(self, command: list[str], cwd: str | None, which: str, out: Path) -> None:
        proc = QtCore.QProcess(self)
        proc.setProcessChannelMode(QtCore.QProcess.ProcessChannelMode.MergedChannels)
        if cwd is not None:
            proc.setWorkingDirectory(cwd)
        proc.finished.connect(lambda *_: self._done(which))
        self.process = proc
        self.window.statusBar().showMessage(f"replaying with the race of receive {which} flipped…")
        self.flipped_path = out
        proc.start(command[0], command[1:])

    def _done(self, which: str) -> None:
        proc, self.process = self.process, None
        if proc is None:
            return
        text = bytes(proc.readAll().data()).decode(errors="replace")
        self.window.statusBar().showMessage(f"flip of {which}: replay finished", 8000)
        dlg = QtWidgets.QDialog(self.window)
        dlg.setWindowTitle(f"Race of receive {which} flipped: recorded run beside the new one")
        lay = QtWidgets.QVBoxLayout(dlg)
        summary = QtWidgets.QLabel()
        summary.setWordWrap(True)
        summary.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        summary.setObjectName("flipSummary")
        lay.addWidget(summary)
        diagrams = self._diagrams(which)
        if diagrams is not None:
            lay.addWidget(diagrams, 3)
        summary.setText(self._summary(which))
        box = QtWidgets.QPlainTextEdit(text)
        box.setReadOnly(True)
        box.setFont(QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont))
        box.setMaximumHeight(160 if diagrams is not None else 16777215)
        lay.addWidget(box, 1)
        buttons = QtWidgets.QDialogButtonBox(QtWidgets.QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(dlg.reject)
        lay.addWidget(buttons)
        dlg.resize(1200, 760 if diagrams is not None else 420)
        dlg.show()
        if self.views is not None:
            for view in self.views:
                view.fit_all()
        self.dialog = dlg

    def _diagrams(self, which: str) -> QtWidgets.QWidget | None:
        """The recorded and the flipped run side by side, divergences ringed."""
        self.flipped, self.views, self.divergence = None, None, {}
        recorded = self.window.model
        path = self.flipped_path
        if recorded is None or path is None or not path.is_file():
            return None
        try:
            flipped = load_trace(path)
        except (TraceFileError, OSError) as exc:
            self.window.statusBar().showMessage(f"cannot read the flipped run: {exc}", 10000)
            return None
        self.flipped = flipped
        self.divergence = first_divergence(recorded, flipped)
        split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal)
        views = []
        for title, m in (("recorded run", recorded), (f"{which} flipped", flipped)):
            pane = QtWidgets.QWidget()
            box = QtWidgets.QVBoxLayout(pane)
            box.setContentsMargins(0, 0, 0, 0)
            head = QtWidgets.QLabel(f"<b>{title}</b>")
            head.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
            view = DiagramView()
            view.set_model(m)
            marks = [m.gidx(r, s) for r, s in self.divergence.items() if s < m.count(r)]
            rank, seq = (int(x) for x in which.split(":"))
            view.set_overlay("divergence", Overlay(
                highlight=np.array(marks, dtype=np.int64), color="#6a1b9a", width=3.0,
                label="first divergence", z=4))
            if seq < m.count(rank):
                view.set_overlay("flipped", Overlay(
                    highlight=np.array([m.gidx(rank, seq)], dtype=np.int64), color="#e65100",
                    width=2.5, label=f"flipped receive {which}", z=5))
            box.addWidget(head)
            box.addWidget(view, 1)
            split.addWidget(pane)
            views.append(view)
        self.views = (views[0], views[1])
        return split

    def _summary(self, which: str) -> str:
        """The flip in words: what changed and where the trace is."""
        if self.flipped is None:
            return (f"The race of receive {which} was replayed flipped; the flipped run's "
                    "trace could not be read (see the report below).")
        diverged = sorted(self.divergence.items())
        where = ", ".join(event(r, s) for r, s in diverged) or "nowhere"
        same = self.flipped.nprocs - len(diverged)
        return (f"<b>Race of receive {which} flipped.</b> The runs first differ at {where} "
                f"(ringed in purple on both sides); {same} rank{'s' * (same != 1)} did exactly "
                f"the same. The flipped run's trace: <code>{self.flipped_path}</code>")


def install(window: Any) -> FlipController:
    """The window's flip controller, with its context-menu entry."""
    ctl = FlipController(window)
    window.diagram.add_event_action("Replay with this race flipped", ctl.flip, ctl.can_flip)
    return ctl
