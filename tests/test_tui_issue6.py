"""Fresh-user findings of issue 6 (items 2, 3, 4 and 6): pilot tests against the app, offline.

Item 1 (the IX picker form built twice) is in ``test_tui_play_agent.py``; item 5 (a pause is not a
problem) in ``test_tui.py``'s pause test.
"""

from __future__ import annotations

import argparse
import io
from pathlib import Path

from test_tui_support import make_folders, settle
from textual.content import Content
from textual.widgets import DataTable, SelectionList, Static

from mempa_tui.cli._commands import cmd_runs
from mempa_tui.runner import RunConfig
from mempa_tui.runner.play import PlayRequest
from mempa_tui.store import RunRecord, RunStatus, RunStore
from mempa_tui.tui import MempaApp
from mempa_tui.tui.screens import DashboardScreen, LauncherScreen

PLAY_ID = "play-agent-R-final-work-verbosity-20260101T000000"
RUN_ID = "R-file-scripted-s0"


def _record(run_id: str, config_json: str) -> RunRecord:
    return RunRecord(id=run_id, user="R", profile="scripted", memory="file", seed=0, repeats=1,
                     config_json=config_json, config_hash="x", status=RunStatus.RUNNING, total_probes=1)


async def _store_running_runs(saves: Path) -> None:
    """A play and a runner's run, both left ``running`` (the process died before it could say)."""
    play = PlayRequest(user="R", step_id="R-final-work-verbosity", seat="agent", profile="scripted", memory="file")
    run = RunConfig(user="R", profile="scripted", memory="file", worlds_dir=Path("worlds"), repeats=1)
    async with RunStore(saves / "mempa.sqlite") as store:
        await store.create_run(_record(PLAY_ID, play.model_dump_json()))
        await store.create_run(_record(RUN_ID, run.model_dump_json()))


async def test_an_unfinished_play_reads_interrupted_with_its_own_hint(tmp_path: Path) -> None:
    folders = make_folders(tmp_path)
    folders.settings.saves_dir.mkdir(parents=True)
    await _store_running_runs(folders.settings.saves_dir)

    out = io.StringIO()
    assert await cmd_runs(argparse.Namespace(saves=str(folders.settings.saves_dir)), out) == 0
    hints = {line.split(": ", 1)[0]: line.split(": ", 1)[1] for line in out.getvalue().splitlines()
             if ": " in line}
    assert "mempa run" not in hints[PLAY_ID] and "r on it in the launcher's Saved runs" in hints[PLAY_ID]
    assert "rerun its `mempa run` command to resume" in hints[RUN_ID]

    app = MempaApp(folders.settings)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        launcher = app.screen
        assert isinstance(launcher, LauncherScreen)
        table = launcher.query_one("#saved-runs", DataTable)
        shown = {str(table.get_row_at(i)[0]): str(table.get_row_at(i)[1]) for i in range(table.row_count)}
        assert shown == {PLAY_ID: "interrupted", RUN_ID: "interrupted"}


async def test_the_pick_lists_have_a_highlighted_row_and_n_says_why_nothing_started(tmp_path: Path) -> None:
    folders = make_folders(tmp_path)
    folders.settings.models_dir.mkdir(parents=True)
    for name in ("first", "second"):  # two profiles, so none is ticked for the person
        (folders.settings.models_dir / f"{name}.yaml").write_text(f"name: {name}\n", encoding="utf-8")
    app = MempaApp(folders.settings)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        launcher = app.screen
        assert isinstance(launcher, LauncherScreen)
        for field in ("user", "memory", "profile"):
            assert launcher.query_one(f"#{field}", SelectionList).highlighted == 0, field
        launcher.query_one("#memory", SelectionList).deselect_all()  # none and file start ticked
        users: SelectionList[str] = launcher.query_one("#user", SelectionList)
        users.deselect_all()
        await pilot.pause()
        assert app.focused is users
        await pilot.press("space")  # the first space ticks the first user
        await pilot.pause()
        assert launcher.picked("user") == ["R"]
        await pilot.press("space")
        await pilot.pause()
        assert launcher.picked("user") == []

        await pilot.press("n")
        await settle(app, pilot)
        [said] = [n.message for n in app._notifications]
        assert said.startswith("nothing started: tick at least one user and one memory condition and one "
                               "model profile"), said
        assert app.current_mode == "launcher"


async def test_textual_notifications_keep_markup_and_ours_stay_plain(tmp_path: Path) -> None:
    app = MempaApp(make_folders(tmp_path).settings)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("ctrl+c")
        app.screen.notify("install with pip install -e \".[embedded]\"", title="ours")
        await pilot.pause()
        await pilot.pause()
        quit_note, ours = list(app._notifications)
        assert quit_note.message == "Press [b]ctrl+q[/b] to quit the app" and quit_note.markup  # shows bold ctrl+q
        assert Content.from_markup(quit_note.message).plain == "Press ctrl+q to quit the app"
        assert ours.title == "ours" and not ours.markup  # brackets in our text stay as written


async def test_the_empty_dashboard_points_to_the_saved_runs(tmp_path: Path) -> None:
    app = MempaApp(make_folders(tmp_path).settings)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("d")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)
        text = str(app.screen.query_one("#dash-empty", Static).render())
        assert "Saved runs" in text and "press r to resume" in text
