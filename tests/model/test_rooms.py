"""The model's rooms own their state (issue 18): no module of the model reads
or writes another object's private attributes, and the facade's public
objects are the rooms' own (one copy of each fact)."""

from __future__ import annotations

import ast
from pathlib import Path

from mpvis.model.manager import ModelManager
from mpvis.protocol.records import make_header

MODEL = Path(__file__).resolve().parents[2] / "mpvis" / "model"


def _foreign_private(path: Path) -> list[str]:
    """``x._name`` where ``x`` is not ``self`` or ``cls`` (dunders allowed)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))):
            out.append(f"{path.name}:{node.lineno}: .{node.attr}")
    return out


def test_no_model_module_touches_another_objects_private_attributes() -> None:
    found = [hit for p in sorted(MODEL.glob("*.py")) for hit in _foreign_private(p)]
    assert found == []


def test_the_facade_shows_the_rooms_own_objects() -> None:
    m = ModelManager(make_header(3))
    assert m.c_rank is m.store.c_rank and m.by_rank is m.store.by_rank
    assert m.extras is m.store.extras and m.sites is m.store.sites
    assert m.done is m.causal.done and m.clocks is m.causal.clocks
    assert m.finished is m.rules.finished and m.dead is m.rules.dead
    assert m.lost_sends is m.rules.lost_sends
    assert m.rules.colls is m.colls is m.causal.colls
    assert m.causal.analyzers is m.analyzers
    assert not m.input_ended
    m.finish()
    assert m.input_ended and m.causal.input_ended
