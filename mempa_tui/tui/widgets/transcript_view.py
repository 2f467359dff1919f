"""The session view's transcript: every tool call with its result folds open and shut on its own.

A line-based scroll view (like Textual's ``RichLog``, it renders only the lines in sight), so a
transcript of hundreds of turns stays responsive: appending renders just the new event's lines,
and opening or closing one call re-renders that call only and splices its lines in place. Every
part keeps its rendered lines per width, so opening or closing all calls only puts cached lines
together again (results are laid out directly, without the console).

A call is shown as one title line (``▶ ⚙ tool name(arguments) [status]``); open (``▼``) it also
shows its full result. ``j``/``k`` select the next or previous call (highlighted and scrolled
into view), ``enter`` or a click on its title toggles it; :attr:`TranscriptView.expanded` opens
or closes them all.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import ClassVar, NamedTuple

from rich.cells import cell_len, chop_cells
from rich.control import strip_control_codes
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from mempa_tui.ix.types import ExecutedCall
from mempa_tui.runner import StepEvent
from mempa_tui.runner._episode_events import ConsentEvent, ToolCallEvent
from mempa_tui.tui.engine import StoredEvent
from mempa_tui.tui.render import call_title, event_lines, step_header

__all__ = ["CallFold", "TranscriptView"]

_SELECTED = Style(reverse=True)


_INDENT = "      "
_BODY_STYLES = {False: Style(dim=True), True: Style(color="red")}


class _Row(NamedTuple):
    """One line of a call's result, laid out but not yet made into a :class:`Strip`.

    Opening every call of a long session lays out thousands of results at once; the view only
    counts and cuts their lines then, and makes a strip when a line comes into sight.
    """

    text: str
    error: bool

    def strip(self, width: int) -> Strip:
        """The line as a strip ``width`` cells wide."""
        used = cell_len(self.text)
        return Strip([Segment(self.text + " " * max(0, width - used), _BODY_STYLES[self.error])], max(width, used))


def _result_rows(result: str, width: int, error: bool) -> list[_Row]:
    """A call's result as indented lines cut at ``width`` cells, without Rich's layout engine
    (issue 15.7: the console took seconds for thousands of results). Long rows are cut by cells
    and their continuations indented like the first line."""
    body = max(1, width - len(_INDENT))
    rows: list[_Row] = []
    for row in (result or "(no result)").splitlines() or [""]:
        row = strip_control_codes(row.expandtabs(4))
        if row.isascii():  # one cell per character: cut by slicing
            chunks = [row[i:i + body] for i in range(0, len(row), body)] or [""]
        else:
            chunks = chop_cells(row, body) if cell_len(row) > body else [row]
        for chunk in chunks:
            rows.append(_Row(_INDENT + chunk, error))
    return rows


class _OpenTitle(NamedTuple):
    """An open call's first title line: the closed one with its marker swapped, made when it
    comes into sight (like :class:`_Row`)."""

    closed: Strip

    @property
    def text(self) -> str:
        """The line's plain text."""
        return self.closed.text.replace("▶", "▼", 1)

    def strip(self, width: int) -> Strip:
        """The line as a strip (``width`` is the closed line's, already)."""
        return _swap_marker(self.closed)


def _swap_marker(strip: Strip) -> Strip:
    """The closed title's first line with its ``▶`` marker turned into ``▼`` (same cell width)."""
    segments, done = [], False
    for segment in strip:
        if not done and "▶" in segment.text:
            segment = Segment(segment.text.replace("▶", "▼", 1), segment.style, segment.control)
            done = True
        segments.append(segment)
    return Strip(segments, strip.cell_length)


@dataclass
class CallFold:
    """One tool call in the transcript and where its lines are.

    Attributes:
        call: the call as the IX wrapper settled it.
        prefix: ``tool``, or ``released`` for a call run after the user's consent.
        collapsed: only the title line is shown.
        start: index of its title line among the view's lines (-1 until rendered).
        length: how many lines it takes now.
    """

    call: ExecutedCall
    prefix: str
    collapsed: bool = True
    start: int = -1
    length: int = 0
    cache: dict[tuple[int, str], list[Strip | _Row | _OpenTitle]] = field(default_factory=dict, repr=False)
    """Rendered lines by (width, ``open``/``closed``/``body``), so folding re-renders nothing."""

    def renderable(self) -> Text:
        """The title line, and when open the full result below it."""
        out = call_title(self.call, prefix=self.prefix, lead="  ▶ " if self.collapsed else "  ▼ ")
        if not self.collapsed:
            result = self.call.result or "(no result)"
            style = "red" if self.call.error else "dim"
            for row in result.splitlines() or [""]:
                out.append("\n      " + row, style=style)
        return out


class TranscriptView(ScrollView, can_focus=True):
    """Appends the lines of each episode event; a new step or probe repeat opens with a rule.

    Probe repeats play concurrently, so their events interleave: a place seen before is marked
    with a short ``↳ step rN`` line instead of a second rule.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "select_call(1)", "Next call", id="transcript.next_call",
                tooltip="Select the next tool call of the transcript"),
        Binding("k", "select_call(-1)", "Prev call", id="transcript.prev_call",
                tooltip="Select the previous tool call of the transcript"),
        Binding("enter", "toggle_call", "Open/close call", id="transcript.toggle_call",
                tooltip="Show or hide the selected tool call's result"),
    ]

    DEFAULT_CSS = """
    TranscriptView { height: 1fr; overflow-x: hidden; }
    """

    expanded: reactive[bool] = reactive(False, init=False)
    """Every tool call open (True) or closed (False); each one also toggles on its own."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._parts: list[Text | CallFold] = []
        self._text_cache: dict[int, tuple[int, list[Strip]]] = {}
        self._lines: list[Strip | _Row | _OpenTitle] = []
        self._folds: list[CallFold] = []
        self._width = 0
        self._place: tuple[str, int] | None = None
        self._seen: set[tuple[str, int]] = set()
        self.selected: int | None = None
        """Index of the selected call in :attr:`calls` (None: none selected)."""
        self.lines_written = 0
        """Text lines and tool calls written since the last :meth:`replay`."""

    # ---- rendering ------------------------------------------------------------------------

    def _strips(self, renderable: Text) -> list[Strip]:
        console = self.app.console
        options = console.options.update_width(self._width)
        lines = list(Segment.split_lines(console.render(renderable, options)))
        strips = Strip.from_lines(lines) if lines else [Strip.blank(self._width)]
        for strip in strips:
            strip.adjust_cell_length(self._width)
        return strips

    def _fold_strips(self, fold: CallFold) -> list[Strip | _Row | _OpenTitle]:
        """A call's lines at the current width, from its cache where it has them."""
        width = self._width
        state = "closed" if fold.collapsed else "open"
        title = fold.cache.get((width, state))
        if title is None:
            closed = fold.cache.get((width, "closed"))
            if closed is None:
                closed = fold.cache[(width, "closed")] = self._strips(
                    call_title(fold.call, prefix=fold.prefix, lead="  ▶ ")
                )
            # the open title differs by its marker only: swap the glyph, lay out nothing again
            first = closed[0]
            assert isinstance(first, Strip)
            title = closed if fold.collapsed else [_OpenTitle(first), *closed[1:]]
            fold.cache[(width, state)] = title
        if fold.collapsed:
            return title
        body = fold.cache.get((width, "body"))
        if body is None:
            body = fold.cache[(width, "body")] = list(_result_rows(fold.call.result, width, fold.call.error))
        return title + body

    def _text_strips(self, index: int, part: Text) -> list[Strip]:
        cached = self._text_cache.get(index)
        if cached is None or cached[0] != self._width:
            cached = self._text_cache[index] = (self._width, self._strips(part))
        return cached[1]

    def _render_part(self, part: Text | CallFold, index: int) -> None:
        if isinstance(part, CallFold):
            strips = self._fold_strips(part)
            part.start, part.length = len(self._lines), len(strips)
        else:
            strips = self._text_strips(index, part)
        self._lines.extend(strips)

    def _render_all(self) -> None:
        self._lines = []
        for index, part in enumerate(self._parts):
            self._render_part(part, index)
        self._sized()

    def _sized(self) -> None:
        self.virtual_size = Size(self._width, len(self._lines))
        self.refresh()

    def on_resize(self, event: events.Resize) -> None:
        """The first size (and any new width) re-wraps every line."""
        width = self.scrollable_content_region.width
        if width and width != self._width:
            at_end = self.scroll_y >= self.max_scroll_y - 1
            self._width = width
            self._render_all()
            if at_end:
                self.scroll_end(animate=False, immediate=False)

    def render_line(self, y: int) -> Strip:
        """One line in sight (the selected call's title reversed)."""
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        if index >= len(self._lines):
            return Strip.blank(width, self.rich_style)
        line = self._lines[index]
        if not isinstance(line, Strip):  # made into a strip when it first comes into sight
            line = self._lines[index] = line.strip(self._width)
        strip = line.crop_extend(scroll_x, scroll_x + width, self.rich_style)
        if self.selected is not None and self._folds[self.selected].start == index:
            strip = strip.apply_style(_SELECTED)
        return strip.apply_style(self.rich_style)

    # ---- writing --------------------------------------------------------------------------

    def _add_part(self, part: Text | CallFold) -> None:
        self._parts.append(part)
        if isinstance(part, CallFold):
            self._folds.append(part)
        self.lines_written += 1
        if self._width:
            self._render_part(part, len(self._parts) - 1)

    def write(self, line: str | Text) -> None:
        """Write one free line (a note such as the stored transcript's heading)."""
        self._add_part(line if isinstance(line, Text) else Text(line))
        self._after_write()

    def _add(self, item: StepEvent | StoredEvent) -> None:
        if isinstance(item, StoredEvent):
            self._add_part(Text(f"  {item.kind}: {item.text[:200]}", style="dim"))
            return
        place = (item.step_id, item.repeat)
        if place != self._place:
            self._place = place
            if place in self._seen:
                self._add_part(Text(f"↳ {place[0]}" + (f" r{place[1]}" if place[1] else ""), style="cyan"))
            else:
                self._seen.add(place)
                self._add_part(step_header(*place))
        event = item.event
        if isinstance(event, ToolCallEvent):
            self._add_part(CallFold(event.call, "tool", collapsed=not self.expanded))
        elif isinstance(event, ConsentEvent):
            plain = event.model_copy(update={"executed": []})
            for line in event_lines(StepEvent(run_id=item.run_id, step_id=item.step_id, repeat=item.repeat,
                                              event=plain)):
                self._add_part(line)
            for call in event.executed:
                self._add_part(CallFold(call, "released", collapsed=not self.expanded))
        else:
            for line in event_lines(item):
                self._add_part(line)

    def append(self, item: StepEvent | StoredEvent) -> None:
        """Write one event (a step rule first when the step or repeat changes)."""
        self._add(item)
        self._after_write()

    def _after_write(self) -> None:
        if not self._width:
            return
        follow = self.scroll_y >= self.max_scroll_y - 1
        self._sized()
        if follow:
            self.scroll_end(animate=False, immediate=False, x_axis=False)

    def replay(self, items: Iterable[StepEvent | StoredEvent], *, dropped: int = 0) -> None:
        """Clear and write ``items`` again (run switch)."""
        self._parts, self._folds, self._lines = [], [], []
        self._text_cache = {}
        self._place, self.selected = None, None
        self._seen.clear()
        self.lines_written = 0
        if dropped:
            self._parts.append(Text(f"… {dropped} earlier event(s) not kept in the app (see the run store)"))
        for item in items:
            self._add(item)
        if self._width:
            self._render_all()
            self.scroll_end(animate=False, immediate=False, x_axis=False)

    # ---- folding --------------------------------------------------------------------------

    @property
    def calls(self) -> list[CallFold]:
        """The tool calls, in order."""
        return list(self._folds)

    def set_collapsed(self, index: int, collapsed: bool) -> None:
        """Open or close call ``index`` (re-renders that call only)."""
        fold = self._folds[index]
        if fold.collapsed == collapsed:
            return
        fold.collapsed = collapsed
        if not self._width or fold.start < 0:
            return
        strips = self._fold_strips(fold)
        delta = len(strips) - fold.length
        self._lines[fold.start:fold.start + fold.length] = strips
        fold.length = len(strips)
        if delta:
            for later in self._folds[index + 1:]:
                later.start += delta
        self._sized()

    def toggle(self, index: int) -> None:
        """Open a closed call or close an open one."""
        self.set_collapsed(index, not self._folds[index].collapsed)

    def watch_expanded(self, expanded: bool) -> None:
        """Open or close every tool call: the lines are put together again from each part's
        cached lines, and only calls never opened at this width are laid out (directly, not
        through the console), so thousands of calls fold in well under a second."""
        for fold in self._folds:
            fold.collapsed = not expanded
        if self._width:
            self._render_all()

    def action_select_call(self, step: int) -> None:
        """Select the next (``1``) or previous (``-1``) call and bring it into view."""
        if not self._folds:
            return
        if self.selected is None:
            top = self.scroll_y
            starts = [f.start for f in self._folds]
            self.selected = min(bisect.bisect_left(starts, top), len(self._folds) - 1) if step > 0 else \
                max(bisect.bisect_right(starts, top + self.size.height) - 1, 0)
        else:
            self.selected = max(0, min(len(self._folds) - 1, self.selected + step))
        fold = self._folds[self.selected]
        if not self.scroll_y <= fold.start < self.scroll_y + self.size.height:
            self.scroll_to(y=max(0, fold.start - self.size.height // 3), animate=False)
        self.refresh()

    def action_toggle_call(self) -> None:
        """Toggle the selected call (the first one in sight when none is selected)."""
        if self.selected is None:
            self.action_select_call(1)
        if self.selected is not None:
            self.toggle(self.selected)

    def on_click(self, event: events.Click) -> None:
        """A click on a call's title line selects and toggles it."""
        index = self.scroll_y + event.y
        starts = [f.start for f in self._folds]
        at = bisect.bisect_right(starts, index) - 1
        if at >= 0 and self._folds[at].start == index:
            self.selected = at
            self.toggle(at)

    # ---- reading --------------------------------------------------------------------------

    def plain_text(self) -> str:
        """Everything written, as plain text (calls with their full results)."""
        parts: list[str] = []
        for part in self._parts:
            if isinstance(part, CallFold):
                parts.append(call_title(part.call, prefix=part.prefix).plain)
                parts.append(part.call.result)
            else:
                parts.append(part.plain)
        return "\n".join(parts)

    def shown_text(self) -> str:
        """The rendered lines, as plain text (what scrolling shows, folds as they are)."""
        return "\n".join(line.text for line in self._lines)
