"""The *Messages between ranks* panel: who sent to whom in the visible time range.

Zoomed out, message lines are too many to draw one by one; this panel shows
them aggregated, as a rank-to-rank matrix (sender rows, receiver columns) of
the messages whose send lies in the diagram's visible ``x`` range
(:func:`mpvis.scene.density.message_matrix`), darker for more messages (log
scale); folded rank groups (:mod:`mpvis.gui.rank_folding`) are summed
(:func:`mpvis.scene.density.fold_matrix`).  It follows the diagram's view,
at most every :data:`REFRESH_MS`.  Hidden by default: *View > Panels*.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from PySide6 import QtCore, QtGui, QtWidgets

from mpvis.gui.panels import register_panel
from mpvis.scene.density import fold_matrix, message_matrix

__all__ = ["MessageMatrixPanel", "matrix_image"]

#: The panel recomputes at most this often while the view moves (ms).
REFRESH_MS = 250
#: Side of the drawn matrix in pixels.
SIDE_PX = 260


def matrix_image(matrix: np.ndarray) -> QtGui.QImage:
    """The matrix as a grey-scale image, one pixel per cell: white 0, black the most."""
    m = np.asarray(matrix, dtype=np.float64)
    top = np.log1p(m.max()) if m.size and m.max() > 0 else 1.0
    grey = (255 - np.rint(255 * np.log1p(m) / top)).astype(np.uint8)
    grey = np.ascontiguousarray(grey)
    h, w = grey.shape if grey.ndim == 2 else (0, 0)
    image = QtGui.QImage(grey.data, w, h, w, QtGui.QImage.Format.Format_Grayscale8)
    return image.copy()


class MessageMatrixPanel(QtWidgets.QWidget):
    """The matrix of the window's diagram, refreshed as its view changes."""

    def __init__(self, window: Any) -> None:
        super().__init__()
        self.main = window  # the MainWindow (QWidget.window() is taken)
        self.matrix = np.zeros((0, 0), dtype=np.int64)
        self._title = QtWidgets.QLabel("no trace")
        self._title.setWordWrap(True)
        self._image = QtWidgets.QLabel()
        self._image.setMinimumSize(SIDE_PX, SIDE_PX)
        self._image.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
        lay = QtWidgets.QVBoxLayout(self)
        lay.addWidget(self._title)
        lay.addWidget(self._image, 1)
        self._timer = QtCore.QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(REFRESH_MS)
        self._timer.timeout.connect(self.refresh)
        window.diagram.view_changed.connect(self._timer.start)
        window.model_replaced.connect(lambda *_: self._timer.start())

    def refresh(self) -> None:
        """Recompute the matrix of the diagram's visible range (if the panel is shown)."""
        view = self.main.diagram
        lay = view.layout_
        if lay is None or lay.count == 0:
            self.matrix = np.zeros((0, 0), dtype=np.int64)
            self._title.setText("no trace")
            self._image.clear()
            return
        if not self.isVisible():
            return
        vp = view.data_viewport()
        full = message_matrix(lay, view.logical, vp.x0, vp.x1)
        rows = view.density_rows
        if rows is not None:  # folded groups: one row and column per group
            leaders = sorted({int(r) for r in rows if r >= 0})
            group = np.array([leaders.index(int(r)) if r >= 0 else -1 for r in rows])
            full = fold_matrix(full, group, len(leaders))
        self.matrix = full
        n = int(full.sum())
        self._title.setText(
            f"{n:,} messages sent in the visible range: sender rows (top: first row), "
            "receiver columns, darker for more (log scale)")
        pix = QtGui.QPixmap.fromImage(matrix_image(full)).scaled(
            SIDE_PX, SIDE_PX, QtCore.Qt.AspectRatioMode.KeepAspectRatio,
            QtCore.Qt.TransformationMode.FastTransformation)
        self._image.setPixmap(pix)

    def showEvent(self, ev: QtGui.QShowEvent) -> None:
        super().showEvent(ev)
        self._timer.start()


register_panel("messages", "Messages between ranks", MessageMatrixPanel, area="right",
               visible=False)
