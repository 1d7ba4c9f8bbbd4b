"""The window a user trusts (issue 14): tests of the window's behaviour, offscreen."""

from __future__ import annotations

from mpvis.collector.rendezvous import discover, rendezvous_path


def test_an_invisible_window_does_not_advertise_itself(qtbot) -> None:  # type: ignore[no-untyped-def]
    from mpvis.gui.app import is_visible_platform, open_live_window

    win, live = open_live_window()
    qtbot.addWidget(win)
    try:
        assert not is_visible_platform()  # offscreen
        assert live.central.address is not None
        assert not rendezvous_path().exists() and discover() is None
    finally:
        live.stop()
