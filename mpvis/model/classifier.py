"""The 16-case (process id, tag) race classifier of MPVisualizer.

Pure functions over the arguments of two receives of one rank and what they
consumed (``shared/papers/mpvisualizer-race-detection.txt``, section 3).

* :func:`situation` gives the row of Table 1 (1..16).
* :func:`potential_race` is the pseudo-code of section 3.2, line for line.
* :func:`verdict` is the legitimacy verification of section 3.1 in the order
  the spec fixes: ``unverified`` when either receive consumed nothing; else
  ``spurious`` (same origin); else ``false`` (consumption of the first message
  happened before the send of the second); else ``legitimate``.
"""

from __future__ import annotations

from typing import Final, Literal

ANY: Final = -1

Verdict = Literal["legitimate", "unverified", "spurious", "false"]

#: Situations whose potential race is known from the first receive alone
#: (subset 2 of section 3.1: detected when the first receive is notified).
FIRST_RECV_SITUATIONS: Final = frozenset({4, 8, 12, 16})
#: Situations decided by the arguments of both receives (subset 3).
SECOND_RECV_SITUATIONS: Final = frozenset({3, 11})
#: Situations that need the consumes (subset 4).
CONSUME_SITUATIONS: Final = frozenset({7, 15})
#: Situations that can never race (subset 1).
NO_RACE_SITUATIONS: Final = frozenset({1, 2, 5, 6, 9, 10, 13, 14})


def situation(src1: int, tag1: int, src2: int, tag2: int) -> int:
    """Row of Table 1 for receives ``recv(src1, tag1)`` then ``recv(src2, tag2)``.

    >>> situation(-1, -1, -1, -1)
    16
    >>> situation(0, 5, 1, 5)
    1
    >>> situation(-1, 3, 2, -1)
    7
    """
    return 1 + (tag1 == ANY) + 2 * (src1 == ANY) + 4 * (tag2 == ANY) + 8 * (src2 == ANY)


def potential_race(
    src1: int, tag1: int, src2: int, tag2: int, *,
    cons1: tuple[int, int] | None, cons2: tuple[int, int] | None,
) -> bool:
    """Section 3.2's first step: is the pair a potential race?

    ``cons1``/``cons2`` are the ``(pid, tag)`` of the messages the two receives
    consumed, or ``None`` when a receive consumed nothing (yet).
    """
    if src1 != ANY:  # situations 1, 2, 5, 6, 9, 10, 13, 14
        return False
    if tag1 == ANY:  # lines 3-4: situations 4, 8, 12, 16
        return True
    if tag1 == tag2:  # lines 6-7: situations 3 and 11 with equal tags
        return True
    if tag2 == ANY and cons1 is not None:  # lines 9-10: situations 7 and 15
        if cons1[0] == src2:  # line 11: true only in situation 7
            return True
        if cons2 is not None and cons1[1] == cons2[1]:  # lines 14-15
            return True
    return False


def verdict(
    cons1_pid: int | None, cons2_pid: int | None, first_consume_before_second_send: bool | None,
) -> Verdict:
    """Legitimacy of a potential race (section 3.1), in the spec's order.

    ``first_consume_before_second_send`` is whether the consume of the first
    message happened before the send of the second; ``None`` when it cannot be
    decided yet (the verdict is then provisional ``unverified``).
    """
    if cons1_pid is None or cons2_pid is None:
        return "unverified"
    if cons1_pid == cons2_pid:
        return "spurious"
    if first_consume_before_second_send is None:
        return "unverified"
    if first_consume_before_second_send:
        return "false"
    return "legitimate"
