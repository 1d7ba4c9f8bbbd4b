"""A model grown in steps, with its layout brought up to date after each."""

from __future__ import annotations

from collections.abc import Iterator

from mpvis.model.manager import ModelManager
from mpvis.protocol.record_types import Record
from mpvis.scene.layout import Layout


def grow(m: ModelManager, lay: Layout, recs: list[Record], cuts: list[int]) -> Iterator[None]:
    """Add ``recs`` to ``m`` in steps of ``cuts`` records (then the rest),
    finishing the model with the step that adds the last record (no step after
    it); yields after each step, once ``lay`` has taken it in
    (:meth:`Layout.update`)."""
    at = 0
    for cut in [*cuts, len(recs)]:
        m.add_batch(recs[at:at + cut])
        at += cut
        if at >= len(recs):
            m.finish()
        lay.update()
        yield
        if at >= len(recs):
            return
