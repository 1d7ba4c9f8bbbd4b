"""The sort-based set operations against NumPy's own (``np.isin``, ``np.unique``)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.model.arrayops import has_duplicates, isin, unique

_VALUES = st.lists(st.integers(-(2**40), 2**40) | st.integers(-3, 3), max_size=60)


@settings(max_examples=300, deadline=None)
@given(_VALUES, _VALUES)
def test_isin_and_duplicates_equal_numpys(a: list[int], b: list[int]) -> None:
    x, y = np.array(a, dtype=np.int64), np.array(b, dtype=np.int64)
    assert isin(x, y).tolist() == np.isin(x, y).tolist()
    assert has_duplicates(x) == (len(np.unique(x)) < len(x))
    assert unique(x).tolist() == np.unique(x).tolist()
    assert unique(x).dtype == np.unique(x).dtype
