"""Growable typed columns: compact storage for millions of events.

A :class:`Column` appends like a list but stores machine values in an
``array.array``; :meth:`Column.view` exposes them as a NumPy array without a
copy (valid until the next append).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt


class Column:
    """An append-only column of one machine type (``typecode`` of ``array``)."""

    __slots__ = ("data",)

    def __init__(self, typecode: str) -> None:
        self.data = array(typecode)

    def __len__(self) -> int:
        return len(self.data)

    def append(self, value: float) -> None:
        self.data.append(value)  # type: ignore[arg-type]  # array.array stubs take int only; a "d" column takes floats

    def extend(self, values: Iterable[float]) -> None:
        self.data.extend(values)  # type: ignore[arg-type]  # array.array stubs take int only; a "d" column takes floats

    def extend_array(self, values: npt.NDArray[Any]) -> None:
        """Append a NumPy array (converted to this column's type; values must fit).

        The array's memory is read in place when it already has the column's
        type (no copy but the column's own), else converted once."""
        typed = np.ascontiguousarray(values, dtype=self.data.typecode)
        self.data.frombytes(typed.data.cast("B"))

    def extend_fill(self, value: float, k: int) -> None:
        """Append ``k`` copies of ``value`` (one memory copy, no per-item loop)."""
        self.data.extend(array(self.data.typecode, [value]) * k)  # type: ignore[arg-type]  # as append

    def __getitem__(self, i: int) -> Any:
        return self.data[i]

    def __setitem__(self, i: int, value: float) -> None:
        self.data[i] = value  # type: ignore[call-overload]  # as above: typeshed types array.array as int

    def view(self) -> npt.NDArray[np.generic]:
        """The column as a NumPy array sharing memory (read-only by convention)."""
        if not self.data:
            return np.zeros(0, dtype=np.dtype(self.data.typecode))
        return np.frombuffer(self.data, dtype=np.dtype(self.data.typecode))

    def nbytes(self) -> int:
        return self.data.itemsize * len(self.data)
