"""The race list export holds the classifier's races and the exact test's."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from mpvis.analysis.pipeline import Analyses
from mpvis.scene.race_marks import races_csv, races_json
from mpvis.tracefile.reader import load_trace, read_header

S16 = Path(__file__).resolve().parents[2] / "sample_traces" / "situations" / "s16_RCRC.jsonl"


def test_csv_and_json_include_exact_races() -> None:
    a = Analyses.for_header(read_header(S16))
    load_trace(S16, model=a.model)
    assert a.exact is not None
    races, exact = a.model.potential_races(), a.exact.races
    doc = json.loads(races_json(races, exact))
    assert [e["method"] for e in doc["races"]] == ["classifier", "exact"]
    assert doc["races"][1] == {"method": "exact", "rank": 1, "recvs": [0],
                               "messages": [[0, 0], [2, 0]], "verdict": "legitimate"}
    rows = list(csv.DictReader(io.StringIO(races_csv(races, exact))))
    assert [r["method"] for r in rows] == ["classifier", "exact"]
    assert rows[1]["rank"] == "1" and rows[1]["verdict"] == "legitimate"
