"""The store's extras held compactly (mpvis.model.extras.Extras) against a dict of dicts.

A wait's ``{"reqs": [int, ...]}`` is held in arrays and rebuilt when read; every
other extra is held as it came.  Random extras (requests lists of every shape,
with bools, huge ints and other fields mixed in), added in index order with
gaps, then truncated: every way of reading answers as the plain dict would.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.model.extras import Extras
from mpvis.model.manager import ModelManager
from mpvis.protocol.records import make_header

_REQ = st.one_of(st.integers(-5, 5), st.integers(-(2**70), 2**70), st.booleans())
_EXTRA = st.one_of(
    st.builds(lambda r: {"reqs": r}, st.lists(st.integers(-(2**63), 2**63 - 1), max_size=4)),
    st.builds(lambda r: {"reqs": r}, st.lists(_REQ, max_size=4)),
    st.builds(lambda r, m: {"reqs": r, "mode": m}, st.lists(st.integers(0, 3), max_size=2),
              st.sampled_from(["all", "any"])),
    st.builds(lambda m: {"mode": m}, st.sampled_from(["buffered", "ready"])),
    st.builds(lambda o: {"op": o, "root": 0}, st.sampled_from(["bcast", "reduce"])),
)


def _same(ex: Extras, ref: dict[int, dict[str, Any]], probe: list[int]) -> None:
    assert len(ex) == len(ref)
    assert list(ex) == sorted(ref)
    assert dict(ex.items()) == ref
    for g in probe:
        assert (g in ex) == (g in ref)
        assert ex.get(g) == ref.get(g)
    assert ex.get_many(probe) == [ref.get(g, {}) for g in probe]
    for name, value in (("mode", "buffered"), ("reqs", [1])):
        assert ex.with_field(name, value) == sorted(
            g for g, e in ref.items() if name in e and e[name] == value)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 3), _EXTRA), max_size=30), st.integers(0, 100))
def test_compact_extras_read_as_a_dict_of_dicts(steps: list[tuple[int, dict[str, Any]]],
                                                cut: int) -> None:
    ex, ref = Extras(), {}
    g = -1
    for gap, extra in steps:
        g += gap
        ex.add(g, extra)
        ref[g] = extra
    probe = list(range(-1, g + 3))
    _same(ex, ref, probe)
    ex.truncate(cut)
    ref = {k: v for k, v in ref.items() if k < cut}
    _same(ex, ref, probe)
    ex.add(max([cut, *ref]) + 1, {"reqs": [7, 8]})  # adding goes on after a cut
    ref[max([cut, *ref]) + 1] = {"reqs": [7, 8]}
    _same(ex, ref, probe)


def test_waits_requests_are_arrays_and_records_unchanged() -> None:
    records = [
        {"rank": 0, "seq": 0, "kind": "send", "dest": 1, "tag": 0, "blocking": False,
         "sync": False, "req": 4},
        {"rank": 0, "seq": 1, "kind": "wait", "reqs": [4]},
        {"rank": 0, "seq": 2, "kind": "final"},
    ]
    m = ModelManager(make_header(2))
    m.add_batch(records)
    m.finish()
    assert m.store.extras.plain() == {}  # the wait's requests are held as arrays
    wg, off, req = m.store.extras.wait_buffers()
    assert (list(wg), list(off), list(req)) == ([1], [0, 1], [4])
    for s, rec in enumerate(records):
        got = m.record(0, s)
        assert got == rec and [type(v) for v in got.values()] == [type(v) for v in rec.values()]


_ONE_STRING = st.builds(lambda k, v: {k: v}, st.sampled_from(["func", "op", "reqs"]),
                        st.sampled_from(["main", "work", "barrier"]))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(1, 3), st.one_of(_EXTRA, _ONE_STRING)),
                         max_size=12), max_size=4),
       st.integers(0, 3))
def test_add_many_is_add_one_by_one(batches: list[list[tuple[int, dict[str, Any]]]],
                                    limit: int) -> None:
    """A batch added at once holds what adding each extra does (the oracle, with
    the store's sharing rule by hand): same answers, same wait arrays, the same
    dicts shared."""
    fast, slow = Extras(), Extras()
    share: dict[tuple[str, Any], dict[str, Any]] = {}
    held: dict[tuple[str, Any], dict[str, Any]] = {}
    ref: dict[int, dict[str, Any]] = {}
    g = -1
    for batch in batches:
        gids, extras = [], []
        for gap, extra in batch:
            g += gap
            gids.append(g)
            extras.append(extra)
            ref[g] = extra
            if len(extra) == 1 and type(v := next(iter(extra.values()))) is str:
                key = (next(iter(extra)), v)
                extra = held.get(key, extra)
                if key not in held and len(held) < limit:
                    held[key] = extra
            slow.add(g, extra)
        fast.add_many(gids, extras, share, limit)
    probe = list(range(-1, g + 3))
    _same(fast, ref, probe)
    assert [tuple(b) for b in fast.wait_buffers()] == [tuple(b) for b in slow.wait_buffers()]
    assert fast.plain() == slow.plain()
    assert all(fast.plain()[k] is v for k, v in slow.plain().items())
    assert share == held and all(share[k] is v for k, v in held.items())
