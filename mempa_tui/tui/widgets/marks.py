"""Pick lists and check boxes whose ticked state shows as a mark, not only as a colour (issue 16.6).

Textual draws every box with the same ``X`` and tells ticked from unticked by colour alone, which a
monochrome terminal, a colour-blind reader or a screenshot loses. These subclasses draw
:data:`TICKED` in a ticked box and :data:`UNTICKED` in an empty one; everything else (keys,
messages, values) is Textual's.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from rich.segment import Segment
from textual.strip import Strip
from textual.widgets import Checkbox, SelectionList
from textual.widgets._toggle_button import ToggleButton

__all__ = ["TICKED", "UNTICKED", "MarkedCheckbox", "MarkedSelectionList"]

TICKED = "✓"
"""The mark inside a ticked box."""
UNTICKED = " "
"""What an unticked box holds (empty)."""

V = TypeVar("V")


class MarkedSelectionList(SelectionList[V], Generic[V]):
    """A :class:`~textual.widgets.SelectionList` drawing ``✓`` in selected rows' boxes, a blank
    in the others."""

    def render_line(self, y: int) -> Strip:
        """Textual's line with the box's inner cell replaced by the row's mark."""
        line = super().render_line(y)
        _, scroll_y = self.scroll_offset
        try:
            selection = self.get_option_at_index(scroll_y + y)
        except Exception:  # noqa: BLE001 - past the last option: Textual's line as it is
            return line
        segments = list(line)
        if len(segments) < 2 or segments[1].text != ToggleButton.BUTTON_INNER:
            return line  # not a row with a box (Textual's layout changed): leave it alone
        mark = TICKED if selection.value in self._selected else UNTICKED
        segments[1] = Segment(mark, segments[1].style, segments[1].control)
        return Strip(segments, line.cell_length)


class MarkedCheckbox(Checkbox):
    """A :class:`~textual.widgets.Checkbox` drawing ``✓`` when ticked and a blank when not."""

    @property  # type: ignore[override]
    def BUTTON_INNER(self) -> str:  # noqa: N802 - Textual's name for the inner cell
        """The mark for the current value."""
        return TICKED if self.value else UNTICKED
