"""Lock state for deadlock detection, after Algorithm A2 of Roy et al. (Sec. IV).

A2's rules and where they are applied here:

* locking a lock the rank already holds (A2 line 16, "held by this thread") and
  releasing a lock the rank does not hold (line 24) are decided from the rank's
  own records, so they are reported by :meth:`LockTracker.on_lock` and
  :meth:`on_unlock` as soon as the record arrives (``lock-double``,
  ``unlock-not-held``);
* hold-and-wait cycles, chains ending at a rank that finished holding the lock
  (line 99) and chains ending at a rank blocked in a collective the waiters
  never reach (line 36 and the ``sync_phase`` test) are edges of the shared
  wait-for graph: a waiting rank's clause names the lock's holder
  (:meth:`blocking_clauses`), and the collective clauses of
  :mod:`mpvis.analysis.deadlock_collectives` close the cycle.  They are decided
  by the graph reduction when every rank is observed blocked, or at the end of
  input, not on each ``lock`` record: the record stream does not order one
  rank's ``unlock`` before the next holder's ``locked``, so a cycle seen
  mid-stream may be an artefact of arrival order, whereas a stuck run has
  delivered every record.
"""

from __future__ import annotations

from mpvis.analysis.deadlock_report import LOCK, Deadlock, describe_site
from mpvis.analysis.waitfor import Clause
from mpvis.protocol.record_types import LockRecord

__all__ = ["LockTracker"]


class LockTracker:
    """Holders and pending requests of every lock; appends usage errors to ``found``."""

    def __init__(self, nprocs: int, found: list[Deadlock]) -> None:
        self._found = found
        self._holders: dict[str, list[int]] = {}
        self._held: list[dict[str, LockRecord]] = [{} for _ in range(nprocs)]
        self._waiting: dict[int, LockRecord] = {}

    def holders(self, lock: str) -> list[int]:
        """Ranks holding ``lock`` (one, or briefly two while a handoff's records arrive)."""
        return self._holders.get(lock, [])

    def held_by(self, rank: int) -> list[str]:
        """The locks ``rank`` holds."""
        return sorted(self._held[rank])

    def on_lock(self, rec: LockRecord) -> None:
        """A request: the rank waits until ``locked``; a lock it holds is a self-deadlock."""
        rank, name = rec["rank"], rec["lock"]
        self._waiting[rank] = rec
        got = self._held[rank].get(name)
        if got is not None:
            self._found.append(
                Deadlock(
                    kind=LOCK,
                    ranks=[rank],
                    reason=(
                        f"Rank {rank} requests lock {name!r}{describe_site(rec.get('site'))}"
                        f" which it already holds (acquired{describe_site(got.get('site'))}):"
                        " it waits for itself forever."
                    ),
                    check="lock-double",
                    events=[(rank, rec["seq"])],
                    nodes={rank: f"lock {name}{describe_site(rec.get('site'))}"},
                )
            )

    def on_locked(self, rec: LockRecord) -> None:
        """The rank acquired the lock."""
        rank, name = rec["rank"], rec["lock"]
        self._waiting.pop(rank, None)
        self._held[rank][name] = rec
        self._holders.setdefault(name, []).append(rank)

    def on_unlock(self, rec: LockRecord) -> None:
        """A release; releasing a lock the rank does not hold is an error."""
        rank, name = rec["rank"], rec["lock"]
        if self._held[rank].pop(name, None) is not None:
            holders = self._holders[name]
            holders.remove(rank)
            if not holders:
                del self._holders[name]
            return
        self._found.append(
            Deadlock(
                kind=LOCK,
                ranks=[rank],
                reason=(
                    f"Rank {rank} releases lock {name!r}{describe_site(rec.get('site'))}"
                    " which it does not hold."
                ),
                check="unlock-not-held",
                events=[(rank, rec["seq"])],
                nodes={rank: f"unlock {name}{describe_site(rec.get('site'))}"},
            )
        )

    def blocking_clauses(self, rank: int, cur: LockRecord) -> list[Clause] | None:
        """The clause of a rank whose last record is a pending ``lock`` request."""
        if cur["kind"] != "lock":
            return None
        name = cur["lock"]
        holders = [h for h in self._holders.get(name, ()) if h != rank]
        if not holders:
            return []
        op = f"lock {name!r}"
        return [Clause(tuple(holders), LOCK, (rank, cur["seq"]), op, cur.get("site"), name)]
