"""Pilot test: play one session as the user to its end (SPEC §4.11, §6), scripted model on loopback.

The person types three messages and moves the beats on; the PA and the shadow simulator are the
scripted model of test_tui_support.py. The side-by-side record must be shown and stored.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_tui_support import (
    PA_REPLY,
    SESSION_ENTRY,
    USER_MESSAGE,
    TuiFolders,
    fixed_scorer,
    make_folders,
    run_responder,
    view_and_resume_saved_play,
    write_profile,
)
from textual.pilot import Pilot
from textual.widgets import Input, Select, Static

from mempa_tui.llm import ScriptedModelServer
from mempa_tui.runner._simmem import load_simulator_memory
from mempa_tui.runner.play import PlayedStep
from mempa_tui.store import RunStatus, RunStore
from mempa_tui.tui import MempaApp, RunnerOptions
from mempa_tui.tui.screens.help import HelpScreen
from mempa_tui.tui.screens.play_user import PlayUserScreen
from mempa_tui.tui.widgets import TranscriptLog


@dataclass
class Env:
    server: ScriptedModelServer
    folders: TuiFolders

    def app(self) -> MempaApp:
        return MempaApp(self.folders.settings, options=RunnerOptions(scorer=fixed_scorer, resamples=100))


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    async with ScriptedModelServer(run_responder) as server:
        folders = make_folders(tmp_path)
        write_profile(server.profile(context_window=131072), folders.settings.models_dir)
        yield Env(server, folders)


async def _press(screen: PlayUserScreen, pilot: Pilot[None], key: str) -> None:
    """Press ``key``, then let messages flow until a new panel asks the person for a turn (or
    the play ended)."""
    before = screen.panel
    await pilot.press(key)
    for _ in range(400):
        await pilot.pause()
        panel = screen.panel
        if (panel is not None and panel is not before and panel.waiting) or screen.outcome is not None:
            return
    raise AssertionError(f"the seat never asked for a turn: {screen.panel!r}")


def _text(screen: PlayUserScreen, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


async def test_play_a_session_as_the_user_to_its_end(env: Env) -> None:
    app = env.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("u")
        screen = app.screen
        assert isinstance(screen, PlayUserScreen)
        await pilot.pause()
        screen.query_one("#play-user", Select).value = "R"
        await pilot.pause()
        screen.query_one("#play-step", Select).value = "R-s1"
        screen.query_one("#play-profile", Select).value = "scripted"
        await _press(screen, pilot, "ctrl+r")
        assert "Beat 1 of 4: opening" in _text(screen, "#user-panel")

        box = screen.query_one("#message", Input)
        box.value = "Can you find the boiler inspection email?"
        await _press(screen, pilot, "enter")
        # the side-by-side turn shows once the message went
        assert USER_MESSAGE in _text(screen, "#fidelity")
        await _press(screen, pilot, "ctrl+n")  # next beat: the deadline fact is released
        panel = _text(screen, "#user-panel")
        assert "The summary is due on Friday." in panel and "Acting sheet: Verbosity" in panel

        box.value = "What's the gist?"
        await _press(screen, pilot, "ctrl+s")
        await _press(screen, pilot, "ctrl+n")
        box.value = "Good, Friday it is."
        await _press(screen, pilot, "enter")
        await pilot.press("ctrl+n")  # the last beat is a world event: the session closes after it
        await app.workers.wait_for_complete()
        await pilot.pause()

        assert screen.outcome is not None and screen.outcome.status == "completed", screen.outcome
        assert len(screen.outcome.fidelity) == 3
        shown = _text(screen, "#fidelity")
        assert "You and the simulator, turn by turn" in shown and "Good, Friday it is." in shown
        log = screen.query_one(TranscriptLog)
        written = "\n".join(str(line.text) for line in log.lines)
        assert PA_REPLY in written and "What's the gist?" in written
        assert "IX_" not in written and "ix " not in written.lower()  # the user never sees a selection

        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        ids = {row.binding_id for row in app.screen.rows}
        assert {"play_user.start", "play_user.send", "play_user.advance", "play_user.end"} <= ids
        await pilot.press("escape")

        play_id = screen.outcome.play_id
        await view_and_resume_saved_play(app, pilot, play_id, PlayUserScreen, "R-s1", "Good, Friday it is.")

    store = await RunStore(env.folders.settings.saves_dir / "mempa.sqlite").open()
    try:
        run = await store.get_run(screen.outcome.play_id)
        assert run is not None and run.status is RunStatus.COMPLETED
        [step] = await store.steps(run.id, with_results=True)
        stored = PlayedStep.model_validate_json(step.result_json)
        assert [p.human_message for p in stored.fidelity] == [
            "Can you find the boiler inspection email?", "What's the gist?", "Good, Friday it is."]
        # the simulator's diary entry, written from the person's dialogue, is kept in the checkpoint
        assert stored.simulator_entry == SESSION_ENTRY == screen.outcome.simulator_entry
        diary_requests = [r for r in env.server.requests if r.model.endswith("-simulator")
                          and any('"entry"' in (m.content or "") for m in r.messages)]
        assert len(diary_requests) == 1
        assert "Good, Friday it is." in "\n".join(m.content or "" for m in diary_requests[0].messages)
        checkpoint = await store.latest_checkpoint(run.id)
        assert checkpoint is not None and checkpoint.simulator_blob is not None
        memory = load_simulator_memory((await store.load_blob(checkpoint.simulator_blob)).decode())
        assert [e.text for e in memory.entries] == [SESSION_ENTRY]
    finally:
        await store.close()


async def test_starting_without_a_choice_notifies_and_the_app_goes_on(env: Env) -> None:
    app = env.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("u")
        screen = app.screen
        assert isinstance(screen, PlayUserScreen)
        await pilot.pause()
        screen.query_one("#play-profile", Select).clear()
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert any("choose model profile first" in n.message for n in app._notifications)
        assert screen.seat is None
        await pilot.press("ctrl+s")  # not a turn: a warning, nothing breaks
        await pilot.pause()
        assert any("not your turn" in n.message for n in app._notifications)
