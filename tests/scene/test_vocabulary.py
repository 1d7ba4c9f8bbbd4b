"""Plain words for situations, verdicts and calls (issue 14, item 4)."""

from __future__ import annotations

import itertools

import pytest

from mpvis.model.classifier import NO_RACE_SITUATIONS, situation
from mpvis.scene.vocabulary import (
    CONSUMPTION,
    VERDICTS,
    call,
    event,
    glossary_html,
    situation_text,
)


@pytest.mark.parametrize(("s1", "t1", "s2", "t2"), list(itertools.product((-1, 2), repeat=4)))
def test_situation_text_names_the_calls_of_table_1(s1: int, t1: int, s2: int, t2: int) -> None:
    n = situation(s1, t1, s2, t2)  # the classifier's own numbering is the oracle
    text = situation_text(n)
    first, second = text.split(": ", 1)[1].split(", then ")
    assert first.startswith(f"recv({'ANY_SOURCE' if s1 == -1 else 'src'}, "
                            f"{'ANY_TAG' if t1 == -1 else 'tag'})")
    assert second.startswith(f"recv({'ANY_SOURCE' if s2 == -1 else 'src'}, "
                             f"{'ANY_TAG' if t2 == -1 else 'tag'})")
    assert ("never a race" in text) == (n in NO_RACE_SITUATIONS)


def test_calls_events_and_the_glossary() -> None:
    assert call(-1, -1, "ring.py:30") == "recv(ANY_SOURCE, ANY_TAG) at ring.py:30"
    assert call(3, -1) == "recv(3, ANY_TAG)"
    assert event(3, 17) == "3:17"
    page = glossary_html()
    for word in [*CONSUMPTION, *VERDICTS, "(could match)", "disagree", "rank:seq"]:
        assert word in page
    with pytest.raises(ValueError, match=r"not in 1\.\.16"):
        situation_text(17)


def test_legend_names_only_the_terms_used() -> None:
    from mpvis.scene.vocabulary import legend_lines

    races = [{"method": "classifier", "situation": 3, "consumption": "RCR-",
              "verdict": "unverified"}, {"method": "exact", "verdict": "legitimate"}]
    lines = legend_lines(races)
    assert lines[0].startswith("Terms")
    assert [ln.split(":")[0].strip() for ln in lines[1:]] == [
        "situation 3", "RCR-", "LEGITIMATE", "UNVERIFIED"]
    assert legend_lines([]) == []
