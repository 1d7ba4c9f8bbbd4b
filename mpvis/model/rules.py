"""The record rules that need context (the model's second room).

:class:`RecordRules` checks each batch against what came before it and keeps
the facts those rules build.  The vectorised part of ingestion
(:mod:`mpvis.model.ingest`) has already checked every per-record rule; the
rules here are the spec's context rules (``shared/spec/trace-format.md``):

* ``seq`` 0, 1, 2, ... per rank with no gaps, nothing after ``final``
  (:meth:`RecordRules.sequence_prefix`, on whole columns);
* a ``consume`` names an earlier unconsumed ``recv`` of its rank whose
  arguments it satisfies; a message is consumed once; send and consume agree
  on tag, destination and communicator; requests are live when waited;
  collectives nest (:meth:`RecordRules.apply`, record by record for the kinds
  that have them).

State it owns: live requests, consumes waiting for a send that has not
arrived (*early* consumes), the channels used to infer a consume's send by
the non-overtaking rule (:mod:`mpvis.model.matching`), the collective book
(:mod:`mpvis.model.collectives`, which causal release reads), finished and
dead ranks, and, after :meth:`RecordRules.finish`, the lost sends.

What it writes elsewhere, only through their methods: the store's message
links (:meth:`EventStore.link <mpvis.model.store.EventStore.link>`) and
consume references (``c_ref``); causal release is told of linked messages
and collective entries and exits (:class:`~mpvis.model.causal.CausalRelease`);
the race tracker of new receives and consumed ones
(:class:`~mpvis.model.races.RaceTracker`).

A rule that fails raises :class:`ModelInputError` before changing anything
for its record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mpvis.model.causal import CausalRelease
from mpvis.model.collectives import CollectiveBook
from mpvis.model.errors import ModelInputError
from mpvis.model.ingest import Batch
from mpvis.model.matching import ChannelBook
from mpvis.model.races import RaceTracker
from mpvis.model.rule_plans import CollPlan, ConsumePlan, RequestPlan, Rows
from mpvis.model.store import EventStore
from mpvis.protocol import records as R
from mpvis.protocol.codes import F_BLOCKING

Key = tuple[int, int]
Channel = tuple[int, int, int, int]  # (src, dst, comm, tag)

K_SEND, K_RECV, K_CONSUME, K_WAIT = (R.KIND_CODE[k] for k in (R.SEND, R.RECV, R.CONSUME, R.WAIT))
K_COLL, K_COLL_EXIT, K_FINAL = R.KIND_CODE[R.COLL], R.KIND_CODE[R.COLL_EXIT], R.KIND_CODE[R.FINAL]


#: Kinds whose context rules run record by record (and nonblocking sends and
#: receives, for their requests; receives are paired for the classifier in bulk).
_SPECIAL_CODES = np.array(sorted({K_CONSUME, K_WAIT, K_COLL, K_COLL_EXIT, K_FINAL}),
                          dtype=np.int8)


def _special_mask(codes: Any, flags: Any) -> Any:
    """Records whose context rules run one by one."""
    nonblocking = ((codes == K_SEND) | (codes == K_RECV)) & ((flags & F_BLOCKING) == 0)
    return np.isin(codes, _SPECIAL_CODES) | nonblocking



class RecordRules:
    """The spec's context rules over one run's records, and the facts they keep."""

    def __init__(self, store: EventStore, causal: CausalRelease, races: RaceTracker,
                 colls: CollectiveBook) -> None:
        self.store = store
        self.causal = causal
        self.races = races
        self.colls = colls
        n = store.nprocs
        #: Ranks whose ``final`` arrived.
        self.finished = [False] * n
        #: Dead ranks (killed, crashed, or lost sends) and why.
        self.dead: dict[int, str] = {}
        #: After :meth:`finish`: sends consumed but never recorded because their
        #: rank died first (send key -> the consume's gidx).
        self.lost_sends: dict[Key, int] = {}
        #: After :meth:`finish`: consumes without ``send`` (C recorders omit it) left
        #: unmatched on their channel because the sender died before recording the
        #: sends (consume gidx -> sender rank; the sends' seqs are unknown).
        self.lost_unnumbered: dict[int, int] = {}
        self._pending_of: dict[int, int] | None = None  # unmatched inferred consume -> sender
        self._live_reqs: list[dict[int, int]] = [{} for _ in range(n)]  # req -> seq
        self._early: dict[Key, int] = {}  # send key -> consume gidx awaiting that send
        self._early_of: dict[int, Key] | None = None  # consume gidx -> send key, at the end
        self._channels = ChannelBook(self._send_claimed)
        self._inferring = False  # some consume lacked 'send': channels are indexed
        self._channel_upto = 0
        self._new_messages: list[int] = []
        #: Check a batch's consumes with whole-array operations when they are all
        #: simple (:class:`ConsumePlan`); False: always record by record (the
        #: reference the tests compare with).
        self.batch_consumes = True
        #: Check a batch's nonblocking sends and receives and its waits with
        #: whole-array operations when they keep the rules (:class:`RequestPlan`);
        #: False: always record by record (the reference the tests compare with).
        self.batch_requests = True
        #: Check a batch's collective entries and exits with whole-array
        #: operations when they keep the rules (:class:`CollPlan`); False:
        #: always record by record (the reference the tests compare with).
        self.batch_colls = True
        #: While :meth:`apply` leaves a batch's consumes to a :class:`ConsumePlan`:
        #: receive gidx -> position in the batch of the consume that consumes it.
        self._consumed_at: dict[int, int] = {}
        self._handlers: dict[int, Callable[[Rows, int], None]] = {
            K_SEND: self._on_send, K_RECV: self._on_recv, K_CONSUME: self._on_consume,
            K_WAIT: self._on_wait, K_COLL: self._on_coll, K_COLL_EXIT: self._on_coll_exit,
            K_FINAL: self._on_final,
        }

    # ------------------------------------------------------------ batches
    def sequence_prefix(self, cols: Batch) -> tuple[int, ModelInputError | None]:
        """Vectorised: ``seq`` 0, 1, 2, ... per rank, nothing after ``final``.

        Returns the length of the prefix that keeps those rules and the error
        at its end, if any."""
        n = cols.n
        if n == 0:
            return 0, None
        ranks = np.asarray(cols.rank[:n], dtype=np.int64)
        seqs = np.asarray(cols.seq[:n], dtype=np.int64)
        codes = np.asarray(cols.code[:n], dtype=np.int64)
        by_rank = self.store.by_rank
        base = np.fromiter((len(b) for b in by_rank), dtype=np.int64, count=len(by_rank))
        order = np.argsort(ranks, kind="stable")
        sr = ranks[order]
        starts = np.flatnonzero(np.r_[True, sr[1:] != sr[:-1]])
        pos = np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n]))
        expected = base[sr] + pos
        wrong_seq = seqs[order] != expected
        after_final = np.asarray(self.finished, dtype=bool)[sr]
        fin = codes[order] == K_FINAL
        after_final[1:] |= fin[:-1] & (sr[1:] == sr[:-1])
        bad = wrong_seq | after_final
        if not bad.any():
            return n, None
        j = int(np.flatnonzero(bad)[np.argmin(order[bad])])
        i = int(order[j])
        r, sq = int(ranks[i]), int(seqs[i])
        if after_final[j]:
            msg = f"rank {r} has an event after its 'final'"
        else:
            exp = int(expected[j])
            what = "repeats" if sq < exp else "skips"
            msg = (f"seq {sq} of rank {r} {what} (expected {exp}: seq must be 0, 1, 2, ... "
                   "in order, with no gaps)")
        return i, ModelInputError(msg, rank=r, seq=sq, index=i)

    def apply(self, cols: Batch, start: int, k: int) -> ModelInputError | None:
        """Context rules, record by record in batch order, for the first ``k``
        records of a batch already in the store from global index ``start``
        (a send that a consume of an earlier batch named is linked at its
        place); then match consumes without ``send`` to the batch's sends.
        Returns the first error (its ``index`` in the batch); the caller drops
        the records from it on (:meth:`truncated`)."""
        if k == 0:
            return None
        rows = Rows(cols, start, k)
        codes = rows.code
        handlers = self._handlers
        limit, error = k, None
        special = _special_mask(cols.code[:k], cols.flags[:k])
        early_at = self._early_sends(rows, cols, k)
        special[list(early_at)] = True
        plan = (ConsumePlan.make(self.store, cols, start, k)
                if self.batch_consumes and not self._inferring else None)
        if plan is not None and early_at and np.isin(plan.sg, [start + i for i in early_at]).any():
            plan = None  # a send both named early and consumed here: in batch order
        if plan is not None:  # the consumes are checked already: leave them to plan.apply
            special &= cols.code[:k] != K_CONSUME
            self._consumed_at = plan.consumed_at()
        requests = (RequestPlan.make(self.store, self._live_reqs, cols, start=start, k=k,
                                      consumed_at=self._consumed_at)
                    if self.batch_requests and (plan is not None
                                                or not (cols.code[:k] == K_CONSUME).any())
                    else None)
        if requests is not None:  # checked already: left to requests.apply
            special &= ~requests.mask
            special[list(early_at)] = True
        colls = (CollPlan.make(self.colls, cols, k)
                 if self.batch_colls and not self.causal.waits_on_entries() else None)
        if colls is not None:  # checked already: left to colls.apply
            special &= ~colls.mask
        linked_before = len(self._new_messages)
        try:
            for i in np.flatnonzero(special).tolist():
                try:
                    if early_at and i in early_at:
                        self._on_early_send(rows, i, requests is None)
                    else:
                        handlers[codes[i]](rows, i)
                except ModelInputError as exc:
                    exc.index = i
                    limit, error = i, exc
                    break
        finally:
            self._consumed_at = {}
        if requests is not None:
            requests.apply(self._live_reqs, limit)
        if colls is not None:
            colls.apply(self.colls, self.causal, limit)
        if plan is not None:
            self._apply_plan(plan, limit, linked_before, early_at)
        recv = np.flatnonzero(cols.code[:limit] == K_RECV)
        self.races.on_recvs(recv + start)
        if error is not None:
            self._unlink_dropped(start, start + limit)
            return error
        if not self._inferring:
            return None
        rank, seq, peer, comm, tag = rows.rank, rows.seq, rows.peer, rows.comm, rows.tag
        for i in np.flatnonzero(cols.code[:k] == K_SEND).tolist():
            # sends indexed when inference started (_ensure_channels) are not added twice
            if start + i >= self._channel_upto:
                chan = (rank[i], peer[i], comm[i], tag[i])
                self._channels.add_send(chan, seq[i])
                self._resolve(chan)
        self._channel_upto = start + k
        return None

    def _apply_plan(self, plan: ConsumePlan, limit: int, linked_before: int,
                    early_at: set[int]) -> None:
        """The planned consumes before position ``limit`` take effect; the new
        messages stay in batch order (the early sends linked by the loop, from
        ``linked_before`` on, and the plan's consumes)."""
        sends = plan.apply(self, limit)
        early = self._new_messages[linked_before:]
        if sends and early:
            where = sorted(i for i in early_at if i < limit)[:len(early)]
            merged = sorted(zip(where + plan.pos[:len(sends)].tolist(), early + sends,
                                strict=True))
            self._new_messages[linked_before:] = [g for _, g in merged]
        else:
            self._new_messages.extend(sends)

    def _unlink_dropped(self, start: int, cut: int) -> None:
        """The records from global index ``cut`` on are about to be dropped (an
        error): a kept consume of this batch linked to a send among them (the
        send came later in the batch) waits for its send again, as if the
        send had not arrived."""
        store = self.store
        partner = np.asarray(store.c_partner.view()[start:cut], dtype=np.int64)
        kinds = store.c_kind.view()[start:cut]
        for cg in (np.flatnonzero((kinds == K_CONSUME) & (partner >= cut)) + start).tolist():
            sg = int(store.c_partner.data[cg])
            self._early[store.key(sg)] = cg
            store.unlink(cg)
            self.races.touch(store.by_rank[int(store.c_rank.data[cg])][store.c_ref.data[cg]])
        self._new_messages = [g for g in self._new_messages if g < cut]

    def _early_sends(self, rows: Rows, cols: Batch, k: int) -> set[int]:
        """Positions of the batch's sends that a consume of an earlier batch named."""
        early = self._early
        if not early:
            return set()
        rank, seq = rows.rank, rows.seq
        return {i for i in np.flatnonzero(cols.code[:k] == K_SEND).tolist()
                if (rank[i], seq[i]) in early}

    def _on_early_send(self, b: Rows, i: int, request: bool = True) -> None:
        """A send whose consume came first: link them (checking they agree);
        ``request``: a nonblocking one's request is made live here too."""
        if request and not b.flags[i] & F_BLOCKING:
            self._on_send(b, i)
        key = (b.rank[i], b.seq[i])
        self._link_checked(b.start + i, self._early[key])
        del self._early[key]

    def truncated(self) -> None:
        """The store dropped events after a context error: re-index the channels."""
        if self._inferring:
            self._inferring = False
            self._ensure_channels()

    def take_new_messages(self) -> list[int]:
        """Global indices of the sends linked to their consume since the last call."""
        out, self._new_messages = self._new_messages, []
        return out

    def mark_dead(self, rank: int, detail: str) -> None:
        """The rank crashed or was killed (kept: the first detail given)."""
        self.dead[rank] = detail

    # ------------------------------------------------------------ the end
    def finish(self) -> ModelInputError | None:
        """The input has ended (after causal release settled everything it
        could): sort early consumes into lost sends (their rank did not finish
        and its trace ends before the send) and errors.  Marks the ranks that
        lost sends dead; returns the first problem, if any."""
        problem: ModelInputError | None = None
        store = self.store
        for key, g in self._early.items():
            r, s = key
            if not self.finished[r] and s >= store.count(r):
                # The sender died before shipping it (a SIGKILLed rank): a lost send.
                self.lost_sends[key] = g
                continue
            problem = ModelInputError(
                f"consume names send {list(key)}, which is not in the trace"
                + (f" (rank {r} ended with 'final' at seq {store.count(r) - 1})"
                   if self.finished[r] else ""),
                rank=int(store.c_rank.data[g]), seq=int(store.c_seq.data[g]))
            break
        for g, q in self._unmatched_inferred().items():
            if not self.finished[q]:
                # Its sender died before recording the send: lost, seq unknown.
                self.lost_unnumbered[g] = q
                continue
            r, cseq = store.key(g)
            problem = problem or ModelInputError(
                f"consume from rank {q} with tag {int(store.c_tag.data[g])} has no send to "
                f"match (non-overtaking rule; rank {q} ended with 'final')", rank=r, seq=cseq)
        self._mark_lost_senders_dead()
        return problem

    def _unmatched_inferred(self) -> dict[int, int]:
        """Consumes without ``send`` still unmatched on their channel: gidx -> sender."""
        if self._pending_of is None:
            by_rank = self.store.by_rank
            self._pending_of = {int(by_rank[chan[1]][cseq]): chan[0]
                                for chan, cseq in self._channels.pending_inferred()}
        return self._pending_of

    def lost_send_of(self, g: int) -> Key | None:
        """For a consume ``g`` whose send never arrived: that send's key if its
        rank did not finish and its trace ends before it (a lost send), else None.
        The seq is -1 when ``g`` has no ``send`` field and its channel has no send
        left to match it (asked only once the input has ended)."""
        if self._early_of is None:
            self._early_of = {cg: key for key, cg in self._early.items()}
        key = self._early_of.get(g)
        if key is None:
            q = self._unmatched_inferred().get(g) if self._inferring else None
            return None if q is None or self.finished[q] else (q, -1)
        q, qs = key
        if self.finished[q] or qs < self.store.count(q):
            return None
        return key

    def named_send_of(self, g: int) -> Key | None:
        """For a consume ``g`` whose send never arrived: the send its record
        named (its ``send`` field), if it named one (asked only once the input
        has ended; the analyzers' stream gives it, :mod:`mpvis.model.stream`)."""
        if self._early_of is None:
            self._early_of = {cg: key for key, cg in self._early.items()}
        return self._early_of.get(g)

    def _mark_lost_senders_dead(self) -> None:
        """A rank whose sends were consumed but never recorded died before it
        shipped its last records: it is dead, with what it lost as the detail."""
        lost: dict[int, list[int]] = {}
        for r, s in self.lost_sends:
            lost.setdefault(r, []).append(s)
        unnumbered: dict[int, int] = {}
        for q in self.lost_unnumbered.values():
            unnumbered[q] = unnumbered.get(q, 0) + 1
            lost.setdefault(q, [])
        for r, seqs in sorted(lost.items()):
            what = []
            if seqs:
                what.append("seq " + ", ".join(map(str, sorted(seqs)[:5]))
                            + ("..." if len(seqs) > 5 else ""))
            if unnumbered.get(r):
                what.append(f"{unnumbered[r]} matched by channel, seq unknown")
            detail = (f"its trace ends at seq {self.store.count(r) - 1} but peers consumed "
                      f"{len(seqs) + unnumbered.get(r, 0)} message(s) it sent later "
                      f"(lost sends, {'; '.join(what)})")
            self.dead.setdefault(r, detail)

    def lost_senders(self) -> list[int]:
        """Ranks marked dead because they lost sends (after :meth:`finish`)."""
        return sorted({r for r, _ in self.lost_sends} | set(self.lost_unnumbered.values()))

    def lost_consumes(self) -> list[tuple[int, int]]:
        """After :meth:`finish`: ``(sender rank, consume gidx)`` of every message
        whose send was lost, numbered or not, in consume order."""
        pairs = [(q, g) for (q, _), g in self.lost_sends.items()]
        pairs += [(q, g) for g, q in self.lost_unnumbered.items()]
        return sorted(pairs, key=lambda p: p[1])

    # ------------------------------------------------------------ per kind
    def _on_send(self, b: Rows, i: int) -> None:
        """A nonblocking send (blocking ones have no rule here)."""
        self._new_req(b.req[i], b.rank[i], b.seq[i])

    def _on_recv(self, b: Rows, i: int) -> None:
        """A nonblocking receive (blocking ones have no rule here; the classifier
        pairs every receive in bulk, :meth:`RaceTracker.on_recvs`)."""
        self._new_req(b.req[i], b.rank[i], b.seq[i])

    def _on_consume(self, b: Rows, i: int) -> None:
        store = self.store
        r, s, comm = b.rank[i], b.seq[i], b.comm[i]
        csrc, ctag = b.peer[i], b.tag[i]
        rs = b.ref[i]
        if rs >= s:
            raise ModelInputError(f"consume's 'recv' {rs} is not an earlier event",
                                  rank=r, seq=s)
        rg = store.by_rank[r][rs]
        ref = store.c_ref.data
        if store.c_kind.data[rg] != K_RECV:
            raise ModelInputError(f"consume's 'recv' {rs} is not a recv event", rank=r, seq=s)
        if ref[rg] != -1:
            raise ModelInputError(f"recv {rs} is consumed twice", rank=r, seq=s)
        if store.c_comm.data[rg] != comm:
            raise ModelInputError(f"consume's communicator differs from recv {rs}'s",
                                  rank=r, seq=s)
        if rs != s - 1 and store.c_flags.data[rg] & F_BLOCKING:
            raise ModelInputError(
                f"the consume of blocking recv {rs} must be the event just after it",
                rank=r, seq=s)
        src, tag = store.c_peer.data[rg], store.c_tag.data[rg]
        if src not in (-1, csrc) or tag not in (-1, ctag):
            raise ModelInputError(
                f"consumed message (src {csrc}, tag {ctag}) does not match "
                f"recv {rs} (src {src}, tag {tag})", rank=r, seq=s)
        qs = b.sseq[i]
        if qs < 0:
            ref[rg] = s
            self._infer((csrc, r, comm, ctag), rs, s)
            self.races.touch(rg)
            return
        g = b.start + i
        events = store.by_rank[csrc]
        if qs < len(events):
            sg = events[qs]
            self._check_pair(sg, (r, s, ctag, comm))
            ref[rg] = s
            self._link(sg, g)
        elif (csrc, qs) in self._early:
            raise ModelInputError(f"send {[csrc, qs]} is consumed twice", rank=r, seq=s)
        else:
            ref[rg] = s
            self._early[(csrc, qs)] = g
            self.races.touch(rg)

    def _on_wait(self, b: Rows, i: int) -> None:
        """A wait; a receive request counts as consumed when its consume came
        before (a planned consume, :attr:`_consumed_at`, at a smaller position)."""
        r, s = b.rank[i], b.seq[i]
        live = self._live_reqs[r]
        reqs = b.extras[i]["reqs"]
        if len(set(reqs)) != len(reqs):
            raise ModelInputError("wait names a request twice", rank=r, seq=s)
        store = self.store
        for q in reqs:
            if q not in live:
                raise ModelInputError(f"wait names request {q}, which is not live",
                                      rank=r, seq=s)
            pg = store.by_rank[r][live[q]]
            if (store.c_kind.data[pg] == K_RECV and store.c_ref.data[pg] == -1
                    and self._consumed_at.get(pg, i) >= i):
                raise ModelInputError(
                    f"wait completes receive request {q} but no consume of it came before",
                    rank=r, seq=s)
        for q in reqs:
            del live[q]

    def _on_coll(self, b: Rows, i: int) -> None:
        r, s, comm = b.rank[i], b.seq[i], b.comm[i]
        rec = b.extras[i]
        if self.colls.open_collective(r, comm) is not None:
            raise ModelInputError("coll while the previous collective has no coll_exit",
                                  rank=r, seq=s)
        group = rec.get("group")
        if group is not None and not (isinstance(group, list) and r in group):
            raise ModelInputError("'group' must list the ranks of the communicator, this one "
                                  "included", rank=r, seq=s)
        n = self.colls.enter(r, s, comm, rec["op"], root=rec.get("root"), group=group)
        self.causal.coll_entered(r, s, comm, n)

    def _on_coll_exit(self, b: Rows, i: int) -> None:
        r, s, comm = b.rank[i], b.seq[i], b.comm[i]
        op = b.extras[i]["op"]
        open_ = self.colls.open_collective(r, comm)
        if open_ is None:
            raise ModelInputError("coll_exit without a coll", rank=r, seq=s)
        if open_[2] != op:
            raise ModelInputError(f"coll_exit op '{op}' differs from its coll's "
                                  f"'{open_[2]}'", rank=r, seq=s)
        self.causal.coll_exited(r, s, self.colls.leave(r, comm), open_[2])

    def _on_final(self, b: Rows, i: int) -> None:
        self.finished[b.rank[i]] = True

    # ------------------------------------------------------------ helpers
    def _new_req(self, req: int, r: int, s: int) -> None:
        live = self._live_reqs[r]
        if req in live:
            raise ModelInputError(f"request {req} is already live", rank=r, seq=s)
        live[req] = s

    def _check_pair(self, sg: int, cons: tuple[int, int, int, int]) -> None:
        """Send ``sg`` and the consume ``cons`` = (rank, seq, tag, comm) must describe
        the same message."""
        store = self.store
        r, s, tag, comm = cons
        if store.c_kind.data[sg] != K_SEND:
            raise ModelInputError(f"consume names {list(store.key(sg))}, which is not a send",
                                  rank=r, seq=s)
        if store.c_partner.data[sg] != -1:
            raise ModelInputError(f"send {list(store.key(sg))} is consumed twice",
                                  rank=r, seq=s)
        if (store.c_peer.data[sg] != r or store.c_tag.data[sg] != tag
                or store.c_comm.data[sg] != comm):
            raise ModelInputError(
                f"consume names send {list(store.key(sg))} whose destination, tag or "
                "communicator differs", rank=r, seq=s)

    def linked_many(self, sends: Any, consumes: Any, ranks: Any, seqs: Any, recvs: Any
                    ) -> None:
        """What :meth:`_link` does for each of a batch's planned consumes (gidx
        ``consumes``, key ``(ranks, seqs)``, of receive gidx ``recvs``) and its send
        (``sends``), in batch order, except listing the new messages (the
        caller merges them in batch order); arrays, each send and consume once."""
        self.store.link_many(sends, consumes)
        if self.causal.waits_on_messages():
            self.causal.messages_linked(ranks.tolist(), seqs.tolist())
        self.races.touch_many(recvs)

    def _link(self, sg: int, cg: int) -> None:
        store = self.store
        store.link(sg, cg)
        self._new_messages.append(sg)
        r = store.c_rank.data[cg]
        self.causal.message_linked(r, store.c_seq.data[cg])
        self.races.touch(store.by_rank[r][store.c_ref.data[cg]])

    def _link_checked(self, sg: int, cg: int) -> None:
        """Link a send to a consume that arrived first, checking they agree."""
        store = self.store
        r, s = store.key(cg)
        self._check_pair(sg, (r, s, int(store.c_tag.data[cg]), int(store.c_comm.data[cg])))
        self._link(sg, cg)

    def _send_claimed(self, key: Key) -> bool:
        return self.store.c_partner.data[self.store.gidx(*key)] != -1 or key in self._early

    def _ensure_channels(self) -> None:
        """Start inferring sends: index every send so far by channel."""
        if self._inferring:
            return
        self._inferring = True
        store = self.store
        for g in np.flatnonzero(store.c_kind.view() == K_SEND).tolist():
            self._channels.add_send((int(store.c_rank.data[g]), int(store.c_peer.data[g]),
                                     int(store.c_comm.data[g]), int(store.c_tag.data[g])),
                                    int(store.c_seq.data[g]))
        self._channel_upto = store.event_count

    def _infer(self, chan: Channel, rs: int, s: int) -> None:
        """A consume ``s`` of receive ``rs`` without ``send``: match it by the
        non-overtaking rule on ``chan`` = (src, dst, comm, tag)."""
        self._ensure_channels()
        if not self._channels.add_inferred(chan, rs, s):
            raise ModelInputError(
                "cannot infer the send of this consume: its receive was posted before one "
                "already matched on the channel; give the 'send' field", rank=chan[1], seq=s)
        self._resolve(chan)

    def _resolve(self, chan: Channel) -> None:
        by_rank = self.store.by_rank
        for cseq, key in self._channels.resolve(chan):
            self._link_checked(by_rank[key[0]][key[1]], by_rank[chan[1]][cseq])
