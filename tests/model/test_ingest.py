"""Batch extraction against a plain per-record reference built on ``check_record``.

:func:`mpvis.model.ingest.extract` checks and columns records a group of
records at a time; the reference here does the same job one record after
another, the obvious way, so any difference in the accepted prefix, a column,
the error, its location or the extras is a bug of the fast path.
"""

from __future__ import annotations

import math
from itertools import islice
from typing import Any
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.model import ingest
from mpvis.model.ingest import (
    INT32_COLUMNS,
    INT_COLUMNS,
    Batch,
    SiteTable,
    extract,
    valid_prefix,
)
from mpvis.protocol import records as R
from mpvis.sim.synthetic import generate_records

NPROCS = 4
INT32_MAX = 2**31 - 1
FIELD_OF = {"peer": "dest/src", "ref": "recv", "sseq": "send"}
COMMON_FIELDS = {"rank", "seq", "kind", "t", "site", "comm"}
#: The fields a kind keeps in columns; any other field is an extra (even one
#: named like another kind's column: "blocking" on a final, "send" on a recv).
KIND_FIELDS = {
    "send": COMMON_FIELDS | {"dest", "tag", "blocking", "sync", "req", "size"},
    "recv": COMMON_FIELDS | {"src", "tag", "blocking", "req"},
    "consume": COMMON_FIELDS | {"recv", "src", "tag", "send"},
}


def clamp64(v: int) -> int:
    return min(max(v, -2**63), 2**63 - 1)


def reference(batch: list[Any], nprocs: int, sites: SiteTable, validate: bool
              ) -> dict[str, Any]:
    """What ``extract`` must return, built one record at a time."""
    n, error = len(batch), None
    if validate:
        for i, rec in enumerate(batch):
            try:
                R.check_record(rec, nprocs)
            except R.RecordError as exc:
                n, error = i, str(exc)
                break
    rows: list[dict[str, Any]] = []
    extras: dict[int, dict[str, Any]] = {}
    for i, d in enumerate(batch[:n]):
        own = KIND_FIELDS.get(d["kind"], COMMON_FIELDS)
        if type(d.get("req", 0)) is not int:  # a blocking operation's odd req: an extra
            own = own - {"req"}
        call = d.get("call")
        if type(call) is int and 0 <= call <= INT32_MAX:  # any kind; else an extra
            own = own | {"call"}

        def col(f: str, default: Any, d: dict[str, Any] = d, own: set[str] = own) -> Any:
            return d.get(f, default) if f in own else default

        dest, send = col("dest", None), col("send", None)
        row = {
            "code": R.KIND_CODE[d["kind"]], "rank": d["rank"], "seq": d["seq"],
            "t": math.nan if d.get("t") is None else float(d["t"]),
            "site": d.get("site"), "comm": d.get("comm", 0),
            "peer": col("src", -1) if dest is None else dest,
            "tag": col("tag", -1), "req": col("req", -1), "ref": col("recv", -1),
            "sseq": -1 if send is None else send[1], "size": col("size", -1),
            "call": col("call", -1),
            "flags": col("blocking", False) + 2 * col("sync", False),
        }
        big = [c for c in INT32_COLUMNS if row[c] > INT32_MAX]
        if big:
            n, error = i, f"'{FIELD_OF.get(big[0], big[0])}' is too large (at most {INT32_MAX})"
            break
        rows.append(row)
        more = {f: v for f, v in d.items() if f not in own}
        if more:
            extras[i] = more
    cols = {c: [clamp64(r[c]) if c in INT_COLUMNS else r[c] for r in rows]
            for c in ("code", "t", "flags", *INT_COLUMNS)}
    cols["site"] = [-1 if r["site"] is None else sites.add(r["site"]) for r in rows]
    bad = batch[n] if n < len(batch) else None
    located = isinstance(bad, dict) and error is not None
    return {
        "n": n, "error": error, "cols": cols, "extras": list(extras.items()),
        "error_rank": bad.get("rank") if located and type(bad.get("rank")) is int else None,
        "error_seq": bad.get("seq") if located and type(bad.get("seq")) is int else None,
    }


def as_reference(b: Batch) -> dict[str, Any]:
    """``b`` in the reference's form (checking the columns' dtypes on the way)."""
    dtypes = {"code": np.int8, "flags": np.int8, "t": np.float64, "site": np.int64,
              **dict.fromkeys(INT_COLUMNS, np.int64)}
    cols = {}
    for c, dt in dtypes.items():
        arr = getattr(b, c)
        assert arr.dtype == dt and arr.shape == (b.n,), c
        cols[c] = arr.tolist()
    return {"n": b.n, "error": None if b.error is None else str(b.error), "cols": cols,
            "extras": list(b.extras.items()), "error_rank": b.error_rank, "error_seq": b.error_seq}


def same(got: dict[str, Any], want: dict[str, Any]) -> None:
    # NaN != NaN: compare t with NaN written as None.
    for d in (got, want):
        d["cols"]["t"] = [None if math.isnan(x) else x for x in d["cols"]["t"]]
    assert got == want


def check_both(batch: list[Any], validate: bool = True) -> None:
    """``extract`` and ``valid_prefix`` agree with the reference, whether short
    batches are checked record by record (the default) or in groups."""
    check_one(batch, validate)
    with patch.object(ingest, "_FEW", 0):
        check_one(batch, validate)


def check_one(batch: list[Any], validate: bool) -> None:
    mine, theirs = SiteTable(), SiteTable()
    for table in (mine, theirs):  # sites already known before the batch
        table.add("old.py:1")
    got = as_reference(extract(batch, NPROCS, mine, validate))
    want = reference(batch, NPROCS, theirs, validate)
    same(got, want)
    assert mine.names == theirs.names
    if validate:
        n, error = valid_prefix(batch, NPROCS)
        first = next((i for i, r in enumerate(batch) if not passes(r)), len(batch))
        assert n == first
        assert (error is None) == (n == len(batch))


def passes(rec: Any) -> bool:
    try:
        R.check_record(rec, NPROCS)
    except R.RecordError:
        return False
    return True


# ------------------------------------------------------------------ strategies

ranks = st.integers(0, NPROCS - 1)
small = st.integers(0, 5)
common = {"t": st.one_of(st.floats(0, 10), st.integers(0, 10), st.none()),
          "site": st.sampled_from(["a.py:1", "a.py:2", "b.py:7", "old.py:1"]),
          "comm": st.integers(0, 2),
          "call": st.one_of(st.integers(0, 9), st.sampled_from([-1, 2**31 - 1, 2**31, 2**64,
                                                                "3", None, True, 1.0])),
          "note": st.one_of(st.integers(), st.text(max_size=3), st.lists(small, max_size=2))}


def kind_of(kind: str, required: dict[str, Any], optional: dict[str, Any]
            ) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"rank": ranks, "seq": st.integers(0, 50), "kind": st.just(kind), **required},
        optional={**common, **optional})


# Valid records mostly; a nonblocking send or receive without ``req`` is not.
# ``req`` and other column fields also appear where the kind does not use them
# (kept in the columns, ignored by the rules).
KINDS = st.one_of(
    kind_of("send", {"dest": ranks, "tag": small, "blocking": st.booleans(),
                     "sync": st.booleans()},
            {"size": st.integers(0, 99), "req": st.integers(-3, 9)}),
    kind_of("recv", {"src": st.integers(-1, NPROCS - 1), "tag": st.integers(-1, 5),
                     "blocking": st.booleans()},
            {"req": st.integers(-3, 9), "dest": st.none(), "size": small,
             "send": st.just([0, 1])}),
    kind_of("consume", {"recv": st.integers(0, 50), "src": ranks, "tag": small},
            {"send": st.tuples(ranks, st.integers(0, 50)).map(list)}),
    kind_of("wait", {"reqs": st.lists(st.integers(-3, 9), max_size=3)}, {"tag": small}),
    kind_of("coll", {"op": st.sampled_from(["bcast", "barrier"])},
            {"root": ranks, "count": small, "dtype": st.just("int"),
             "redop": st.just("sum")}),
    kind_of("coll_exit", {"op": st.sampled_from(["bcast", "barrier"])}, {}),
    kind_of("lock", {"lock": st.just("L1")}, {}),
    kind_of("unlock", {"lock": st.just("L1")}, {}),
    kind_of("state", {"vars": st.dictionaries(st.sampled_from("xyz"), st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=2)
    ), max_size=2)}, {}),
    kind_of("final", {}, {}),
)

#: Values that break (or, for some, test the edge of) the rules of an integer field.
ODD_INT = [True, False, 1.0, -1, -2, 0, NPROCS, 2**31 - 1, 2**31, 2**63, -2**64, None, "1", [1]]
#: The same for other fields.
ODD = {
    "t": [True, "1", None, 1, 2**63, [], 1.5],
    "site": [3, None, "", True, ["a.py:1"]],
    "blocking": [1, 0, None, "true", 1.0], "sync": [1, 0, None, "true", 1.0],
    "op": ["", 3, None, True, "scan"], "lock": ["", 3, None, ["L1"]],
    "dtype": [3, None, "", True], "redop": [3, None, "", True],
    "reqs": [[0, True], [1.0], [], None, {}, [2**63], (1,)],
    "vars": [{"x": [1]}, {"x": {}}, {}, [], {"x": None}, None, {"x": 2**70}],
}
#: Fields each kind checks, for mutations; ``req`` and ``sync`` of a receive are
#: not checked, and a bad value there is not a record the model can hold.
CHECKED = {
    "send": ["dest", "tag", "blocking", "sync", "size"],
    "recv": ["src", "tag", "blocking"],
    "consume": ["recv", "src", "tag", "send"],
    "wait": ["reqs"], "coll": ["op", "root", "count", "dtype", "redop"], "coll_exit": ["op"],
    "lock": ["lock"], "locked": ["lock"], "unlock": ["lock"], "state": ["vars"], "final": [],
}


def broken(draw: st.DrawFn, rec: dict[str, Any]) -> Any:
    """``rec`` subtly broken (or not: some changes keep it valid), reordered, or
    not an object at all."""
    how = draw(st.sampled_from(["value"] * 6 + ["drop", "kind", "reorder", "not dict"]))
    rec = dict(rec)
    if how == "value":
        checked = CHECKED.get(rec.get("kind"), [])
        f = draw(st.sampled_from(["rank", "seq", "t", "site", "comm", *checked * 3]))
        src = rec["src"] if type(rec.get("src")) is int else 0
        odd = ([[src, -1], [src + 1, 0], [src, True], [src], [float(src), 0], None, [src, 2]]
               if f == "send" else ODD.get(f, ODD_INT))
        rec[f] = draw(st.sampled_from(odd))
    elif how == "drop":
        rec.pop(draw(st.sampled_from(sorted(rec))))
    elif how == "kind":
        rec["kind"] = draw(st.sampled_from(["header", "bogus", "", 3, None, "locked"]))
    elif how == "reorder":
        rec = dict(sorted(rec.items()))
    else:
        return draw(st.sampled_from([None, [], "send", 3, [rec]]))
    return rec


@st.composite
def batches(draw: st.DrawFn) -> list[Any]:
    """Records, mostly valid, with up to three of them changed by :func:`broken`."""
    batch: list[Any] = draw(st.lists(KINDS, max_size=40))
    for _ in range(draw(st.integers(0, 3)) if batch else 0):
        i = draw(st.integers(0, len(batch) - 1))
        batch[i] = broken(draw, batch[i]) if isinstance(batch[i], dict) else batch[i]
    return batch


def valid_records() -> st.SearchStrategy[dict[str, Any]]:
    return KINDS.filter(passes)


# ----------------------------------------------------------------------- tests

@pytest.mark.slow
@settings(max_examples=600)
@given(batches())
def test_same_as_reference(batch: list[Any]) -> None:
    check_both(batch)


@pytest.mark.slow
@settings(max_examples=200)
@given(st.lists(valid_records(), max_size=40),
       st.sampled_from(["seq", "tag", "req", "recv", "comm", "size"]),
       st.sampled_from([2**31 - 1, 2**31, 2**62, 2**64, -2**70]), st.integers(0, 39))
def test_32_bit_rule_with_and_without_validation(
        batch: list[dict[str, Any]], f: str, value: int, at: int) -> None:
    if batch:
        batch[at % len(batch)][f] = value
    check_both(batch, validate=True)
    if all(map(passes, batch)):
        check_both(batch, validate=False)


#: A valid record of each kind, every optional field present.
FULL = [
    {"rank": 1, "seq": 0, "kind": "send", "t": 0.5, "site": "a.py:1", "comm": 1, "dest": 2,
     "tag": 3, "blocking": False, "sync": True, "req": 7, "size": 8},
    {"rank": 1, "seq": 0, "kind": "recv", "t": 1, "site": None, "comm": 0, "src": -1,
     "tag": -1, "blocking": False, "req": 4},
    {"rank": 1, "seq": 0, "kind": "consume", "t": None, "recv": 0, "src": 2, "tag": 0,
     "send": [2, 5]},
    {"rank": 1, "seq": 0, "kind": "wait", "reqs": [4, 7]},
    {"rank": 1, "seq": 0, "kind": "coll", "op": "bcast", "root": 0, "count": 1, "dtype": "i",
     "redop": "sum"},
    {"rank": 1, "seq": 0, "kind": "coll_exit", "op": "bcast"},
    {"rank": 1, "seq": 0, "kind": "locked", "lock": "L"},
    {"rank": 1, "seq": 0, "kind": "state", "vars": {"x": 1, "y": None, "z": "s", "w": 1.5}},
    {"rank": 1, "seq": 0, "kind": "final"},
]


@pytest.mark.slow
def test_every_odd_value_of_every_checked_field() -> None:
    """Each odd value in each field of each kind, amid records of the same shape."""
    for full in FULL:
        kind = full["kind"]
        for f in ["rank", "seq", "t", "site", "comm", *CHECKED[kind]]:
            odd = ODD.get(f, ODD_INT) + ([[2, -1], [3, 0], [2, True], [2], [2.0, 5]]
                                         if f == "send" else [])
            for value in odd:
                bad = {**full, f: value}
                for at in (0, 3):
                    batch: list[Any] = [{**full, "seq": i} for i in range(5)]
                    batch.insert(at, bad)
                    check_both(batch)
                    check_both([{k: v for k, v in full.items() if k != f}, *batch])


def test_synthetic_trace_chunk() -> None:
    batch = list(islice(generate_records(5000, NPROCS, seed=3), 5000))
    check_both(batch)
    check_both(batch, validate=False)
    batch[4000]["tag"] = 1.0
    check_both(batch)


def test_error_located_and_sites_numbered_in_order() -> None:
    batch = [
        {"rank": 0, "seq": 0, "kind": "final", "site": "z.py:9"},
        {"rank": 1, "seq": 0, "kind": "state", "vars": {}, "site": "a.py:1"},
        {"rank": 1, "seq": 1, "kind": "send", "dest": 9, "tag": 0, "blocking": True,
         "sync": False, "site": "never.py:1"},
    ]
    sites = SiteTable()
    b = extract(batch, NPROCS, sites)
    assert (b.n, b.error_rank, b.error_seq) == (2, 1, 1)
    assert "not a rank" in str(b.error)
    assert sites.names == ["z.py:9", "a.py:1"]
    assert b.site.tolist() == [0, 1]
