"""The report's exact entries and ``confirmed`` flags, read from the detector's own
conflict keys, equal those built from :class:`ExactRace` objects."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.analysis.pipeline import Analyses
from tests.analysis.exec_generator import generate


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 10**9))
def test_entries_and_confirmed_flags_equal_the_object_path(seed: int) -> None:
    records = generate(seed, max_procs=4, max_messages=14)
    a = Analyses.for_header(records[0])
    a.model.add_batch([dict(r) for r in records[1:]])
    a.model.finish()
    assert a.exact is not None
    races = a.exact.races
    rep = a.report()
    assert [e for e in rep["races"] if e["method"] == "exact"] == [r.to_report() for r in races]
    found = {(r.rank, r.recv, r.s1, r.s2) for r in races}
    for e in rep["races"]:
        if e["method"] == "classifier":
            m1, m2 = e["messages"]
            want = (m1 is not None and m2 is not None
                    and (e["rank"], e["recvs"][0], tuple(m1), tuple(m2)) in found)
            assert e["confirmed"] == want
    # the --all-conflicts path (a list of ExactRace) gives the same report
    assert a.report(conflicts=races) == rep
