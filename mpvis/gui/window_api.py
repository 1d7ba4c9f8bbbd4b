"""What the window's parts may use of the window: :class:`WindowApi`.

The menus (:mod:`mpvis.gui.actions`), the trace exports
(:mod:`mpvis.gui.export_trace`), the *Go to* box (:mod:`mpvis.gui.goto_box`),
saving and stopping a run (:mod:`mpvis.gui.keep_run`), the deadlock panel
(:mod:`mpvis.gui.deadlock_panel`) and the race listing
(:mod:`mpvis.gui.race_listing`) are installed by
:class:`mpvis.gui.window.MainWindow` and act on it.  They are typed against this
base class instead of the window itself, so that the window imports them and
none of them imports the window: no import cycle (the "No import cycles"
contract of ``pyproject.toml`` lists no exception).

The contract: a :class:`WindowApi` is a ``QMainWindow`` (status bar, menu bar,
parent of the parts' actions and dialogs) that also has exactly the attributes
and methods declared here, each documented with what it holds.  Only the two
signals are defined here; the window sets every attribute in its constructor
and overrides both methods.  A part needing more of the window adds it here.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6 import QtCore, QtGui, QtWidgets

if TYPE_CHECKING:
    from mpvis.analysis.pipeline import Analyses
    from mpvis.collector.live_run import LiveRun
    from mpvis.gui.diagram import DiagramView
    from mpvis.gui.live import LiveSession
    from mpvis.gui.loader import TraceLoader
    from mpvis.gui.overview import Overview
    from mpvis.gui.race_panel import RacePanel
    from mpvis.model.manager import ModelManager

__all__ = ["WindowApi"]


class WindowApi(QtWidgets.QMainWindow):
    """The window as its parts see it (see the module docstring)."""

    #: the model shown was replaced (the new ModelManager, or None)
    model_replaced = QtCore.Signal(object)
    #: the deadlock monitor's list may have changed (``analyses.deadlock.deadlocks``)
    deadlocks_changed = QtCore.Signal()

    # --- what is shown
    #: the model shown (None: no trace or run yet)
    model: ModelManager | None
    #: the analyses that built ``model`` (exact races, deadlocks), when there are
    analyses: Analyses | None
    #: the trace file shown, or a live run's description ("" for none)
    source: str
    #: the live run shown (its model and bad records), None for a trace file
    live_run: LiveRun | None
    #: the trace being loaded (shown while it loads once its model exists), if any
    loader: TraceLoader | None
    #: the window's own central process, when it runs one (mpvis.gui.app)
    live: LiveSession | None
    #: the live run's journal (None for an opened trace) and the events saved of it
    journal: Path | None
    saved_events: int
    #: the user chose to close despite an unsaved run
    close_confirmed: bool

    # --- its widgets
    diagram: DiagramView
    overview: Overview
    races: RacePanel
    #: the docked panels by name (``add_panel``)
    docks: dict[str, QtWidgets.QDockWidget]
    #: View > Panels (set by the menus once built)
    panels_menu: QtWidgets.QMenu | None
    act_fit: QtGui.QAction | None
    act_logical: QtGui.QAction | None
    act_follow: QtGui.QAction | None
    #: the toolbar's Go to box
    goto: QtWidgets.QLineEdit | None
    #: Help > Glossary, once opened
    glossary: QtWidgets.QDialog | None

    def show_message(self, text: str, error: bool = False) -> None:
        """A non-blocking message box (and the status bar)."""
        raise NotImplementedError

    def open_trace(self, path: str | Path) -> None:
        """Load the trace at ``path`` in the background and show it."""
        raise NotImplementedError
