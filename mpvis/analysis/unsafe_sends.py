"""Unsafe sends: deadlocks the run avoided only because MPI buffered its sends.

A standard-mode send may complete as soon as its data is copied (MPICH sends
small messages eagerly) or only once the matching receive is posted; the MPI
standard allows both, so a program whose completion relies on buffering is
erroneous ("unsafe", MPI 4.1, Sec. 3.5).  This module decides it from the
recorded execution: it re-executes every rank's recorded operations, with the
recorded matching, under *zero buffering*:

* a blocking send (standard, synchronous or ready; not ``mode: "buffered"``)
  completes only once the receive that consumed its message has been posted
  (its ``recv`` event executed); the rank's next event waits for that;
* the send half of a Sendrecv (a blocking send carrying ``call`` followed by
  the blocking receive of the same call) completes with the receive: the
  event after the receive's consume waits for it;
* a wait (or successful test) naming a nonblocking send's request waits for
  that send's receive to be posted;
* a consume waits for its send to be posted;
* a collective's exit waits for the entries the spec's happened-before edges
  name (every member for barrier-like operations, the root for bcast/scatter,
  every member at the root of reduce/gather; see :mod:`mpvis.model.collectives`).

Every rule only adds waits to the recorded order, so the recorded matching
stays possible and the re-execution is one execution MPI allows.  Ranks that
get stuck in it wait for each other along AND edges (each rank waits for every
unmet requirement of its next event).  A directed cycle of such waits is a
deadlock if sends are not buffered; it is reported (:func:`potential_deadlocks`)
when at least one of its waits is a send's (a cycle of receives only would have
hung the recorded run too, which :mod:`mpvis.analysis.deadlock_monitor` proves)
and when the recorded run was not itself blocked at every one of its events.
A blocking send that nothing ever receives blocks forever without buffering;
waits through it are reported as a lost message
(:mod:`mpvis.analysis.lost_messages`), not as a deadlock.

The pass is linear in the number of events: each rank advances while its next
event's requirements are met and sleeps on the first unmet one otherwise.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from mpvis.analysis.deadlock_p2p import describe_p2p
from mpvis.analysis.deadlock_report import describe_site
from mpvis.analysis.waitfor import WaitEdge, weak_components
from mpvis.model.collectives import ALL_TO_ALL, FROM_ROOT, TO_ROOT
from mpvis.model.event_arrays import RunArrays, extra_events, rank_arrays, rank_chunks
from mpvis.model.heap import trim_freed_memory
from mpvis.model.manager import ModelManager
from mpvis.protocol import records as R

__all__ = [
    "Requirement",
    "Requirements",
    "ZeroBufferRun",
    "potential_deadlocks",
    "requirements",
    "send_cycles",
    "zero_buffer_run",
]

#: A ``seq`` no rank ever reaches: a requirement that can never be met.
NEVER = 1 << 62


@dataclass(frozen=True, slots=True)
class Requirement:
    """Event ``need`` (rank, seq) must have executed before the event it is attached to.

    ``cause``: (rank, seq) of the blocking operation (the send, the receive,
    the collective); ``kind``: ``send`` (a send waits for its receive to be
    posted), ``recv`` (a receive waits for its send) or ``collective``;
    ``op``: a description for the reason text; ``site``: the cause's site.
    """

    need: tuple[int, int]
    cause: tuple[int, int]
    kind: str
    op: str
    site: str | None = None


@dataclass
class ZeroBufferRun:
    """Where the zero-buffer re-execution stopped.

    ``stuck``: rank -> the requirements of its next event that were never met
    (empty for ranks that ran to the end of their records).  ``pc``: per rank,
    how many of its events executed (its event count plus one when it got
    past its last event's requirements).
    """

    stuck: dict[int, list[Requirement]]
    pc: list[int]


_SEND, _RECV, _CONSUME, _WAIT, _COLL = (
    R.KIND_CODE[k] for k in (R.SEND, R.RECV, R.CONSUME, R.WAIT, R.COLL))
#: Requirement kinds in the table's ``kind`` column.
KINDS = ("send", "recv", "collective")
_K_SEND, _K_RECV, _K_COLL = range(3)
_NEED_SEQ = 5  # the row column that holds NEVER: 64-bit


class _AllEntered:
    """The exit of an all-members collective waits for every member's entry.

    One object per collective instance, shared by the members whose exit waits
    for all of them (every member of a barrier-like operation, the root of a
    reduce): memory linear in the members, not quadratic.  A rank's own entry
    is in the list and always met when its exit is checked (its ``pc`` is past
    it).  ``cur``: the members before it are known to have entered; since
    ``pc`` only grows, the scan never goes back.
    """

    __slots__ = ("cur", "ranks", "seqs")

    def __init__(self, ranks: list[int], seqs: list[int]) -> None:
        self.ranks = ranks
        self.seqs = seqs
        self.cur = 0

    def first_unmet(self, pc: list[int]) -> int:
        """Index of the first member not yet entered, or -1."""
        ranks, seqs, i = self.ranks, self.seqs, self.cur
        n = len(ranks)
        while i < n and pc[ranks[i]] > seqs[i]:
            i += 1
        self.cur = i
        return i if i < n else -1


@dataclass
class Requirements:
    """The zero-buffer requirements of a built model, as columns (module docstring).

    A *checkpoint* is a position ``(rank, pos)`` with requirements (``pos`` =
    the rank's event count for getting past its last event).  Checkpoints are
    in (rank, pos) order: rank ``r``'s are ``cp_start[r]:cp_start[r + 1]``, at
    positions ``cp_pos``.  Checkpoint ``j``'s point-to-point and root rows are
    ``row_start[j]:row_start[j + 1]`` of ``need_rank``/``need_seq`` (the event
    that must have run; ``never`` in ``need_seq`` for one that never runs,
    :data:`NEVER` in a :class:`Requirement`), ``cause_seq`` (the blocking
    operation on the checkpoint's rank), ``kind`` (index into :data:`KINDS`)
    and ``gen`` (seq of the record that set the requirement: rows are in the
    order the records set them); ``group[j]`` indexes ``groups`` (an
    all-members collective wait, set by the record at ``pos - 1``) or is -1.
    The columns are 32-bit while the run's counts allow (``never`` is then
    ``2**31 - 1``, above every position).
    """

    counts: list[int]
    cp_start: memoryview
    cp_pos: memoryview
    row_start: memoryview
    need_rank: memoryview
    need_seq: memoryview
    cause_seq: memoryview
    kind: memoryview
    gen: memoryview
    group: memoryview
    groups: list[_AllEntered]
    never: int = NEVER


def _arr(code: str, values: npt.NDArray[Any]) -> memoryview:
    """``values`` as machine integers of type ``code`` (``struct`` letters),
    read one at a time as Python ints (no copy when already of that type)."""
    return np.ascontiguousarray(values, dtype=np.dtype(code)).data


#: Events read at a time by :func:`requirements` (whole ranks: a rank with more
#: is read alone).  Its arrays are a chunk's, not the run's: ``mpvis check``'s
#: peak memory was this pass's whole-run arrays.
CHUNK_EVENTS = 1 << 17

_Rows = list[npt.NDArray[Any]]  # (rank, at, gen, sub, need rank, need seq, cause, kind)


@dataclass
class _Collectives:
    """The collective exits' requirements (:func:`_collective_waits`), by rank.

    ``at_*``: the all-members waits (rank, position of the exit, group index),
    rank-major; ``root``: rows ``(rank, at, gen, sub, root, root's entry seq,
    cause)`` of exits waiting for their root (rank-major)."""

    groups: list[_AllEntered]
    at_rank: npt.NDArray[np.int64]
    at_pos: npt.NDArray[np.int64]
    at_group: npt.NDArray[np.int64]
    root: list[npt.NDArray[np.int64]]


def requirements(m: ModelManager, *, chunk_events: int = CHUNK_EVENTS) -> Requirements:
    """The zero-buffer requirements of every event of a built model (module docstring).

    Reads the run's events as arrays in rank-major order, a chunk of whole ranks
    at a time (:func:`mpvis.model.event_arrays.rank_chunks`, about
    ``chunk_events`` events: the rows of a rank's checkpoints need only its own
    events and its messages' partners); only waits (their request lists) and
    collective entries (operation, root, group) are read from the records'
    extra fields.  The collectives are read first (an exit may wait for a rank
    of a later chunk); each chunk's rows are sorted and narrowed before the
    next chunk is read.
    """
    store = m.store
    counts = [store.count(r) for r in range(m.nprocs)]
    width = max(counts, default=0) + 2
    colls = _collective_waits(m, chunk_events)
    buffered = extra_events(store, "mode", "buffered")
    narrow = width < _NEVER32
    never = _NEVER32 if narrow else NEVER
    parts = []
    for ev in rank_chunks(store, chunk_events):
        parts.append(_chunk_table(ev, width, never, _chunk_rows(ev, counts, buffered), colls))
        del ev
        trim_freed_memory()  # a chunk's temporaries: not resident under the next one's
    return _join(counts, parts, colls.groups, never)


#: ``never`` of 32-bit requirement tables: above every position of a rank with
#: fewer than ``2**31 - 3`` events.
_NEVER32 = 2**31 - 1


def _chunk_rows(ev: RunArrays, counts: list[int],
                buffered: tuple[npt.NDArray[Any], npt.NDArray[Any]]) -> list[_Rows]:
    """The unsorted point-to-point requirement rows of the ranks of ``ev``, by kind."""
    counts_a = np.asarray(counts, np.int64)
    rank_rm, seq_rm, kind_rm = ev.rank, ev.seq, ev.kind
    blocking = ev.blocking
    buf_rm = np.zeros(len(ev), dtype=bool)
    buf_rm[ev.held_events(*buffered)] = True  # buffered sends (masked with is_send)
    rows: list[_Rows] = []

    def posted(sends: npt.NDArray[Any]) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
        """For sends (positions), the event their completion needs: the receive
        of the consume that took the message, or (dest, NEVER)."""
        has, (p_rank, p_ref) = ev.partner_fields(sends, "rank", "ref")
        need_r = np.where(has, p_rank, ev.field("peer", sends)).astype(np.int64)
        need_s = np.where(has, p_ref.astype(np.int64), np.int64(NEVER))
        return need_r, need_s

    def add(cols: tuple[Any, ...], kind: int) -> None:
        """Rows (rank, at, gen, sub, need rank, need seq, cause) of one ``kind``,
        32-bit but the needed seq (:data:`NEVER`)."""
        arrays = tuple(np.asarray(c, np.int64 if i == _NEED_SEQ else np.int32)
                       for i, c in enumerate(cols))
        rows.append([*arrays, np.full(len(arrays[0]), kind, np.int8)])

    is_send = kind_rm == _SEND
    # blocking sends: the rank's next event (after a Sendrecv's consume) waits
    idx = np.flatnonzero(is_send & blocking & ~buf_rm)
    r, s = rank_rm[idx], seq_rm[idx]
    at = s.astype(np.int64) + 1  # NEVER for a Sendrecv whose receive is never consumed
    # a send with a ``call`` whose next event is a blocking receive of the same call
    # (or of none): a Sendrecv, its send completes with the receive
    send_call = ev.field("call", idx).astype(np.int64)  # -1 when absent
    cand = np.flatnonzero(send_call >= 0)
    cand = cand[s[cand] + 1 < counts_a[r[cand]]]
    nxt = idx[cand] + 1
    next_call = ev.field("call", nxt)
    pair = ((kind_rm[nxt] == _RECV) & blocking[nxt]
            & ((next_call < 0) | (next_call == send_call[cand])))
    c = ev.field("ref", nxt[pair]).astype(np.int64)
    at[cand[pair]] = np.where(c < 0, NEVER, c + 1)
    keep = at != NEVER
    idx, r, s, at = idx[keep], r[keep], s[keep], at[keep]
    at = np.minimum(at, counts_a[r]) if len(r) else at
    add((r, at, s, np.zeros_like(s), *posted(idx), s), _K_SEND)
    # consumes wait for their send
    idx = np.flatnonzero(kind_rm == _CONSUME)
    has, (sent_rank, sent_seq) = ev.partner_fields(idx, "rank", "seq")
    idx, sent_rank, sent_seq = idx[has], sent_rank[has], sent_seq[has]
    s = seq_rm[idx]
    add((rank_rm[idx], s, s, np.zeros_like(s), sent_rank, sent_seq, ev.field("ref", idx)),
        _K_RECV)
    # waits: for the receive of each nonblocking send they complete
    nb = np.flatnonzero(is_send & ~blocking & ~buf_rm)
    ws, w_pos, w_sub = _waited_sends(ev, nb, np.flatnonzero(kind_rm == _WAIT))
    if len(ws):
        w_seq = seq_rm[w_pos]
        add((rank_rm[w_pos], w_seq, w_seq, w_sub, *posted(ws), seq_rm[ws]), _K_SEND)
    return rows


def _waited_sends(ev: RunArrays, nb: npt.NDArray[Any], waits: npt.NDArray[Any]
                  ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The nonblocking sends (positions ``nb``) that the ``waits`` (positions)
    complete: ``(send, wait, sub)`` rows in the order of the waits and of each
    wait's ``reqs``, ``sub`` numbering a wait's completed sends from 0.

    As a walk of each rank's events would find them: a send opens its ``req``
    (replacing an open send of the same ``req``), a wait naming the ``req``
    closes it and completes that send.  On arrays: the events of one (rank,
    req) in order; a wait completes the send just before it, if any.
    """
    lengths, named = ev.requests(waits)
    pos = np.concatenate([nb, np.repeat(waits, lengths)]).astype(np.int64)
    req = np.concatenate([ev.field("req", nb).astype(np.int64), named])
    order = np.lexsort((pos, req, ev.rank[pos]))  # a wait names a req once: no ties
    is_wait = order >= len(nb)
    same = np.zeros(len(order), dtype=bool)
    sp, sr = pos[order], req[order]
    same[1:] = (sr[1:] == sr[:-1]) & (ev.rank[sp[1:]] == ev.rank[sp[:-1]])
    hit = np.flatnonzero(is_wait[1:] & ~is_wait[:-1] & same[1:]) + 1
    send, name = sp[hit - 1], order[hit] - len(nb)  # name: index into the waits' reqs
    by_name = np.argsort(name, kind="stable")
    send, name = send[by_name], name[by_name]
    wait = pos[len(nb) + name]
    first = np.ones(len(wait), dtype=bool)
    first[1:] = wait[1:] != wait[:-1]
    start = np.flatnonzero(first)
    sub = np.arange(len(wait)) - np.repeat(start, np.diff(np.append(start, len(wait))))
    return send, wait, sub


def _collective_waits(m: ModelManager, chunk_events: int) -> _Collectives:
    """Requirements of collective exits: the k-th ``coll`` of a rank on a
    communicator is its part in that communicator's k-th instance; its exit
    (the next position) waits for every member (barrier-like operations; the
    root of a reduce or gather) or for the root (bcast, scatter).  A
    communicator's members are the ``group`` of its first entry (rank-major)
    that gives one, every rank for ``comm`` 0, else the ranks seen on it.

    On arrays of the entries (found a chunk of ranks at a time); Python only per
    entry's extra fields and per all-members instance (its shared
    :class:`_AllEntered`)."""
    n = m.nprocs
    parts: list[tuple[npt.NDArray[Any], ...]] = []
    extras: list[Mapping[str, Any]] = []
    for ev in rank_chunks(m.store, chunk_events):
        colls = np.flatnonzero(ev.kind == _COLL)
        parts.append((ev.rank[colls].astype(np.int64), ev.seq[colls].astype(np.int64),
                      ev.field("comm", colls).astype(np.int64)))
        extras.extend(ev.extras(colls))
    ranks, seqs, comms = (np.concatenate([p[i] for p in parts]) if parts
                          else np.zeros(0, np.int64) for i in range(3))
    members: dict[int, tuple[int, ...]] = {0: tuple(range(n))}
    for i in np.flatnonzero(comms != 0).tolist():
        comm, ex = int(comms[i]), extras[i]
        if comm not in members and ex.get("group") is not None:
            members[comm] = tuple(ex["group"])
    # instance of each entry: (comm, k), k its rank's count of earlier entries on comm
    by_comm = np.argsort(comms, kind="stable")  # (comm, rank, seq) order
    sc, sr = comms[by_comm], ranks[by_comm]
    new = np.ones(len(sc), dtype=bool)
    new[1:] = (sc[1:] != sc[:-1]) | (sr[1:] != sr[:-1])
    first = np.flatnonzero(new)
    nth = np.empty(len(sc), dtype=np.int64)
    nth[by_comm] = np.arange(len(sc)) - np.repeat(first, np.diff(np.append(first, len(sc))))
    comm_ids, comm_id = np.unique(comms, return_inverse=True)
    for comm in comm_ids.tolist():
        if comm not in members:
            members[comm] = tuple(np.unique(ranks[comms == comm]).tolist())
    span = int(nth.max()) + 1 if len(nth) else 1
    inst = comm_id.astype(np.int64) * span + nth
    # entry seq of (instance, rank): a sorted key, looked up by binary search
    entry_key = inst * n + ranks
    key_order = np.argsort(entry_key, kind="stable")
    sorted_keys, sorted_seqs = entry_key[key_order], seqs[key_order]

    def entered(inst_of: npt.NDArray[np.int64], who: npt.NDArray[np.int64]
                ) -> npt.NDArray[np.int64]:
        """The entry seqs of ranks ``who`` in instances ``inst_of``, NEVER if none."""
        ok = (who >= 0) & (who < n)
        q = inst_of * n + np.where(ok, who, 0)
        k = np.minimum(np.searchsorted(sorted_keys, q), max(len(sorted_keys) - 1, 0))
        hit = ok & (sorted_keys[k] == q) if len(sorted_keys) else np.zeros(len(q), bool)
        return np.where(hit, sorted_seqs[k] if len(sorted_keys) else 0, NEVER)

    ops = [ex.get("op") for ex in extras]
    roots = [ex.get("root") for ex in extras]
    kind = np.array([1 if op in ALL_TO_ALL or (op in TO_ROOT and root is not None and root == r)
                     else 2 if op in FROM_ROOT and root is not None and root != r else 0
                     for op, root, r in zip(ops, roots, ranks.tolist(), strict=True)],
                    dtype=np.int8)
    # all-members waits: one shared group per instance, numbered as first met
    every = np.flatnonzero(kind == 1)
    uniq, first_at, which = np.unique(inst[every], return_index=True, return_inverse=True)
    numbering = np.argsort(first_at, kind="stable")
    gi = np.empty(len(uniq), dtype=np.int64)
    gi[numbering] = np.arange(len(uniq))
    # each instance's members (as ints, -1 for a member that is none) and their
    # entries, looked up at once
    as_ints: dict[int, tuple[list[int], npt.NDArray[np.int64]]] = {}
    mems: list[list[int]] = []
    whos: list[npt.NDArray[np.int64]] = []
    for comm in comm_ids[comm_id[every[first_at[numbering]]]].tolist():
        got = as_ints.get(comm)
        if got is None:
            mem = list(members.get(comm, ()))
            got = as_ints[comm] = (mem, np.array([q if type(q) is int else -1 for q in mem],
                                                 dtype=np.int64))
        mems.append(got[0])
        whos.append(got[1])
    sizes = [len(w) for w in whos]
    seqs_of = np.split(entered(np.repeat(uniq[numbering], sizes),
                               np.concatenate(whos) if whos else np.zeros(0, np.int64)),
                       np.cumsum(sizes)[:-1]) if whos else []
    groups = [_AllEntered(mem, q.tolist()) for mem, q in zip(mems, seqs_of, strict=True)]
    # root waits
    to_root = np.flatnonzero(kind == 2)
    root_of = np.array([roots[i] for i in to_root.tolist()], dtype=np.int64)
    ss = seqs[to_root]
    root_rows = [ranks[to_root], ss + 1, ss, np.zeros_like(ss), root_of,
                 entered(inst[to_root], root_of), ss]
    return _Collectives(groups, ranks[every], seqs[every] + 1, gi[which], root_rows)


def _chunk_table(ev: RunArrays, width: int, never: int, rows: list[_Rows],
                 colls: _Collectives) -> list[npt.NDArray[Any]]:
    """The rows of the ranks of ``ev`` (with their collective waits) sorted by
    (rank, position, generating record, order in it) and indexed by checkpoint:
    ``[checkpoints of each rank, cp_pos, row_start (from 0), group, gen,
    need_rank, need_seq, cause, kind]``, 32-bit (``need_seq`` too when
    ``never`` is :data:`_NEVER32`)."""
    lo, hi = ev.lo, ev.lo + len(ev.counts)
    a, b = np.searchsorted(colls.root[0], [lo, hi])
    if b > a:
        add = [c[a:b] for c in colls.root]
        rows.append([*add, np.full(b - a, _K_COLL, np.int8)])

    def take(i: int) -> npt.NDArray[Any]:
        """Column ``i`` of every row, in the order of ``rows``; the rows' own
        arrays of it are let go (so each column exists once, whole or in parts)."""
        out = np.concatenate([r[i] for r in rows]) if rows else np.zeros(0, np.int64)
        for r in rows:
            r[i] = np.zeros(0, out.dtype)
        return out

    row_key = (take(0).astype(np.int64) - lo) * width + take(1)  # (rank, at)
    sub, gen = take(3).astype(np.int64), take(2).astype(np.int64)
    subs = int(sub.max()) + 1 if len(sub) else 1
    if (hi - lo) * width * width * subs < 1 << 62:  # (rank, at, gen, sub) as one integer
        o = np.argsort((row_key * width + gen) * subs + sub, kind="stable")
    else:
        o = np.lexsort((sub, gen, row_key))
    del sub
    row_key = row_key[o]
    a, b = np.searchsorted(colls.at_rank, [lo, hi])
    c_key = (colls.at_rank[a:b] - lo) * width + colls.at_pos[a:b]
    cp_key = _sorted_union(row_key, np.sort(c_key))
    row_start = np.searchsorted(row_key, cp_key)
    del row_key
    group = np.full(len(cp_key), -1, np.int32)
    group[np.searchsorted(cp_key, c_key)] = colls.at_group[a:b]
    need_seq = take(5)[o]
    if never != NEVER:
        need_seq = np.where(need_seq == NEVER, never, need_seq).astype(np.int32)
    per_rank = np.bincount(cp_key // width, minlength=hi - lo)  # checkpoints of each rank
    return [per_rank, (cp_key % width).astype(np.int32), row_start.astype(np.int32), group,
            gen[o].astype(np.int32), take(4)[o], need_seq, take(6)[o], take(7)[o]]


def _join(counts: list[int], parts: list[list[npt.NDArray[Any]]], groups: list[_AllEntered],
          never: int) -> Requirements:
    """The chunks' tables (:func:`_chunk_table`, in rank order) as one, a column
    at a time (each chunk's copy of it let go as it is joined)."""
    n = len(counts)

    def join(i: int) -> npt.NDArray[Any]:
        out = (np.concatenate([p[i] for p in parts]) if parts else np.zeros(0, np.int32))
        for p in parts:
            p[i] = out[:0]
        return out

    rows = [len(p[4]) for p in parts]
    total = sum(rows)
    wide = np.int64 if total >= 1 << 31 else np.int32
    offsets = np.cumsum([0, *rows[:-1]]) if parts else np.zeros(0, np.int64)
    for p, off in zip(parts, offsets.tolist(), strict=True):
        p[2] = p[2].astype(wide) + off  # a chunk's rows from 0: from its first row
    row_start = np.append(join(2), wide(total))
    cp_start = np.zeros(n + 1, np.int64)
    np.cumsum(join(0), out=cp_start[1:])
    seq_code = "i" if never != NEVER else "q"
    return Requirements(
        counts=counts, cp_start=_arr("q", cp_start), cp_pos=_arr("i", join(1)),
        row_start=_arr("q" if wide is np.int64 else "i", row_start),
        group=_arr("i", join(3)), gen=_arr("i", join(4)),
        need_rank=_arr("i", join(5)), need_seq=_arr(seq_code, join(6)),
        cause_seq=_arr("i", join(7)), kind=_arr("b", join(8)), groups=groups, never=never)


def _sorted_union(a: npt.NDArray[np.int64], b: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """``np.union1d`` of two sorted arrays (a merge, not a sort)."""
    both = np.concatenate([a, b])
    both.sort(kind="stable")  # two sorted runs: merged in linear time
    keep = np.ones(len(both), dtype=bool)
    keep[1:] = both[1:] != both[:-1]
    return both[keep]


def zero_buffer_run(m: ModelManager, table: Requirements) -> ZeroBufferRun:
    """Advance every rank as far as the requirements allow (module docstring).

    The end state does not depend on the order ranks are advanced in (the
    requirements only grow as ranks advance, so there is one greatest state,
    as the brute-force oracle of the tests checks): a rank jumps from
    checkpoint to checkpoint and sleeps on the first unmet requirement.
    """
    n = m.nprocs
    counts = table.counts
    cp_start, cp_pos, row_start = table.cp_start, table.cp_pos, table.row_start
    need_rank, need_seq, group, groups = table.need_rank, table.need_seq, table.group, table.groups
    pc = [0] * n
    nxt = list(cp_start[:n])
    sleeping: dict[int, list[tuple[int, int]]] = {}  # rank q -> [(waiter, seq of q needed)]
    work = list(range(n))
    while work:
        r = work.pop()
        last = counts[r]
        if pc[r] <= last:
            j, end = nxt[r], cp_start[r + 1]
            while j < end:
                pc[r] = cp_pos[j]
                bq, bs = -1, 0
                for i in range(row_start[j], row_start[j + 1]):
                    if pc[need_rank[i]] <= need_seq[i]:
                        bq, bs = need_rank[i], need_seq[i]
                        break
                else:
                    gi = group[j]
                    if gi >= 0:
                        grp = groups[gi]
                        u = grp.first_unmet(pc)
                        if u >= 0:
                            bq, bs = grp.ranks[u], grp.seqs[u]
                if bq >= 0:
                    sleeping.setdefault(bq, []).append((r, bs))
                    break
                j += 1
            else:
                pc[r] = last + 1
            nxt[r] = j
        waiters = sleeping.pop(r, None)
        if waiters:
            keep = []
            for w, need in waiters:
                if pc[r] > need:
                    work.append(w)
                else:
                    keep.append((w, need))
            if keep:
                sleeping[r] = keep
    stuck = {r: _unmet(m, table, r, nxt[r], pc) for r in range(n) if pc[r] <= counts[r]}
    return ZeroBufferRun({r: v for r, v in stuck.items() if v}, pc)


def _unmet(m: ModelManager, table: Requirements, r: int, j: int, pc: list[int]
           ) -> list[Requirement]:
    """Every unmet requirement of checkpoint ``j`` (rank ``r`` stopped there), in
    the order the records set them."""
    found: list[tuple[int, int, int, int, int]] = []  # gen, need rank, need seq, cause, kind
    for i in range(table.row_start[j], table.row_start[j + 1]):
        if pc[table.need_rank[i]] <= table.need_seq[i]:
            qs = table.need_seq[i]
            found.append((table.gen[i], table.need_rank[i], NEVER if qs == table.never else qs,
                          table.cause_seq[i], table.kind[i]))
    gi = table.group[j]
    if gi >= 0:
        s = table.cp_pos[j] - 1
        grp = table.groups[gi]
        found.extend((s, q, qs, s, _K_COLL) for q, qs in zip(grp.ranks, grp.seqs, strict=True)
                     if q != r and pc[q] <= qs)
    found.sort(key=lambda x: x[0])
    return [_requirement(m, r, x[1:]) for x in found]


def _requirement(m: ModelManager, r: int, row: tuple[int, int, int, int]) -> Requirement:
    """A requirement of rank ``r`` (``row``: need rank and seq, cause seq, kind),
    with its description from the cause's record."""
    q, qs, cause, kind = row
    rec = m.record(r, cause)
    if kind == _K_COLL:
        comm = rec.get("comm", 0)
        before = rank_arrays(m.store, r, 0, cause)
        k = int(np.count_nonzero((before.kind == _COLL) & (before.field("comm") == comm)))
        op = f"{rec.get('op')} (its {k + 1}. collective on comm {comm})"  # a coll: op is there
    else:
        op = describe_p2p(rec)
    return Requirement((q, qs), (r, cause), KINDS[kind], op, rec.get("site"))


def send_cycles(m: ModelManager) -> tuple[ZeroBufferRun, list[list[WaitEdge]]]:
    """The zero-buffer re-execution and, per weakly connected group of its stuck
    ranks, one wait-for cycle through a send's wait (its edges in order), if any."""
    run = zero_buffer_run(m, requirements(m))
    edges = [WaitEdge(r, x.need[0], x.kind, x.cause, x.op, x.site)
             for r, xs in sorted(run.stuck.items()) for x in xs]
    cycles = []
    for group in weak_components(sorted(run.stuck), edges):
        members = set(group)
        cyc = _cycle_through_send([e for e in edges if e.src in members])
        if cyc:
            cycles.append(cyc)
    return run, cycles


def _cycle_through_send(edges: list[WaitEdge]) -> list[WaitEdge]:
    """A directed cycle whose first edge is a send's wait, or ``[]`` (breadth-first)."""
    succ: dict[int, list[WaitEdge]] = {}
    for e in edges:
        succ.setdefault(e.src, []).append(e)
    for first in edges:
        if first.kind != "send":
            continue
        back: dict[int, WaitEdge | None] = {first.dst: None}
        queue = deque([first.dst])
        while queue:
            u = queue.popleft()
            if u == first.src:
                path: list[WaitEdge] = []
                step = back[u]
                while step is not None:
                    path.append(step)
                    step = back[step.src]
                return [first, *reversed(path)]
            for e in succ.get(u, ()):
                if e.dst not in back:
                    back[e.dst] = e
                    queue.append(e.dst)
    return []


def potential_deadlocks(m: ModelManager) -> list[dict[str, object]]:
    """Deadlocks of the run if sends were not buffered, as ``deadlocks`` report entries.

    Each entry: ``kind: "p2p"``, ``potential: true``, ``check: "zero-buffer"``,
    ``ranks`` (the cycle's ranks), ``cycle`` (``[r0, r1, ..., r0]``),
    ``events`` (``[rank, seq]`` of the blocking operations on the cycle),
    ``sends`` (``"rank:seq"`` of the sends on the cycle) and ``reason``.
    Cycles at which the recorded run itself ended blocked are left to the
    deadlock monitor (they are proven deadlocks), and cycles through a send
    nobody received to :mod:`~mpvis.analysis.lost_messages` (the lost
    message is the cause).
    """
    _, cycles = send_cycles(m)
    counts = [m.count(r) for r in range(m.nprocs)]
    return [_entry(used) for used in cycles
            if not all(_blocked_at(m, counts, e.event) for e in used)
            and not any(e.kind == "send" and m.partner(*e.event) is None for e in used)]


def _blocked_at(m: ModelManager, counts: Sequence[int], ev: tuple[int, int]) -> bool:
    """Whether the recorded run ended with rank ``ev[0]`` blocked in event ``ev``."""
    r, s = ev
    if m.finished[r]:
        return False
    last = counts[r] - 1
    return s == last or (s == last - 1 and m.record(r, last)["kind"] == "recv")


def _entry(used: list[WaitEdge]) -> dict[str, object]:
    cycle = [e.src for e in used]
    k = cycle.index(min(cycle))
    used = used[k:] + used[:k]
    cycle = [*cycle[k:], *cycle[:k], cycle[k]]
    phrases = []
    for e in used:
        where = describe_site(e.site)
        if e.kind == "send":
            phrases.append(f"rank {e.src} blocks in {e.op}{where} until rank {e.dst} "
                           "posts the matching receive")
        elif e.kind == "recv":
            phrases.append(f"rank {e.src} waits in {e.op}{where} for rank {e.dst}'s send")
        else:
            phrases.append(f"rank {e.src} waits in {e.op}{where} for rank {e.dst} to enter it")
    sends = [f"{e.event[0]}:{e.event[1]}" for e in used if e.kind == "send"]
    reason = ("Deadlock if sends are not buffered: " + "; ".join(phrases)
              + ". Wait-for cycle: " + " -> ".join(map(str, cycle))
              + ". The run finished only because MPI buffered "
              + ("the send" if len(sends) == 1 else "the sends") + " " + ", ".join(sends)
              + " (use MPI_Sendrecv, nonblocking calls, or reorder them).")
    return {
        "kind": "p2p",
        "potential": True,
        "check": "zero-buffer",
        "ranks": sorted(set(cycle)),
        "cycle": cycle,
        "events": [list(e.event) for e in used],
        "sends": sends,
        "reason": reason,
    }
