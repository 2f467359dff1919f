"""Filling a :class:`~textual.widgets.DataTable` with columns as wide as their widest cell.

Textual's DataTable sizes a column to its label when it is added and widens it on a later idle
pass once rows arrive; cells drawn before that pass stay cut in its render cache until something
redraws them. Giving every column its final width up front avoids that.

:class:`FitTable` also leaves optional columns out while the rows do not fit its width.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.cells import cell_len
from textual.widgets import DataTable

__all__ = ["FitTable", "break_cell", "fill_table", "fitting_columns"]


def break_cell(text: str, width: int, sep: str = "-") -> str:
    """``text`` broken into lines of at most ``width`` cells after a ``sep`` (``A-oracle-embedded-
    s0-quick`` at 20: ``"A-oracle-embedded-\\ns0-quick"``); a part longer than ``width`` is cut
    into ``width``-cell pieces, so no line is wider. ``width`` under 1: ``text`` unchanged."""
    if width < 1 or cell_len(text) <= width:
        return text
    parts = [p + sep for p in text.split(sep)]
    parts[-1] = parts[-1][: -len(sep)]
    lines: list[str] = []
    line = ""
    for part in parts:
        while len(part) > width:  # a part wider than a line: cut it
            if line:
                lines.append(line)
                line = ""
            lines.append(part[:width])
            part = part[width:]
        if cell_len(line + part) > width:
            lines.append(line)
            line = ""
        line += part
    if line:
        lines.append(line)
    return "\n".join(lines)


def fill_table(
    table: DataTable[str],
    columns: Sequence[str],
    rows: Sequence[Sequence[str]],
    keys: Sequence[str] | None = None,
) -> None:
    """Replace ``table``'s columns and rows; each column gets the width of its widest cell.

    Args:
        table: the table to fill (its cursor position is the caller's to restore).
        columns: the column labels.
        rows: one sequence of cell texts per row, each as long as ``columns``.
        keys: optional row keys, one per row.

    Raises:
        ValueError: a row's length differs from the number of columns, or ``keys`` from the rows.
    """
    if keys is not None and len(keys) != len(rows):
        raise ValueError(f"{len(keys)} row keys for {len(rows)} rows")
    for n, row in enumerate(rows):
        if len(row) != len(columns):
            raise ValueError(f"row {n} has {len(row)} cells for {len(columns)} columns")
    table.clear(columns=True)
    for i, label in enumerate(columns):
        table.add_column(label, width=max(_widest_line(text) for text in [label, *(row[i] for row in rows)]))
    for n, row in enumerate(rows):  # a cell broken into lines makes its row as tall
        height = max(text.count("\n") for text in row) + 1 if row else 1
        table.add_row(*row, key=None if keys is None else keys[n], height=height)


def _widest_line(text: str) -> int:
    return max(cell_len(line) for line in text.split("\n"))


def fitting_columns(
    columns: Sequence[str],
    rows: Sequence[Sequence[str]],
    width: int,
    drop: Sequence[str],
    padding: int = 1,
) -> list[int]:
    """Indexes of the columns to show so the rows fit ``width`` cells.

    The columns named in ``drop`` are left out one at a time, in that order, while the table is
    wider than ``width`` (each column takes its widest cell plus ``padding`` on either side); the
    other columns always stay, so a narrow terminal keeps what identifies a row and its key values
    and cuts only what a row's id or another column repeats.

    Args:
        columns: the column labels.
        rows: the cell texts, one sequence per row.
        width: the cells available; 0 or less: not laid out yet, every column is kept.
        drop: labels of columns that may be left out, the first to go first.
        padding: the table's cell padding (cells each side of a column).

    Returns:
        The kept columns' indexes, in their order.

    Raises:
        ValueError: ``drop`` names a label that is not a column.
    """
    unknown = [name for name in drop if name not in columns]
    if unknown:
        raise ValueError(f"columns to drop {unknown} are not among the columns {list(columns)}")
    widths = [max(cell_len(text) for text in [label, *(row[i] for row in rows)]) + 2 * padding
              for i, label in enumerate(columns)]
    kept = list(range(len(columns)))
    if width <= 0:
        return kept
    for name in drop:
        if sum(widths[i] for i in kept) <= width:
            break
        kept.remove(columns.index(name))
    return kept


class FitTable(DataTable[str]):
    """A row table that leaves optional columns out while its rows do not fit its width, and
    fills again when its width changes (issue 12: at 80x24 the saved-runs and browser tables
    cut off their last columns, the ones a reader looks for).

    Args:
        drop: labels of the columns that may be left out, the first to go first
            (:func:`fitting_columns`).
        wrap: label of a column whose cells break into lines after a ``-`` (:func:`break_cell`)
            when the rows still do not fit once every ``drop`` column is out, so the columns after
            it stay whole (at 80x24 the launcher's run ids take two lines; its progress is not cut).
        **kwargs: passed to :class:`~textual.widgets.DataTable`.
    """

    def __init__(self, *, drop: Sequence[str] = (), wrap: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.drop = tuple(drop)
        """Column labels that may be left out, first to go first."""
        self.wrap = wrap
        """Label of the column whose cells break into lines when the rows still do not fit."""
        self._columns: tuple[str, ...] = ()
        self._rows: list[list[str]] = []
        self._keys: list[str] | None = None
        self._fitted_width = -1

    def fill(self, columns: Sequence[str], rows: Sequence[Sequence[str]], keys: Sequence[str] | None = None) -> None:
        """Replace the columns and rows as :func:`fill_table` does, leaving out the optional
        columns that do not fit the current width (the cursor's row is the caller's to restore).

        Raises:
            ValueError: as :func:`fill_table` and :func:`fitting_columns` raise.
        """
        self._columns, self._rows = tuple(columns), [list(row) for row in rows]
        self._keys = None if keys is None else list(keys)
        self._refill()

    def _available(self) -> int:
        width = self.size.width
        if width > 0 and len(self._rows) + 1 > self.size.height:  # rows scroll: a vertical bar takes room
            width -= self.styles.scrollbar_size_vertical
        return width

    def _refill(self) -> None:
        width = self._available()
        kept = fitting_columns(self._columns, self._rows, width, self.drop, self.cell_padding)
        self._fitted_width = width
        columns = [self._columns[i] for i in kept]
        rows = [[row[i] for i in kept] for row in self._rows]
        if self.wrap in columns and width > 0 and rows:
            at = columns.index(self.wrap)
            pad = 2 * self.cell_padding
            widths = [max(cell_len(t) for t in [label, *(r[i] for r in rows)]) + pad for i, label in enumerate(columns)]
            room = width - (sum(widths) - widths[at]) - pad
            if sum(widths) > width and room >= cell_len(self.wrap):
                rows = [[break_cell(t, room) if i == at else t for i, t in enumerate(r)] for r in rows]
        fill_table(self, columns, rows, keys=self._keys)

    def on_resize(self) -> None:
        """Fit again to the new width (the cursor stays on its row)."""
        if self._columns and self._available() != self._fitted_width:
            row = self.cursor_row
            self._refill()
            if self._rows:
                self.move_cursor(row=min(max(row, 0), len(self._rows) - 1))
