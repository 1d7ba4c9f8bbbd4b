"""A non-modal race notification that does not flood the user.

MPVisualizer opens a pop-up for each adjacent race (paper, section 4) and
admits the flood.  Here one small panel (a bar above the diagram, or floating in a corner): it
shows the most relevant race waiting (a legitimate race before an
unverified one, the newest first among equals), counts the others,
and offers *Show*, *Mute site*, *Mute rank*, *Mute tag* and *Intended*
(saved per program by :mod:`mpvis.gui.race_settings`).  Races the settings
silence are never queued.  It never takes the focus or blocks input.

It never covers the race it announces: the window docks it as a bar above the
diagram (``docked=True``), in the central layout.  *Escape* closes it (the waiting races stay
queued), *Dismiss all* forgets them, and exports leave it out
(:data:`NO_EXPORT`).
"""

from __future__ import annotations

import html
from collections.abc import Callable

from PySide6 import QtCore, QtGui, QtWidgets

from mpvis.gui.race_settings import RaceSettings, race_identity
from mpvis.model.races import Race
from mpvis.scene.vocabulary import CONSUMPTION, VERDICTS, event, situation_text

_RANK = {"legitimate": 2, "unverified": 1}
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
        self.tags_of: dict[int, set[int]] = {}
        #: computes a race's tags when first needed (an offer without tags): most
        #: offered races are never shown, and their tags matter only once a tag is muted
        self.tags_for: Callable[[Race], set[int]] | None = None
        self.pending: list[Race] = []
        self._queued: set[int] = set()  # ids of the races in ``pending``
        #: :meth:`_settings_shape` when ``pending`` was last filtered by the settings
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
        self.pending, self.current, self.tags_of = [], None, {}
        self._queued = set()
        self.hide()

    def offer(self, race: Race, tags: set[int] | None, *, count: bool = True) -> bool:
        """Consider ``race`` for notification; returns whether it was queued.
        ``count=False``: the "more waiting" line is left for :meth:`update_more`
        (many offers at once)."""
        if tags is not None:
            self.tags_of[id(race)] = tags
        if not self._notify(race):
            return False
        if self.current is race or id(race) in self._queued:
            return False
        self.pending.append(race)
        self._queued.add(id(race))
        if self.current is None:
            self.next()
        elif count:
            self._update_more()
        return True

    def next(self) -> None:
        """Show the next race still worth notifying, or hide.

        The waiting races the settings now silence are dropped when the
        settings changed since the last look (a pass over every waiting race:
        100,000 of them on a 1M-event trace, about 0.35 s); otherwise a race
        picked and found no longer worth notifying (its verdict changed) is
        dropped and the next one picked."""
        shape = self._settings_shape()
        if shape != self._filtered_for:
            self.pending = [r for r in self.pending if self._notify(r)]
            self._queued = {id(r) for r in self.pending}
            self._filtered_for = shape
        self.current = None
        while self.pending and self.current is None:
            best = self._best()
            if best < 0:  # none is legitimate or unverified any more
                self.pending, self._queued = [], set()
                break
            race = self.pending.pop(best)
            self._queued.discard(id(race))
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
        """Index of the most relevant waiting race: legitimate before unverified,
        then the newest (searched from the end); -1 if none is either."""
        p = self.pending
        for verdict in sorted(_RANK, key=_RANK.__getitem__, reverse=True):
            for i in range(len(p) - 1, -1, -1):
                if p[i].verdict == verdict:
                    return i
        return -1

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
        """The tags ``race`` was offered with, or computed by :attr:`tags_for` now."""
        got = self.tags_of.get(id(race))
        if got is None:
            got = self.tags_for(race) if self.tags_for is not None else set()
            self.tags_of[id(race)] = got
        return got

    def _notify(self, race: Race) -> bool:
        """Worth notifying (its tags computed only if some tag is muted)."""
        return self.settings.should_notify(
            race, self.tags(race) if self.settings.muted_tags else set())

    def update_more(self) -> None:
        """The "more waiting" line, after offers made with ``count=False``."""
        self._update_more()

    def _update_more(self) -> None:
        n = len(self.pending)
        self.more.setText(
            f"{n} more race{'s' if n != 1 else ''} waiting (Dismiss shows the next)" if n else ""
        )

    def close_box(self) -> None:
        """Escape: hide the box; the waiting races stay queued for later."""
        if self.current is not None:
            self.pending.append(self.current)
            self._queued.add(id(self.current))
            self.current = None
        self.hide()

    def dismiss_all(self) -> None:
        """Forget the shown race and every waiting one, and hide."""
        self.pending, self._queued, self.current = [], set(), None
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

