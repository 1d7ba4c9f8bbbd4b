"""The classifier over arrays (what the race tracker runs) against its
line-for-line scalar form (section 3.2's pseudo-code, section 3.1's check),
element by element, and the tracker's rows as views."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.model import classifier as C
from mpvis.model.manager import ModelManager

# small domains so that equal pids and tags (and wildcards) are frequent
PID = st.integers(min_value=-1, max_value=2)
TAG = st.integers(min_value=-1, max_value=2)
MSG = st.one_of(st.none(), st.tuples(st.integers(0, 2), st.integers(0, 2)))
PAIR = st.tuples(PID, TAG, PID, TAG, MSG, MSG, st.one_of(st.none(), st.booleans()))


@settings(max_examples=300, deadline=None)
@given(st.lists(PAIR, min_size=1, max_size=40))
def test_arrays_equal_the_scalar_classifier(pairs: list[tuple]) -> None:  # type: ignore[type-arg]
    src1, tag1, src2, tag2 = (np.array([p[k] for p in pairs]) for k in range(4))
    has1 = np.array([p[4] is not None for p in pairs])
    has2 = np.array([p[5] is not None for p in pairs])
    m1pid, m1tag = (np.array([p[4][k] if p[4] else 99 for p in pairs]) for k in (0, 1))
    m2pid, m2tag = (np.array([p[5][k] if p[5] else 98 for p in pairs]) for k in (0, 1))
    decided = np.array([p[6] is not None for p in pairs])
    before = np.array([bool(p[6]) for p in pairs])
    sits = C.situations(src1, tag1, src2, tag2)
    pots = C.potential_races(src1, tag1, src2, tag2, has1, m1pid, m1tag, has2, m2tag)
    codes = C.verdicts(has1, m1pid, has2, m2pid, decided=decided, before=before)
    for i, (s1, t1, s2, t2, m1, m2, hb) in enumerate(pairs):
        assert sits[i] == C.situation(s1, t1, s2, t2)
        assert pots[i] == C.potential_race(s1, t1, s2, t2, cons1=m1, cons2=m2)
        want = C.verdict(m1[0] if m1 else None, m2[0] if m2 else None, hb)
        assert C.VERDICTS[codes[i]] == want


def test_a_race_is_a_view_of_its_row() -> None:
    """The tracker gives one object per race id (the GUI keys races by identity),
    and that object shows the row as it is now."""
    h = {"kind": "header", "format": "mpvis-trace", "version": 1, "nprocs": 3}
    m = ModelManager(h)
    m.add_batch([
        {"rank": 0, "seq": 0, "kind": "send", "dest": 1, "tag": 1, "blocking": True,
         "sync": False},
        {"rank": 1, "seq": 0, "kind": "recv", "src": -1, "tag": -1, "blocking": True},
        {"rank": 1, "seq": 1, "kind": "consume", "recv": 0, "src": 0, "tag": 1, "send": [0, 0]},
        {"rank": 1, "seq": 2, "kind": "recv", "src": -1, "tag": -1, "blocking": True},
    ])
    (race,) = m.potential_races()
    assert race is m.races.races[0] is m.potential_races()[0]
    assert (race.id, race.rank, race.recvs, race.situation, race.consumption) == (
        0, 1, (0, 2), 16, "RCR-")
    assert race.messages == ((0, 0), None) and race.verdict == "unverified"
    m.add_batch([
        {"rank": 2, "seq": 0, "kind": "send", "dest": 1, "tag": 1, "blocking": True,
         "sync": False},
        {"rank": 1, "seq": 3, "kind": "consume", "recv": 2, "src": 2, "tag": 1, "send": [2, 0]},
    ])
    assert race.as_tuple()[6:10] == ("legitimate", ((0, 0), (2, 0)), (1, 3), True)
    assert list(m.races.races) == [race] and m.races.races[-1] is race
    assert race == m.races.races[0:1][0] and race.to_report()["consumption"] == "RCRC"
