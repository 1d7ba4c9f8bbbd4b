"""Plain words for the analyses' vocabulary (issue 14, item 4); Qt-free.

The window's tooltips, its Help > Glossary page and its race texts take their
words from here, so the same term always means the same thing:

* events are written ``rank:seq`` (:func:`event`), as ``mpvis check`` does;
* calls are spelled out with MPI's names (:func:`call`):
  ``recv(ANY_SOURCE, ANY_TAG) at ring.py:30``;
* situation numbers are the rows of Table 1 of the MPVisualizer paper
  (section 3.1): :func:`situation_text` says which two receive calls a number
  means (the number is ``1 + [tag1 any] + 2 [src1 any] + 4 [tag2 any] +
  8 [src2 any]``, :func:`mpvis.model.classifier.situation`);
* consumption patterns (:data:`CONSUMPTION`), verdicts (:data:`VERDICTS`),
  "(could match)" and why the classifier and the exact test may disagree
  (:data:`DISAGREE`).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "CONFIRMED",
    "CONSUMPTION",
    "COULD_MATCH",
    "DISAGREE",
    "VERDICTS",
    "call",
    "event",
    "glossary_html",
    "legend_lines",
    "situation_text",
]

ANY = -1


def event(rank: int, seq: int) -> str:
    """The one notation for an event: ``rank:seq``."""
    return f"{rank}:{seq}"


def _arg(v: int, wildcard: str) -> str:
    return wildcard if v == ANY else str(v)


def call(src: int, tag: int, site: str | None = None, name: str = "recv") -> str:
    """A receive spelled out: ``recv(ANY_SOURCE, 7) at file.py:12``."""
    text = f"{name}({_arg(src, 'ANY_SOURCE')}, {_arg(tag, 'ANY_TAG')})"
    return f"{text} at {site}" if site else text


def situation_text(n: int) -> str:
    """Which two receive calls situation ``n`` (1..16, Table 1) stands for."""
    if not 1 <= n <= 16:
        raise ValueError(f"situation {n} is not in 1..16")
    k = n - 1
    tag1, src1, tag2, src2 = (k & 1, k & 2, k & 4, k & 8)

    def shape(src_any: int, tag_any: int) -> str:
        return (f"recv({'ANY_SOURCE' if src_any else 'src'}, "
                f"{'ANY_TAG' if tag_any else 'tag'})")

    first, second = shape(src1, tag1), shape(src2, tag2)
    if not src1:
        verdict = "never a race: the first receive names its sender"
    elif tag1:
        verdict = "a race whenever two messages could reach the first receive"
    elif n in (3, 11):
        verdict = "a race when both receives name the same tag"
    else:
        verdict = "a race when the second receive could take the first one's message"
    return f"situation {n}: {first}, then {second} on the same rank ({verdict})"


CONSUMPTION = {
    "RCRC": "both receives consumed a message",
    "RCR-": "the first receive consumed a message, the second nothing (yet)",
    "R-RC": "the first receive consumed nothing (yet), the second a message",
    "R-R-": "neither receive consumed a message (yet)",
}

VERDICTS = {
    "legitimate": "a real race: either message could have been consumed first "
                  "(different senders, no causal order between them)",
    "unverified": "cannot be told yet: a receive has consumed nothing (still waiting, "
                  "or the run stopped there)",
    "spurious": "not a race: both messages come from the same sender, and MPI keeps "
                "messages between two ranks in order",
    "false": "not a race: the first message was consumed before the second one was "
             "even sent (happened-before)",
}

COULD_MATCH = ("exact race (Cypher and Leu): the second send listed could have been "
               "matched by this receive instead of the first")

CONFIRMED = "✓: the exact test (Cypher and Leu) finds the same conflict"

DISAGREE = (
    "The 16-case classifier judges two neighbouring receives of one rank by their "
    "arguments and by which messages they consumed (MPVisualizer, section 3); the "
    "exact test asks, for one receive, whether another send could have been matched "
    "in some execution with the same happened-before order (Cypher and Leu). So a "
    "classifier race whose second message was sent only after the first receive "
    "completed, or whose second receive could not take the first message, is not "
    "confirmed; and an exact race whose other message went to a receive that is not "
    "the neighbour is not in the classifier's adjacent list."
)


def glossary_html() -> str:
    """The Help > Glossary page."""
    rows = "".join(f"<li>{situation_text(n)}</li>" for n in (3, 4, 7, 8, 11, 12, 15, 16))
    cons = "".join(f"<li><b>{k}</b>: {v}</li>" for k, v in CONSUMPTION.items())
    ver = "".join(f"<li><b>{k}</b>: {v}</li>" for k, v in VERDICTS.items())
    return (
        "<h3>Notation</h3><p>An event is written <b>rank:seq</b> (3:17 is the 18th event "
        "of rank 3). A receive is spelled with MPI's names: "
        f"<code>{call(-1, -1, 'ring.py:30')}</code>. Sites are shown relative to the "
        "program's directory.</p>"
        "<h3>Situations (the rows of Table 1 that can race)</h3>"
        f"<p>Two receives of one rank, the first then the second:</p><ul>{rows}</ul>"
        "<p>The other eight situations (1, 2, 5, 6, 9, 10, 13, 14) have a first receive that "
        "names its sender and never race.</p>"
        f"<h3>Consumption</h3><ul>{cons}</ul>"
        f"<h3>Verdicts</h3><ul>{ver}</ul>"
        f"<h3>(could match)</h3><p>{COULD_MATCH}.</p><p>{CONFIRMED}.</p>"
        f"<h3>Why the classifier and the exact test may disagree</h3><p>{DISAGREE}</p>"
    )


def legend_lines(races: list[dict[str, Any]]) -> list[str]:
    """What the terms of a text report mean, for the races it shows: each
    situation number, consumption pattern and verdict that appears, once."""
    situations = sorted({int(e["situation"]) for e in races if e.get("situation")})
    patterns = sorted({str(e["consumption"]) for e in races if e.get("consumption")})
    verdicts = sorted({str(e["verdict"]) for e in races if e.get("verdict") in VERDICTS})
    lines = [f"  {situation_text(n)}" for n in situations]
    lines += [f"  {p}: {CONSUMPTION[p]}" for p in patterns if p in CONSUMPTION]
    lines += [f"  {v.upper()}: {VERDICTS[v]}" for v in verdicts]
    return ["Terms (Help > Glossary in the window):", *lines] if lines else []
