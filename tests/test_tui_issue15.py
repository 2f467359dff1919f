"""Issue 15 point 7: the app says why its pickers are empty, opens or closes thousands of calls
at once without freezing, does not call a run that another process plays "stopped", and leaves
no coroutine never awaited when it quits right after a start.

Pilot tests against the app, offline; no timing is measured (what is checked is the work done).
"""

from __future__ import annotations

import gc
import warnings
from pathlib import Path

import pytest
from filelock import FileLock
from test_tui_issue6 import RUN_ID, _store_running_runs
from test_tui_support import make_folders, settle, until
from textual.app import App, ComposeResult
from textual.widgets import DataTable, Label, SelectionList

from mempa_tui.ix.types import CallStatus, ExecutedCall
from mempa_tui.runner import StepEvent, lease_path
from mempa_tui.runner._episode_events import PAReplyEvent, ToolCallEvent
from mempa_tui.tui import MempaApp, RunRequest
from mempa_tui.tui.screens import DashboardScreen, LauncherScreen, SessionScreen
from mempa_tui.tui.widgets.transcript_view import TranscriptView


async def test_started_where_worlds_is_missing_the_launcher_says_why(tmp_path: Path) -> None:
    folders = make_folders(tmp_path, worlds=tmp_path / "nowhere")
    app = MempaApp(folders.settings)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        launcher = app.screen
        assert isinstance(launcher, LauncherScreen)
        assert launcher.query_one("#user", SelectionList).option_count == 0
        note = str(launcher.query_one("#choices-note", Label).render())
        assert f"the worlds folder {(tmp_path / 'nowhere').resolve()} does not exist" in note
        assert "--worlds" in note and "no model profiles" in note
        assert launcher.query_one("#choices-note", Label).display
        said = [n.message for n in app._notifications]
        assert any("does not exist" in m for m in said)
        launcher.fill_choices()  # a refresh does not say it again
        await pilot.pause()
        assert len([n for n in app._notifications if "does not exist" in n.message]) == 1


async def test_the_note_stays_hidden_when_every_picker_has_choices(tmp_path: Path) -> None:
    folders = make_folders(tmp_path)
    folders.settings.models_dir.mkdir(parents=True)
    (folders.settings.models_dir / "p.yaml").write_text("name: p\n", encoding="utf-8")
    app = MempaApp(folders.settings)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        label = app.screen.query_one("#choices-note", Label)
        assert str(label.render()) == "" and not label.has_class("-shown")


class _OneLog(App[None]):
    def compose(self) -> ComposeResult:
        yield TranscriptView(id="log")


def _calls(n: int) -> list[StepEvent]:
    out: list[StepEvent] = []
    for i in range(n):
        call = ExecutedCall(
            call_id=f"c{i}", tool="document_read", arguments={"document_id": f"doc_{i:04d}"},
            status=CallStatus.EXECUTED, result=f"result {i}: " + "word " * 40 + f"\nsecond row of {i}",
        )
        out.append(StepEvent(run_id="r", step_id="A-s1", repeat=0, event=ToolCallEvent(turn_index=i, call=call)))
        if i % 10 == 0:
            out.append(StepEvent(run_id="r", step_id="A-s1", repeat=0,
                                 event=PAReplyEvent(turn_index=i, text="Here is what I found. " * 8)))
    return out


async def test_opening_all_of_4500_calls_lays_out_nothing_through_the_console(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = _OneLog()
    async with app.run_test(size=(120, 40)) as pilot:
        log = app.query_one(TranscriptView)
        log.replay(_calls(4500))
        await pilot.pause()
        closed = log.shown_text()
        laid_out: list[object] = []
        real = TranscriptView._strips

        def counting(self: TranscriptView, renderable: object) -> object:
            laid_out.append(renderable)
            return real(self, renderable)  # type: ignore[arg-type]

        monkeypatch.setattr(TranscriptView, "_strips", counting)
        log.expanded = True
        await pilot.pause()
        # every call open, its result in the lines, and not one part laid out again
        assert laid_out == []
        assert all(not f.collapsed for f in log.calls)
        shown = log.shown_text()
        assert "▼ ⚙ tool document_read" in shown and "second row of 4499" in shown
        assert "▶" not in shown
        # the long first row is cut to the width, its continuation indented like it
        width = log._width  # the width the lines were laid out at
        first = log.calls[0]
        rows = shown.splitlines()[first.start:first.start + first.length]
        assert len(rows) > 3 and all(len(r) <= width for r in rows) and rows[2].startswith("      ")
        # the lines in sight are real strips, with the selected title highlighted
        log.action_select_call(1)
        assert log.render_line(0) is not None
        log.expanded = False
        await pilot.pause()
        assert laid_out == [] and log.shown_text() == closed


async def test_a_stored_run_another_process_plays_is_not_shown_stopped(tmp_path: Path) -> None:
    folders = make_folders(tmp_path)
    folders.settings.saves_dir.mkdir(parents=True)
    await _store_running_runs(folders.settings.saves_dir)
    database = folders.settings.saves_dir / "mempa.sqlite"
    held = FileLock(lease_path(database, RUN_ID), timeout=0, thread_local=False)
    with held:  # stands in for a `mempa run` of the same run in another process
        app = MempaApp(folders.settings)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(app, pilot)
            launcher = app.screen
            assert isinstance(launcher, LauncherScreen)
            rows = [s.run.id for s in launcher.saved]
            table = launcher.query_one("#saved-runs", DataTable)
            assert str(table.get_row_at(rows.index(RUN_ID))[1]) == "running"
            table.focus()
            table.move_cursor(row=rows.index(RUN_ID))
            await pilot.press("v")
            await until(pilot, lambda: isinstance(app.screen, SessionScreen))
            await settle(app, pilot)
            entry = app.book.get(RUN_ID)
            assert entry is not None and entry.state == "elsewhere" and not entry.active
            label = str(app.screen.query_one("#run-label", Label).render())
            assert "playing in another process" in label and "stopped" not in label


async def test_quitting_right_after_a_start_leaves_no_coroutine_never_awaited(tmp_path: Path) -> None:
    """A run's worker cancelled before it runs (Ctrl-C, quit or cancel right after a start) was
    handed a coroutine object, and Python warned it was never awaited."""
    folders = make_folders(tmp_path)
    app = MempaApp(folders.settings)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with app.run_test(size=(120, 40)):
            await app.switch_mode("dashboard")
            dashboard = app.screen
            assert isinstance(dashboard, DashboardScreen)
            entry = dashboard.start_run(RunRequest(user="R", memory="file", profile="scripted", repeats=1))
            assert entry is not None
            dashboard.cancel_run(entry)  # before its worker ran: what quitting at once does too
        del app, dashboard, entry
        gc.collect()
    assert [str(w.message) for w in caught if "never awaited" in str(w.message)] == []


async def test_the_dashboard_is_set_up_on_first_use_from_another_mode(tmp_path: Path) -> None:
    app = MempaApp(make_folders(tmp_path).settings)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        dashboard = await app.dashboard()  # never shown yet: Textual 8 raised KeyError here
        assert isinstance(dashboard, DashboardScreen) and app.current_mode == "launcher"
