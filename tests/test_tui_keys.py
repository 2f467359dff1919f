"""Keyboard-complete app at 80x24 (issue 16.6): visible check marks, the launcher's Start button
and several Saved-runs columns at 80x24, dashboard ``x`` without a focused row, the PA seat's
type-to-filter tool palette, the IX setting picker on the Tab path, an empty reply refused.
Pilot tests; the launcher's snapshots at 80x24 and 160x48 are at the end."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from test_tui_results import seed
from test_tui_support import make_folders
from textual.pilot import Pilot
from textual.widgets import Button, DataTable, SelectionList

from mempa_tui.tui import MempaApp, RunnerOptions
from mempa_tui.tui.screens.launcher import LauncherScreen
from mempa_tui.tui.widgets.marks import TICKED, MarkedCheckbox


def _seeded_app(tmp_path: Path) -> MempaApp:
    folders = make_folders(tmp_path)
    folders.settings.saves_dir.mkdir(parents=True)
    asyncio.run(seed(folders.settings.saves_dir / "mempa.sqlite"))
    return MempaApp(folders.settings, options=RunnerOptions(resamples=50))


async def _saved_loaded(app: MempaApp, pilot: Pilot[None]) -> None:
    for _ in range(400):
        await pilot.pause()
        screen = app.screen
        if isinstance(screen, LauncherScreen) and screen.query_one("#saved-runs", DataTable).row_count:
            break
    await app.workers.wait_for_complete()
    for _ in range(3):
        await pilot.pause()


def test_launcher_at_80x24_shows_start_several_columns_and_check_marks(tmp_path: Path) -> None:
    app = _seeded_app(tmp_path)

    async def check() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await _saved_loaded(app, pilot)
            screen = app.screen
            assert isinstance(screen, LauncherScreen)
            start = screen.query_one("#start", Button)
            # the Start button lies wholly on screen, above the footer, without scrolling
            region = start.region
            assert region.height >= 1 and region.bottom <= 24 - 1, region
            # Saved runs shows more than the run column within its visible width
            table = screen.query_one("#saved-runs", DataTable)
            shown, width = 0, table.scrollable_content_region.width
            for column in table.ordered_columns:
                width -= column.get_render_width(table)
                if width < 0:
                    break
                shown += 1
            assert shown >= 2, [str(c.label) for c in table.ordered_columns]
            # ticked and unticked rows differ by a mark, not by colour alone
            users = screen.query_one("#user", SelectionList)
            users.select_all()
            await pilot.pause()
            memory = screen.query_one("#memory", SelectionList)
            memory.deselect_all()
            memory.select("file")
            await pilot.pause()
            lines = {str(memory.get_option_at_index(i).prompt): memory.render_line(i).text
                     for i in range(memory.option_count)}
            assert TICKED in lines["file"] and TICKED not in lines["none"], lines
            box = screen.query_one("#slice", MarkedCheckbox)
            assert box.value and TICKED in str(box.render())
            box.value = False
            await pilot.pause()
            assert TICKED not in str(box.render())

    asyncio.run(check())


def test_launcher_snapshot_80x24(snap_compare: Any, tmp_path: Path) -> None:
    app = _seeded_app(tmp_path)
    assert snap_compare(app, terminal_size=(80, 24), run_before=lambda pilot: _saved_loaded(app, pilot))


def test_launcher_snapshot_160x48(snap_compare: Any, tmp_path: Path) -> None:
    app = _seeded_app(tmp_path)
    assert snap_compare(app, terminal_size=(160, 48), run_before=lambda pilot: _saved_loaded(app, pilot))
