"""One run's row on the dashboard: status, a progress bar for the timeline and one for probes."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Label, ProgressBar

from mempa_tui.tui.book import RunEntry, state_label
from mempa_tui.tui.render import place_text, problems, progress_line

__all__ = ["RunCard"]

_STATES = ("preparing", "running", "completed", "stopped", "failed", "cancelled", "elsewhere")


class RunCard(Vertical, can_focus=True):
    """A focusable row showing one :class:`~mempa_tui.tui.book.RunEntry`.

    Args:
        entry: the run to show (read again on every :meth:`show`).
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "View session", id="run_card.open", show=False,
                tooltip="Open the session view of this run"),
    ]

    class Opened(Message):
        """The user asked to view this run's session (handler: ``on_run_card_opened``)."""

        def __init__(self, key: str) -> None:
            self.key = key
            """The run's key in the app's run book."""
            super().__init__()

    def __init__(self, entry: RunEntry) -> None:
        super().__init__(id=f"run-{_dom_id(entry.key)}", classes="run-card")
        self.entry = entry

    def compose(self) -> ComposeResult:
        """Title and state, two labelled bars, the counters and the last error."""
        with Horizontal(classes="run-head"):
            yield Label(self.entry.label, classes="run-title")
            yield Label("", classes="run-state")
        with Horizontal(classes="run-bar"):
            yield Label("timeline", classes="bar-label")
            yield ProgressBar(total=None, show_eta=False, classes="steps-bar")
        with Horizontal(classes="run-bar"):
            yield Label("probes", classes="bar-label")
            yield ProgressBar(total=None, show_eta=False, classes="probes-bar")
        yield Label("", classes="run-stats")
        yield Label("", classes="run-error")
        yield Label("", classes="run-note")

    def on_mount(self) -> None:
        """Fill the row from the entry."""
        self.show()

    def show(self) -> None:
        """Redraw from the entry (bars, counters, state class, error line)."""
        entry = self.entry
        progress = entry.progress
        self.query_one(".run-title", Label).update(entry.label)
        self.query_one(".run-state", Label).update(state_label(entry))
        for state in _STATES:
            self.set_class(entry.state == state, f"-{state}")
        steps = self.query_one(".steps-bar", ProgressBar)
        probes = self.query_one(".probes-bar", ProgressBar)
        if progress is not None:
            steps.update(total=max(progress.steps_total, 1) if progress.steps_total else 1,
                         progress=progress.steps_done if progress.steps_total else 1)
            probes.update(total=max(progress.probes_total, 1), progress=progress.probes_done)
        stats = progress_line(progress)
        if entry.active and entry.playing:  # each probe in flight with its repeat (issue 12)
            stats += " · now " + ", ".join(place_text(step, repeat) for step, repeat in entry.playing)
        elif entry.step and entry.active:
            stats += f" · now {place_text(entry.step, entry.repeat)}"
        self.query_one(".run-stats", Label).update(stats)
        self.query_one(".run-error", Label).update(entry.error or "")
        self.set_class(bool(entry.error), "-has-error")
        found = problems(progress) if progress is not None else []
        note = found[-1] if found and not entry.error else ""
        line = f"note: {note}" if note else ""
        if entry.paused and entry.state == "stopped":
            line = "paused; r resumes" + (f" · {line}" if line else "")
        self.query_one(".run-note", Label).update(line)
        self.set_class(bool(line), "-has-note")

    def action_open(self) -> None:
        """Ask for this run's session view."""
        self.post_message(self.Opened(self.entry.key))

    def on_click(self) -> None:
        """A click opens the session view too."""
        self.action_open()


def _dom_id(key: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in key)
