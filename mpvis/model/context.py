"""Rules that need context, applied record by record to the kinds that have them.

Each ``on_<kind>`` function checks one already-columned record against the
model (raising :class:`ModelInputError` before changing anything) and then
updates the model's context: live requests, consumes and their messages,
collective instances, finished ranks.  The vectorised part of ingestion
(:mod:`mpvis.model.ingest`) has already checked every per-record rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mpvis.model.errors import ModelInputError
from mpvis.protocol.codes import F_BLOCKING, KIND_CODE

if TYPE_CHECKING:
    from mpvis.model.ingest import Batch
    from mpvis.model.manager import ModelManager

K_SEND, K_RECV = KIND_CODE["send"], KIND_CODE["recv"]
Key = tuple[int, int]


class Rows:
    """The first ``k`` records of a :class:`~mpvis.model.ingest.Batch` as Python
    lists (cheap to index one record at a time), and their extras.  Record
    ``i`` has global index ``start + i``."""

    __slots__ = ("code", "comm", "extras", "flags", "peer", "rank", "ref", "req", "seq",
                 "sseq", "start", "tag")

    def __init__(self, cols: Batch, start: int, k: int) -> None:
        self.start = start
        self.code: list[int] = cols.code[:k].tolist()
        self.flags: list[int] = cols.flags[:k].tolist()
        self.rank: list[int] = cols.rank[:k].tolist()
        self.seq: list[int] = cols.seq[:k].tolist()
        self.comm: list[int] = cols.comm[:k].tolist()
        self.peer: list[int] = cols.peer[:k].tolist()
        self.tag: list[int] = cols.tag[:k].tolist()
        self.req: list[int] = cols.req[:k].tolist()
        self.ref: list[int] = cols.ref[:k].tolist()
        self.sseq: list[int] = cols.sseq[:k].tolist()
        self.extras = cols.extras


def on_send(m: ModelManager, b: Rows, i: int) -> None:
    """A nonblocking send (blocking ones have no rule here)."""
    new_req(m, b.req[i], b.rank[i], b.seq[i])


def on_recv(m: ModelManager, b: Rows, i: int) -> None:
    """A nonblocking receive (blocking ones have no rule here; the classifier
    pairs every receive in bulk, :meth:`RaceTracker.on_recvs`)."""
    new_req(m, b.req[i], b.rank[i], b.seq[i])


def on_consume(m: ModelManager, b: Rows, i: int) -> None:
    r, s, comm = b.rank[i], b.seq[i], b.comm[i]
    csrc, ctag = b.peer[i], b.tag[i]
    rs = b.ref[i]
    if rs >= s:
        raise ModelInputError(f"consume's 'recv' {rs} is not an earlier event", rank=r, seq=s)
    rg = m.by_rank[r][rs]
    ref = m.c_ref.data
    if m.c_kind.data[rg] != K_RECV:
        raise ModelInputError(f"consume's 'recv' {rs} is not a recv event", rank=r, seq=s)
    if ref[rg] != -1:
        raise ModelInputError(f"recv {rs} is consumed twice", rank=r, seq=s)
    if m.c_comm.data[rg] != comm:
        raise ModelInputError(f"consume's communicator differs from recv {rs}'s",
                              rank=r, seq=s)
    if rs != s - 1 and m.c_flags.data[rg] & F_BLOCKING:
        raise ModelInputError(
            f"the consume of blocking recv {rs} must be the event just after it",
            rank=r, seq=s)
    src, tag = m.c_peer.data[rg], m.c_tag.data[rg]
    if src not in (-1, csrc) or tag not in (-1, ctag):
        raise ModelInputError(
            f"consumed message (src {csrc}, tag {ctag}) does not match "
            f"recv {rs} (src {src}, tag {tag})", rank=r, seq=s)
    qs = b.sseq[i]
    if qs < 0:
        ref[rg] = s
        infer(m, (csrc, r, comm, ctag), rs, s)
        m.races.touch_recv(r, rs)
        return
    g = b.start + i
    events = m.by_rank[csrc]
    if qs < len(events):
        sg = events[qs]
        check_pair(m, sg, (r, s, ctag, comm))
        ref[rg] = s
        link(m, sg, g)
    elif (csrc, qs) in m._early:
        raise ModelInputError(f"send {[csrc, qs]} is consumed twice", rank=r, seq=s)
    else:
        ref[rg] = s
        m._early[(csrc, qs)] = g
        m.races.touch_recv(r, rs)


def on_wait(m: ModelManager, b: Rows, i: int) -> None:
    r, s = b.rank[i], b.seq[i]
    live = m._live_reqs[r]
    reqs = b.extras[i]["reqs"]
    if len(set(reqs)) != len(reqs):
        raise ModelInputError("wait names a request twice", rank=r, seq=s)
    for q in reqs:
        if q not in live:
            raise ModelInputError(f"wait names request {q}, which is not live",
                                  rank=r, seq=s)
        pg = m.by_rank[r][live[q]]
        if m.c_kind.data[pg] == K_RECV and m.c_ref.data[pg] == -1:
            raise ModelInputError(
                f"wait completes receive request {q} but no consume of it came before",
                rank=r, seq=s)
    for q in reqs:
        del live[q]


def on_coll(m: ModelManager, b: Rows, i: int) -> None:
    r, s, comm = b.rank[i], b.seq[i], b.comm[i]
    rec = b.extras[i]
    if m.colls.open_collective(r, comm) is not None:
        raise ModelInputError("coll while the previous collective has no coll_exit",
                              rank=r, seq=s)
    group = rec.get("group")
    if group is not None and not (isinstance(group, list) and r in group):
        raise ModelInputError("'group' must list the ranks of the communicator, this one "
                              "included", rank=r, seq=s)
    n = m.colls.enter(r, s, comm, rec["op"], root=rec.get("root"), group=group)
    m._entry_of[(r, s)] = n
    m._wake_key(("coll", comm, n, r))


def on_coll_exit(m: ModelManager, b: Rows, i: int) -> None:
    r, s, comm = b.rank[i], b.seq[i], b.comm[i]
    op = b.extras[i]["op"]
    open_ = m.colls.open_collective(r, comm)
    if open_ is None:
        raise ModelInputError("coll_exit without a coll", rank=r, seq=s)
    if open_[2] != op:
        raise ModelInputError(f"coll_exit op '{op}' differs from its coll's "
                              f"'{open_[2]}'", rank=r, seq=s)
    m._exit_of[(r, s)] = (m.colls.leave(r, comm), open_[2])


def on_final(m: ModelManager, b: Rows, i: int) -> None:
    m.finished[b.rank[i]] = True

# -- helpers --------------------------------------------------------------------

def new_req(m: ModelManager, req: int, r: int, s: int) -> None:
    live = m._live_reqs[r]
    if req in live:
        raise ModelInputError(f"request {req} is already live", rank=r, seq=s)
    live[req] = s


def check_pair(m: ModelManager, sg: int, cons: tuple[int, int, int, int]) -> None:
    """Send ``sg`` and the consume ``cons`` = (rank, seq, tag, comm) must describe
    the same message."""
    r, s, tag, comm = cons
    if m.c_kind.data[sg] != K_SEND:
        name = [int(m.c_rank.data[sg]), int(m.c_seq.data[sg])]
        raise ModelInputError(f"consume names {name}, which is not a send", rank=r, seq=s)
    if m.c_partner.data[sg] != -1:
        name = [int(m.c_rank.data[sg]), int(m.c_seq.data[sg])]
        raise ModelInputError(f"send {name} is consumed twice", rank=r, seq=s)
    if m.c_peer.data[sg] != r or m.c_tag.data[sg] != tag or m.c_comm.data[sg] != comm:
        name = [int(m.c_rank.data[sg]), int(m.c_seq.data[sg])]
        raise ModelInputError(
            f"consume names send {name} whose destination, tag or communicator differs",
            rank=r, seq=s)


def link(m: ModelManager, sg: int, cg: int) -> None:
    m.c_partner.data[sg] = cg
    m.c_partner.data[cg] = sg
    m._new_messages.append(sg)
    r = m.c_rank.data[cg]
    if m._wake:
        m._wake_key(("match", r, m.c_seq.data[cg]))
    m.races.touch_recv(r, m.c_ref.data[cg])


def link_checked(m: ModelManager, sg: int, cg: int) -> None:
    """Link a send to a consume that arrived first, checking they agree."""
    r, s = int(m.c_rank.data[cg]), int(m.c_seq.data[cg])
    check_pair(m, sg, (r, s, int(m.c_tag.data[cg]), int(m.c_comm.data[cg])))
    link(m, sg, cg)


def infer(m: ModelManager, chan: tuple[int, int, int, int], rs: int, s: int) -> None:
    """A consume ``s`` of receive ``rs`` without ``send``: match it by the
    non-overtaking rule on ``chan`` = (src, dst, comm, tag)."""
    m._ensure_channels()
    if not m._channels.add_inferred(chan, rs, s):
        raise ModelInputError(
            "cannot infer the send of this consume: its receive was posted before one "
            "already matched on the channel; give the 'send' field", rank=chan[1], seq=s)
    resolve(m, chan)


def resolve(m: ModelManager, chan: tuple[int, int, int, int]) -> None:
    for cseq, key in m._channels.resolve(chan):
        link_checked(m, m._gidx(key), m.by_rank[chan[1]][cseq])
