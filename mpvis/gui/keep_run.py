"""Never lose a run (issue 14, item 5): save, stop, and a question before quitting.

A live run is journaled by the window's central process in a temporary
directory that goes away with the window.  So:

* *File > Save trace as…* (Ctrl+S) copies the shown run (its journal, or the
  opened trace file) where the user says (:func:`save_trace_as`);
* *File > Stop the run* asks the launcher of the run in progress to stop its
  program (:meth:`mpvis.collector.central.CentralProcess.request_halt`): a
  hung run ends like after Ctrl-C in its terminal, every record kept;
* closing the window with a live run not saved asks first
  (:func:`confirm_close`): *Save…*, *Discard* or *Cancel*;
* the deadlocks the window proves in a live run are also printed by the
  ``mpvis run`` that streams it (:func:`relay_deadlocks`).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from PySide6 import QtGui, QtWidgets

from mpvis.gui.window_api import WindowApi

__all__ = [
    "add_run_actions", "confirm_close", "relay_deadlocks", "save_trace_as", "unsaved_run",
]

SAVE_FILTER = "Traces (*.jsonl);;All files (*)"


def shown_file(win: WindowApi) -> Path | None:
    """The file holding the shown run: the live journal, or the opened trace."""
    if win.journal is not None:
        return win.journal
    if win.live_run is None and win.source and Path(win.source).is_file():
        return Path(win.source)
    return None


def unsaved_run(win: WindowApi) -> bool:
    """Is a live run shown whose journal was not saved since it last grew?"""
    return (win.journal is not None and win.model is not None and win.model.event_count > 0
            and win.saved_events != win.model.event_count)


def save_trace_as(win: WindowApi, path: str | Path) -> bool:
    """Copy the shown run to ``path``; say in the status bar what happened."""
    src = shown_file(win)
    if src is None:
        win.show_message("nothing to save: no run or trace is shown", error=True)
        return False
    try:  # the journal is flushed at every batch (mpvis.collector.journal)
        shutil.copyfile(src, path)
    except OSError as exc:
        win.show_message(f"cannot save the trace to {path}: {exc}", error=True)
        return False
    win.saved_events = win.model.event_count if win.model is not None else 0
    win.statusBar().showMessage(f"trace saved to {path}", 10000)
    return True


def _ask_save(win: WindowApi) -> bool:
    path, _ = QtWidgets.QFileDialog.getSaveFileName(win, "Save trace as", "run.jsonl", SAVE_FILTER)
    return bool(path) and save_trace_as(win, path)


def confirm_close(win: WindowApi) -> bool:
    """May the window close now?  With a live run not saved: no, and a
    non-modal question appears (*Save…*, *Discard*, *Cancel*); *Save…* (once
    saved) and *Discard* then close the window.  Non-modal, so that nothing
    else (a test, the event loop of a run streaming in) waits on it."""
    if win.close_confirmed or not unsaved_run(win):
        return True
    box = win.findChild(QtWidgets.QMessageBox, "unsavedRun")
    if box is None:
        box = QtWidgets.QMessageBox(win)
        box.setObjectName("unsavedRun")
        box.setModal(False)
        box.setIcon(QtWidgets.QMessageBox.Icon.Warning)
        box.setWindowTitle("Unsaved run")
        box.setText("The live run shown is kept only while this window is open.")
        box.setInformativeText("Save its trace before closing?")
        buttons = QtWidgets.QMessageBox.StandardButton
        box.setStandardButtons(buttons.Save | buttons.Discard | buttons.Cancel)
        box.setDefaultButton(buttons.Save)
        box.buttonClicked.connect(lambda b: _answered(win, box.standardButton(b)))
    box.show()
    box.raise_()
    return False


def _answered(win: WindowApi, choice: QtWidgets.QMessageBox.StandardButton) -> None:
    buttons = QtWidgets.QMessageBox.StandardButton
    if choice == buttons.Discard or (choice == buttons.Save and _ask_save(win)):
        win.close_confirmed = True
        win.close()


def stop_run(win: WindowApi) -> bool:
    """File > Stop the run: ask the live run's launcher to stop its program."""
    live = win.live
    m = win.model
    if live is None or m is None or m.input_ended or win.journal is None:
        win.statusBar().showMessage("no live run to stop", 5000)
        return False
    live.central.request_halt()
    win.statusBar().showMessage("asked the run to stop (its records are kept)", 10000)
    return True


def relay_deadlocks(win: WindowApi, told: set[str]) -> None:
    """Send each new deadlock of the live run to its launcher's terminal once
    (``told``: the reasons sent so far)."""
    a, live, m = win.analyses, win.live, win.model
    if a is None or a.deadlock is None or live is None or m is None or win.journal is None:
        return
    for d in a.deadlock.deadlocks:
        if d.reason not in told:
            told.add(d.reason)
            live.central.tell_run(
                f"the window found a deadlock ({d.kind}, ranks "
                f"{', '.join(map(str, d.ranks))}): {d.reason}")


def add_run_actions(win: WindowApi, menu: QtWidgets.QMenu) -> None:
    """File menu entries: Save trace as…, Stop the run."""
    save = QtGui.QAction("&Save trace as…", win)
    save.setShortcut(QtGui.QKeySequence("Ctrl+S"))
    save.triggered.connect(lambda: _ask_save(win))
    stop = QtGui.QAction("S&top the run", win)
    stop.setShortcut(QtGui.QKeySequence("Ctrl+."))
    stop.setToolTip("Stop the live run's program, like Ctrl-C in its terminal (records kept)")
    stop.triggered.connect(lambda: stop_run(win))
    menu.addAction(save)
    menu.addAction(stop)
