"""The ``?`` help overlay: every key active on the screen below, with its action id and tooltip."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel
from textual.app import ComposeResult
from textual.binding import ActiveBinding, Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label

from mempa_tui.tui.widgets.tables import fill_table

__all__ = ["HelpScreen", "KeyRow", "key_rows"]


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


class HelpScreen(ModalScreen[None]):
    """Lists the keys; any of escape, ``?`` or ``q`` closes it.

    Args:
        rows: the keys to list (see :func:`key_rows`).
    """

    CSS_PATH = "help.tcss"
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

    def on_mount(self) -> None:
        """Fill the table."""
        table = self.query_one("#help-keys", DataTable)
        fill_table(table, ("key", "action", "what it does", "id"),
                   [(row.key, row.description, row.tooltip, row.binding_id) for row in self.rows])
        table.focus()
