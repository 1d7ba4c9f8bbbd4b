"""The predicate panel: editing, values on the cone's frontier, cuts, saving."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import json
from pathlib import Path

import pytest

from mpvis.analysis.predicates import (
    PredicateEvaluator,
    detect_conjunctive,
    detect_disjunctive,
    parse_definition,
)
from mpvis.gui import cones_overlay
from mpvis.gui.predicate_panel import CUT, PredicatePanel, settings_path  # registers the panel
from mpvis.gui.window import MainWindow
from tests.fixtures import simulated_model

pytestmark = pytest.mark.gui


@pytest.fixture
def window(qtbot: object, tmp_path: Path) -> MainWindow:
    w = MainWindow(settings_dir=tmp_path)
    qtbot.addWidget(w)  # type: ignore[attr-defined]
    w.set_model(simulated_model("master_worker"), "master_worker")
    return w


def panel_of(w: MainWindow) -> PredicatePanel:
    found = w.findChild(PredicatePanel)
    assert isinstance(found, PredicatePanel), "the panel registers itself on import"
    return found


def cells(table: object, col: int) -> list[str]:
    return [table.item(i, col).text() for i in range(table.rowCount())]  # type: ignore[attr-defined]


def test_syntax_errors_are_shown_not_raised(window: MainWindow) -> None:
    p = panel_of(window)
    msg = p.add_local("bad", 0, "x > ")
    assert msg is not None and "column 5" in msg
    assert p.message.text() == msg
    assert p.add_local("far", 99, "x > 1") is not None
    assert p.add_global("g", "conj", ["nope"]) is not None
    assert p.local_table.rowCount() == 0


def test_values_at_the_frontier_follow_the_cone(window: MainWindow) -> None:
    p = panel_of(window)
    m = window.model
    assert m is not None
    assert p.add_local("a", 0, "done >= 1") is None
    assert p.add_local("b", 3, 'phase == "idle"') is None
    assert p.add_local("c", 0, "kind == 'consume'") is None
    assert p.add_global("both", "conj", ["a", "b"]) is None
    assert p.add_global("either", "disj", ["a", "c"]) is None
    ctl = cones_overlay.install(window)
    ev = PredicateEvaluator(m)
    preds = [
        parse_definition(t)
        for t in ("a=0:done >= 1", 'b=3:phase == "idle"', "c=0:kind == 'consume'")
    ]
    for r, s in ((3, 12), (0, 40), (7, 30)):
        ctl.show(m.gidx(r, s), past=True)
        want = ev.values_at(preds, ctl.cone.past)  # type: ignore[union-attr]
        local, glob = p.values()
        assert local == want
        assert glob == {"both": want["a"] and want["b"], "either": want["a"] or want["c"]}
        shown = cells(p.local_table, 3)
        assert [x.split()[0] for x in shown] == [
            "true" if want[n] else "false" for n in ("a", "b", "c")
        ]
        assert f"{r}:{s}" in p.cone_label.text()
    ctl.clear()
    assert p.values() == ({}, {})
    assert cells(p.global_table, 2) == ["-", "-"]


def test_find_draws_the_least_cut(window: MainWindow) -> None:
    p = panel_of(window)
    m = window.model
    assert m is not None
    p.add_local("a", 0, "done >= 2")
    p.add_local("b", 3, 'phase == "idle"')
    p.add_global("both", "conj", ["a", "b"])
    p.add_global("either", "disj", ["a", "b"])
    ev = PredicateEvaluator(m)
    a, b = parse_definition("a=0:done >= 2"), parse_definition('b=3:phase == "idle"')
    cut = p.find_cut("both")
    assert cut == detect_conjunctive(ev, [a, b])
    assert cut is not None
    ov = window.diagram.overlays()[CUT]
    assert set(ov.highlight.tolist()) == {m.gidx(r, k - 1) for r, k in enumerate(cut) if k}
    assert str(list(cut)) in p.message.text()
    assert p.find_cut("either") == detect_disjunctive(ev, [a, b]).cut
    p.add_local("never", 1, "x > 1000000")
    assert p.find_cut("never") is None
    assert CUT not in window.diagram.overlays()
    assert "no consistent cut" in p.message.text()


def test_predicates_are_saved_per_program(
    window: MainWindow, tmp_path: Path, qtbot: object
) -> None:
    p = panel_of(window)
    p.add_local("a", 0, "done >= 2")
    p.add_local("b", 3, "x > 1")
    p.add_global("both", "conj", ["a", "b"])
    m = window.model
    assert m is not None
    path = settings_path(m.header, tmp_path)
    saved = json.loads(path.read_text())
    assert [d["name"] for d in saved["local"]] == ["a", "b"]
    other = MainWindow(settings_dir=tmp_path)
    qtbot.addWidget(other)  # type: ignore[attr-defined]
    other.set_model(simulated_model("master_worker"), "again")
    q = panel_of(other)
    assert cells(q.local_table, 0) == ["a", "b"]
    assert cells(q.global_table, 1) == ["a and b"]
    q.remove("b")
    assert cells(q.global_table, 0) == []
    assert [d["name"] for d in json.loads(path.read_text())["local"]] == ["a"]
