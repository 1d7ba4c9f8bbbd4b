"""A non-modal race notification that does not flood the user.

MPVisualizer opens a pop-up for each adjacent race (paper, section 4) and
admits the flood.  Here one small panel (a bar above the diagram, or floating in a corner): it
shows the most relevant race waiting (a legitimate race before an
unverified one, the newest first among equals), counts the others,
and offers *Show*, *Mute site*, *Mute rank*, *Mute tag* and *Intended*
(saved per program by :mod:`mpvis.gui.race_settings`).  Races the settings
silence are never queued.  It never takes the focus or blocks input.

The waiting races are row ids of the model's race columns
(:class:`~mpvis.model.races.RaceColumns`), read from the columns when picked
or filtered: a 1M-event trace has about 100,000 of them waiting, which as
``Race`` views with a list and a set of their ids held about 20 MB (issue 16).
A view is made for the race shown only.

It never covers the race it announces: the window docks it as a bar above the
diagram (``docked=True``), in the central layout.  *Escape* closes it (the waiting races stay
queued), *Dismiss all* forgets them, and exports leave it out
(:data:`NO_EXPORT`).
"""

from __future__ import annotations

import html
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
from PySide6 import QtCore, QtGui, QtWidgets

from mpvis.gui.race_settings import NOTIFY_VERDICTS, RaceSettings, race_identity
from mpvis.model import classifier
from mpvis.model.races import Race, RaceColumns
from mpvis.scene.vocabulary import CONSUMPTION, VERDICTS, event, situation_text

IntArray = npt.NDArray[np.int64]
#: Verdict codes (:data:`~mpvis.model.classifier.VERDICTS`) in the order a waiting
#: race is picked: a legitimate race before an unverified one.
_PICK = tuple(classifier.VERDICTS.index(v) for v in ("legitimate", "unverified"))
_NOTIFY_CODES = np.array([classifier.VERDICTS.index(v) for v in sorted(NOTIFY_VERDICTS)],
                         dtype=np.int8)
#: Widgets with this property set are hidden while a view is exported.
NO_EXPORT = "mpvisNoExport"


class RaceNotifier(QtWidgets.QFrame):
    """The floating notification; ask :meth:`offer` to consider a race."""

    show_requested = QtCore.Signal(object)  # Race
    settings_changed = QtCore.Signal()

    def __init__(self, parent: QtWidgets.QWidget, *, docked: bool = False) -> None:
        super().__init__(parent)
        #: in its parent's layout (a bar above the diagram) rather than floating
        self.docked = docked
        self.settings = RaceSettings()
        #: tags of races offered with them, by row (see :meth:`tags`)
        self.tags_of: dict[int, set[int]] = {}
        #: computes a race's tags when first needed (an offer without tags): most
        #: offered races are never shown, and their tags matter only once a tag is muted
        self.tags_for: Callable[[Race], set[int]] | None = None
        #: the race columns the waiting rows are of (the model shown)
        self.table: RaceColumns | None = None
        self._rows = np.zeros(0, dtype=np.int64)  # the waiting rows, oldest first ...
        self._n = 0  # ... in ``_rows[:_n]``
        self._queued = np.zeros(0, dtype=bool)  # by row: waiting
        #: :meth:`_settings_shape` when the waiting rows were last filtered by the settings
        self._filtered_for: tuple[int, ...] = ()
        self.current: Race | None = None
        self.shown_count = 0
        self.setObjectName("raceNotifier")
        self.setProperty(NO_EXPORT, True)
        #: Spells receive ``(rank, seq)`` out (``recv(ANY_SOURCE, ANY_TAG) at f.py:3``).
        self.call_of: Callable[[int, int], str] | None = None
        self.setStyleSheet(
            "#raceNotifier{background:#fff8e1;border:2px solid #ff6f00;border-radius:6px}"
            "QPushButton{padding:2px 6px}"
        )
        self.title = QtWidgets.QLabel()
        self.title.setWordWrap(True)
        self.more = QtWidgets.QLabel()
        self.more.setStyleSheet("color:#6d4c41")
        self.btn_show = QtWidgets.QPushButton("Show")
        self.btn_site = QtWidgets.QPushButton("Mute site")
        self.btn_rank = QtWidgets.QPushButton("Mute rank")
        self.btn_tag = QtWidgets.QPushButton("Mute tag")
        self.btn_intended = QtWidgets.QPushButton("Intended")
        self.btn_close = QtWidgets.QPushButton("Dismiss")
        self.btn_all = QtWidgets.QPushButton("Dismiss all")
        self.btn_all.setToolTip("Forget every waiting race (they stay in the race list)")
        self.btn_close.setToolTip("Show the next waiting race (Escape closes this box)")
        self.escape = QtGui.QShortcut(QtGui.QKeySequence(QtCore.Qt.Key.Key_Escape), parent)
        self.escape.setContext(QtCore.Qt.ShortcutContext.WindowShortcut)
        self.escape.activated.connect(self.close_box)
        tips = {
            self.btn_site: "Never notify races at these receive sites (saved per program)",
            self.btn_rank: "Never notify races on this rank (saved per program)",
            self.btn_tag: "Never notify races involving these tags (saved per program)",
            self.btn_intended: "This race is intended: do not notify it again",
        }
        for b, tip in tips.items():
            b.setToolTip(tip)
        buttons = QtWidgets.QGridLayout()
        rows = ((self.btn_show, self.btn_site, self.btn_rank, self.btn_tag),
                (self.btn_intended, self.btn_close, self.btn_all))
        for i, row in enumerate(rows):
            for j, b in enumerate(row):
                b.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
                buttons.addWidget(b, i, j)
        lay = QtWidgets.QVBoxLayout(self)
        lay.addWidget(self.title)
        lay.addWidget(self.more)
        lay.addLayout(buttons)
        self.btn_show.clicked.connect(self._show)
        self.btn_site.clicked.connect(lambda: self._mute("site"))
        self.btn_rank.clicked.connect(lambda: self._mute("rank"))
        self.btn_tag.clicked.connect(lambda: self._mute("tag"))
        self.btn_intended.clicked.connect(lambda: self._mute("intended"))
        self.btn_close.clicked.connect(self.next)
        self.btn_all.clicked.connect(self.dismiss_all)
        self.hide()

    def reset(self, settings: RaceSettings) -> None:
        """A new run: new settings, nothing pending."""
        self.settings = settings
        self.current, self.tags_of, self.table = None, {}, None
        self._clear()
        self.hide()

    @property
    def waiting(self) -> int:
        """How many races wait (the shown one aside)."""
        return self._n

    @property
    def pending(self) -> list[Race]:
        """The waiting races, oldest first, as the model's views (made now: for
        inspection; the notifier itself keeps rows)."""
        t = self.table
        return [] if t is None else [t[int(i)] for i in self._rows[: self._n]]

    def offer(self, race: Race, tags: set[int] | None, *, count: bool = True) -> bool:
        """Consider ``race`` for notification; returns whether it was queued.
        ``count=False``: the "more waiting" line is left for :meth:`update_more`
        (many offers at once)."""
        if tags is not None:
            self._take_table(race.table)
            self.tags_of[race.row] = tags
        return self.offer_rows(race.table, np.array([race.row], dtype=np.int64),
                               count=count) > 0

    def offer_rows(self, table: RaceColumns, rows: IntArray, *, count: bool = True) -> int:
        """Consider rows ``rows`` of ``table`` (in the order they came, as
        :meth:`offer` one by one would); returns how many were queued.  Those
        worth notifying are kept (:meth:`_worth`).  Rows of another table than
        the waiting ones' (another model) replace them."""
        self._take_table(table)
        rows = np.asarray(rows, dtype=np.int64)
        if not len(rows):
            return 0
        _, first = np.unique(rows, return_index=True)  # a row offered twice: its first offer
        rows = rows[np.sort(first)]
        self._grow_mask(len(table))
        keep = ~self._queued[rows]
        cur = self.current
        if cur is not None and cur.table is table:
            keep &= rows != cur.row
        rows = rows[keep]
        rows = rows[self._worth(table, rows)]
        if not len(rows):
            return 0
        self._append(rows)
        if self.current is None:
            self.next()
        elif count:
            self._update_more()
        return len(rows)

    def _take_table(self, table: RaceColumns) -> None:
        """Waiting rows are of ``table`` from now (another table's are dropped)."""
        if table is not self.table:
            self.table, self.tags_of = table, {}
            self._clear()

    def _clear(self) -> None:
        self._rows, self._n = np.zeros(0, dtype=np.int64), 0
        self._queued = np.zeros(0, dtype=bool)

    def _grow_mask(self, n: int) -> None:
        if len(self._queued) < n:
            grown = np.zeros(max(n, len(self._queued) * 5 // 4), dtype=bool)
            grown[: len(self._queued)] = self._queued
            self._queued = grown

    def _append(self, rows: IntArray) -> None:
        """Queue ``rows`` (of :attr:`table`, none waiting yet) after the waiting ones."""
        n, k = self._n, len(rows)
        if n + k > len(self._rows):
            grown = np.zeros(max(n + k, len(self._rows) * 5 // 4), dtype=np.int64)
            grown[:n] = self._rows[:n]
            self._rows = grown
        self._rows[n: n + k] = rows
        self._n = n + k
        assert self.table is not None
        self._grow_mask(len(self.table))
        self._queued[rows] = True

    def _keep_waiting(self, keep: npt.NDArray[np.bool_]) -> None:
        """Keep the waiting rows where ``keep`` (over ``_rows[:_n]``) holds."""
        rows = self._rows[: self._n]
        self._queued[rows[~keep]] = False
        kept = rows[keep]
        self._rows[: len(kept)] = kept
        self._n = len(kept)

    def next(self) -> None:
        """Show the next race still worth notifying, or hide.

        The waiting races the settings now silence are dropped when the
        settings changed since the last look (:meth:`_worth` of the waiting
        rows: 100,000 of them on a 1M-event trace); otherwise a race picked and found
        no longer worth notifying (its verdict changed) is dropped and the next
        one picked."""
        t = self.table
        shape = self._settings_shape()
        if shape != self._filtered_for:
            if t is not None and self._n:
                self._keep_waiting(self._worth(t, self._rows[: self._n]))
            self._filtered_for = shape
        self.current = None
        while self._n and self.current is None:
            assert t is not None
            best = self._best()
            if best < 0:  # none is legitimate or unverified any more
                self._keep_waiting(np.zeros(self._n, dtype=bool))
                break
            row = int(self._rows[best])
            self._rows[best: self._n - 1] = self._rows[best + 1: self._n]
            self._n -= 1
            self._queued[row] = False
            race = t[row]
            if self._notify(race):
                self.current = race
        if self.current is None:
            self.hide()
            return
        self.shown_count += 1
        self.refresh()
        self.show()
        self.raise_()
        self.place()

    def _best(self) -> int:
        """Index (into the waiting rows) of the most relevant waiting race:
        legitimate before unverified, then the newest; -1 if none is either."""
        assert self.table is not None
        codes = self.table.verdict.view()[self._rows[: self._n]]
        for code in _PICK:
            hit = np.flatnonzero(codes == code)
            if len(hit):
                return int(hit[-1])
        return -1

    def _worth(self, table: RaceColumns, rows: IntArray) -> npt.NDArray[np.bool_]:
        """Which of ``rows`` are worth notifying (:meth:`_notify`): the verdicts
        and the muted ranks by a pass over the columns, race by race only when
        a site, a tag or an intended race is in the settings (race by race, 24,000
        waiting races took 24 ms of CPU, the columns 1 ms; a 1M-event trace has
        100,000 waiting)."""
        s = self.settings
        keep = np.isin(table.verdict.view()[rows], _NOTIFY_CODES)
        if s.muted_ranks and keep.any():
            keep &= ~np.isin(table.receive_keys(rows)[0], list(s.muted_ranks))
        if (s.muted_sites or s.muted_tags or s.intended) and keep.any():
            keep[keep] = [self._notify(Race(table, int(r))) for r in rows[keep]]
        return keep

    def _settings_shape(self) -> tuple[int, ...]:
        """What changes when the settings do (muting adds, a new run replaces them)."""
        s = self.settings
        return (id(s), len(s.muted_sites), len(s.muted_ranks), len(s.muted_tags),
                len(s.intended))

    def refresh(self) -> None:
        """Redraw the text of the shown race (its verdict may have changed since);
        one that turned out not to be a race (spurious, false) gives way to the next."""
        r = self.current
        if r is None:
            return
        if not self._notify(r):
            self.next()
            return
        what = {"legitimate": "Race", "unverified": "Possible race (unverified)"}.get(
            r.verdict, "Receive pair"
        )
        if self.call_of is not None:
            calls = " and ".join(f"{event(r.rank, q)} {html.escape(self.call_of(r.rank, q))}"
                                 for q in r.recvs)
        else:
            sites = " and ".join(s for s in r.sites if s) or "unknown sites"
            calls = f"{event(r.rank, r.recvs[0])} and {event(r.rank, r.recvs[1])} at {sites}"
        self.title.setText(
            f"<b>{what} on rank {r.rank}</b>: receives {calls} "
            f"(situation {r.situation}, {r.consumption}). "
            + ("Either message could have been consumed first." if r.verdict == "legitimate"
               else VERDICTS.get(r.verdict, "").capitalize() + ".")
        )
        self.title.setToolTip(f"{situation_text(r.situation)}\n{r.consumption}: "
                              f"{CONSUMPTION.get(r.consumption, '')}")
        tags = sorted(self.tags(r))
        self.btn_tag.setText(f"Mute tag {','.join(map(str, tags))}" if tags else "Mute tag")
        self.btn_tag.setEnabled(bool(tags))
        self.btn_site.setEnabled(any(r.sites))
        self.btn_rank.setText(f"Mute rank {r.rank}")
        self._update_more()

    def tags(self, race: Race) -> set[int]:
        """The tags ``race`` was offered with, or computed by :attr:`tags_for` now
        (kept for the race shown, not for every race a filter asks about)."""
        got = self.tags_of.get(race.row) if race.table is self.table else None
        if got is None:
            got = self.tags_for(race) if self.tags_for is not None else set()
            if self.current is not None and race.row == self.current.row \
                    and race.table is self.table:
                self.tags_of[race.row] = got
        return got

    def _notify(self, race: Race) -> bool:
        """Worth notifying (its tags computed only if some tag is muted)."""
        return self.settings.should_notify(
            race, self.tags(race) if self.settings.muted_tags else set())

    def update_more(self) -> None:
        """The "more waiting" line, after offers made with ``count=False``."""
        self._update_more()

    def _update_more(self) -> None:
        n = self._n
        self.more.setText(
            f"{n} more race{'s' if n != 1 else ''} waiting (Dismiss shows the next)" if n else ""
        )

    def close_box(self) -> None:
        """Escape: hide the box; the waiting races stay queued for later."""
        r = self.current
        if r is not None:
            self.current = None
            self._take_table(r.table)
            self._append(np.array([r.row], dtype=np.int64))
        self.hide()

    def dismiss_all(self) -> None:
        """Forget the shown race and every waiting one, and hide."""
        self.current = None
        self._clear()
        self.hide()

    def place(self) -> None:
        """Floating (not docked): in the parent's top-right corner."""
        parent = self.parentWidget()
        if parent is None or self.docked:
            return
        self.setFixedWidth(min(520, max(parent.width() - 40, 200)))
        self.adjustSize()
        self.move(parent.width() - self.width() - 20, 40)

    def _show(self) -> None:
        if self.current is not None:
            self.show_requested.emit(self.current)

    def _mute(self, what: str) -> None:
        r, s = self.current, self.settings
        if r is None:
            return
        if what == "site":
            s.muted_sites.update(x for x in r.sites if x)
        elif what == "rank":
            s.muted_ranks.add(r.rank)
        elif what == "tag":
            s.muted_tags.update(self.tags(r))
        else:
            s.intended.add(race_identity(r))
        s.save()
        self.settings_changed.emit()
        self.next()

