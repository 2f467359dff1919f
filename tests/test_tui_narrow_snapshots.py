"""The ``?`` key list and the play seats' pickers at 80x24 and 160x48 (issue 16: readable at 80
columns, still good at 160). Fixed content: the launcher's keys over the runner's fixture worlds,
the play-as-user screen with user R and one step chosen. The stepper's pair is in
``test_tui_stepper.py``, the launcher's in ``test_tui_keys.py``. Update with
``--snapshot-update`` after an intended layout change, and read the new SVGs before committing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_tui_play_snapshots import _app, _choose
from textual.pilot import Pilot
from textual.widgets import Static

from mempa_tui.tui.screens.help import HelpScreen
from mempa_tui.tui.screens.play_user import PlayUserScreen
from mempa_tui.tui.widgets.play_setup import PlaySetup

SIZES = [(80, 24), (160, 48)]
IDS = ["80x24", "160x48"]


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_help_keys(snap_compare: Any, tmp_path: Path, size: tuple[int, int]) -> None:
    app = _app(tmp_path, "launcher")

    async def show(pilot: Pilot[None]) -> None:
        await app.workers.wait_for_complete()
        await pilot.press("question_mark")
        while not isinstance(app.screen, HelpScreen):
            await pilot.pause()
        await pilot.pause()
        narrow = size[0] < 120
        assert app.screen.query_one("#help-stacked").display is narrow
        assert app.screen.query_one("#help-keys").display is not narrow

    assert snap_compare(app, terminal_size=size, run_before=show)


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_play_pickers(snap_compare: Any, tmp_path: Path, size: tuple[int, int]) -> None:
    app = _app(tmp_path, "play_user")

    async def show(pilot: Pilot[None]) -> None:
        screen = app.screen
        assert isinstance(screen, PlayUserScreen)
        await _choose(screen, pilot, "R-s1")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert screen.query_one(PlaySetup).has_class("-narrow") is (size[0] < 120)
        assert str(screen.query_one("#play-step-label", Static).render())  # the step is described

    assert snap_compare(app, terminal_size=size, run_before=show)
