"""The window's menus and toolbar: File, View, Help."""

from __future__ import annotations

from PySide6 import QtGui, QtWidgets

from mpvis.gui.export import export_png, export_races, export_svg
from mpvis.gui.export_trace import add_trace_exports
from mpvis.gui.goto_box import GotoBox
from mpvis.gui.keep_run import add_run_actions
from mpvis.gui.window_api import WindowApi
from mpvis.scene.vocabulary import glossary_html

TRACE_FILTER = "Traces (*.jsonl *.jsonl.gz *.jsonl.zst *.json *.otf2);;All files (*)"


def _action(
    win: WindowApi,
    menu: QtWidgets.QMenu,
    text: str,
    slot: object,
    shortcut: str | None = None,
    *,
    checkable: bool = False,
) -> QtGui.QAction:
    act = QtGui.QAction(text, win)
    if shortcut:
        act.setShortcut(QtGui.QKeySequence(shortcut))
    act.setCheckable(checkable)
    act.triggered.connect(slot)
    menu.addAction(act)
    return act


def build_menus(win: WindowApi) -> None:
    """Create the menu bar and toolbar of ``win`` (actions stored on it as ``act_*``)."""
    bar = win.menuBar()
    f = bar.addMenu("&File")
    _action(win, f, "&Open trace…", lambda: _open(win), "Ctrl+O")
    add_run_actions(win, f)  # Save trace as…, Stop the run (mpvis.gui.keep_run)
    f.addSeparator()
    _action(win, f, "Export view as &PNG…", lambda: _export_view(win, "png"), "Ctrl+E")
    _action(win, f, "Export view as &SVG…", lambda: _export_view(win, "svg"))
    _action(win, f, "Export races as &CSV…", lambda: _export_races(win, "csv"))
    _action(win, f, "Export races as &JSON…", lambda: _export_races(win, "json"))
    add_trace_exports(win, f)  # Perfetto and OTF2 (mpvis.gui.export_trace)
    f.addSeparator()
    _action(win, f, "&Quit", win.close, "Ctrl+Q")
    v = bar.addMenu("&View")
    d = win.diagram
    win.act_fit = _action(win, v, "&Fit all", d.fit_all, "Home")
    win.act_logical = _action(
        win,
        v,
        "&Logical layout (happened-before)",
        lambda on: d.set_logical(bool(on)),
        "L",
        checkable=True,
    )
    win.act_follow = _action(
        win, v, "Follow &newest events", lambda on: _follow(win, bool(on)), "End", checkable=True
    )
    win.act_follow.setChecked(True)
    _action(win, v, "Zoom to &ranks…", lambda: _zoom_ranks(win), "R")
    _action(win, v, "&Processes (hide, reorder)…", lambda: _processes(win), "P")
    v.addSeparator()
    win.panels_menu = v.addMenu("Panels")
    for dock in win.docks.values():
        win.panels_menu.addAction(dock.toggleViewAction())
    h = bar.addMenu("&Help")
    _action(win, h, "&Keys and mouse", lambda: win.show_message(HELP))
    _action(win, h, "&Glossary (situations, verdicts, notation)", lambda: show_glossary(win),
            "F1")
    tb = win.addToolBar("View")
    tb.setObjectName("toolbar-view")
    for act in (win.act_fit, win.act_logical, win.act_follow):
        if act is not None:
            tb.addAction(act)
    win.goto = GotoBox(win)
    tb.addWidget(win.goto)


HELP = (
    "Mouse: the wheel zooms time (Ctrl+wheel: the ranks), drag pans, Shift+drag zooms into "
    "a box, right-drag zooms an axis; hover an event for a summary, click it for its "
    "details, right-click for more.\n"
    "Keys: + / - zoom, arrows pan, Home fits all, End follows the newest events, "
    "L toggles the logical layout, R zooms to ranks, P hides or reorders processes, "
    "Ctrl+G goes to an event (rank:seq), a rank or a site, Escape closes the race pop-up.\n"
    "A red star is a recv(ANY_SOURCE, ANY_TAG): clicking it lists, selects and draws its "
    "races."
)


def show_glossary(win: WindowApi) -> QtWidgets.QDialog:
    """Help > Glossary: the words of :mod:`mpvis.scene.vocabulary`, non-modal."""
    dlg = getattr(win, "glossary", None)
    if not isinstance(dlg, QtWidgets.QDialog):
        dlg = QtWidgets.QDialog(win)
        dlg.setWindowTitle("mpvis glossary")
        text = QtWidgets.QTextBrowser(dlg)
        text.setHtml(glossary_html())
        QtWidgets.QVBoxLayout(dlg).addWidget(text)
        dlg.resize(640, 560)
        win.glossary = dlg
    dlg.show()
    dlg.raise_()
    return dlg


def _follow(win: WindowApi, on: bool) -> None:
    win.diagram.follow = on
    if on:
        win.diagram.data_changed()


def _open(win: WindowApi) -> None:
    path, _ = QtWidgets.QFileDialog.getOpenFileName(win, "Open trace", "", TRACE_FILTER)
    if path:
        win.open_trace(path)


def _export_view(win: WindowApi, kind: str) -> None:
    path, _ = QtWidgets.QFileDialog.getSaveFileName(
        win, "Export view", f"diagram.{kind}", f"{kind.upper()} (*.{kind})"
    )
    if path:
        target = win.centralWidget()
        assert target is not None
        (export_png if kind == "png" else export_svg)(target, path)
        win.statusBar().showMessage(f"wrote {path}", 8000)


def _export_races(win: WindowApi, kind: str) -> None:
    path, _ = QtWidgets.QFileDialog.getSaveFileName(
        win, "Export races", f"races.{kind}", f"{kind.upper()} (*.{kind})"
    )
    if path:
        export_races(win.races.all_races(), path, win.races.exact_races())
        win.statusBar().showMessage(f"wrote {path}", 8000)


def _zoom_ranks(win: WindowApi) -> None:
    text, ok = QtWidgets.QInputDialog.getText(win, "Zoom to ranks", "Rows (e.g. 4-7):")
    if ok and text.strip():
        a, _, b = text.partition("-")
        try:
            lo, hi = int(a), int(b or a)
        except ValueError:
            return
        win.diagram.zoom_to_ranks(min(lo, hi), max(lo, hi))


def _processes(win: WindowApi) -> None:
    lay = win.diagram.layout_
    if lay is None:
        return
    dlg = QtWidgets.QDialog(win)
    dlg.setWindowTitle("Processes: untick to hide, drag to reorder")
    lst = QtWidgets.QListWidget()
    lst.setDragDropMode(QtWidgets.QAbstractItemView.DragDropMode.InternalMove)
    order = sorted(range(lay.nprocs), key=lambda r: (lay.rows[r] < 0, lay.rows[r], r))
    for r in order:
        item = QtWidgets.QListWidgetItem(f"rank {r}")
        item.setData(256, r)
        item.setCheckState(
            QtGui.Qt.CheckState.Unchecked if lay.rows[r] < 0 else QtGui.Qt.CheckState.Checked
        )
        lst.addItem(item)
    buttons = QtWidgets.QDialogButtonBox(
        QtWidgets.QDialogButtonBox.StandardButton.Ok
        | QtWidgets.QDialogButtonBox.StandardButton.Cancel
    )
    buttons.accepted.connect(dlg.accept)
    buttons.rejected.connect(dlg.reject)
    box = QtWidgets.QVBoxLayout(dlg)
    box.addWidget(lst)
    box.addWidget(buttons)
    if dlg.exec() == QtWidgets.QDialog.DialogCode.Accepted:
        items = [lst.item(i) for i in range(lst.count())]
        new = [int(it.data(256)) for it in items]
        hidden = {
            int(it.data(256)) for it in items if it.checkState() != QtGui.Qt.CheckState.Checked
        }
        win.diagram.set_rank_order(new, hidden)
        win.overview.refresh()
