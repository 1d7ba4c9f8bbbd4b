"""One error hierarchy: every exception class mpvis defines derives from
MpvisError (private control-flow signals and cancellation excepted), and no
two share a name."""

from __future__ import annotations

import ast
import functools
import importlib
from collections import Counter
from pathlib import Path

import pytest

from mpvis.errors import MpvisError

ROOT = Path(__file__).parent.parent / "mpvis"
#: Not errors: a load the user cancelled (the window stops quietly).
NOT_ERRORS = {"LoadCancelled"}


@functools.cache
def _exception_classes() -> list[tuple[str, str]]:
    """(module, class) of every top-level class in mpvis that is an exception."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        module = ".".join(rel.parts).removesuffix(".__init__")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.bases and any(
                    isinstance(b, ast.Name) and (b.id.endswith(("Error", "Exception", "Missing"))
                                                 or b.id in ("CorruptFile", "TruncatedFile"))
                    for b in node.bases):
                found.append((module, node.name))
    return found


def test_every_error_is_an_mpvis_error() -> None:
    classes = _exception_classes()
    assert len(classes) >= 20
    if any(m.startswith("mpvis.gui") for m, _ in classes):
        pytest.importorskip("PySide6")
    wrong = []
    for module, name in classes:
        cls = getattr(importlib.import_module(module), name)
        assert issubclass(cls, BaseException), (module, name)
        if name.startswith("_") or name in NOT_ERRORS:
            continue
        if not issubclass(cls, MpvisError):
            wrong.append(f"{module}.{name}")
    assert wrong == []


def test_one_meaning_per_name() -> None:
    # private ones too: two private classes of one name were one meaning written twice
    names = Counter(name for _, name in _exception_classes())
    assert [n for n, k in names.items() if k > 1] == []
