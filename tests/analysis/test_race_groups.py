"""Races grouped by site pair and races marked intended (issue 14, item 3)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpvis.analysis.race_groups import format_groups, group_races, relative_site
from mpvis.analysis.race_suppress import (
    SuppressFileError,
    entry_identity,
    load_intended,
    mark_suppressed,
    race_identity,
)

SITES = st.sampled_from([None, "/p/a.py:3", "/p/a.py:9", "/p/sub/b.py:1", "/q/c.py:2"])


@st.composite
def entries(draw: st.DrawFn) -> dict[str, Any]:
    rank = draw(st.integers(0, 5))
    if draw(st.booleans()):
        r1 = draw(st.integers(0, 50))
        return {"method": "classifier", "rank": rank, "comm": 0, "recvs": [r1, r1 + 2],
                "sites": [draw(SITES), draw(SITES)], "situation": draw(st.integers(1, 16)),
                "verdict": draw(st.sampled_from(["legitimate", "unverified", "false"])),
                "messages": [[1, 0], [2, 0]]}
    return {"method": "exact", "rank": rank, "recvs": [draw(st.integers(0, 50))],
            "messages": [[1, 0], [draw(st.integers(0, 5)), draw(st.integers(0, 9))]],
            "verdict": "legitimate"}


def _site(rank: int, seq: int) -> str | None:
    return None if seq % 3 == 0 else f"/p/s{(rank + seq) % 4}.py:{seq % 5}"


@given(st.lists(entries(), max_size=60))
def test_groups_partition_the_races_by_their_sites(races: list[dict[str, Any]]) -> None:
    groups = group_races(races, site_of=_site, base="/p")
    # oracle: the pair of sites each entry names, brute force
    def key(e: dict[str, Any]) -> tuple[str, str, str]:
        if e["method"] == "exact":
            o = e["messages"][1]
            pair = [_site(e["rank"], e["recvs"][0]), _site(o[0], o[1])]
        else:
            pair = [s or _site(e["rank"], q) for s, q in zip(e["sites"], e["recvs"], strict=True)]
        return (e["method"], *(relative_site(s, "/p") for s in pair))  # type: ignore[return-value]

    expected = Counter(key(e) for e in races)
    got = Counter({(g["method"], *g["sites"]): g["count"] for g in groups})
    assert got == expected and len(groups) == len(expected)
    assert [g["count"] for g in groups] == sorted((g["count"] for g in groups), reverse=True)
    for e in races:
        g = groups[e["group"]]
        assert (g["method"], *g["sites"]) == key(e) and e["rank"] in g["ranks"]
        assert sum(g["verdicts"].values()) == g["count"]


@pytest.mark.slow
def test_a_task_farm_reads_as_one_line() -> None:
    races = [{"method": "classifier", "rank": 0, "comm": 0, "recvs": [2 * i, 2 * i + 2],
              "sites": ["/home/u/farm/farm.py:34", "/home/u/farm/farm.py:34"], "situation": 16,
              "verdict": "legitimate", "messages": [[1, i], [2, i]]} for i in range(100_000)]
    groups = group_races(races, base="/home/u/farm")
    lines = format_groups(groups, races)
    assert len(lines) == 1
    assert "100000 x farm.py:34  /  farm.py:34" in lines[0] and "e.g. 0:0 / 0:2" in lines[0]


def test_relative_sites() -> None:
    assert relative_site("/p/sub/b.py:1", "/p") == "sub/b.py:1"
    assert relative_site("/q/c.py:2", "/p") == "/q/c.py:2"
    assert relative_site("a.py:2", "/p") == "a.py:2"
    assert relative_site(None, "/p") == "?"


def test_intended_races_are_flagged_exact_ones_with_them(tmp_path: Path) -> None:
    cl = {"method": "classifier", "rank": 0, "comm": 0, "recvs": [5, 7],
          "sites": ["a.py:3", "a.py:3"], "verdict": "legitimate"}
    other = {**cl, "rank": 1}
    ex = {"method": "exact", "rank": 0, "recvs": [5], "messages": [[1, 0], [2, 0]],
          "verdict": "legitimate"}
    ident = entry_identity(cl)
    assert ident == race_identity(0, 0, [5, 7], ["a.py:3", "a.py:3"])
    f = tmp_path / "s.txt"
    f.write_text(f"# intended\n{ident}\n")
    assert mark_suppressed([cl, other, ex], load_intended(f)) == 2
    assert cl["suppressed"] and ex["suppressed"] and "suppressed" not in other
    bad = tmp_path / "bad.json"
    bad.write_text('{"intended": 3}')
    with pytest.raises(SuppressFileError, match="must be a list"):
        load_intended(bad)
    with pytest.raises(SuppressFileError, match="cannot read"):
        load_intended(tmp_path / "absent.json")


def test_program_dir_from_the_header() -> None:
    from mpvis.analysis.race_groups import program_dir

    assert program_dir({"cwd": "/home/u/run", "program": "python /x/p.py"}) == "/home/u/run"
    assert program_dir({"program": "python /home/u/farm/farm.py -n 3"}) == "/home/u/farm"
    assert program_dir({"program": "python farm.py"}) is None
    assert program_dir({}) is None
