"""Probe stepper screen, driven with a pilot against the scripted model on loopback.

A run of user R (File memory, one repeat) is stored first through the app's engine facade; then
the app opens on the stepper, picks that run and a final probe, steps it call by call, reveals
the target and the (fixed, test) BRS and PRS, and the run store is compared before and after.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from test_tui_results import seed
from test_tui_support import (
    TuiFolders,
    fixed_scorer,
    make_folders,
    run_responder,
    write_profile,
)
from textual.pilot import Pilot
from textual.widgets import RichLog, Select, Static
from textual.worker import WorkerState

from mempa_tui.llm import ScriptedModelServer
from mempa_tui.llm.types import ChatMessage, Role, ToolCall
from mempa_tui.runner._episode_events import (
    IXSelectionEvent,
    PAReplyEvent,
    UserMessageEvent,
)
from mempa_tui.runner._stepper import ModelCallView, StepperUpdate
from mempa_tui.store import RunStatus
from mempa_tui.tui import MempaApp, RunnerOptions, RunRequest, RunService
from mempa_tui.tui.screens.probe_stepper import (
    ProbeStepperScreen,
    prompt_text,
    update_lines,
)

RUN_ID = "R-file-scripted-s0"
PROBE = "R-final-work-verbosity"


@dataclass
class Env:
    """The app's folders with one stored run, and the scripted server."""

    folders: TuiFolders
    server: ScriptedModelServer

    def app(self) -> MempaApp:
        return MempaApp(self.folders.settings, options=RunnerOptions(scorer=fixed_scorer, resamples=50),
                        initial_mode="stepper")


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    async with ScriptedModelServer(run_responder) as server:
        folders = make_folders(tmp_path)
        write_profile(server.profile(context_window=131072), folders.settings.models_dir)
        service = RunService(folders.settings, RunnerOptions(scorer=fixed_scorer, resamples=50))
        try:
            outcome = await service.execute(
                RunRequest(user="R", memory="file", profile="scripted", repeats=1), lambda item: None,
                lambda line: None,
            )
        finally:
            await service.aclose()
        assert outcome.status is RunStatus.COMPLETED
        yield Env(folders, server)


def _dump(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return list(conn.iterdump())


async def _until(pilot: Pilot[None], check: Callable[[], bool]) -> None:
    """Let the app work until ``check`` holds (a pending worker may need several passes; no
    wall-clock deadline)."""
    while not check():
        await pilot.pause()


async def _steps_done(app: MempaApp, pilot: Pilot[None]) -> None:
    await pilot.pause()
    for worker in [w for w in app.workers if w.group == "stepper-step"]:
        if worker.state in (WorkerState.PENDING, WorkerState.RUNNING):
            await _until(pilot, lambda w=worker: w.state is not WorkerState.PENDING)  # type: ignore[misc]
            await worker.wait()
    await pilot.pause()


def _log(screen: ProbeStepperScreen) -> str:
    return "\n".join(line.text for line in screen.query_one("#step-log", RichLog).lines)


async def test_step_a_probe_to_its_scores(env: Env) -> None:
    db = env.folders.settings.saves_dir / "mempa.sqlite"
    before = _dump(db)
    app = env.app()
    async with app.run_test(size=(150, 45)) as pilot:
        screen = app.screen
        assert isinstance(screen, ProbeStepperScreen)
        run = screen.query_one("#run", Select)
        await _until(pilot, lambda: RUN_ID in [v for _, v in run._options])
        run.value = RUN_ID
        await _until(pilot, lambda: screen.choices is not None)
        screen.query_one("#probe", Select).value = PROBE
        await pilot.pause()
        assert screen.query_one("#checkpoint", Select).value == 2  # the runner's: after the last step
        await pilot.press("o")
        await _until(pilot, lambda: screen.stepper is not None and bool(screen.stepper.updates))
        stepper = screen.stepper
        assert stepper is not None
        assert "next: a simulator call" in _log(screen)
        # which repeat is replayed is said (issue 12: r1/r2/r3 were nowhere on this screen)
        opened = " ".join(_log(screen).split())  # the log wraps its lines
        assert f"probe {PROBE} r1 (" in opened and "repeat 1's sampling seeds" in opened, opened
        assert f"probe: {PROBE} r1" in str(screen.query_one("#stepper-state").render())

        await pilot.press("n")
        await _steps_done(app, pilot)
        assert stepper.client.gate.count == 1
        assert "call 1 · simulator" in _log(screen)
        assert "target" not in _log(screen).lower().replace("the target stays hidden", "")

        await pilot.press("t")  # up to the selection
        await _steps_done(app, pilot)
        assert stepper.stage == "episode_end"
        log = _log(screen)
        assert "call 2 · pa" in log and "IX verbosity" in log
        assert "PA's selection: Terse" in log  # the scripted PA picks the first setting
        prompt = str(screen.query_one("#prompt").render())
        assert "[system]" in prompt

        await pilot.press("n")
        await _steps_done(app, pilot)
        assert "target: Terse" in _log(screen) and "selection matches" in _log(screen)
        await pilot.press("n")
        await _steps_done(app, pilot)
        log = _log(screen)
        assert "BRS 4  judge: fixed in the TUI tests" in log
        assert "PRS 5  user: fixed" in log
        await pilot.press("n")
        await _steps_done(app, pilot)
        assert stepper.finished and "the stored run was not changed" in _log(screen)

        await pilot.press("c")
        await _until(pilot, lambda: screen.stepper is None)
    assert _dump(db) == before


async def test_errors_show_and_the_screen_carries_on(env: Env) -> None:
    app = env.app()
    async with app.run_test(size=(150, 45)) as pilot:
        screen = app.screen
        assert isinstance(screen, ProbeStepperScreen)
        await pilot.press("n")  # nothing open yet
        await pilot.pause()
        assert any("open a probe first" in n.message for n in app._notifications)
        run = screen.query_one("#run", Select)
        await _until(pilot, lambda: RUN_ID in [v for _, v in run._options])
        run.value = RUN_ID
        await _until(pilot, lambda: screen.choices is not None)
        screen.query_one("#probe", Select).value = "R-pre-ev1"
        await pilot.pause()
        screen.query_one("#checkpoint", Select).value = 2  # after the event: too late for this probe
        await pilot.press("o")
        await _until(pilot, lambda: "choose an earlier one" in _log(screen))
        assert screen.stepper is None
        assert app.is_running


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_stepper_snapshot(snap_compare: Any, tmp_path: Path, size: tuple[int, int]) -> None:
    """The stepper after a few hand-made updates (no model involved: fixed content); at 80x24 the
    step log keeps the width and the prompt goes under it (issue 16)."""
    folders = make_folders(tmp_path)
    folders.settings.saves_dir.mkdir(parents=True)
    asyncio.run(seed(folders.settings.saves_dir / "mempa.sqlite"))
    app = MempaApp(folders.settings, initial_mode="stepper")
    pa_call = ModelCallView(
        index=2, role=Role.PA, tools=["mcp_state_email_message_search", "IX_verbosity"],
        messages=[
            ChatMessage(role="system", content="You are a personal assistant. Use the tools."),
            ChatMessage(role="system", content="Today is 2026-06-20 09:00.\nMemory: prefers short answers at work."),
            ChatMessage(role="user", content="Could you summarise the venue thread for me?"),
        ],
        tool_calls=[ToolCall(id="c1", name="IX_verbosity", arguments={"setting": "Terse"})],
        prompt_tokens=812, completion_tokens=14,
    )
    updates = [
        StepperUpdate(kind="model_call", calls=[ModelCallView(
            index=1, role=Role.SIMULATOR, messages=[ChatMessage(role="user", content="Play the user.")],
            text="Could you summarise the venue thread for me?", prompt_tokens=300, completion_tokens=12,
        )], events=[UserMessageEvent(text="Could you summarise the venue thread for me?")], next_role=Role.PA),
        StepperUpdate(kind="model_call", calls=[pa_call], events=[
            IXSelectionEvent(attribute="verbosity", setting="Terse", ok=True, newly_selected=True),
        ], next_role=Role.PA),
        StepperUpdate(kind="episode_end", status="completed", selection="Terse",
                      events=[PAReplyEvent(text="Dana asks if the hall works on Thursday.")]),
        StepperUpdate(kind="target", status="completed", selection="Terse", target="Terse"),
        StepperUpdate(kind="scores", status="completed", selection="Terse", target="Terse", brs=4,
                      brs_reason="Short and to the point, as the rubric asks.", prs=5, prs_reason="Just what I wanted."),
    ]

    async def filled(pilot: Pilot[None]) -> None:
        await pilot.pause()
        await app.workers.wait_for_complete()
        screen = app.screen
        assert isinstance(screen, ProbeStepperScreen)
        log = screen.query_one("#step-log", RichLog)
        for update in updates:
            for line in update_lines(update, PROBE):
                log.write(line)
        screen.query_one("#prompt", Static).update(prompt_text(pa_call))
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=filled)
