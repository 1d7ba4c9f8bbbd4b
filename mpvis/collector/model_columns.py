"""A compact batch's columns as the model's input columns, without a dict per record.

The central process journals a rank's ``COMPACT`` batch from its columns
(:class:`~mpvis.protocol.compact_columns.CompactColumns`); :func:`model_batch`
gives the model (:meth:`mpvis.model.manager.ModelManager.add_columns`) the
same columns :func:`mpvis.model.ingest.extract` would build from the batch's
dicts (MPVisualizer, section 2: the central process feeds the manager that
builds the functional model).  ``tests/collector/test_model_columns.py``
checks it against ``extract`` on random batches.
"""

from __future__ import annotations

import numpy as np

from mpvis.model.ingest import INT32_COLUMNS, Batch, SiteTable
from mpvis.protocol import records as R
from mpvis.protocol.codes import F_BLOCKING, F_SYNC, MVK_CONSUME, MVK_FINAL, MVK_RECV, MVK_SEND
from mpvis.protocol.compact_columns import CompactColumns

__all__ = ["model_batch"]

_INT32_MAX = 2**31 - 1
#: The model's kind code of each recorder kind a :class:`CompactColumns` holds.
_CODE = np.zeros(256, dtype=np.int8)
for _mvk, _kind in ((MVK_SEND, R.SEND), (MVK_RECV, R.RECV), (MVK_CONSUME, R.CONSUME),
                    (MVK_FINAL, R.FINAL)):
    _CODE[_mvk] = R.KIND_CODE[_kind]
#: The recorder kinds whose fields are all in the model's columns.
_COLUMNS_ONLY = np.isin(np.arange(256), (MVK_SEND, MVK_RECV, MVK_CONSUME, MVK_FINAL))


def model_batch(block: CompactColumns, sites: SiteTable) -> Batch | None:
    """The model's columns of ``block``'s records (``extract``'s, for their dicts), their
    sites numbered in ``sites``; ``None`` when a value does not fit the model's
    32-bit columns or a ``call`` its column, or when a record has fields held in
    no column (a wait, a collective, a state): ``extract`` then decides, with its
    error or extras."""
    if not _COLUMNS_ONLY[block.kind].all():  # waits, collectives, states: extract's extras
        return None
    n = len(block)
    final = block.kind == MVK_FINAL
    p2p = ~final
    none = np.full(n, -1, dtype=np.int64)
    ints = {
        "rank": np.full(n, block.rank, dtype=np.int64), "seq": block.seq,
        "comm": np.where(p2p, block.comm, 0), "peer": np.where(p2p, block.peer, -1),
        "tag": np.where(p2p, block.tag, -1), "req": np.where(block.req, block.seq, -1),
        "ref": np.where(block.kind == MVK_CONSUME, block.ref, -1), "sseq": block.sseq,
    }
    if any(int(ints[c].max()) > _INT32_MAX for c in INT32_COLUMNS) or \
            int(block.call.max()) > _INT32_MAX:
        return None
    send, recv = block.kind == MVK_SEND, block.kind == MVK_RECV
    flags = ((send | recv) & block.blocking) * F_BLOCKING + (send & block.sync) * F_SYNC
    return Batch(
        n=n, code=_CODE[block.kind], t=block.t, site=_site_ids(block, p2p, sites),
        flags=flags.astype(np.int8), peer=ints["peer"], tag=ints["tag"], req=ints["req"],
        rank=ints["rank"], seq=ints["seq"], comm=ints["comm"], ref=ints["ref"],
        sseq=ints["sseq"], size=none, call=np.where(block.call >= 0, block.call, -1),
    )


def _site_ids(block: CompactColumns, p2p: np.ndarray, sites: SiteTable) -> np.ndarray:
    """The model's site ids of the records (-1: none; a ``final`` has none), new sites
    numbered in order of first appearance, as ``extract`` does."""
    ids = np.where(p2p, block.site, 0)
    used, first = np.unique(ids, return_index=True)
    lut = np.full(int(used[-1]) + 1, -1, dtype=np.int64)
    for i in np.argsort(first).tolist():
        name = block.sites[int(used[i])]
        if name is not None:
            lut[used[i]] = sites.add(name)
    return lut[ids]
