"""Filling a :class:`~textual.widgets.DataTable` with columns as wide as their widest cell.

Textual's DataTable sizes a column to its label when it is added and widens it on a later idle
pass once rows arrive; cells drawn before that pass stay cut in its render cache until something
redraws them. Giving every column its final width up front avoids that.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from textual.widgets import DataTable

__all__ = ["fill_table"]


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
        table.add_column(label, width=max(cell_len(text) for text in [label, *(row[i] for row in rows)]))
    for n, row in enumerate(rows):
        table.add_row(*row, key=None if keys is None else keys[n])
