"""Snapshots of the dashboard at 80x24 and 160x48 (issue 16.6: every screen usable at 80x24),
with the hand-made entries of ``test_tui_snapshots`` (no model, no runner). The session view is
left to the branch that reworks it (issue 15.7).
The launcher's and Results' snapshots at both sizes are in ``test_tui_keys.py`` and
``test_tui_keys_results.py``. Update with ``--snapshot-update`` after an intended layout change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_tui_snapshots import _fill, _profile_file
from test_tui_support import make_folders
from textual.pilot import Pilot

from mempa_tui.runner import RunProgress
from mempa_tui.store import TokenTotals
from mempa_tui.tui import MempaApp, RunRequest
from mempa_tui.tui.screens.dashboard import CANCELLED_MESSAGE

SIZES = [(80, 24), (160, 48)]


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "160x48"])
def test_dashboard_small_and_large(snap_compare: Any, tmp_path: Path, size: tuple[int, int]) -> None:
    folders = make_folders(tmp_path)
    _profile_file(folders.settings.models_dir)
    app = MempaApp(folders.settings, initial_mode="dashboard")

    async def show(pilot: Pilot[None]) -> None:
        running = app.book.add(RunRequest(user="R", memory="file", profile="scripted", repeats=1))
        _fill(running)
        cancelled = app.book.add(RunRequest(user="R", memory="rag", profile="scripted", repeats=1))
        cancelled.run_id = "R-rag-scripted-s0"
        cancelled.progress = RunProgress(run_id="R-rag-scripted-s0", phase="stopped", steps_total=3,
                                         steps_done=2, probes_total=3, tokens=TokenTotals())
        cancelled.cancel(CANCELLED_MESSAGE)
        screen = await app.dashboard()
        for entry in (running, cancelled):
            screen._card(entry)
        await pilot.pause()
        for entry in (running, cancelled):
            screen._refresh(entry)
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=show)
