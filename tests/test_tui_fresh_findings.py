"""A new user's TUI findings (fresh report, findings 11 and 12), at 80x24 with Textual's pilot:
a saves database of junk bytes is named on the launcher and in the run browser (and left as it
is); the launcher's probes column is never cut; the run browser opens with its runs list
focused; a BROKEN row's bar on the Results chart is marked."""

from __future__ import annotations

import hashlib
from pathlib import Path

from test_browse_support import MEM0AI_RUN, seed
from test_tui_support import make_folders, settle, until
from textual.widgets import DataTable, Label, Static

from mempa_tui.runner._results import Bar
from mempa_tui.tui import MempaApp
from mempa_tui.tui.screens.browser import BrowserScreen
from mempa_tui.tui.screens.launcher import LauncherScreen
from mempa_tui.tui.screens.results import ResultsScreen, bars_text

SIZE = (80, 24)


def _junk_saves(tmp_path: Path) -> tuple[MempaApp, Path, str]:
    folders = make_folders(tmp_path)
    folders.settings.saves_dir.mkdir(parents=True)
    db = folders.settings.saves_dir / "mempa.sqlite"
    db.write_bytes(bytes(range(256)) * 32)  # not SQLite's header: "file is not a database"
    return MempaApp(folders.settings), db, hashlib.md5(db.read_bytes()).hexdigest()


def _text(label: Label) -> str:
    return str(label.render())


async def test_junk_database_is_named_on_the_launcher_and_in_the_browser(tmp_path: Path) -> None:
    app, db, before = _junk_saves(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        launcher = app.screen
        assert isinstance(launcher, LauncherScreen)
        error = launcher.query_one("#saved-error", Label)
        await until(pilot, lambda: error.has_class("-shown"))
        # on screen, not only a toast (the pytest timeout catches a label never laid out)
        await until(pilot, lambda: error.region.height > 0 and error.region.width > 0)
        assert str(db) in _text(error) and "not a usable run database" in _text(error)

        await app.switch_mode("browser")
        browser = app.screen
        assert isinstance(browser, BrowserScreen)
        shown = browser.query_one("#runs-error", Label)
        await until(pilot, lambda: shown.has_class("-shown"))
        await until(pilot, lambda: shown.region.height > 0)
        assert str(db) in _text(shown) and "file is not a database" in _text(shown)
        assert browser.runs == []
    assert hashlib.md5(db.read_bytes()).hexdigest() == before  # nothing lost or rewritten


async def test_launcher_probes_column_whole_at_80x24(tmp_path: Path) -> None:
    folders = make_folders(tmp_path)
    folders.settings.saves_dir.mkdir(parents=True)
    await seed(folders.settings.saves_dir / "mempa.sqlite")
    app = MempaApp(folders.settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, LauncherScreen)
        await until(pilot, lambda: bool(screen.saved))
        await settle(app, pilot)
        table = screen.query_one("#saved-runs", DataTable)
        labels = [str(c.label) for c in table.ordered_columns]
        assert "probes" in labels and "status" in labels
        used = sum(c.get_render_width(table) for c in table.ordered_columns)
        assert used <= table.size.width, (labels, used, table.size.width)
        at = labels.index("probes")
        cells = [str(table.get_row_at(i)[at]) for i in range(table.row_count)]
        assert cells == [f"{s.probes_done}/{s.run.total_probes}" for s in screen.saved]
        ids = ["".join(str(table.get_row_at(i)[0]).split("\n")) for i in range(table.row_count)]
        assert ids == [s.run.id for s in screen.saved]  # a long id breaks into lines, whole


async def test_browser_opens_with_the_runs_list_focused(tmp_path: Path) -> None:
    folders = make_folders(tmp_path)
    folders.settings.saves_dir.mkdir(parents=True)
    await seed(folders.settings.saves_dir / "mempa.sqlite")
    app = MempaApp(folders.settings, initial_mode="browser")
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, BrowserScreen)
        await until(pilot, lambda: screen.runs is not None)
        await settle(app, pilot)
        assert app.focused is screen.query_one("#browser-runs")
        await pilot.press("enter")  # opens the run under the cursor, not the user filter
        await until(pilot, lambda: screen.listing is not None)


def test_broken_bar_is_hatched_and_labelled() -> None:
    bars = [Bar(label="File memory · m", value=100.0, fraction=1.0, text="100.0%"),
            Bar(label="No Memory · m", value=50.0, fraction=0.5, text="50.0%")]
    text = bars_text(bars, "PSA", width=10, broken=[True, False]).plain.splitlines()
    assert text[1].endswith("100.0%  BROKEN") and "▚" * 10 in text[1]
    assert "█" * 5 in text[2] and "BROKEN" not in text[2]
    assert "not the condition's score" in text[3]
    plain = bars_text(bars, "PSA", width=10).plain
    assert "BROKEN" not in plain and "▚" not in plain


async def test_results_chart_marks_the_broken_row(tmp_path: Path) -> None:
    folders = make_folders(tmp_path)
    folders.settings.saves_dir.mkdir(parents=True)
    await seed(folders.settings.saves_dir / "mempa.sqlite")
    app = MempaApp(folders.settings, initial_mode="results")
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, ResultsScreen)
        await until(pilot, lambda: bool(screen.rows))
        await settle(app, pilot)
        chart = str(screen.query_one("#chart", Static).render())
        health = screen.annotations.columns()["Health"]
        broken = [r.label for r in screen.rows if health(r).startswith("BROKEN")]
        assert broken, (MEM0AI_RUN, screen.annotations.health)
        lines = [ln for ln in chart.splitlines() if ln.endswith("BROKEN")]
        assert len(lines) == len(broken)
        assert "not the condition's score" in chart
