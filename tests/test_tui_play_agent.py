"""Pilot test: play one final probe as the PA (SPEC §4.11), scripted simulator on loopback.

The person opens the IX picker at the decision point, chooses a setting, reads a document through
the tool palette's generated form, and writes the reply; the probe is scored (fixed scorer) and
stored like a run's probe.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_tui_support import (
    USER_MESSAGE,
    TuiFolders,
    fixed_scorer,
    make_folders,
    run_responder,
    view_and_resume_saved_play,
    write_profile,
)
from textual.pilot import Pilot
from textual.widgets import Input, Select, Static, TextArea

from mempa_tui.llm import ScriptedModelServer
from mempa_tui.store import RunStatus, RunStore
from mempa_tui.tui import MempaApp, RunnerOptions
from mempa_tui.tui.screens.help import HelpScreen
from mempa_tui.tui.screens.play_agent import PlayAgentScreen
from mempa_tui.tui.widgets import TranscriptLog

PROBE = "R-final-work-verbosity"


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


async def _settle(pilot: Pilot[None], rounds: int = 5) -> None:
    for _ in range(rounds):
        await pilot.pause()


async def _press_until_view(screen: PlayAgentScreen, pilot: Pilot[None], key: str) -> None:
    """Press ``key`` and let messages flow until a PA turn view is open (or the play ended)."""
    await pilot.press(key)
    for _ in range(400):
        await pilot.pause()
        if screen.view is not None or screen.outcome is not None:
            return
    raise AssertionError("no PA turn opened")


def _panel(screen: PlayAgentScreen) -> str:
    return str(screen.query_one("#agent-panel", Static).render())


async def test_play_a_final_probe_as_the_pa(env: Env) -> None:
    app = env.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("a")
        screen = app.screen
        assert isinstance(screen, PlayAgentScreen)
        await pilot.pause()
        screen.query_one("#play-user", Select).value = "R"
        await pilot.pause()
        screen.query_one("#play-step", Select).value = PROBE
        screen.query_one("#play-profile", Select).value = "scripted"
        await _press_until_view(screen, pilot, "ctrl+r")
        panel = _panel(screen)
        assert USER_MESSAGE in panel and "Decision point" in panel and "IX_verbosity" in panel
        assert "Terse" not in panel and "Detailed" not in panel  # the target never shows

        # replying before the IX call is refused with a note, as a model PA is reminded
        screen.query_one("#reply", TextArea).text = "Too early."
        await pilot.press("ctrl+s")
        await _settle(pilot)
        assert any("choose a setting with IX_verbosity" in n.message for n in app._notifications)

        # the IX picker: the setting is a choice of the attribute's settings; empty is refused
        await pilot.press("ctrl+b")
        await _settle(pilot)
        setting = screen.query_one("#arg-setting", Select)
        await pilot.press("ctrl+t")
        await _settle(pilot)
        assert any("field 'setting' is required" in n.message for n in app._notifications)
        setting.value = "Terse"
        await pilot.press("ctrl+t")
        await _settle(pilot)
        assert "verbosity = Terse" in _panel(screen)

        # a world tool from the palette, its form generated from the schema
        screen.query_one("#tool-pick", Select).value = "mcp_state_document_read"
        await _settle(pilot)
        screen.query_one("#arg-document_id", Input).value = "doc_0001"
        await pilot.press("ctrl+t")
        await _settle(pilot)
        assert "mcp_state_document_read [executed]" in _panel(screen)

        screen.query_one("#reply", TextArea).text = "Replace the breaker panel."
        await pilot.press("ctrl+s")
        await app.workers.wait_for_complete()
        await _settle(pilot)

        outcome = screen.outcome
        assert outcome is not None and outcome.status == "completed", outcome
        assert outcome.selection == "Terse" and (outcome.scores.brs, outcome.scores.prs) == (4, 5)
        shown = _panel(screen)
        assert "the user's setting: " in shown and "BRS 4" in shown and "PRS 5" in shown
        written = "\n".join(str(line.text) for line in screen.query_one(TranscriptLog).lines)
        assert "Replace the breaker panel." in written and "document_read" in written

        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        ids = {row.binding_id for row in app.screen.rows}
        assert {"play_agent.start", "play_agent.call", "play_agent.ix", "play_agent.reply",
                "play_agent.give_up", "app.play_user", "app.play_agent"} <= ids
        await pilot.press("escape")

        await view_and_resume_saved_play(app, pilot, outcome.play_id, PlayAgentScreen, PROBE,
                                         "Replace the breaker panel.")

    store = await RunStore(env.folders.settings.saves_dir / "mempa.sqlite").open()
    try:
        run = await store.get_run(outcome.play_id)
        assert run is not None and run.status is RunStatus.COMPLETED
        [result] = await store.probe_results(run.id)
        assert (result.selection, result.brs, result.prs) == ("Terse", 4, 5)
    finally:
        await store.close()


async def test_giving_up_floors_the_probe_and_the_outcome_says_so(env: Env) -> None:
    app = env.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("a")
        screen = app.screen
        assert isinstance(screen, PlayAgentScreen)
        await pilot.pause()
        screen.query_one("#play-user", Select).value = "R"
        await pilot.pause()
        screen.query_one("#play-step", Select).value = PROBE
        screen.query_one("#play-profile", Select).value = "scripted"
        await _press_until_view(screen, pilot, "ctrl+r")
        await pilot.press("ctrl+g")
        await app.workers.wait_for_complete()
        await _settle(pilot)
        assert screen.outcome is not None and screen.outcome.status == "floored"
        assert "gave the turn up" in _panel(screen)
        assert screen.query_one("#reply", TextArea).disabled


async def test_reopening_the_ix_picker_after_another_tool_rebuilds_the_form_once(env: Env) -> None:
    """Issue 6.1: ctrl+b, another tool in the palette, ctrl+b again used to insert 'arg-setting' twice."""
    app = env.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("a")
        screen = app.screen
        assert isinstance(screen, PlayAgentScreen)
        await pilot.pause()
        screen.query_one("#play-user", Select).value = "R"
        await pilot.pause()
        screen.query_one("#play-step", Select).value = PROBE
        screen.query_one("#play-profile", Select).value = "scripted"
        await _press_until_view(screen, pilot, "ctrl+r")
        for _ in range(2):
            await pilot.press("ctrl+b")
            await _settle(pilot)
            assert len(screen.query("#arg-setting")) == 1
            screen.query_one("#tool-pick", Select).value = "mcp_state_document_read"
            await _settle(pilot)
            assert len(screen.query("#arg-setting")) == 0
            assert len(screen.query("#arg-document_id")) == 1
        await pilot.press("ctrl+b")
        await _settle(pilot)
        assert app.is_running and app.screen is screen
        assert len(screen.query("#arg-setting")) == 1 and len(screen.query("#arg-document_id")) == 0
        assert app.focused is screen.query_one("#arg-setting", Select)
        # choosing the same tool again keeps one form; the picker is still usable
        screen.query_one("#tool-pick", Select).value = "mcp_state_document_read"
        screen.query_one("#tool-pick", Select).value = screen.query_one("#tool-pick", Select).value
        await _settle(pilot)
        assert len(screen.query("#arg-document_id")) == 1
        await pilot.press("ctrl+g")
        await app.workers.wait_for_complete()
        await _settle(pilot)
        assert screen.outcome is not None and screen.outcome.status == "floored"
