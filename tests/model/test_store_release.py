"""``EventStore.release_all_but_sites``: what ``mpvis check`` frees once its report
has read the model, and what the store can still answer afterwards."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mpvis.analysis.race_groups import model_event_sites
from mpvis.tracefile.reader import load_trace

TRACE = Path(__file__).resolve().parents[2] / "sample_traces" / "master_worker.jsonl"


def test_only_the_sites_are_kept_and_they_still_answer() -> None:
    m = load_trace(TRACE)
    store = m.store
    n = m.event_count
    ranks = np.asarray([store.c_rank.data[i] for i in range(n)], dtype=np.int64)
    seqs = np.asarray([store.c_seq.data[i] for i in range(n)], dtype=np.int64)
    before, names = model_event_sites(m)(ranks, seqs)
    names = list(names)
    assert (before >= 0).any()
    freed = store.release_all_but_sites()
    assert freed > 0
    assert len(store.c_site.data) == n
    assert len(store.c_rank.data) == 0 and len(store.c_partner.data) == 0
    after, names_after = model_event_sites(m)(ranks, seqs)
    assert after.tolist() == before.tolist() and list(names_after) == names


def test_a_column_whose_buffer_is_exported_is_left_as_it_is() -> None:
    m = load_trace(TRACE)
    store = m.store
    n = m.event_count
    view = np.frombuffer(store.c_seq.data, dtype=np.int32)  # a NumPy view alive
    store.release_all_but_sites()
    assert len(store.c_seq.data) == n and len(view) == n
    assert len(store.c_rank.data) == 0
