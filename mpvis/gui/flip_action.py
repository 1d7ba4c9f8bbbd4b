"""Flip a recorded race from the window (re-execution mode, issue 8).

When the run shown was recorded (``mpvis run -n N --record DIR``: its header
names the record directory, the program and its working directory),
right-clicking a receive of a recorded race offers *Replay with this race
flipped*: ``mpvis replay DIR --flip RANK:SEQ --no-stream -- PROGRAM`` runs in
the background (Netzer and Miller's replay, everything before the race kept as
recorded) and a dialog shows the recorded and the flipped run side by side:
what each rank consumed, in order, and whether the results differ.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from PySide6 import QtCore, QtGui, QtWidgets

from mpvis.instrument.record_file import RecordError, read_record
from mpvis.protocol import records as rec_kinds

_RECV = rec_kinds.KIND_CODE[rec_kinds.RECV]


class FlipController(QtCore.QObject):
    """Offers the flip of recorded races and runs it (see the module docstring)."""

    def __init__(self, window: Any) -> None:
        super().__init__(window)
        self.window = window
        self._races: dict[str, set[tuple[int, int]]] = {}
        self.process: QtCore.QProcess | None = None
        self.dialog: QtWidgets.QDialog | None = None

    def _recorded(self) -> tuple[dict[str, Any], set[tuple[int, int]]] | None:
        m = self.window.model
        header = m.header if m is not None else {}
        directory, argv = header.get("record"), header.get("argv")
        if not isinstance(directory, str) or not isinstance(argv, list) or not argv:
            return None
        if directory not in self._races:
            try:
                records = read_record(Path(directory))
            except (RecordError, OSError):
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
        if m is None or g < 0 or m.c_kind[g] != _RECV or self.process is not None:
            return False
        found = self._recorded()
        return found is not None and (int(m.c_rank[g]), int(m.c_seq[g])) in found[1]

    def flip(self, g: int) -> None:
        """Replay the recorded run with the race of receive ``g`` flipped."""
        found = self._recorded()
        m = self.window.model
        if found is None or m is None:
            return
        header = found[0]
        which = f"{int(m.c_rank[g])}:{int(m.c_seq[g])}"
        proc = QtCore.QProcess(self)
        proc.setProcessChannelMode(QtCore.QProcess.ProcessChannelMode.MergedChannels)
        if isinstance(header.get("cwd"), str):
            proc.setWorkingDirectory(header["cwd"])
        proc.finished.connect(lambda *_: self._done(which))
        self.process = proc
        self.window.statusBar().showMessage(f"replaying with the race of receive {which} flipped…")
        proc.start(sys.executable, ["-m", "mpvis", "replay", header["record"], "--flip", which,
                                    "--no-stream", "--", *map(str, header["argv"])])

    def _done(self, which: str) -> None:
        proc, self.process = self.process, None
        if proc is None:
            return
        text = bytes(proc.readAll().data()).decode(errors="replace")
        self.window.statusBar().showMessage(f"flip of {which}: replay finished", 8000)
        dlg = QtWidgets.QDialog(self.window)
        dlg.setWindowTitle(f"Race of receive {which} flipped: recorded run beside the new one")
        box = QtWidgets.QPlainTextEdit(text)
        box.setReadOnly(True)
        box.setFont(QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont))
        buttons = QtWidgets.QDialogButtonBox(QtWidgets.QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(dlg.reject)
        lay = QtWidgets.QVBoxLayout(dlg)
        lay.addWidget(box)
        lay.addWidget(buttons)
        dlg.resize(760, 420)
        dlg.show()
        self.dialog = dlg


def install(window: Any) -> FlipController:
    """The window's flip controller, with its context-menu entry."""
    ctl = FlipController(window)
    window.diagram.add_event_action("Replay with this race flipped", ctl.flip, ctl.can_flip)
    return ctl
