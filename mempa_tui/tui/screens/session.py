"""Session view (SPEC section 4.11): the live transcript of one run (user turns, PA replies, each tool
call with its result a collapsible, IX selections, held items and consent, notices), the current beat, and
a side panel with the memory's contents and the evidence the PA was given this turn."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, cast

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Footer, Header, Label
from textual.worker import Worker, WorkerState

from mempa_tui.memory import MemoryInspection
from mempa_tui.runner import RunEvent, StepEvent
from mempa_tui.runner._episode_events import EvidenceEvent
from mempa_tui.tui.book import RunEntry, state_label
from mempa_tui.tui.engine import error_line
from mempa_tui.tui.export import write_session_markdown
from mempa_tui.tui.plain import PlainNotify
from mempa_tui.tui.widgets import MemoryPanel, TranscriptView

if TYPE_CHECKING:
    from mempa_tui.tui.app import MempaApp, RunUpdate

__all__ = ["SessionScreen"]


class SessionScreen(PlainNotify, Screen[None]):
    """One run's live session, chosen with :meth:`show_run`."""

    CSS_PATH = "session.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("e", "toggle_expanded", "Open/close calls", id="session.expand",
                tooltip="Open or close every tool call; enter or a click on a call toggles that one"),
        Binding("m", "reload_memory", "Reload memory", id="session.memory",
                tooltip="Read the memory's contents again from the run's latest checkpoint"),
        Binding("x", "export", "Export Markdown", id="session.export",
                tooltip="Write the transcript shown to saves/<run>/session-<time>.md"),
        Binding("left_square_bracket", "cycle(-1)", "Prev run", key_display="[", id="session.prev",
                tooltip="Show the previous run of this session"),
        Binding("right_square_bracket", "cycle(1)", "Next run", key_display="]", id="session.next",
                tooltip="Show the next run of this session"),
    ]

    run_key: reactive[str | None] = reactive(None, init=False)
    """Key of the run shown (None: no run chosen yet)."""

    last_export: Path | None = None
    """The Markdown file written by the latest export, if any."""

    @property
    def mempa(self) -> MempaApp:
        """The app, typed."""
        return cast("MempaApp", self.app)

    @property
    def entry(self) -> RunEntry | None:
        """The entry of the run shown."""
        return self.mempa.book.get(self.run_key) if self.run_key else None

    def compose(self) -> ComposeResult:
        """Where the run is, then the transcript beside the memory panel."""
        yield Header()
        with Horizontal(id="session-head"):
            yield Label("No run chosen: start one (l) or pick one on the dashboard (d).", id="run-label")
            yield Label("", id="step-label")
            yield Label("", id="beat-label")
        with Horizontal(id="session-body"):
            yield TranscriptView(id="transcript")
            yield MemoryPanel(id="side")
        yield Footer()

    def on_mount(self) -> None:
        """Follow the runs' updates."""
        self.mempa.run_signal.subscribe(self, self._on_run_update)
        self.query_one(MemoryPanel).show(None)

    # ---- choosing a run -------------------------------------------------------------------

    def show_run(self, key: str) -> None:
        """Show the run ``key`` (rebuilds the transcript once from the entry)."""
        if self.run_key == key:
            self._rebuild()
        else:
            self.run_key = key

    def watch_run_key(self) -> None:
        """A new run was chosen: redraw everything once."""
        self._rebuild()

    def _rebuild(self) -> None:
        entry = self.entry
        if entry is None:
            return
        self.query_one(TranscriptView).replay(entry.events, dropped=entry.dropped)
        self.query_one(MemoryPanel).show(entry)
        self._show_place(entry)
        # a stored run, or one this app resumed after it had finished (the runner had nothing left
        # to play, so no live event came): show what the store holds (issue 16.2)
        if not entry.events and (entry.source == "stored" or not entry.active):
            self.load_stored()
        if entry.memory is None and entry.run_id is not None:
            self.load_memory()
        if not entry.thresholds and entry.run_id is not None:
            self.load_thresholds()

    def _show_place(self, entry: RunEntry) -> None:
        self.query_one("#run-label", Label).update(f"{entry.label} · {state_label(entry)}")
        step = entry.step or "—"
        if entry.repeat:
            step += f" (repeat {entry.repeat})"
        self.query_one("#step-label", Label).update(f"step {step}")
        self.query_one("#beat-label", Label).update(f"beat {entry.beat or '—'}")
        for state in ("preparing", "running", "completed", "stopped", "failed"):
            self.set_class(entry.state == state, f"-{state}")

    def action_cycle(self, step: int) -> None:
        """Show the previous or next run of the book."""
        keys = [e.key for e in self.mempa.book]
        if not keys:
            return
        index = keys.index(self.run_key) if self.run_key in keys else -1
        self.run_key = keys[(index + step) % len(keys)]

    # ---- live updates ---------------------------------------------------------------------

    def _on_run_update(self, update: RunUpdate) -> None:
        entry = self.entry
        if entry is None or update.key != entry.key:
            return
        item = update.item
        if isinstance(item, StepEvent):
            self.query_one(TranscriptView).append(item)
            if isinstance(item.event, EvidenceEvent):
                self.query_one(MemoryPanel).show_evidence(entry)
            if isinstance(getattr(item.event, "inspection", None), MemoryInspection):
                self.query_one(MemoryPanel).show_memory(entry)
        elif isinstance(item, RunEvent) and item.kind == "run_started" and not entry.thresholds:
            self.load_thresholds()  # the runner stored the run's thresholds as it started
        elif (
            isinstance(item, RunEvent) and item.kind in ("step_finished", "run_finished")
            and not entry.memory_origin.startswith("live") and item.progress.steps_total
        ):
            self.load_memory()
        self._show_place(entry)

    # ---- stored content -------------------------------------------------------------------

    @work(exclusive=True, group="memory", exit_on_error=False)
    async def load_memory(self) -> None:
        """Read the memory's contents from the run's latest checkpoint into the side panel."""
        entry = self.entry
        if entry is None or entry.run_id is None:
            return
        found = await self.mempa.service.checkpoint_memory(entry.run_id)
        if found is None:
            return
        if entry.memory_origin.startswith("live"):
            return  # live snapshots arrived meanwhile; they are newer
        entry.memory, entry.memory_origin = found
        if entry is self.entry:
            self.query_one(MemoryPanel).show_memory(entry)

    @work(exclusive=True, group="thresholds", exit_on_error=False)
    async def load_thresholds(self) -> None:
        """Read File memory's thresholds the run uses (a reference run: its donor's) from its
        stored config into the side panel (issue 12: never the defaults)."""
        entry = self.entry
        if entry is None or entry.run_id is None:
            return
        entry.thresholds = await self.mempa.service.memory_thresholds(entry.run_id)
        if entry is self.entry and entry.thresholds:
            self.query_one(MemoryPanel).show_memory(entry)

    @work(exclusive=True, group="stored", exit_on_error=False)
    async def load_stored(self) -> None:
        """Read the last steps' stored transcript of a run that is not playing."""
        entry = self.entry
        if entry is None or entry.run_id is None:
            return
        items = await self.mempa.service.stored_events(entry.run_id)
        if entry is not self.entry:
            return
        log = self.query_one(TranscriptView)
        log.replay([])
        log.write(f"(stored transcript of the last steps of {entry.run_id})")
        for item in items:
            if isinstance(item, StepEvent):
                entry.apply(item)
            log.append(item)
        self.query_one(MemoryPanel).show_evidence(entry)
        self._show_place(entry)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A failed read of stored content is a notification; the view carries on."""
        if event.state is WorkerState.ERROR and event.worker.error is not None:
            self.notify(error_line(event.worker.error), severity="error", title="Session view")

    # ---- actions --------------------------------------------------------------------------

    def action_toggle_expanded(self) -> None:
        """Open or close every tool call of the transcript (no rebuild)."""
        log = self.query_one(TranscriptView)
        log.expanded = not log.expanded

    def action_reload_memory(self) -> None:
        """Read the memory again from the latest checkpoint."""
        entry = self.entry
        if entry is None:
            self.notify("no run chosen", severity="warning", title="Session view")
            return
        entry.memory_origin = ""
        self.load_memory()

    def action_export(self) -> None:
        """Write the run's transcript as kept in the app to a Markdown file under ``saves``."""
        entry = self.entry
        if entry is None or not entry.events:
            self.notify("no transcript to export yet", severity="warning", title="Session view")
            return
        try:
            path = write_session_markdown(entry.label, list(entry.events), self.mempa.settings.saves_dir)
        except OSError as exc:
            self.notify(f"cannot write the transcript: {exc}", severity="error", title="Session view")
            return
        self.last_export = path
        self.notify(f"wrote {path}", title="Session exported", timeout=10)
