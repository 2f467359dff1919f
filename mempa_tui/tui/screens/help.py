"""The ``?`` help overlay: every key active on the screen below, with its action id and tooltip.

Wide terminals get a table (key, action, what it does, id); below :data:`NARROW_BELOW` columns
the same rows are listed one key per block, the explanation wrapped under its key, so nothing is
cut off at 80x24 (issue 16).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel
from textual.app import ComposeResult
from textual.binding import ActiveBinding, Binding, BindingType
from rich.text import Text
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label, Static

from mempa_tui.tui.widgets.tables import fill_table

__all__ = ["NARROW_BELOW", "HelpScreen", "KeyRow", "key_rows", "stacked_text"]

NARROW_BELOW = 120
"""Terminals narrower than this list the keys as stacked blocks instead of a table."""


class KeyRow(BaseModel):
    """One key as the help overlay lists it."""

    key: str
    """The key as displayed (``?``, ``ctrl+p``)."""
    description: str
    """What it does, in a few words."""
    tooltip: str = ""
    """A longer explanation."""
    binding_id: str = ""
    """The id to remap it with (``App.set_keymap({id: key})``)."""


def key_rows(bindings: dict[str, ActiveBinding]) -> list[KeyRow]:
    """The help rows of a screen's active bindings (hidden and unlabelled ones left out)."""
    rows: list[KeyRow] = []
    seen: set[tuple[str, str]] = set()
    for key, active in bindings.items():
        binding = active.binding
        if not binding.description:
            continue
        shown = binding.key_display or key
        if (shown, binding.description) in seen:
            continue
        seen.add((shown, binding.description))
        rows.append(KeyRow(key=shown, description=binding.description,
                           tooltip=active.tooltip or binding.tooltip, binding_id=binding.id or ""))
    return rows


def stacked_text(rows: list[KeyRow]) -> Text:
    """The rows as blocks for a narrow terminal: ``key  action`` in bold, then the explanation
    and the id (to remap it with) indented on the lines below; Textual wraps them to the width."""
    text = Text()
    for n, row in enumerate(rows):
        if n:
            text.append("\n")
        text.append(f"{row.key:<9}" if len(row.key) < 9 else f"{row.key}  ", style="bold")
        text.append(row.description, style="bold")
        if row.tooltip and row.tooltip != row.description:
            text.append(f"\n    {row.tooltip}")
        if row.binding_id:
            text.append(f"  [{row.binding_id}]", style="dim")
    return text


class HelpScreen(ModalScreen[None]):
    """Lists the keys; any of escape, ``?`` or ``q`` closes it.

    Args:
        rows: the keys to list (see :func:`key_rows`).
    """

    CSS_PATH = "help.tcss"
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]] | None] = [(0, "-narrow"), (NARROW_BELOW, "-wide")]
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q", "dismiss", "Close", id="help.close", tooltip="Close the key list"),
    ]

    def __init__(self, rows: list[KeyRow]) -> None:
        super().__init__()
        self.rows = rows

    def compose(self) -> ComposeResult:
        """A title and one table row per key."""
        with Vertical(id="help-box"):
            yield Label("Keys (ctrl+p opens the command palette)", id="help-title")
            yield DataTable(id="help-keys", cursor_type="row", zebra_stripes=True)
            with VerticalScroll(id="help-stacked"):
                yield Static(stacked_text(self.rows), id="help-list")

    def on_mount(self) -> None:
        """Fill the table; focus whichever view the width shows."""
        table = self.query_one("#help-keys", DataTable)
        fill_table(table, ("key", "action", "what it does", "id"),
                   [(row.key, row.description, row.tooltip, row.binding_id) for row in self.rows])
        self._focus_shown()

    def on_resize(self) -> None:
        """The width may have crossed the breakpoint: keep the focus on the view shown."""
        self._focus_shown()

    def _focus_shown(self) -> None:
        narrow = self.app.size.width < NARROW_BELOW
        self.query_one("#help-stacked" if narrow else "#help-keys").focus()
