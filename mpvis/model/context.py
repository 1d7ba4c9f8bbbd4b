"""Rules that need context, applied record by record to the kinds that have them.

Each ``on_<kind>`` function checks one already-columned record against the
model (raising :class:`ModelInputError` before changing anything) and then
updates the model's context: live requests, consumes and their messages,
collective instances, finished ranks.  The vectorised part of ingestion
(:mod:`mpvis.model.ingest`) has already checked every per-record rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mpvis.model.errors import ModelInputError
from mpvis.protocol.records import KIND_CODE

if TYPE_CHECKING:
    from mpvis.model.manager import ModelManager

Record = dict[str, Any]
K_SEND, K_RECV = KIND_CODE["send"], KIND_CODE["recv"]
Key = tuple[int, int]
F_BLOCKING = 1


def on_send(m: ModelManager, rec: Record, g: int) -> None:
    if not rec["blocking"]:
        new_req(m, rec, rec["rank"], rec["seq"])


def on_recv(m: ModelManager, rec: Record, g: int) -> None:
    r, s, comm = rec["rank"], rec["seq"], rec.get("comm", 0)
    if not rec["blocking"]:
        new_req(m, rec, r, s)
    m.races.on_recv(r, s, comm, rec["src"], rec["tag"])


def on_consume(m: ModelManager, rec: Record, g: int) -> None:
    r, s, comm = rec["rank"], rec["seq"], rec.get("comm", 0)
    rs = rec["recv"]
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
    if (src != -1 and src != rec["src"]) or (tag != -1 and tag != rec["tag"]):
        raise ModelInputError(
            f"consumed message (src {rec['src']}, tag {rec['tag']}) does not match "
            f"recv {rs} (src {src}, tag {tag})", rank=r, seq=s)
    send = rec.get("send")
    if send is None:
        ref[rg] = s
        infer(m, rec, rs)
        m.races.touch_recv(r, rs)
        return
    q, qs = send
    events = m.by_rank[q]
    if qs < len(events):
        sg = events[qs]
        check_pair(m, sg, (r, s, rec["tag"], comm))
        ref[rg] = s
        link(m, sg, g)
    elif (q, qs) in m._early:
        raise ModelInputError(f"send {send} is consumed twice", rank=r, seq=s)
    else:
        ref[rg] = s
        m._early[(q, qs)] = g
        m.races.touch_recv(r, rs)


def on_wait(m: ModelManager, rec: Record, g: int) -> None:
    r, s = rec["rank"], rec["seq"]
    live = m._live_reqs[r]
    reqs = rec["reqs"]
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


def on_coll(m: ModelManager, rec: Record, g: int) -> None:
    r, s, comm = rec["rank"], rec["seq"], rec.get("comm", 0)
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


def on_coll_exit(m: ModelManager, rec: Record, g: int) -> None:
    r, s, comm = rec["rank"], rec["seq"], rec.get("comm", 0)
    open_ = m.colls.open_collective(r, comm)
    if open_ is None:
        raise ModelInputError("coll_exit without a coll", rank=r, seq=s)
    if open_[2] != rec["op"]:
        raise ModelInputError(f"coll_exit op '{rec['op']}' differs from its coll's "
                              f"'{open_[2]}'", rank=r, seq=s)
    m._exit_of[(r, s)] = (m.colls.leave(r, comm), open_[2])


def on_final(m: ModelManager, rec: Record, g: int) -> None:
    m.finished[rec["rank"]] = True

# -- helpers --------------------------------------------------------------------

def new_req(m: ModelManager, rec: Record, r: int, s: int) -> None:
    live = m._live_reqs[r]
    if rec["req"] in live:
        raise ModelInputError(f"request {rec['req']} is already live", rank=r, seq=s)
    live[rec["req"]] = s


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


def infer(m: ModelManager, rec: Record, rs: int) -> None:
    """A consume without ``send``: match it by the non-overtaking rule."""
    r, s, comm = rec["rank"], rec["seq"], rec.get("comm", 0)
    m._ensure_channels()
    chan = (rec["src"], r, comm, rec["tag"])
    if not m._channels.add_inferred(chan, rs, s):
        raise ModelInputError(
            "cannot infer the send of this consume: its receive was posted before one "
            "already matched on the channel; give the 'send' field", rank=r, seq=s)
    resolve(m, chan)


def resolve(m: ModelManager, chan: tuple[int, int, int, int]) -> None:
    for cseq, key in m._channels.resolve(chan):
        link_checked(m, m._gidx(key), m.by_rank[chan[1]][cseq])
