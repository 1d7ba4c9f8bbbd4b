"""The 16-case (process id, tag) race classifier of MPVisualizer.

Pure functions over the arguments of two receives of one rank and what they
consumed (``shared/papers/mpvisualizer-race-detection.txt``, section 3).

* :func:`situation` gives the row of Table 1 (1..16).
* :func:`potential_race` is the pseudo-code of section 3.2, line for line.
* :func:`verdict` is the legitimacy verification of section 3.1 in the order
  the spec fixes: ``unverified`` when either receive consumed nothing; else
  ``spurious`` (same origin); else ``false`` (consumption of the first message
  happened before the send of the second); else ``legitimate``.

:func:`situations`, :func:`potential_races` and :func:`verdicts` are the same
three over arrays (one element per receive pair), for the model's race
tracker (:mod:`mpvis.model.races`), which holds its pairs as columns; a
property test checks them against the functions above, element by element.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt

ANY: Final = -1

Verdict = Literal["legitimate", "unverified", "spurious", "false"]
#: The verdicts by code (:func:`verdicts` gives codes).
VERDICTS: Final[tuple[Verdict, ...]] = ("unverified", "spurious", "false", "legitimate")
_UNVERIFIED, _SPURIOUS, _FALSE, _LEGITIMATE = range(4)
Array = npt.NDArray[Any]

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


def situations(src1: Array, tag1: Array, src2: Array, tag2: Array) -> Array:
    """:func:`situation` of each pair (``int64``)."""
    out: Array = (1 + (tag1 == ANY).astype(np.int64) + 2 * (src1 == ANY) + 4 * (tag2 == ANY)
                  + 8 * (src2 == ANY))
    return out


def potential_races(  # noqa: PLR0917  # the pseudo-code's operands, as potential_race's
    src1: Array, tag1: Array, src2: Array, tag2: Array,
    has1: Array, m1_pid: Array, m1_tag: Array, has2: Array, m2_tag: Array,
) -> Array:
    """:func:`potential_race` of each pair (a ``bool`` array): ``has1``/``has2``
    say whether each receive consumed a message (``cons1``/``cons2`` not
    ``None``), ``m1_pid``, ``m1_tag``, ``m2_tag`` that message's pid and tag
    (read only where it was consumed)."""
    later = (tag2 == ANY) & has1 & ((m1_pid == src2) | (has2 & (m1_tag == m2_tag)))
    out: Array = (src1 == ANY) & ((tag1 == ANY) | (tag1 == tag2) | later)
    return out


def verdicts(has1: Array, m1_pid: Array, has2: Array, m2_pid: Array, *, decided: Array,
             before: Array) -> Array:
    """:func:`verdict` of each pair, as codes of :data:`VERDICTS` (``int8``):
    ``decided`` says whether ``first_consume_before_second_send`` is known,
    ``before`` gives it where it is."""
    out = np.full(len(has1), _UNVERIFIED, dtype=np.int8)
    both = has1 & has2
    spurious = both & (m1_pid == m2_pid)
    out[spurious] = _SPURIOUS
    known = both & ~spurious & decided
    out[known & before] = _FALSE
    out[known & ~before] = _LEGITIMATE
    return out
