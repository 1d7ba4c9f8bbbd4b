"""The fields of events that no column holds (the store's sparse extras), held compactly.

Most extras are a wait's ``reqs`` (a list of request ints: one dict and one list
per wait, a quarter of a kilobyte each, 80,000 of them on the 1M-event
trace) and collective arguments.  :class:`Extras` is the store's mapping from
global index to such a dict, with the same answers as a ``dict`` of dicts, but
an extra that is exactly ``{"reqs": [int, ...]}`` is held in three arrays (the
waits' global indices, offsets, the requests) and its dict is built when it is
read.  Every other extra is held as the dict it came as (equal one-string
dicts shared by the store).

Contract: events are added in increasing global index (:meth:`Extras.add`) and
dropped from an index on (:meth:`Extras.truncate`); a dict read is never to
be changed (it may be shared, or built afresh: either way a change is lost or
wrong); iteration is in increasing global index.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping
from heapq import merge
from itertools import accumulate, chain, islice
from operator import itemgetter
from typing import Any

import numpy as np
import numpy.typing as npt

_INT64 = (-(2**63), 2**63 - 1)
_EMPTY: Mapping[str, Any] = {}


def _reqs_only(extra: dict[str, Any]) -> list[int] | None:
    """``extra["reqs"]`` when ``extra`` is exactly a list of plain int64 requests."""
    if len(extra) != 1:
        return None
    reqs = extra.get("reqs")
    if type(reqs) is not list or not all(type(q) is int for q in reqs):
        return None
    if reqs and not (_INT64[0] <= min(reqs) and max(reqs) <= _INT64[1]):
        return None
    return reqs


class Extras(Mapping[int, Mapping[str, Any]]):
    """Global index -> the event's extra fields (module docstring)."""

    __slots__ = ("_dicts", "_wg", "_woff", "_wreq")

    def __init__(self) -> None:
        self._dicts: dict[int, dict[str, Any]] = {}
        self._wg = array("q")  # global indices of the waits held as arrays, ascending
        self._woff = array("q", [0])  # their requests: _wreq[_woff[i]:_woff[i + 1]]
        self._wreq = array("q")

    # ---------------------------------------------------------------- writing
    def add(self, g: int, extra: dict[str, Any]) -> None:
        """Event ``g`` (above every index added so far) has ``extra``."""
        reqs = _reqs_only(extra)
        if reqs is None:
            self._dicts[g] = extra
            return
        self._wg.append(g)
        self._wreq.extend(reqs)
        self._woff.append(len(self._wreq))

    def add_many(self, gids: list[int], extras: list[dict[str, Any]],
                 share: dict[tuple[str, Any], dict[str, Any]], limit: int) -> None:
        """``add(g, e)`` for each ``g, e`` in order (``gids`` ascending, above every
        index added so far), the waits' requests checked and appended in one pass
        per batch.  An extra that is one string field is replaced by an equal
        dict already in ``share`` (a C trace gives every record a ``func``, most
        the same), or remembered there while it holds fewer than ``limit``."""
        rest: list[tuple[int, dict[str, Any]]] = []
        waits: list[tuple[int, dict[str, Any]]] = []
        for g, extra in zip(gids, extras, strict=True):
            if len(extra) == 1:
                if type(extra.get("reqs")) is list:
                    waits.append((g, extra))
                    continue
                key: tuple[str, Any] = next(iter(extra.items()))
                if type(key[1]) is str:
                    held = share.get(key)
                    if held is not None:
                        extra = held
                    elif len(share) < limit:
                        share[key] = extra
            rest.append((g, extra))
        if not waits or self._add_waits(waits):
            self._dicts.update(rest)
        else:  # a wait held as a dict: in index order with the rest
            for g, extra in sorted(rest + waits, key=itemgetter(0)):
                self.add(g, extra)

    def _add_waits(self, waits: list[tuple[int, dict[str, Any]]]) -> bool:
        """Put the waits ``(g, {"reqs": [...]})`` (``g`` ascending, above every index
        added so far) into the arrays at once if every request is a plain int64
        (the common case, checked in one pass); whether it did."""
        reqs: list[list[int]] = [extra["reqs"] for _, extra in waits]
        flat = list(chain.from_iterable(reqs))
        if not (set(map(type, flat)) <= {int}
                and (not flat or (_INT64[0] <= min(flat) and max(flat) <= _INT64[1]))):
            return False
        self._wg.extend(g for g, _ in waits)
        self._woff.extend(islice(accumulate(map(len, reqs), initial=self._woff[-1]), 1, None))
        self._wreq.extend(flat)
        return True

    def truncate(self, g: int) -> None:
        """Drop the extras of the events from global index ``g`` on."""
        for i in [i for i in self._dicts if i >= g]:
            del self._dicts[i]
        k = int(np.searchsorted(self._wg_view(), g))
        del self._wg[k:]
        del self._wreq[self._woff[k]:]
        del self._woff[k + 1:]

    # ---------------------------------------------------------------- reading
    def _wg_view(self) -> npt.NDArray[np.int64]:
        return np.frombuffer(self._wg, dtype=np.int64) if self._wg else np.zeros(0, np.int64)

    def _wait_at(self, k: int) -> dict[str, Any]:
        return {"reqs": self._wreq[self._woff[k]:self._woff[k + 1]].tolist()}

    def _wait_index(self, g: int) -> int:
        """Row of ``g`` in the wait arrays, or -1."""
        wg = self._wg
        if not wg or g > wg[-1] or g < wg[0]:
            return -1
        k = int(np.searchsorted(self._wg_view(), g))
        return k if wg[k] == g else -1

    def __getitem__(self, g: int) -> Mapping[str, Any]:
        extra = self._dicts.get(g)
        if extra is not None:
            return extra
        k = self._wait_index(g)
        if k < 0:
            raise KeyError(g)
        return self._wait_at(k)

    def get_many(self, gids: list[int]) -> list[Mapping[str, Any]]:
        """``[self.get(g, {}) for g in gids]`` with one search for the waits."""
        get = self._dicts.get
        out: list[Mapping[str, Any]] = [get(g, _EMPTY) for g in gids]
        if self._wg and gids:
            wg = self._wg_view()
            q = np.asarray(gids, dtype=np.int64)
            k = np.minimum(np.searchsorted(wg, q), len(wg) - 1)
            for i, row in zip(np.flatnonzero(wg[k] == q).tolist(),
                              k[wg[k] == q].tolist(), strict=True):
                out[i] = self._wait_at(row)
        return out

    def __contains__(self, g: object) -> bool:
        return g in self._dicts or (type(g) is int and self._wait_index(g) >= 0)

    def __len__(self) -> int:
        return len(self._dicts) + len(self._wg)

    def __iter__(self) -> Iterator[int]:
        return merge(self._dicts, self._wg)

    def with_field(self, name: str, value: object) -> list[int]:
        """The global indices, ascending, whose extra field ``name`` is ``value``."""
        found = [g for g, ex in self._dicts.items() if name in ex and ex[name] == value]
        if name == "reqs":
            found.extend(g for g in self._wg if self[g].get("reqs") == value)
            found.sort()
        return found

    # ------------------------------------------------------------- for C code
    def plain(self) -> dict[int, dict[str, Any]]:
        """The extras held as dicts (not the waits held as arrays: :meth:`wait_buffers`)."""
        return self._dicts

    def wait_buffers(self) -> tuple[array[int], array[int], array[int]]:
        """The waits held as arrays: their global indices (ascending), offsets
        (one more than them) and requests."""
        return self._wg, self._woff, self._wreq
