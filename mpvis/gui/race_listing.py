"""The window's race list and race notifications: :class:`RaceListing`.

What it owns: the state between the model's races and the two widgets that
show them, the race panel (``window.races``) and the race notifier docked
above the diagram: which exact races were listed (built once per number the
detector found, or taken from the loader, which lists them on its thread),
which lists the race panel shows, the races still to offer to the notifier,
and how many potential races were flagged when last listed (the window's title
shows that count without asking the model).

When it lists: the window calls :meth:`RaceListing.changed` with the races
added or changed by a drain (and with none when the exact detector or the
deadlock monitor may have found more); the lists are made again only when a
race changed or the counts differ from those shown.  While a trace loads, the
races a drain adds are offered to the notifier at once but listed only now and
then (:meth:`RaceListing.added_while_loading`, :meth:`RaceListing.list_while_loading`):
a list is a pass over every race (2 s of the GUI thread at 10M events), and
the model grows in the GUI thread, so time spent listing is not spent loading;
listing is rationed to at most :data:`mpvis.gui.turns.LOADING_SHARE` of the time, at
least :data:`LOADING_LIST_S` apart.

Offering is rationed too (:meth:`RaceListing.offer_some`): at most
:data:`OFFER_MS` per call, the rest on the window's next drains, since the end
of a 1M-event load changes a quarter of a million races at once.

It sees the window as a :class:`~mpvis.gui.window_api.WindowApi` (its model,
analyses, loader and race panel, read at each call) and imports neither the
window nor anything that does.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Container

import numpy as np
import numpy.typing as npt
from PySide6 import QtCore

from mpvis.gui import turns
from mpvis.gui.loader import TraceLoader
from mpvis.gui.race_panel import ExactKey
from mpvis.gui.race_popup import RaceNotifier
from mpvis.gui.race_rows import ExactRows, RaceRows
from mpvis.gui.window_api import WindowApi
from mpvis.model.races import Race
from mpvis.scene.race_marks import race_tags

__all__ = ["LOADING_LIST_S", "OFFER_MS", "OFFER_ROWS", "RaceListing"]

#: A trace's race list (a pass over every race: 2 s at 10M events) is made
#: while the trace loads at most this often (s) ...
LOADING_LIST_S = 5.0
#: Races are offered to the notifier for at most this long per drain (ms) ...
OFFER_MS = 30
#: ... this many at a time (a pass over their columns; race by race only when
#: the settings could silence one).
OFFER_ROWS = 8192


class RaceListing:
    """The race list and the notifier's offers of a window; see the module docstring.

    ``notifier``: the window's race notifier; ``listed``: called after each new
    list is handed to the race panel (the window's title shows :attr:`flagged`).
    """

    def __init__(self, window: WindowApi, notifier: RaceNotifier,
                 listed: Callable[[], None]) -> None:
        self._window = window
        self._notifier = notifier
        self._listed = listed
        #: the exact races listed: (detector, how many it had found, the list, their
        #: keys for the race panel's ✓ if known)
        self._exact_list: tuple[object, int, ExactRows, Container[ExactKey] | None] \
            | None = None
        #: (id of that list, classifier race count) the race panel shows
        self._races_shown: tuple[int, int] | None = None
        #: ids of races to offer to the notifier, in arrays (:meth:`offer_some`)
        self._to_offer: deque[npt.NDArray[np.int64]] = deque()
        self.flagged = 0  # potential races, as last listed
        self._unlisted = False  # races changed since listed (a trace loading)
        self._list_next = 0.0  # when a trace loading may list its races again

    def reset(self) -> None:
        """Another model is shown: nothing listed, nothing to offer."""
        self._exact_list = self._races_shown = None
        self._unlisted, self._list_next = False, 0.0
        self._to_offer.clear()

    def exact_races(self) -> ExactRows | None:
        """The exact detector's races, built once per number found (a 1M-event trace
        has a quarter of a million: building them took a second of the GUI thread,
        and every deadlock or race noted asked again); rows of the detector's
        conflict array, an object made per row shown."""
        a = self._window.analyses
        if a is None or a.exact is None:
            return None
        n = len(a.exact.conflicts())
        got = self._exact_list
        if got is None or got[0] is not a.exact or got[1] != n:
            if self._window.loader is not None:  # a trace loading: listed by the loader at its end
                return got[2] if got is not None and got[0] is a.exact else None
            got = self._exact_list = (a.exact, n, ExactRows(a.exact.conflict_array()), None)
        return got[2]

    def take_exact_list(self, loader: TraceLoader) -> None:
        """The exact races the loader listed on its thread, if any (see :meth:`exact_races`)."""
        a = self._window.analyses
        if a is not None and a.exact is not None and loader.exact_races is not None:
            self._exact_list = (a.exact, len(loader.exact_races), loader.exact_races,
                                loader.exact_keys)
            loader.exact_races = loader.exact_keys = None  # held here from now on

    def changed(self, ids: list[int]) -> None:
        """Races ``ids`` of the model shown were added or changed (none: the exact
        detector or the deadlock monitor may have found more): list them again
        if anything differs from the lists shown, and offer them to the notifier."""
        m = self._window.model
        assert m is not None
        exact = self.exact_races()
        shown = (id(exact), len(m.races.races))
        changed = bool(ids) or self._unlisted
        if changed or shown != self._races_shown:  # else the race list is as shown
            new = self._races_shown is None or shown[0] != self._races_shown[0]
            keys = self._exact_list[3] if self._exact_list is not None else None
            potential = None  # the classifier's races as listed: only the exact ones are new
            if changed or self._races_shown is None or shown[1] != self._races_shown[1]:
                potential = RaceRows(m.races.races, m.races.potential_rows())  # no objects
                self.flagged = len(potential)  # for the title, without asking the model
            self._window.races.set_lists(potential, exact if new else None, keys)
            self._races_shown, self._unlisted = shown, False
            self._listed()
        if ids:
            self._to_offer.append(np.array(ids, dtype=np.int64))
        self.offer_some()

    def added_while_loading(self, ids: list[int]) -> bool:
        """Races ``ids`` were added or changed in a trace loading: offered on the
        next drains, listed later; returns whether a listing is due now (the
        caller runs :meth:`list_while_loading` on a turn of its own; until it
        did, no other listing is due)."""
        self._to_offer.append(np.array(ids, dtype=np.int64))
        self._unlisted = True
        if time.monotonic() < self._list_next:
            return False
        self._list_next = math.inf  # one refresh pending at a time
        return True

    def list_while_loading(self) -> None:
        """List the races of a trace loading; the next time in :data:`LOADING_LIST_S`
        or later, so that listing takes at most its share of the time."""
        began = time.monotonic()
        self.changed([])
        cost = time.monotonic() - began
        self._list_next = began + max(LOADING_LIST_S, cost / turns.LOADING_SHARE)

    def race_tags(self, race: Race) -> set[int]:
        """:func:`race_tags` in the model shown (the notifier asks when it needs them)."""
        m = self._window.model
        return race_tags(m, race) if m is not None else set()

    def offer_waiting(self) -> None:
        """Go on offering the races left by the last offers, if any."""
        if self._to_offer:
            self.offer_some()

    def offer_some(self) -> None:
        """Offer the races added or changed to the notifier, for at most
        :data:`OFFER_MS` (the rest on the next drains: the end of a 1M-event load
        changes a quarter of a million races, seconds of offers at once)."""
        m = self._window.model
        if m is None:
            self._to_offer.clear()
            return
        clock = QtCore.QElapsedTimer()
        clock.start()
        todo, table = self._to_offer, m.races.races
        while todo and clock.elapsed() < OFFER_MS:
            rows = todo.popleft()
            if len(rows) > OFFER_ROWS:
                todo.appendleft(rows[OFFER_ROWS:])
                rows = rows[:OFFER_ROWS]
            # the potential races, as rows (no view per race; tags when needed)
            self._notifier.offer_rows(table, rows[table.potential.view()[rows] != 0],
                                      count=False)
        self._notifier.update_more()
        self._notifier.refresh()
