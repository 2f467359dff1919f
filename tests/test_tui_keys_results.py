"""The Results screen says what ``mempa results`` says (issue 16.4/16.6): each condition's paired
difference from No Memory with its 95 % interval, the floored count, every run's settings line and
the Health and Covers columns, with PRS on screen at 80x24 (the rest scrolls sideways). Data: ``test_tui_results.seed`` (File memory PSA 100 %, No Memory 50 %).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import anyio
from test_browse_support import seed as seed_with_health
from test_tui_results import seed
from test_tui_support import make_folders
from textual.pilot import Pilot
from textual.widgets import DataTable, Static
from textual.worker import WorkerState

from mempa_tui.tui import MempaApp, RunnerOptions
from mempa_tui.tui.screens.results import ResultsScreen


async def _loaded(app: MempaApp, pilot: Pilot[None]) -> None:
    """Wait until the results load has run and the tables are drawn, however busy the machine."""
    with anyio.fail_after(600):
        while True:
            await pilot.pause()
            live = [w for w in app.workers if w.group == "results"
                    and w.state in (WorkerState.PENDING, WorkerState.RUNNING)]
            for worker in live:
                if worker.state is WorkerState.RUNNING:
                    await worker.wait()
            screen = app.screen
            if (not live and isinstance(screen, ResultsScreen) and screen.rows and screen.differences
                    and screen.query_one("#results-table", DataTable).row_count
                    and screen.query_one("#diff-table", DataTable).row_count):
                break  # the scores and the differences from No Memory both filled
        # ... and painted: on a loaded machine a snapshot taken a few pauses after the rows were
        # added showed the difference table's rows blank (CI), so wait until each table's first
        # row renders its first cell's text.
        for selector in ("#results-table", "#diff-table"):
            table = app.screen.query_one(selector, DataTable)
            first = str(table.get_row_at(0)[0])
            # laid out too: a CI shot showed the difference table's rows filled but the table
            # not yet given its height on screen (the settings line drawn right under its title)
            while (first not in "".join(segment.text for segment in table.render_line(1))
                   or table.region.height < min(table.row_count + 1, 3)):
                await pilot.pause(0.05)
    for _ in range(3):
        await pilot.pause()


def _cells(table: DataTable[str]) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


async def test_results_screen_shows_differences_floored_and_settings_at_80x24(tmp_path: Path) -> None:
    folders = make_folders(tmp_path)
    folders.settings.saves_dir.mkdir(parents=True)
    await seed(folders.settings.saves_dir / "mempa.sqlite")
    app = MempaApp(folders.settings, options=RunnerOptions(resamples=50), initial_mode="results")
    async with app.run_test(size=(80, 24)) as pilot:
        await _loaded(app, pilot)
        screen = app.screen
        assert isinstance(screen, ResultsScreen)
        table = screen.query_one("#results-table", DataTable)
        labels = [str(c.label) for c in table.ordered_columns]
        assert labels[:6] == ["Memory", "PSA", "CS", "PET", "BRS", "PRS"] and "floored" in labels
        # PRS ends inside the table's visible width: never cut off at 80 columns
        prs_end = sum(c.get_render_width(table) for c in table.ordered_columns[:6])
        assert prs_end <= table.scrollable_content_region.width, (prs_end, table.size)
        rows = {r[0]: r for r in _cells(table)}
        assert rows["File memory"][1] == "100.0±0.0" and rows["No Memory"][5] == "3.00±0.00"
        assert rows["No Memory"][labels.index("floored")] == "0"

        diffs = _cells(screen.query_one("#diff-table", DataTable))
        psa = next(r for r in diffs if r[0] == "File memory" and r[1] == "PSA")
        assert psa[2] == "+50.0" and psa[3].startswith("[") and psa[3].endswith("] n=2×2")
        assert {r[1] for r in diffs} >= {"PSA", "CS", "PET"}
        assert "Difference from No Memory" in str(screen.query_one("#diff-title", Static).render())

        settings = str(screen.query_one("#results-settings", Static).render())
        assert "R-file-scripted-s0:" in settings and "R-none-scripted-s0:" in settings
        assert "File memory consolidates" in settings or "thresholds not recorded" in settings
        assert "decoding:" in settings


def _snapshot(snap_compare: Any, tmp_path: Path, size: tuple[int, int], *, broken: bool = False) -> bool:
    folders = make_folders(tmp_path)
    folders.settings.saves_dir.mkdir(parents=True)
    asyncio.run((seed_with_health if broken else seed)(folders.settings.saves_dir / "mempa.sqlite"))
    app = MempaApp(folders.settings, options=RunnerOptions(resamples=50), initial_mode="results")

    async def loaded(pilot: Pilot[None]) -> None:
        await _loaded(app, pilot)

    return bool(snap_compare(app, terminal_size=size, run_before=loaded))


def test_results_snapshot_80x24(snap_compare: Any, tmp_path: Path) -> None:
    assert _snapshot(snap_compare, tmp_path, (80, 24))


def test_results_snapshot_160x48(snap_compare: Any, tmp_path: Path) -> None:
    assert _snapshot(snap_compare, tmp_path, (160, 48))


def test_results_snapshot_broken_memory_160x48(snap_compare: Any, tmp_path: Path) -> None:
    """``test_browse_support.seed``: mem0's row reads BROKEN in Health, with the note under the table."""
    assert _snapshot(snap_compare, tmp_path, (160, 48), broken=True)


async def _chart_in_view(app: MempaApp, pilot: Pilot[None]) -> Static:
    """Load, then scroll the results body to its end, where the bar chart is."""
    await _loaded(app, pilot)
    chart = app.screen.query_one("#chart", Static)
    app.screen.query_one("#results-body").scroll_end(animate=False)
    for _ in range(3):
        await pilot.pause()
    return chart


async def test_each_chart_row_fits_on_one_line_at_80_columns(tmp_path: Path) -> None:
    """Fresh-user check: at 80x24 a bar row (label, a 40-cell bar, the value and ``BROKEN``) was
    wider than the chart and wrapped, ``BROKEN`` alone on the next line. The bar now narrows to fit."""
    folders = make_folders(tmp_path)
    folders.settings.saves_dir.mkdir(parents=True)
    await seed_with_health(folders.settings.saves_dir / "mempa.sqlite")
    app = MempaApp(folders.settings, options=RunnerOptions(resamples=50), initial_mode="results")
    async with app.run_test(size=(80, 24)) as pilot:
        chart = await _chart_in_view(app, pilot)
        lines = ["".join(s.text for s in chart.render_line(y)).rstrip() for y in range(chart.size.height)]
        rows = [ln for ln in lines if "█" in ln or "░" in ln or "▚" in ln]
        assert len(rows) == 3, lines  # File memory, Mem0, No Memory: one line each
        mem0 = next(ln for ln in rows if ln.startswith("Mem0"))
        assert mem0.endswith("0.0%  BROKEN"), lines  # on the bar's own line, not wrapped under it
        assert "BROKEN" not in [ln.strip() for ln in lines]
        assert all(len(ln) <= chart.content_region.width <= 80 for ln in lines)


def test_results_chart_snapshot_broken_memory_80x24(snap_compare: Any, tmp_path: Path) -> None:
    """The chart at 80x24 (scrolled into view): every bar row, ``BROKEN`` included, on one line."""
    folders = make_folders(tmp_path)
    folders.settings.saves_dir.mkdir(parents=True)
    asyncio.run(seed_with_health(folders.settings.saves_dir / "mempa.sqlite"))
    app = MempaApp(folders.settings, options=RunnerOptions(resamples=50), initial_mode="results")

    async def in_view(pilot: Pilot[None]) -> None:
        await _chart_in_view(app, pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=in_view)
