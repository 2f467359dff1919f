"""Keyboard-complete app at 80x24 (issue 16.6): visible check marks, the launcher's Start button
and several Saved-runs columns at 80x24, dashboard ``x`` without a focused row, the PA seat's
type-to-filter tool palette, the IX setting picker on the Tab path, an empty reply refused.
Pilot tests; the launcher's snapshots at 80x24 and 160x48 are at the end."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import threading
from pathlib import Path
from typing import Any

import anyio

from test_tui_results import seed
from test_tui_support import fixed_scorer, make_folders, run_responder, write_profile
from textual.pilot import Pilot
from textual.widgets import Button, DataTable, Input, Select, SelectionList

from mempa_tui.llm import ScriptedModelServer, ScriptedReply, ScriptedRequest
from mempa_tui.tui import MempaApp, RunnerOptions
from mempa_tui.tui.screens.dashboard import DashboardScreen
from mempa_tui.tui.screens.launcher import LauncherScreen
from mempa_tui.tui.screens.play_agent import PlayAgentScreen
from mempa_tui.tui.widgets.marks import TICKED, MarkedCheckbox

REPO = Path(__file__).resolve().parents[1]


def _seeded_app(tmp_path: Path) -> MempaApp:
    """The app over two stored runs (``test_tui_results.seed``), their times fixed for snapshots."""
    folders = make_folders(tmp_path)
    folders.settings.saves_dir.mkdir(parents=True)
    # a profile in the models folder, so the launcher shows no "missing folder" note naming tmp_path
    folders.settings.models_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "models" / "openai-example.yaml", folders.settings.models_dir / "openai-example.yaml")
    db = folders.settings.saves_dir / "mempa.sqlite"
    asyncio.run(seed(db))
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE runs SET created_at = ?, updated_at = ?",
                     ("2026-03-09T10:00:00+00:00", "2026-03-09T10:00:00+00:00"))
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
            # and every column it shows lies wholly on screen: the run id, its status and probes
            # stay, the columns that do not fit are left out, not cut (found by a fresh user)
            labels = [str(c.label) for c in table.ordered_columns]
            assert shown == len(labels) and labels[:2] == ["run", "status"] and "probes" in labels, labels
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
            box = screen.query_one("#quick", MarkedCheckbox)  # ticked by default (the README's quick start)
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


# ---- the PA seat: filter, IX picker on the Tab path, empty reply ---------------------------------

PROBE = "R-final-work-verbosity"


async def _open_pa_turn(app: MempaApp, pilot: Pilot[None]) -> PlayAgentScreen:
    await pilot.press("a")
    screen = app.screen
    assert isinstance(screen, PlayAgentScreen)
    await pilot.pause()
    screen.query_one("#play-user", Select).value = "R"
    await pilot.pause()
    screen.query_one("#play-step", Select).value = PROBE
    screen.query_one("#play-profile", Select).value = "scripted"
    await pilot.press("ctrl+r")
    for _ in range(600):
        await pilot.pause()
        if screen.view is not None:
            return screen
    raise AssertionError("no PA turn opened")


async def _settle(pilot: Pilot[None], rounds: int = 5) -> None:
    for _ in range(rounds):
        await pilot.pause()


async def test_pa_seat_palette_filters_tab_reaches_the_ix_picker_and_empty_reply_is_refused(tmp_path: Path) -> None:
    async with ScriptedModelServer(run_responder) as server:
        folders = make_folders(tmp_path)
        write_profile(server.profile(context_window=131072), folders.settings.models_dir)
        app = MempaApp(folders.settings, options=RunnerOptions(scorer=fixed_scorer, resamples=50))
        async with app.run_test(size=(80, 24)) as pilot:
            screen = await _open_pa_turn(app, pilot)
            pick = screen.query_one("#tool-pick", Select)
            labels = [str(prompt) for prompt, value in pick._options if isinstance(value, str)]
            assert labels and not any(label.startswith("mcp_state_") for label in labels), labels[:5]
            assert "Email · message_send" in labels and "Interaction · verbosity" in labels

            # the decision point's setting picker is laid out at once: Tab reaches it without ctrl+b
            setting = screen.query_one("#arg-setting", Select)
            assert pick.value == "IX_verbosity"
            await pilot.press("f2")
            for _ in range(12):
                await pilot.press("shift+tab")
                if app.focused is setting:
                    break
            assert app.focused is setting, app.focused

            # ctrl+s on an empty editor: refused with a message, the turn stays open
            await pilot.press("f2", "ctrl+s")
            await _settle(pilot)
            assert any("reply editor is empty" in n.message for n in app._notifications)
            assert screen.view is not None and screen.view.waiting

            # f3 puts the cursor in the filter box, so typed words filter instead of firing the
            # screen's one-letter keys; by domain and bare name; enter picks the first match
            await pilot.press("f3")
            assert app.focused is screen.query_one("#tool-filter", Input)
            await pilot.press(*"email send")
            assert app.screen is screen  # "a", "d", "s" ... were typed, not run as keys
            await _settle(pilot)
            kept = [str(prompt) for prompt, value in pick._options if isinstance(value, str)]
            assert kept == ["Email · message_send"], kept
            screen.query_one("#tool-filter", Input).value = "verbosity"
            await _settle(pilot)
            await pilot.press("enter")
            await _settle(pilot)
            assert pick.value == "IX_verbosity"
            setting = screen.query_one("#arg-setting", Select)
            assert app.focused is setting

            # the setting picker is on the Tab path: from the reply editor, shift+tab reaches it
            await pilot.press("f2")
            for _ in range(12):
                await pilot.press("shift+tab")
                if app.focused is setting:
                    break
            assert app.focused is setting, app.focused
            # and forwards from the palette's tool picker
            pick.focus()
            await pilot.pause()
            for _ in range(6):
                await pilot.press("tab")
                if app.focused is setting:
                    break
            assert app.focused is setting, app.focused
            await pilot.press("ctrl+g")
            await app.workers.wait_for_complete()


# ---- dashboard x ---------------------------------------------------------------------------------


async def test_dashboard_x_pauses_the_playing_run_with_no_row_focused(tmp_path: Path) -> None:
    """Two runs from the launcher (No Memory fails at once: no donor; File memory is held in step
    R-s2); with no row focused, x pauses the one still playing instead of asking for a focus."""
    reached, release = threading.Event(), threading.Event()

    def responder(request: ScriptedRequest) -> ScriptedReply | str:
        if request.model.endswith("-simulator") and any(
                "Task: Answer Dana about the venue" in (m.content or "") for m in request.messages):
            reached.set()
            release.wait(timeout=600)
        return run_responder(request)

    async with ScriptedModelServer(responder) as server:
        folders = make_folders(tmp_path)
        write_profile(server.profile(context_window=131072), folders.settings.models_dir)
        app = MempaApp(folders.settings, options=RunnerOptions(scorer=fixed_scorer, resamples=50))
        try:
            async with app.run_test(size=(80, 24)) as pilot:
                screen = app.screen
                for field, values in (("user", ["R"]), ("memory", ["file", "none"]), ("profile", ["scripted"])):
                    picks = screen.query_one(f"#{field}", SelectionList)
                    picks.deselect_all()
                    for value in values:
                        picks.select(value)
                await pilot.press("n")
                with anyio.fail_after(600):
                    while len(app.book) < 2 or app.book.get("R-none-scripted-s0") is None \
                            or app.book.get("R-none-scripted-s0").active:  # type: ignore[union-attr]
                        await pilot.pause()
                assert await anyio.to_thread.run_sync(reached.wait, 60)
                dashboard = app.screen
                assert isinstance(dashboard, DashboardScreen)
                dashboard.set_focus(None)
                await pilot.pause()
                await pilot.press("x")
                with anyio.fail_after(600):
                    while (entry := app.book.get("R-file-scripted-s0")) is not None and entry.active:
                        await pilot.pause()
                assert entry is not None and entry.state == "stopped" and entry.paused
                assert not any("focus a run first" in n.message for n in app._notifications)
        finally:
            release.set()


async def test_dashboard_c_refuses_a_finished_run_and_keeps_its_stored_status(tmp_path: Path) -> None:
    """Cancel on a run that is not playing is refused like pause ("is not running"); the stored
    ``completed`` is not rewritten to ``cancelled``."""
    from mempa_tui.store import RunStatus, RunStore
    from mempa_tui.tui.book import RunRequest

    folders = make_folders(tmp_path)
    folders.settings.saves_dir.mkdir(parents=True)
    db = folders.settings.saves_dir / "mempa.sqlite"
    await seed(db)
    app = MempaApp(folders.settings, options=RunnerOptions(resamples=50))
    async with app.run_test(size=(80, 24)) as pilot:
        entry = app.book.add(RunRequest(user="R", memory="file", profile="scripted", repeats=2))
        entry.state, entry.run_id = "completed", "R-file-scripted-s0"
        await app.switch_mode("dashboard")
        assert isinstance(app.screen, DashboardScreen)
        app.screen.set_focus(None)
        await pilot.press("c")
        await pilot.pause()
        await app.workers.wait_for_complete()
        assert entry.state == "completed"
        assert any("R-file-scripted-s0 is not running" in n.message for n in app._notifications)
    async with RunStore(db) as store:
        run = await store.get_run("R-file-scripted-s0")
        assert run is not None and run.status is RunStatus.COMPLETED


# ---- the palette's entries (no app) ------------------------------------------------------------


def test_palette_entries_name_domain_and_bare_name_and_filter_by_every_word() -> None:
    from mempa_tui.tools import default_registry
    from mempa_tui.tui.widgets.tool_palette import filter_palette, palette_entry

    names = [s.name for s in default_registry().specs()] + ["IX_verbosity", "memory_lookup"]
    assert palette_entry("mcp_state_email_message_send").label == "Email · message_send"
    assert palette_entry("mcp_state_document_read").label == "Documents · read"
    assert palette_entry("IX_verbosity").label == "Interaction · verbosity"
    assert palette_entry("memory_lookup").label == "Other · memory_lookup"
    assert [e.name for e in filter_palette(names, "email send")] == ["mcp_state_email_message_send"]
    # case-insensitive, in the domain or the name (club_closure_calendar_read is a map tool)
    assert {e.domain for e in filter_palette(names, "CALENDAR")} == {"Calendar", "Maps and places"}
    # "_" and spaces alike; the domain counts (Documents holds copier_entitlement_read too)
    assert [e.name for e in filter_palette(names, "document_read")] == [
        "mcp_state_copier_entitlement_read", "mcp_state_document_read"]
    assert filter_palette(names, "no such tool") == []
    assert len(filter_palette(names, "  ")) == len(names)


def test_launcher_tab_order_reaches_repeats_and_the_run_boxes_before_start_at_80x24(tmp_path: Path) -> None:
    """Tab walks the form in reading order and Start comes last, so Tab then Enter after the
    profiles cannot start runs with repeats never seen (a new user hit this at 80x24)."""
    app = _seeded_app(tmp_path)
    asyncio.run(_tab_order(app))


async def _tab_order(app: MempaApp) -> None:
    async with app.run_test(size=(80, 24)) as pilot:
        await _saved_loaded(app, pilot)
        app.screen.query_one("#profile").focus()
        await pilot.pause()
        order = []
        for _ in range(5):
            await pilot.press("tab")
            await pilot.pause()
            focused = app.focused
            assert focused is not None
            order.append(focused.id)
            form = app.screen.query_one("#form")
            if focused.id in ("repeats", "slice", "quick", "fresh"):  # scrolled into the form's view
                assert form.region.contains_region(focused.region), (focused.id, focused.region, form.region)
        assert order == ["repeats", "slice", "quick", "fresh", "start"]
