"""Snapshot tests (pytest-textual-snapshot) of the play-as-user and play-as-PA screens.

Fixed content, no model: the setup reads the runner's fixture worlds (user R) and a profile file
written here; the panels are filled by posting hand-made seat views and episode events. Update
with ``pytest tests/test_tui_play_snapshots.py --snapshot-update`` after an intended layout change,
and look at the new SVGs before committing them.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import yaml
from test_tui_support import WORLDS, make_folders
from textual.pilot import Pilot
from textual.widgets import Input, Select, TextArea

from mempa_tui.agent.human import PATurnView, ToolOutcome
from mempa_tui.ix import ix_tool_spec
from mempa_tui.ix.types import CallStatus, ExecutedCall, HeldItem
from mempa_tui.runner._episode_events import (
    HeldItemsEvent,
    PAReplyEvent,
    ToolCallEvent,
    UserMessageEvent,
)
from mempa_tui.scripts.loader import load_user
from mempa_tui.simulator.human import FidelityPair, ShadowTurn, UserPanel
from mempa_tui.tools import default_registry
from mempa_tui.tui import MempaApp
from mempa_tui.tui.screens.play_agent import PlayAgentScreen
from mempa_tui.tui.screens.play_user import PlayUserScreen

SIZE = (120, 40)


def _app(tmp_path: Path, mode: str) -> MempaApp:
    folders = make_folders(tmp_path)
    folders.settings.models_dir.mkdir(parents=True, exist_ok=True)
    profile = {"name": "scripted", "description": "Scripted responder (snapshot)", "runtime": "scripted",
               "default": {"model": "ollama_chat/scripted-default", "api_base": "http://127.0.0.1:9"}}
    (folders.settings.models_dir / "scripted.yaml").write_text(yaml.safe_dump(profile), encoding="utf-8")
    return MempaApp(folders.settings, initial_mode=mode)


async def _choose(screen: PlayUserScreen | PlayAgentScreen, pilot: Pilot[None], step: str) -> None:
    screen.query_one("#play-user", Select).value = "R"
    await pilot.pause()
    screen.query_one("#play-step", Select).value = step
    screen.query_one("#play-profile", Select).value = "scripted"
    await pilot.pause()


def test_play_user_screen(snap_compare: Any, tmp_path: Path) -> None:
    app = _app(tmp_path, "play_user")
    session = load_user(WORLDS, "R").sessions["R-s1"]
    held = HeldItem(id="held_0001", kind="action", attribute="autonomy_level", tool="email_message_send",
                    text="Send the summary to the branch manager")

    async def show(pilot: Pilot[None]) -> None:
        screen = app.screen
        assert isinstance(screen, PlayUserScreen)
        await _choose(screen, pilot, "R-s1")
        screen._step = "R-s1"
        for event in (
            UserMessageEvent(text="Can you find the boiler inspection email?", beat_id="opening"),
            ToolCallEvent(call=ExecutedCall(call_id="c1", tool="email_message_search", arguments={"query": "boiler"},
                                            status=CallStatus.EXECUTED, result='{"count": 1}')),
            PAReplyEvent(text="Found it: the inspection from 27 February. Shall I send a summary on?"),
            HeldItemsEvent(items=[held]),
        ):
            screen.post_message(PlayUserScreen.EventArrived(event))
        panel = UserPanel(
            step_id="R-s1", mode="accumulation", task=session.task, beat_index=1, beat_count=4,
            beat=session.beats[1], turns_in_beat=0,
            acting_sheets=["Acting sheet: Verbosity = Terse (work)\nYou want the point and nothing around it."],
            released=[f for f in session.facts], pending=[held], waiting=True,
        )
        screen.post_message(PlayUserScreen.PanelChanged(panel))
        await pilot.pause()
        from mempa_tui.tui.play_render import pair_text

        screen.query_one("#fidelity").update(pair_text(FidelityPair(  # type: ignore[attr-defined]
            turn=0, beat_id="opening", human_message="Can you find the boiler inspection email?",
            simulator=ShadowTurn(message="Could you dig out the boiler inspection mail?", assessment="stay"),
        )))
        screen.query_one("#message", Input).cursor_blink = False  # a blinking cursor is not content
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=show)


def test_play_agent_screen(snap_compare: Any, tmp_path: Path) -> None:
    app = _app(tmp_path, "play_agent")
    tools = [s for s in default_registry().specs() if s.name.startswith("mcp_state_document")]

    async def show(pilot: Pilot[None]) -> None:
        screen = app.screen
        assert isinstance(screen, PlayAgentScreen)
        await _choose(screen, pilot, "R-final-work-verbosity")
        screen._step = "R-final-work-verbosity"
        screen.post_message(PlayAgentScreen.EventArrived(
            UserMessageEvent(text="What does the electrician's report want us to do?", beat_id="ask")))
        view = PATurnView(
            step_id="R-final-work-verbosity", is_probe=True, turn_index=0, now=datetime(2026, 6, 20, 9, 0),
            user_message="What does the electrician's report want us to do?",
            evidence="Earlier the user took one-line answers at work without asking for more.",
            tools=[*tools, ix_tool_spec("verbosity")], required_ix="verbosity",
            outcomes=[ToolOutcome(call_id="call_1", tool="mcp_state_document_read",
                                  arguments={"document_id": "doc_0001"}, status="executed",
                                  result='{"id": "doc_0001", "title": "Electrical inspection"}')],
        )
        screen.post_message(PlayAgentScreen.ViewChanged(view))
        await pilot.pause()
        await pilot.press("ctrl+b")
        screen.query_one("#reply", TextArea).cursor_blink = False  # a blinking cursor is not content
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=show)
