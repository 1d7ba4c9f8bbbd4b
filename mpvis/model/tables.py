"""The events and messages of a model as tables (pandas or Arrow).

:func:`event_columns` and :func:`message_columns` read the model's columns
with NumPy (no per-event Python object), then :func:`pandas_tables` and
:func:`arrow_tables` wrap them.  A value that does not apply to an event (the
tag of a collective, the consume of a message never consumed) is null.

``events``: one row per event, by rank then seq: ``rank``, ``seq``, ``kind``
and ``site`` (categorical / dictionary), ``t``, ``comm``, ``peer`` (a send's
``dest``, a receive's or consume's ``src``; -1 = any), ``tag``, ``blocking``
(sends and receives), ``sync`` (sends), ``req``, ``size``, ``call`` (the MPI
call that made the event, when the trace says), and
``partner_rank``/``partner_seq`` (the consume of a send, the send of a consume).

``messages``: one row per send, consumed or not, in arrival order, with the
columns of ``messages.csv`` (:data:`mpvis.tracefile.csv_export.MESSAGE_COLUMNS`):
``send_rank``, ``send_seq``, ``dest``, ``tag``, ``comm``, ``size``, ``sync``,
``send_t``, ``recv_seq``, ``consume_seq``, ``consume_t``.

pandas and pyarrow are optional extras (``pip install 'mpvis[pandas]'``,
``'mpvis[arrow]'``); without them :class:`~mpvis.errors.MissingExtraError` says so.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt

from mpvis.errors import MissingExtraError
from mpvis.protocol import records as R
from mpvis.protocol.codes import F_BLOCKING, F_SYNC

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from mpvis.model.manager import ModelManager

__all__ = ["Tables", "arrow_tables", "event_columns", "message_columns",
           "pandas_tables"]

T = TypeVar("T")
Array = npt.NDArray[Any]


class Tables(NamedTuple, Generic[T]):
    """The two tables of a run."""

    events: T
    messages: T


@dataclass(frozen=True)
class Col:
    """One table column: ``values``, where ``mask`` is true a null; with
    ``categories``, ``values`` are codes into them (``-1``: null)."""

    values: Array
    mask: Array | None = None
    categories: tuple[str, ...] | None = None


def _view(c: Any, n: int) -> Array:
    """The first ``n`` values of a model column as a NumPy array (no copy)."""
    return np.asarray(c.view()[:n])


def _opt(values: Array, applies: Array) -> Col:
    return Col(values, ~applies)


def event_columns(m: ModelManager) -> dict[str, Col]:
    """The events table's columns (see the module docstring)."""
    n = m.event_count
    rank, seq = _view(m.c_rank, n), _view(m.c_seq, n)
    order = np.lexsort((seq, rank))

    def col(c: Any) -> Array:
        return _view(c, n)[order]

    kind, flags, t = col(m.c_kind).astype(np.int32), col(m.c_flags), col(m.c_t)
    partner = col(m.c_partner)
    is_send = kind == R.KIND_CODE[R.SEND]
    p2p = is_send | (kind == R.KIND_CODE[R.RECV])
    has_peer = p2p | (kind == R.KIND_CODE[R.CONSUME])
    req, size, call = col(m.c_req), col(m.c_size), col(m.c_call)
    safe = np.where(partner >= 0, partner, 0)
    return {
        "rank": Col(rank[order]), "seq": Col(seq[order]),
        "kind": Col(kind, categories=tuple(R.EVENT_KINDS)),
        "t": Col(t, np.isnan(t)),
        "site": Col(col(m.c_site), categories=tuple(m.sites)),
        "comm": Col(col(m.c_comm)),
        "peer": _opt(col(m.c_peer), has_peer), "tag": _opt(col(m.c_tag), has_peer),
        "blocking": _opt((flags & F_BLOCKING).astype(bool), p2p),
        "sync": _opt((flags & F_SYNC).astype(bool), is_send),
        "req": _opt(req, p2p & (req != -1)), "size": _opt(size, size >= 0),
        "call": _opt(call, call >= 0),
        "partner_rank": _opt(rank[safe], partner >= 0),
        "partner_seq": _opt(seq[safe], partner >= 0),
    }


def message_columns(m: ModelManager) -> dict[str, Col]:
    """The messages table's columns (see the module docstring)."""
    n = m.event_count
    g = np.flatnonzero(_view(m.c_kind, n) == R.KIND_CODE[R.SEND])
    pg = _view(m.c_partner, n)[g]
    got = pg >= 0
    c = np.where(got, pg, 0)
    t = _view(m.c_t, n)
    send_t, consume_t = t[g], t[c]
    size = _view(m.c_size, n)[g]
    seq = _view(m.c_seq, n)
    return {
        "send_rank": Col(_view(m.c_rank, n)[g]), "send_seq": Col(seq[g]),
        "dest": Col(_view(m.c_peer, n)[g]), "tag": Col(_view(m.c_tag, n)[g]),
        "comm": Col(_view(m.c_comm, n)[g]), "size": _opt(size, size >= 0),
        "sync": Col((_view(m.c_flags, n)[g] & F_SYNC).astype(bool)),
        "send_t": Col(send_t, np.isnan(send_t)),
        "recv_seq": _opt(_view(m.c_ref, n)[c], got),
        "consume_seq": _opt(seq[c], got),
        "consume_t": Col(consume_t, ~got | np.isnan(consume_t)),
    }


def _require(module: str, extra: str, what: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(
            f"{what} needs the '{module}' package: pip install 'mpvis[{extra}]' "
            f"(or pip install {module}) [{exc}]") from None


def pandas_tables(m: ModelManager) -> Tables[pd.DataFrame]:
    """Events and messages as pandas data frames, nullable dtypes where a value may be null."""
    pdm = _require("pandas", "pandas", "to_pandas()")

    def series(c: Col) -> Any:
        if c.categories is not None:
            return pdm.Categorical.from_codes(c.values, categories=list(c.categories))
        if c.mask is None:
            return c.values
        if c.values.dtype == np.bool_:
            return pdm.arrays.BooleanArray(c.values, c.mask)
        if c.values.dtype.kind == "f":
            return pdm.arrays.FloatingArray(c.values, c.mask)
        return pdm.arrays.IntegerArray(c.values.astype(np.int64), c.mask)

    def frame(cols: dict[str, Col]) -> Any:
        return pdm.DataFrame({k: series(c) for k, c in cols.items()})

    return Tables(frame(event_columns(m)), frame(message_columns(m)))


def arrow_tables(m: ModelManager) -> Tables[pa.Table]:
    """Events and messages as Arrow tables (dictionary-encoded ``kind`` and ``site``)."""
    pam = _require("pyarrow", "arrow", "to_arrow()")

    def array(c: Col) -> Any:
        if c.categories is not None:
            codes = pam.array(c.values.astype(np.int32), mask=c.values < 0)
            return pam.DictionaryArray.from_arrays(codes, pam.array(list(c.categories),
                                                                    type=pam.string()))
        return pam.array(c.values, mask=c.mask)

    def table(cols: dict[str, Col]) -> Any:
        return pam.table({k: array(c) for k, c in cols.items()})

    return Tables(table(event_columns(m)), table(message_columns(m)))
