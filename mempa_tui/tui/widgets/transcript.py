"""The live transcript: a log-style widget that only appends (long runs stay responsive)."""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import RichLog

from mempa_tui.runner import StepEvent
from mempa_tui.tui.engine import StoredEvent
from mempa_tui.tui.render import event_lines, step_header

__all__ = ["TranscriptLog"]

MAX_LINES = 50_000
"""Lines kept on screen; older ones scroll away (the store keeps everything)."""


class TranscriptLog(RichLog):
    """Appends the lines of each episode event; a new step or probe repeat opens with a rule.

    Probe repeats play concurrently, so their events interleave: a place seen before is marked
    with a short ``↳ step rN`` line instead of a second rule.

    Events are appended as they arrive (:meth:`append`); the whole log is rebuilt only when the
    user switches runs or toggles :attr:`expanded` (:meth:`replay`).
    """

    expanded: reactive[bool] = reactive(False)
    """Show tool results in full instead of one collapsed line."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(max_lines=MAX_LINES, wrap=True, markup=False, auto_scroll=True, id=id)
        self._place: tuple[str, int] | None = None
        self._seen: set[tuple[str, int]] = set()
        self.lines_written = 0

    def append(self, item: StepEvent | StoredEvent) -> None:
        """Write one event's lines (and a step rule when the step or repeat changes)."""
        if isinstance(item, StoredEvent):
            self.write(f"  {item.kind}: {item.text[:200]}")
            self.lines_written += 1
            return
        place = (item.step_id, item.repeat)
        if place != self._place:
            self._place = place
            if place in self._seen:
                self.write(Text(f"↳ {place[0]}" + (f" r{place[1]}" if place[1] else ""), style="cyan"))
            else:
                self._seen.add(place)
                self.write(step_header(*place))
            self.lines_written += 1
        for line in event_lines(item, expanded=self.expanded):
            self.write(line)
            self.lines_written += 1

    def replay(self, items: Iterable[StepEvent | StoredEvent], *, dropped: int = 0) -> None:
        """Clear and write ``items`` again (run switch, expand toggle)."""
        self.clear()
        self._place = None
        self._seen.clear()
        self.lines_written = 0
        if dropped:
            self.write(f"… {dropped} earlier event(s) not kept in the app (see the run store)")
        for item in items:
            self.append(item)
