"""Types of the C grid filler of the zoomed-out view (``_cdensity.c``; see ``density_index.py``)."""

# points: (row, activity, sorted values); spans: (row, activity, begins, begin
# sums, ends, end sums); float64 / int64 NumPy arrays, checked in C
def fill(points: list[tuple[int, int, object]],
         spans: list[tuple[int, int, object, object, object, object]],
         edges: object, scale: float, cover_eps: float, events: object, shares: object,
         /) -> None: ...
