"""The outcome of a run, and what differs between two outcomes.

Schaeli et al. (section 6) compare each re-executed ordering with the
reference run: the final process state and the set of messages produced
must be identical, else the ordering reveals a harmful race.  For an MPI run
:class:`Outcome` holds what can be observed of it:

* the exit status of the job and each rank's standard output;
* the multiset of messages sent: ``(sender, receiver, tag, communicator,
  size)`` from the trace's ``send`` records (the trace library records no
  hash of the payload, so two messages of the same size with different
  contents look the same: the outputs and states then have to show it);
* each rank's final ``state`` variables (the last value recorded of each);
* which ranks finished (a ``final`` record).

:func:`differences` lists, in words, what differs.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mpvis.protocol import records as R

if TYPE_CHECKING:
    from mpvis.model.manager import ModelManager

__all__ = ["Outcome", "differences", "trace_outcome"]

#: A message as compared: (sender, receiver, tag, communicator, size or None).
MessageKey = tuple[int, int, int, int, int | None]


@dataclass
class Outcome:
    """What a run produced (module docstring)."""

    exit_code: int | None  # None: the run was stopped (time bound)
    stdout: dict[int, str] = field(default_factory=dict)
    messages: Counter[MessageKey] = field(default_factory=Counter)
    state: dict[int, dict[str, Any]] = field(default_factory=dict)
    finished: frozenset[int] = frozenset()
    nprocs: int = 0


def trace_outcome(m: ModelManager, exit_code: int | None, stdout: dict[int, str]) -> Outcome:
    """The outcome of the run whose trace is in ``m``."""
    out = Outcome(exit_code, dict(stdout), nprocs=m.nprocs)
    out.messages.update((msg.src, msg.dest, msg.tag, msg.comm, msg.size) for msg in m.messages)
    for e in sorted(m.find("state"), key=lambda e: e.key):  # each rank's last value wins
        rec = e.fields
        if rec["kind"] == R.STATE:
            out.state.setdefault(e.rank, {}).update(rec.get("vars") or {})
    finished = {e.rank for e in m.find("final")}
    out.finished = frozenset(finished)
    return out


def _short(text: str, limit: int = 120) -> str:
    text = text.strip().replace("\n", " | ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe(msgs: Counter[MessageKey]) -> str:
    items = [f"{n}x {s}->{d} tag {t}" + (f" ({z} B)" if z is not None else "")
             for (s, d, t, _c, z), n in sorted(msgs.items(), key=lambda kv: str(kv[0]))]
    return ", ".join(items[:6]) + (", ..." if len(items) > 6 else "")


def differences(reference: Outcome, other: Outcome) -> list[str]:
    """What ``other`` does differently from ``reference`` (empty: the same outcome)."""
    what: list[str] = []
    if other.exit_code is None:
        # Its output and messages are cut short: saying so is all that is meaningful.
        return ["the run did not end within its time bound: a deadlock in this order, or "
                "a forced delivery waiting for a message this order never sends (the "
                "program's message set then depends on the order)"]
    if reference.exit_code != other.exit_code:
        what.append(f"exit status {other.exit_code} instead of {reference.exit_code}")
    for r in sorted(set(reference.stdout) | set(other.stdout)):
        a, b = reference.stdout.get(r, ""), other.stdout.get(r, "")
        if a != b:
            what.append(f"rank {r} printed {_short(b)!r} instead of {_short(a)!r}")
    if reference.messages != other.messages:
        more, fewer = other.messages - reference.messages, reference.messages - other.messages
        parts = []
        if more:
            parts.append(f"new: {_describe(more)}")
        if fewer:
            parts.append(f"missing: {_describe(fewer)}")
        what.append("different messages sent (" + "; ".join(parts) + ")")
    for r in sorted(set(reference.state) | set(other.state)):
        sa, sb = reference.state.get(r, {}), other.state.get(r, {})
        changed = sorted(k for k in set(sa) | set(sb) if sa.get(k) != sb.get(k))
        if changed:
            what.append(f"rank {r} ended with " + ", ".join(
                f"{k}={sb.get(k)!r} (recorded {sa.get(k)!r})" for k in changed[:6]))
    lost = sorted(reference.finished - other.finished)
    if lost and other.exit_code is not None:
        what.append(f"ranks {lost} did not finish")
    return what
