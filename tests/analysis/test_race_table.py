"""The report's races as columns (issue 16): the same entries, groups, marks, text
and JSON bytes as the dict-per-race path it replaced (``report_reference``)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.analysis.pipeline import Analyses
from mpvis.analysis.race_groups import (
    group_races,
    group_table,
    model_event_sites,
    program_dir,
    tolerant,
)
from mpvis.analysis.race_suppress import entry_identity, mark_suppressed
from mpvis.analysis.race_table import RaceTable, rows_in
from mpvis.analysis.report import (
    exit_code,
    format_report,
    iter_report_json,
    legend_examples,
    report_json,
)
from mpvis.scene.vocabulary import legend_lines
from mpvis.tracefile import check_cache
from mpvis.tracefile.reader import load_trace, read_header
from tests.analysis import report_reference as ref
from tests.analysis.exec_generator import generate

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted((ROOT / "sample_traces").rglob("*.jsonl"))

_ints = st.integers(-(2**63) + 1, 2**63 - 1)
_msg = st.lists(st.integers(0, 2**31 - 1), min_size=2, max_size=2)
_text = st.one_of(st.none(), st.text(max_size=8))
_optional = {"suppressed": st.just(True), "group": st.integers(0, 9)}
_classifier = st.fixed_dictionaries({
    "method": st.just("classifier"), "scope": st.sampled_from(["adjacent", "nonadjacent"]),
    "rank": st.integers(0, 300), "recvs": st.lists(st.integers(0, 10**6), min_size=2, max_size=2),
    "situation": st.one_of(st.none(), st.integers(1, 16)),
    "messages": st.lists(st.one_of(st.none(), _msg), min_size=2, max_size=2),
    "verdict": st.sampled_from(["legitimate", "unverified", "spurious", "false"]),
    "comm": st.one_of(st.none(), _ints), "consumption": st.sampled_from(["RCRC", "RCR-", "R-RC"]),
    "sites": st.lists(_text, min_size=2, max_size=2),
}, optional={"confirmed": st.booleans(), **_optional})
_exact = st.fixed_dictionaries({
    "method": st.just("exact"), "rank": st.integers(0, 300),
    "recvs": st.lists(st.integers(0, 10**6), min_size=1, max_size=1),
    "messages": st.lists(_msg, min_size=2, max_size=2), "verdict": st.just("legitimate"),
}, optional=_optional)
_ORDER = {
    "classifier": ("method", "scope", "rank", "recvs", "situation", "messages", "verdict",
                   "comm", "consumption", "sites", "confirmed", "suppressed", "group"),
    "exact": ("method", "rank", "recvs", "messages", "verdict", "suppressed", "group")}


def _in_report_order(races: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: e[k] for k in _ORDER[e["method"]] if k in e} for e in races]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(_classifier, _exact), max_size=30), st.data())
def test_columns_give_back_every_entry_in_its_key_order(races: list[dict[str, Any]],
                                                        data: st.DataObject) -> None:
    races = _in_report_order(races)
    table = RaceTable.from_entries(races)
    assert table.entries() == races and list(table) == races and len(table) == len(races)
    assert orjson.dumps(table.entries()) == orjson.dumps(races)  # same types, key order, bytes
    assert b"[" + b",".join(table.json_chunks()) + b"]" == orjson.dumps(races)
    rows = data.draw(st.lists(st.integers(0, max(len(races) - 1, 0)), max_size=len(races)))
    rows = rows if races else []
    assert table.take(np.array(rows, dtype=np.int64)).entries() == [races[i] for i in rows]
    cut = data.draw(st.integers(0, len(races)))
    joined = RaceTable.concat([RaceTable.from_entries(races[:cut]),
                               RaceTable.from_entries(races[cut:])])
    assert joined.entries() == races
    if races:
        assert table[-1] == races[-1] and table[0] == races[0]


@pytest.mark.parametrize("entry", [
    {"method": "classifier", "rank": 0, "new_field": 1},
    {"method": "other", "rank": 0, "recvs": [1], "messages": [[0, 0], [1, 0]], "verdict": "x"},
    {"method": "exact", "rank": 0, "recvs": [1], "messages": [[0, 0], [1, 2**64]],
     "verdict": "legitimate"},
    {"method": "exact", "rank": 0, "recvs": [1], "messages": [[0, 0], None],
     "verdict": "legitimate"},
    {"method": "exact", "rank": 0, "recvs": [1], "messages": [[0, 0], [1, 0]],
     "verdict": "legitimate", "group": 1, "suppressed": True},  # optional fields out of order
])
def test_entries_of_an_unknown_shape_are_refused(entry: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        RaceTable.from_entries([entry])


@given(st.lists(st.tuples(st.sampled_from([-2**63, -1, 0, 1, 2**31, 2**62, 2**63 - 1]),
                          st.integers(-3, 3), st.integers(0, 2)), max_size=20),
       st.lists(st.tuples(st.sampled_from([-2**63, -1, 0, 1, 2**31, 2**62, 2**63 - 1]),
                          st.integers(-3, 3), st.integers(0, 2)), max_size=20))
def test_rows_in_is_membership_at_the_ends_of_64_bits(query: list[tuple[int, int, int]],
                                                      among: list[tuple[int, int, int]]
                                                      ) -> None:
    """Columns too wide to pack into one key (the -2**63 of a missing value)."""
    got = rows_in(np.array(query, dtype=np.int64).reshape(-1, 3),
                  np.array(among, dtype=np.int64).reshape(-1, 3))
    assert got.tolist() == [q in set(among) for q in query]


@given(st.lists(st.tuples(st.integers(-3, 3), st.integers(-3, 3)), max_size=20),
       st.lists(st.tuples(st.integers(-3, 3), st.integers(-3, 3)), max_size=20))
def test_rows_in_is_membership(query: list[tuple[int, int]], among: list[tuple[int, int]]
                               ) -> None:
    got = rows_in(np.array(query, dtype=np.int64).reshape(-1, 2),
                  np.array(among, dtype=np.int64).reshape(-1, 2))
    assert got.tolist() == [q in set(among) for q in query]


def _both_paths(a: Analyses, *, nonadjacent: bool, base: str | None, marks: int, seed: int,
                source: str) -> None:
    """The check's columnar report, groups, marks, JSON and text equal the dict path's."""
    m = a.model
    new = a.report(nonadjacent=nonadjacent, columns=True)
    groups = group_table(new["races"], event_sites=model_event_sites(m), base=base)
    old = ref.reference_report(a, nonadjacent=nonadjacent)
    old_groups = ref.reference_group_races(old["races"], site_of=tolerant(m.site_of), base=base)
    group_of = [e.pop("group") for e in old["races"]]
    idents = sorted({i for e in old["races"] if (i := entry_identity(e)) is not None})
    intended = set(random.Random(seed).sample(idents, min(marks, len(idents))))
    if intended:
        assert mark_suppressed(new["races"], intended) == mark_suppressed(old["races"], intended)
    for e, g in zip(old["races"], group_of, strict=True):
        e["group"] = g
    ref.reference_marks(old["races"], old_groups)
    check_cache.apply_marks(new["races"], groups)
    new["groups"], old["groups"] = groups, old_groups
    assert new["races"].entries() == old["races"]
    data = ref.reference_json(old)
    assert report_json(new) == data and b"".join(iter_report_json(new)) == data
    for summary in (False, True):
        assert (format_report(new, source=source, summary=summary)
                == ref.reference_format_report(old, source=source, summary=summary))
    assert exit_code(new) == exit_code(old)
    assert legend_lines(legend_examples(new)) == legend_lines(ref.reference_found_races(old))


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 10**9), st.booleans(), st.integers(0, 3))
def test_the_columnar_report_equals_the_dict_path(seed: int, nonadjacent: bool, marks: int
                                                  ) -> None:
    records = generate(seed, max_procs=4, max_messages=14)
    a = Analyses.for_header(records[0])
    a.model.add_batch([dict(r) for r in records[1:]])
    a.model.finish()
    _both_paths(a, nonadjacent=nonadjacent, base=None, marks=marks, seed=seed, source="t")


@pytest.mark.slow
@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_every_sample_trace_reports_as_before(path: Path) -> None:
    header = read_header(path)
    a = Analyses.for_header(header)
    load_trace(path, model=a.model)
    for nonadjacent in (False, True):
        _both_paths(a, nonadjacent=nonadjacent, base=program_dir(header), marks=2, seed=1,
                    source=str(path))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(_classifier, _exact), max_size=40))
def test_group_races_of_dicts_equals_the_reference(races: list[dict[str, Any]]) -> None:
    races = [{k: v for k, v in e.items() if k != "group"} for e in _in_report_order(races)]
    copy = [dict(e) for e in races]

    def site(rank: int, seq: int) -> str | None:
        return None if seq % 3 == 0 else f"/p/s{(rank + seq) % 4}.py:{seq % 5}"

    assert group_races(races, site_of=site, base="/p") == ref.reference_group_races(
        copy, site_of=site, base="/p")
    assert races == copy  # the same group index on every entry
