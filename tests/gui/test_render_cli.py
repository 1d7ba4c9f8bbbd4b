"""``mpvis render``: an image of the expected size that is not blank."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6 import QtGui

from mpvis.cli.main import main
from mpvis.gui.race_settings import RaceSettings
from mpvis.protocol.records import make_header
from mpvis.sim.api import simulate

pytestmark = pytest.mark.gui


def _trace(tmp_path: Path) -> Path:
    header, recs = simulate("showcase", 0)
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in [header, *recs]) + "\n")
    return p


@pytest.mark.parametrize("logical", [False, True])
def test_render_png_size_and_content(tmp_path: Path, logical: bool) -> None:
    out = tmp_path / "d.png"
    argv = ["render", str(_trace(tmp_path)), "-o", str(out), "--size", "900x500"]
    assert main([*argv, "--logical"] if logical else argv) == 0
    img = QtGui.QImage(str(out))
    assert (img.width(), img.height()) == (900, 500)
    colors = {img.pixel(x, y) for x in range(0, 900, 7) for y in range(0, 500, 7)}
    assert len(colors) > 10  # symbols, lines and labels: not a blank image


def test_render_rejects_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(make_header(2)) + "\nnot json\n")
    assert main(["render", str(bad), "-o", str(tmp_path / "x.png")]) == 2
    assert "bad.jsonl:2: line is not valid JSON" in capsys.readouterr().err


def test_settings_file_roundtrip(tmp_path: Path) -> None:
    header = {"program": "python my prog.py"}
    s = RaceSettings.load(header, tmp_path)
    s.muted_tags.add(7)
    s.intended.add("x")
    s.save()
    again = RaceSettings.load(header, tmp_path)
    assert again.muted_tags == {7} and again.intended == {"x"}
    assert again.path is not None and again.path.name == "python_my_prog.py.json"
