"""A registry of dock panels, so other modules add panels without editing the window.

A panel is a widget made by a factory from the :class:`~mpvis.gui.window.MainWindow`
(which offers ``model``, ``diagram`` and the signals ``model_replaced``,
``model_updated(ModelChange)`` and ``event_selected(int)``).  Every window made
after :func:`register_panel` gets a dock for it and a toggle in *View > Panels*;
:meth:`MainWindow.add_panel` adds one to an existing window.

Example (a deadlock panel)::

    from mpvis.gui.panels import register_panel

    def make(window):
        w = DeadlockPanel(window.diagram)
        window.model_replaced.connect(w.reset)
        window.model_updated.connect(w.on_change)
        return w

    register_panel("deadlocks", "Deadlocks", make, area="bottom")
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from PySide6 import QtCore

Area = Literal["left", "right", "bottom", "top"]
#: Where Qt docks a panel of each area.
DOCK_AREAS: dict[Area, QtCore.Qt.DockWidgetArea] = {
    "left": QtCore.Qt.DockWidgetArea.LeftDockWidgetArea,
    "right": QtCore.Qt.DockWidgetArea.RightDockWidgetArea,
    "bottom": QtCore.Qt.DockWidgetArea.BottomDockWidgetArea,
    "top": QtCore.Qt.DockWidgetArea.TopDockWidgetArea,
}


@dataclass(frozen=True)
class PanelSpec:
    """A registered panel: its id, dock title, factory, dock area and initial visibility."""

    name: str
    title: str
    factory: Callable[[Any], Any]
    area: Area = "right"
    visible: bool = True


_REGISTRY: dict[str, PanelSpec] = {}


def register_panel(
    name: str,
    title: str,
    factory: Callable[[Any], Any],
    *,
    area: Area = "right",
    visible: bool = True,
) -> None:
    """Register (or replace) the panel ``name``; ``factory(window)`` returns its QWidget."""
    _REGISTRY[name] = PanelSpec(name, title, factory, area, visible)


def unregister_panel(name: str) -> None:
    """Forget panel ``name`` (windows already open keep theirs)."""
    _REGISTRY.pop(name, None)


def registered_panels() -> list[PanelSpec]:
    """Registered panels, in registration order."""
    return list(_REGISTRY.values())
