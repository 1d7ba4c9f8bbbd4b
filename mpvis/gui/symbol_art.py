"""Pixmaps of the diagram's symbols, drawn once from :mod:`mpvis.scene.symbols`."""

from __future__ import annotations

import math

from PySide6 import QtCore, QtGui

from mpvis.scene.symbols import SymbolSpec

#: Opacity of a faded symbol (outside a cone, ...).
FADED_OPACITY = 0.18


def _polygon(points: list[tuple[float, float]]) -> QtGui.QPolygonF:
    return QtGui.QPolygonF([QtCore.QPointF(x, y) for x, y in points])


def shape_path(shape: str, size: float) -> QtGui.QPainterPath:
    """The outline of a named shape, centred on (0, 0), ``size`` pixels across."""
    h = size / 2.0
    p = QtGui.QPainterPath()
    if shape == "circle":
        p.addEllipse(QtCore.QPointF(0, 0), h * 0.8, h * 0.8)
    elif shape == "dot":
        p.addEllipse(QtCore.QPointF(0, 0), h * 0.6, h * 0.6)
    elif shape in ("square", "square_x"):
        p.addRect(QtCore.QRectF(-h * 0.75, -h * 0.75, h * 1.5, h * 1.5))
        if shape == "square_x":
            p.moveTo(-h * 0.75, -h * 0.75)
            p.lineTo(h * 0.75, h * 0.75)
            p.moveTo(-h * 0.75, h * 0.75)
            p.lineTo(h * 0.75, -h * 0.75)
    elif shape == "diamond":
        p.addPolygon(_polygon([(0, -h), (h, 0), (0, h), (-h, 0), (0, -h)]))
    elif shape == "tri_down":
        p.addPolygon(_polygon([(-h, -h * 0.7), (h, -h * 0.7), (0, h * 0.9), (-h, -h * 0.7)]))
    elif shape in ("tri_right", "tri_right_bar"):
        p.addPolygon(_polygon([(-h * 0.7, -h), (h * 0.9, 0), (-h * 0.7, h), (-h * 0.7, -h)]))
        if shape == "tri_right_bar":
            p.addRect(QtCore.QRectF(h * 0.9, -h, h * 0.2, 2 * h))
    elif shape == "star":
        pts = []
        for i in range(11):
            r = h if i % 2 == 0 else h * 0.45
            a = math.pi / 5 * i - math.pi / 2
            pts.append((r * math.cos(a), r * math.sin(a)))
        p.addPolygon(_polygon(pts))
    elif shape == "hex":
        pts = [(h * math.cos(math.pi / 3 * i), h * math.sin(math.pi / 3 * i)) for i in range(7)]
        p.addPolygon(_polygon(pts))
    elif shape == "bar":
        p.addRect(QtCore.QRectF(-h * 0.25, -h, h * 0.5, 2 * h))
    elif shape == "end_bar":
        p.addRect(QtCore.QRectF(-h * 0.2, -h, h * 0.4, 2 * h))
        p.addRect(QtCore.QRectF(-h * 0.2, -h, h * 0.9, h * 0.4))
    elif shape == "ring":
        p.addEllipse(QtCore.QPointF(0, 0), h * 0.85, h * 0.85)
    elif shape == "cross":
        w = h * 0.3
        p.addPolygon(
            _polygon(
                [
                    (-h, -h + w),
                    (-h + w, -h),
                    (0, -w),
                    (h - w, -h),
                    (h, -h + w),
                    (w, 0),
                    (h, h - w),
                    (h - w, h),
                    (0, w),
                    (-h + w, h),
                    (-h, h - w),
                    (-w, 0),
                    (-h, -h + w),
                ]
            )
        )
    elif shape == "octagon":
        pts = [
            (h * math.cos(math.pi / 8 * (2 * i + 1)), h * math.sin(math.pi / 8 * (2 * i + 1)))
            for i in range(9)
        ]
        p.addPolygon(_polygon(pts))
        p.addRect(QtCore.QRectF(-h * 0.55, -h * 0.14, h * 1.1, h * 0.28))
    elif shape == "pause":
        p.addRect(QtCore.QRectF(-h * 0.7, -h, h * 0.5, 2 * h))
        p.addRect(QtCore.QRectF(h * 0.2, -h, h * 0.5, 2 * h))
    else:
        raise ValueError(f"unknown symbol shape {shape!r}")
    return p


def draw_symbol(
    painter: QtGui.QPainter, spec: SymbolSpec, center: QtCore.QPointF, opacity: float = 1.0
) -> None:
    """Draw one symbol with ``painter`` (used for pixmaps and the legend)."""
    painter.save()
    painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, True)
    painter.setOpacity(opacity)
    painter.translate(center)
    pen = QtGui.QPen(QtGui.QColor(spec.outline))
    pen.setWidthF(1.6 if spec.fill is None else 1.0)
    painter.setPen(pen)
    if spec.fill is None:
        painter.setBrush(QtGui.QBrush(QtGui.QColor("white")))
    else:
        painter.setBrush(QtGui.QBrush(QtGui.QColor(spec.fill)))
    painter.drawPath(shape_path(spec.shape, spec.size))
    painter.restore()


def symbol_pixmap(spec: SymbolSpec, opacity: float = 1.0) -> QtGui.QPixmap:
    """A transparent pixmap holding one symbol, centred, with a pixel of margin."""
    side = spec.size + 4
    pm = QtGui.QPixmap(side, side)
    pm.fill(QtCore.Qt.GlobalColor.transparent)
    painter = QtGui.QPainter(pm)
    draw_symbol(painter, spec, QtCore.QPointF(side / 2.0, side / 2.0), opacity)
    painter.end()
    return pm


def ring_pixmap(color: str, size: int, width: float = 2.5) -> QtGui.QPixmap:
    """A hollow ring, for highlighting events."""
    return (
        symbol_pixmap(SymbolSpec("ring", "", "ring", None, color, size))
        if width <= 0
        else (_ring(color, size, width))
    )


def _ring(color: str, size: int, width: float) -> QtGui.QPixmap:
    side = size + 4
    pm = QtGui.QPixmap(side, side)
    pm.fill(QtCore.Qt.GlobalColor.transparent)
    painter = QtGui.QPainter(pm)
    painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, True)
    pen = QtGui.QPen(QtGui.QColor(color))
    pen.setWidthF(width)
    painter.setPen(pen)
    painter.setBrush(QtCore.Qt.BrushStyle.NoBrush)
    painter.drawEllipse(
        QtCore.QPointF(side / 2, side / 2), size / 2 - width / 2, size / 2 - width / 2
    )
    painter.end()
    return pm
