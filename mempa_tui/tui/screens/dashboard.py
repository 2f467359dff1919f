"""Dashboard (SPEC section 4.11): one row per run with a progress bar for the timeline and one for
the probes, tokens, errors and status. The dashboard owns the runs: each plays in its own async
worker (group ``run:<key>``), so several run at once and a failing one never stops the others."""

from __future__ import annotations

from contextlib import suppress
from functools import partial
from typing import TYPE_CHECKING, ClassVar, cast

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.css.query import NoMatches
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widgets import Footer, Header, Label
from textual.worker import Worker, WorkerCancelled, WorkerFailed, WorkerState

from mempa_tui.runner import RunEvent, StepEvent
from mempa_tui.store import RunStatus
from mempa_tui.tui.book import RunEntry, RunRequest
from mempa_tui.tui.engine import error_line
from mempa_tui.tui.plain import PlainNotify
from mempa_tui.tui.widgets import RunCard

if TYPE_CHECKING:
    from mempa_tui.tui.app import MempaApp

__all__ = ["DashboardScreen"]

RUN_GROUP = "run:"
"""Prefix of the worker group of each run."""

CANCELLED_MESSAGE = "cancelled from the dashboard; every committed step is kept (r resumes it from its last checkpoint)"
"""The error text of a run cancelled from the dashboard (also stored on its run record)."""

EMPTY_TEXT = (
    "No runs started or resumed in this app session yet. Start one from the launcher (l), or pick an "
    "earlier run in the launcher's Saved runs list and press r to resume it into this dashboard."
)
"""What the dashboard says while it has no rows (it lists only this app session's runs)."""


class DashboardScreen(PlainNotify, Screen[None]):
    """Every run started in this session, live."""

    CSS_PATH = "dashboard.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("x", "stop", "Pause run", id="dashboard.stop",
                tooltip="Stop the focused run after its current model call; resume continues it"),
        Binding("c", "cancel", "Cancel run", id="dashboard.cancel",
                tooltip="Stop the focused run and mark it cancelled in the run store (its steps are kept)"),
        Binding("r", "resume", "Resume run", id="dashboard.resume",
                tooltip="Play the focused run again from its last checkpoint"),
        Binding("v", "view", "View session", id="dashboard.view",
                tooltip="Open the session view of the focused run"),
        # show=False: the footer's keys (and its snapshots) stay as they were; ? and ctrl+p list it
        Binding("b", "browse", "Browse run", id="dashboard.browse", show=False,
                tooltip="Open the focused run in the run browser: every stored step and probe repeat in full"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self._cancelling: set[str] = set()

    @property
    def mempa(self) -> MempaApp:
        """The app, typed."""
        return cast("MempaApp", self.app)

    def compose(self) -> ComposeResult:
        """The list of run rows (empty at first)."""
        yield Header()
        yield Label(EMPTY_TEXT, id="dash-empty")
        yield VerticalScroll(id="cards")
        yield Footer()

    def on_mount(self) -> None:
        """Show rows for runs already in the book."""
        for entry in self.mempa.book:
            self._card(entry)
        # only the rows take the focus, so Tab steps from run to run (issue 16.6)
        self.query_one("#cards", VerticalScroll).can_focus = False

    def on_screen_resume(self) -> None:
        """Coming back with no row focused: focus the first playing row (else the first row), so
        the run keys (x, c, r, v) act on a run at once."""
        if isinstance(self.focused, RunCard):
            return
        cards = list(self.query(RunCard))
        playing = [c for c in cards if c.entry.active]
        if playing or cards:
            (playing or cards)[0].focus()

    # ---- rows -----------------------------------------------------------------------------

    def _card(self, entry: RunEntry) -> RunCard:
        """The row of ``entry``, mounted if new."""
        for card in self.query(RunCard):
            if card.entry is entry:
                return card
        card = RunCard(entry)
        self.query_one("#cards", VerticalScroll).mount(card)
        self.set_class(True, "-has-runs")
        return card

    def _refresh(self, entry: RunEntry) -> None:
        try:
            card = next(c for c in self.query(RunCard) if c.entry is entry)
        except StopIteration:
            return
        if card.is_mounted:
            try:
                card.show()
            except NoMatches:  # the row is still composing; it shows itself on mount
                return

    def _focused_entry(self, *, playing: bool = False) -> RunEntry | None:
        """The run the keys act on: the focused row's; with no row focused, the only run (or, with
        ``playing``, the only run still playing: x and c act on it, issue 16.6); else None, with a
        note naming the runs to choose from."""
        focused = self.focused
        if isinstance(focused, RunCard):
            return focused.entry
        entries = list(self.mempa.book)
        if len(entries) == 1:
            return entries[0]
        active = [e for e in entries if e.active]
        if playing and len(active) == 1:
            return active[0]
        names = ", ".join(e.label for e in (active if playing and active else entries))
        self.notify(f"focus a run first (tab): {names}" if names else "no runs yet",
                    severity="warning", title="Dashboard")
        return None

    # ---- running --------------------------------------------------------------------------

    def start_run(self, request: RunRequest) -> RunEntry | None:
        """Register ``request`` and play it in its own worker.

        Returns:
            The run's entry, or None when that run is already being played or is a person's play
            (a notification says so; a play resumes in its seat, :meth:`MempaApp.resume_play`).
        """
        if request.play is not None:
            self.notify(f"{request.key} is a play: resume it with r to take its seat again",
                        severity="warning", title="Dashboard")
            return None
        try:
            entry = self.mempa.book.add(request)
        except ValueError as exc:
            self.notify(str(exc), severity="warning", title="Dashboard")
            return None
        card = self._card(entry)
        self._refresh(entry)
        card.focus()
        # a callable, not a coroutine: a worker cancelled before it starts (the app quit or was
        # interrupted right away) leaves no coroutine that was never awaited (issue 15.7)
        self.run_worker(
            partial(self._play, entry), name=entry.key, group=RUN_GROUP + entry.key, exclusive=True,
            exit_on_error=False, description=f"run {entry.key}",
        )
        self.mempa.publish(entry.key, None)
        return entry

    async def _play(self, entry: RunEntry) -> None:
        say = partial(self.notify, title=entry.label, timeout=6)
        outcome = await self.mempa.service.execute(entry.request, partial(self._observe, entry), say)
        entry.state = "completed" if outcome.status is RunStatus.COMPLETED else "stopped"
        if outcome.status is not RunStatus.COMPLETED:
            entry.error = entry.error or "; ".join(outcome.notes) or "stopped before the end"
        self._refresh(entry)
        self.mempa.publish(entry.key, None)
        severity: SeverityLevel = "information" if entry.state == "completed" else "warning"
        self.notify(f"run {outcome.run_id} {outcome.status.value}", severity=severity, title="Run finished")

    def _observe(self, entry: RunEntry, item: RunEvent | StepEvent) -> None:
        """The runner's observer: fold the item in, redraw the row on run-level news, tell the app."""
        entry.apply(item)
        if isinstance(item, RunEvent):
            self._refresh(entry)
        self.mempa.publish(entry.key, item)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A run's error shows on its row and as a notification; a cancelled worker shows the run as
        stopped (paused) or, when :meth:`cancel_run` asked, as cancelled; a failed cancel write
        notifies."""
        worker = event.worker
        if worker.group == "cancel" and event.state is WorkerState.ERROR and worker.error is not None:
            self.notify(error_line(worker.error), severity="error", title="Cancel run", timeout=12)
            return
        if not worker.group.startswith(RUN_GROUP):
            return
        entry = self.mempa.book.get(worker.group.removeprefix(RUN_GROUP))
        if entry is None:
            return
        if event.state is WorkerState.ERROR and worker.error is not None:
            self._cancelling.discard(entry.key)
            entry.fail(error_line(worker.error))
            self.notify(entry.error or "run failed", severity="error", title=f"run {entry.label} failed",
                        timeout=12)
        elif event.state is WorkerState.CANCELLED and entry.key in self._cancelling:
            self._cancelling.discard(entry.key)
            self._mark_cancelled(entry)
        elif event.state is WorkerState.CANCELLED:
            entry.stop()
        else:
            return
        self._refresh(entry)
        self.mempa.publish(entry.key, None)

    async def on_unmount(self) -> None:
        """Stop the runs still playing and wait until each has stored its stopped state.

        A cancelled worker's ``wait()`` raises :class:`WorkerCancelled` (and a failed one
        :class:`WorkerFailed`, already shown on its row); neither may escape while the app quits.
        """
        workers = [
            w for w in self.mempa.workers
            if w.node is self and w.group.startswith(RUN_GROUP) and not w.is_finished
        ]
        for worker in workers:
            worker.cancel()
        for worker in workers:
            with suppress(WorkerCancelled, WorkerFailed):
                await worker.wait()

    # ---- actions --------------------------------------------------------------------------

    def stop_run(self, entry: RunEntry) -> None:
        """Cancel ``entry``'s worker; the runner stores the run as stopped (resumable)."""
        if not entry.active:
            self.notify(f"run {entry.label} is not running", severity="warning", title="Dashboard")
            return
        self.mempa.workers.cancel_group(self, RUN_GROUP + entry.key)
        self.notify(f"stopping run {entry.label}", title="Dashboard")

    def cancel_run(self, entry: RunEntry) -> None:
        """Cancel ``entry``: a playing run's worker is cancelled (the step in flight is dropped, never
        half-stored: the run ends at its last step boundary), then the run record is marked
        ``cancelled``. A run that is not playing (finished, paused, failed, already cancelled) is
        refused with a message, as pause (``x``) refuses it: its stored status is never rewritten.
        Nothing stored is deleted."""
        if entry.state == "cancelled":
            self.notify(f"run {entry.label} is already cancelled", severity="warning", title="Dashboard")
            return
        if entry.request.play is not None:
            self.notify(f"{entry.label} is a play; it ended with its seat", severity="warning", title="Dashboard")
            return
        if not entry.active:
            self.notify(f"run {entry.label} is not running", severity="warning", title="Dashboard")
            return
        self._cancelling.add(entry.key)
        self.mempa.workers.cancel_group(self, RUN_GROUP + entry.key)
        self.notify(f"cancelling run {entry.label}", title="Dashboard")

    def _mark_cancelled(self, entry: RunEntry) -> None:
        entry.cancel(CANCELLED_MESSAGE)
        self._refresh(entry)
        self.mempa.publish(entry.key, None)
        if entry.run_id is not None:
            self.run_worker(partial(self._store_cancelled, entry.run_id), group="cancel", exit_on_error=False,
                            description=f"mark {entry.run_id} cancelled")

    async def _store_cancelled(self, run_id: str) -> None:
        if await self.mempa.service.mark_cancelled(run_id, CANCELLED_MESSAGE):
            self.notify(f"run {run_id} cancelled; its stored steps are kept", title="Dashboard")
        self.mempa.publish(run_id, None)

    def action_cancel(self) -> None:
        """Cancel the focused run."""
        entry = self._focused_entry(playing=True)
        if entry is not None:
            self.cancel_run(entry)

    def action_stop(self) -> None:
        """Pause the focused run."""
        entry = self._focused_entry(playing=True)
        if entry is not None:
            self.stop_run(entry)

    def action_resume(self) -> None:
        """Play the focused run again (it resumes from its last checkpoint)."""
        entry = self._focused_entry()
        if entry is not None:
            self.mempa.call_later(self.mempa.resume_run, entry.key)

    def action_view(self) -> None:
        """Open the focused run's session view."""
        entry = self._focused_entry()
        if entry is not None:
            self.mempa.call_later(self.mempa.show_session, entry.key)

    def action_browse(self) -> None:
        """Open the focused run in the run browser (the browser alone when it has not started)."""
        entry = self._focused_entry()
        if entry is not None:
            self.mempa.call_later(self.mempa.show_browser, entry.run_id)

    def on_run_card_opened(self, message: RunCard.Opened) -> None:
        """Enter or a click on a row opens its session view."""
        self.mempa.call_later(self.mempa.show_session, message.key)
