"""``fill_table``: every column is as wide as its widest cell from the first frame."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.widgets import DataTable

from mempa_tui.tui.widgets.tables import fill_table


class _TableApp(App[None]):
    def compose(self) -> ComposeResult:
        yield DataTable()


async def test_columns_take_the_width_of_their_widest_cell_and_rows_keep_their_keys() -> None:
    app = _TableApp()
    async with app.run_test(size=(100, 20)):
        table = app.query_one(DataTable)
        fill_table(table, ["run", "status"], [["A-file-embedded-s0", "completed"], ["B", "stopped (step 3)"]],
                   keys=["A-file-embedded-s0", "B"])
        assert [c.width for c in table.columns.values()] == [len("A-file-embedded-s0"), len("stopped (step 3)")]
        assert table.get_row("B") == ["B", "stopped (step 3)"]
        fill_table(table, ["run", "status"], [])  # refilled: old rows gone, labels set the width
        assert table.row_count == 0
        assert [c.width for c in table.columns.values()] == [3, 6]
        with pytest.raises(ValueError, match="row 0 has 1 cells for 2 columns"):
            fill_table(table, ["run", "status"], [["only one"]])
        with pytest.raises(ValueError, match="1 row keys for 2 rows"):
            fill_table(table, ["run"], [["a"], ["b"]], keys=["a"])
