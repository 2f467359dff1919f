"""The session view's side panel: what the memory holds, and the evidence of the latest turn."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Label, Static

from mempa_tui.tui.book import RunEntry
from mempa_tui.tui.render import evidence_renderable, memory_renderable

__all__ = ["MemoryPanel"]


class MemoryPanel(VerticalScroll):
    """Two sections: evidence handed to the PA this turn (with scores) and the memory's contents."""

    def compose(self) -> ComposeResult:
        """Section titles and bodies."""
        yield Label("Evidence this turn", classes="panel-title")
        yield Static(id="evidence-body", classes="panel-body")
        yield Label("Memory contents", classes="panel-title")
        yield Static(id="memory-body", classes="panel-body")

    def show_evidence(self, entry: RunEntry | None) -> None:
        """Redraw the evidence section from the entry's latest evidence."""
        self.query_one("#evidence-body", Static).update(evidence_renderable(entry.evidence if entry else None))

    def show_memory(self, entry: RunEntry | None) -> None:
        """Redraw the memory section from the entry's latest inspection."""
        body = memory_renderable(entry.memory if entry else None, entry.memory_origin if entry else "",
                                 entry.thresholds if entry else "")
        self.query_one("#memory-body", Static).update(body)
        self.set_class(bool(entry and entry.memory and entry.memory.stored), "-has-memory")

    def show(self, entry: RunEntry | None) -> None:
        """Redraw both sections."""
        self.show_evidence(entry)
        self.show_memory(entry)
