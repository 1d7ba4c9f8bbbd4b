"""Collective deadlocks: the three error cases of Roy et al., Sec. III, checked as records arrive.

All ranks of a communicator must call the same sequence of collectives with the
same single-valued arguments.  For each communicator the tracker numbers every
rank's collectives (``C(n, k)``: the n-th collective of rank k) and compares
each ``C(n, k)`` with the first signature recorded for ``n``, which by
transitivity is the ring comparison of Algorithm A1 done centrally:

1. different collectives as the n-th (``collective-order``);
2. the same collective with different arguments (``collective-args``):
   ``root`` or ``redop``; the size of the data, ``bytes`` (count times the
   type size: MPI requires equal type signatures, so a count of 4 ``MPI_INT``
   matches one contiguous type of 4 ints), or ``count`` when the records carry
   no ``bytes`` and name the same ``dtype``; ``dtype`` when both are
   predefined types (not ``derived`` or packed) and differ.  An argument is
   compared only when both records carry it (:func:`signature_differences`);
3. ranks waiting in their n-th collective while a member has finished after
   fewer than n+1 collectives (``collective-finished``), found both when the
   ``final`` arrives and when a rank enters a collective that a finished
   member never reached.

Each is reported by :meth:`CollectiveTracker.on_coll` / :meth:`on_final` as
soon as the records proving it have arrived.  Membership: comm 0 is every rank;
another comm is its ``group`` (world ranks) when a ``coll`` record carries one,
else the ranks seen calling collectives on it.  Signatures of the n-th
collective are kept only until every member has reached it.

A call is held as a *handle*: its record (:meth:`CollectiveTracker.on_coll`)
or any other value the caller can turn into its record later
(:meth:`CollectiveTracker.on_entry` with the tracker's ``record_of``: the
deadlock monitor's column path passes global event indices), with its
arguments as a mapping.  Records are needed only for what is reported: a
mismatch's or a finished member's description, a wait-for clause.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from mpvis.analysis.deadlock_report import COLLECTIVE, Deadlock, describe_site
from mpvis.analysis.waitfor import Clause
from mpvis.protocol.record_types import CollRecord, RecordView
from mpvis.protocol.records import COLL_ARGS

__all__ = ["CollectiveTracker", "describe_coll", "signature_differences"]

Signature = tuple[object, ...]
#: A collective call as the tracker holds it: its record, or a caller's handle
#: that the tracker's ``record_of`` turns into the record (module docstring).
CollRef = object

#: The arguments a ``coll`` may carry and the report shows (``bytes``: see the module docstring).
SHOWN_ARGS = (*COLL_ARGS, "bytes")
#: Datatype names that are not predefined types: their signature is not known by name.
_OPAQUE_TYPES = frozenset({"", "derived", "user", "packed", "datatype_null", "lb", "ub"})


def describe_coll(rec: RecordView) -> str:
    """``bcast(root=0, count=1, dtype=int)``: the collective and its single-valued arguments."""
    args = ", ".join(f"{a}={rec[a]}" for a in SHOWN_ARGS if a in rec)
    comm = rec.get("comm", 0)
    if comm:
        args = f"{args}, comm={comm}" if args else f"comm={comm}"
    return f"{rec['op']}({args})"


def _predefined(dtype: object) -> bool:
    return isinstance(dtype, str) and dtype.lower().removeprefix("mpi_") not in _OPAQUE_TYPES


def signature_differences(a: RecordView, b: RecordView) -> list[str]:
    """The arguments on which two ranks' calls of the same collective disagree.

    ``["op"]`` for different collectives; else among ``root``, ``redop``,
    ``bytes``, ``count`` and ``dtype`` as the module docstring says.
    """
    if a["op"] != b["op"]:
        return ["op"]
    out: list[str] = [f for f in ("root", "redop") if f in a and f in b and a[f] != b[f]]
    da, db = a.get("dtype"), b.get("dtype")
    if "bytes" in a and "bytes" in b:
        if a["bytes"] != b["bytes"]:
            out.append("bytes")
    elif "count" in a and "count" in b and da == db and a["count"] != b["count"]:
        out.append("count")
    if da is not None and db is not None and da != db and _predefined(da) and _predefined(db):
        out.append("dtype")
    return out


_differs = signature_differences


def _nth(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


@dataclass
class _Instance:
    """The n-th collective of one communicator: who reached it, with what."""

    first: CollRef
    args: Mapping[str, Any]  # the first call's arguments (its record, or its extras)
    reached: int = 1
    arrivals: list[CollRef] = field(default_factory=list)  # every later rank's call
    report: int | None = None  # index of its mismatch Deadlock in the found list


class CollectiveTracker:
    """Collective calls per communicator; appends mismatches to ``found``."""

    def __init__(self, nprocs: int, found: list[Deadlock],
                 record_of: Callable[[CollRef], CollRecord] | None = None) -> None:
        self.nprocs = nprocs
        self._found = found
        #: A call's record from its handle (records are their own handles).
        self.record_of: Callable[[CollRef], CollRecord] = record_of or _as_record
        self._entered: dict[int, dict[int, int]] = {}
        self._instances: dict[int, dict[int, _Instance]] = {}
        self._groups: dict[int, frozenset[int]] = {}
        self._finished: set[int] = set()
        self._blocked: dict[int, tuple[int, int, CollRef]] = {}  # rank -> (comm, n, coll)
        self._finished_reports: dict[tuple[int, int], int] = {}  # (comm, rank) -> found index

    # -- membership ------------------------------------------------------------------

    def members(self, comm: int) -> frozenset[int] | set[int] | range:
        """The ranks of ``comm`` (see the module docstring)."""
        if comm == 0:
            return range(self.nprocs)
        group = self._groups.get(comm)
        if group is not None:
            return group
        return set(self._entered.get(comm, {}))

    def _size(self, comm: int) -> int:
        if comm == 0:
            return self.nprocs
        group = self._groups.get(comm)
        return len(group) if group is not None else len(self._entered.get(comm, ()))

    def entered(self, comm: int, rank: int) -> int:
        """How many collectives ``rank`` has entered on ``comm``."""
        return self._entered.get(comm, {}).get(rank, 0)

    def blocked_in(self, rank: int) -> tuple[int, int, CollRecord] | None:
        """``(comm, n, coll record)`` if ``rank`` is inside its n-th collective (0-based)."""
        where = self._blocked.get(rank)
        if where is None:
            return None
        comm, n, coll = where
        return comm, n, self.record_of(coll)

    # -- updates ---------------------------------------------------------------------

    def on_coll(self, rec: CollRecord) -> Sequence[int]:
        """A rank enters a collective; returns the comm's group if the record carries one."""
        return self.on_entry(rec["rank"], rec.get("comm", 0), rec, rec)

    def on_entry(self, rank: int, comm: int, args: Mapping[str, Any], ev: CollRef
                 ) -> Sequence[int]:
        """:meth:`on_coll` of a call given as its rank, communicator, arguments
        (``op``, ``root``... and ``group``: its record, or the store's extras
        of the event) and handle ``ev``; returns the comm's group if ``args``
        carries one."""
        group: Sequence[int] | None = args.get("group")
        if group is not None and comm:
            self._groups[comm] = frozenset(group)
        counts = self._entered.setdefault(comm, {})
        n = counts.get(rank, 0)
        counts[rank] = n + 1
        self._blocked[rank] = (comm, n, ev)
        insts = self._instances.setdefault(comm, {})
        inst = insts.get(n)
        if inst is None:
            insts[n] = inst = _Instance(ev, args)
        else:
            inst.reached += 1
            inst.arrivals.append(ev)
            if inst.report is not None or (inst.args is not args and _differs(inst.args, args)):
                self._report_mismatch(comm, n, inst)
        if inst.reached >= self._size(comm):
            del insts[n]
        if self._finished:
            self._check_finished_members(comm, n, ev)
        return group or ()

    def on_exit(self, rank: int) -> None:
        """The rank returned from its collective."""
        self._blocked.pop(rank, None)

    def on_final(self, rank: int) -> None:
        """Case 3: members blocked in collectives the finished rank never reached."""
        self._finished.add(rank)
        self._blocked.pop(rank, None)
        for comm, counts in self._entered.items():
            if rank not in self.members(comm):
                continue
            k = counts.get(rank, 0)
            for _, (c, n, coll) in sorted(self._blocked.items(), key=lambda kv: kv[0]):
                if c == comm and n >= k:
                    self._report_finished(comm, rank, k, coll, n)

    # -- the wait-for graph ----------------------------------------------------------

    def blocking_clauses(self, rank: int) -> list[Clause] | None:
        """One clause per member that has not reached the rank's current collective."""
        where = self._blocked.get(rank)
        if where is None:
            return None
        comm, n, ev = where
        counts = self._entered.get(comm, {})
        coll = self.record_of(ev)
        op = describe_coll(coll) + f" (its {_nth(n + 1)} collective on comm {comm})"
        return [
            Clause((m,), COLLECTIVE, (rank, coll["seq"]), op, coll.get("site"))
            for m in sorted(self.members(comm))
            if m != rank and counts.get(m, 0) <= n
        ]

    # -- reports ---------------------------------------------------------------------

    def _check_finished_members(self, comm: int, n: int, ev: CollRef) -> None:
        counts = self._entered.get(comm, {})
        for f in self._finished:
            if f in self.members(comm) and counts.get(f, 0) <= n:
                self._report_finished(comm, f, counts.get(f, 0), ev, n)

    def _report_mismatch(self, comm: int, n: int, inst: _Instance) -> None:
        recs = [self.record_of(ev) for ev in (inst.first, *inst.arrivals)]
        calls: dict[str, list[int]] = {}
        fields: set[str] = set()
        for rec in recs:
            fields.update(_differs(recs[0], rec))
            call = describe_coll(rec) + describe_site(rec.get("site"))
            calls.setdefault(call, []).append(rec["rank"])
        parts = [
            f"rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))} called {call}"
            for call, ranks in calls.items()
        ]
        check = "collective-order" if "op" in fields else "collective-args"
        what = (
            "different collectives" if "op" in fields else "different " + "/".join(sorted(fields))
        )
        reason = (
            f"Collective mismatch on comm {comm}: as their {_nth(n + 1)} collective, "
            + "; ".join(parts)
            + f" ({what}); the ranks cannot all complete the same collective."
        )
        dl = Deadlock(
            kind=COLLECTIVE,
            ranks=sorted({r["rank"] for r in recs}),
            reason=reason,
            check=check,
            events=[(r["rank"], r["seq"]) for r in recs],
            nodes={r["rank"]: describe_coll(r) + describe_site(r.get("site")) for r in recs},
        )
        if inst.report is None:
            inst.report = len(self._found)
            self._found.append(dl)
        else:
            self._found[inst.report] = dl

    def _report_finished(self, comm: int, done: int, k: int, ev: CollRef, n: int) -> None:
        key = (comm, done)
        coll = self.record_of(ev)
        idx = self._finished_reports.get(key)
        waiter = coll["rank"]
        line = (
            f"rank {waiter} waits in {describe_coll(coll)}{describe_site(coll.get('site'))}"
            f" (its {_nth(n + 1)} collective on comm {comm})"
        )
        if idx is not None:
            old = self._found[idx]
            if (waiter, coll["seq"]) in old.events:
                return
            old.events.append((waiter, coll["seq"]))
            old.ranks = sorted({*old.ranks, waiter})
            old.nodes[waiter] = describe_coll(coll) + describe_site(coll.get("site"))
            old.reason = old.reason.replace("; but rank", f"; {line}; but rank", 1)
            return
        reason = (
            f"{line[0].upper()}{line[1:]}; but rank {done} has finished after only {k}"
            f" collective(s) on comm {comm}, so it can never join."
        )
        self._finished_reports[key] = len(self._found)
        self._found.append(
            Deadlock(
                kind=COLLECTIVE,
                ranks=sorted({waiter, done}),
                reason=reason,
                check="collective-finished",
                events=[(waiter, coll["seq"])],
                nodes={
                    waiter: describe_coll(coll) + describe_site(coll.get("site")),
                    done: "finished",
                },
            )
        )


def _as_record(ev: CollRef) -> CollRecord:
    """The handle of a call fed as a record is that record."""
    assert isinstance(ev, dict), "a handle other than a record needs the tracker's record_of"
    return cast("CollRecord", ev)
