"""Where two runs part ways (issue 14, item 6)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.analysis.divergence import first_divergence, signature
from tests.fixtures import simulated_model


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(st.sampled_from(["wildcard_race", "master_worker", "false_race"]),
       st.integers(0, 30), st.integers(0, 30))
def test_first_divergence_is_the_first_differing_event(name: str, s1: int, s2: int) -> None:
    a, b = simulated_model(name, s1), simulated_model(name, s2)
    got = first_divergence(a, b)
    for r in range(a.nprocs):
        sa = [signature(a.record(r, s)) for s in range(a.count(r))]
        sb = [signature(b.record(r, s)) for s in range(b.count(r))]
        if sa == sb:
            assert r not in got
        else:
            k = got[r]
            assert sa[:k] == sb[:k] and (k >= min(len(sa), len(sb)) or sa[k] != sb[k])
    assert first_divergence(a, a) == {}
