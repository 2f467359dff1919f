"""Shared helpers of the TUI tests (no tests here).

A scripted model plays every role of a real run of the tiny user ``R`` (tests/fixtures_runner):
the simulator writes a valid turn and advances a beat each time, the PA selects the first setting
of every interaction tool it is offered and then answers, and JSON requests (message checker,
simulator memory entry) get an object shaped by the requested schema. The profile is written as a
YAML file into a temporary models folder, so the app loads it like any other profile.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import DataTable, Label, Select
from textual.worker import WorkerCancelled

from mempa_tui.llm import ModelProfile, ScriptedReply, ScriptedRequest, ScriptedToolCall
from mempa_tui.scripts.schema import Probe
from mempa_tui.tui import AppSettings
from mempa_tui.tui.screens.launcher import LauncherScreen
from mempa_tui.tui.screens.session import SessionScreen
from mempa_tui.tui.widgets import TranscriptView
from mempa_tui.world import WorldState

if TYPE_CHECKING:
    from mempa_tui.tui import MempaApp

__all__ = [
    "PA_REPLY",
    "USER_MESSAGE",
    "WORLDS",
    "TuiFolders",
    "fixed_scorer",
    "make_folders",
    "run_responder",
    "until",
    "write_profile",
]

WORLDS = Path(__file__).parent / "fixtures_runner"
"""The worlds folder of the runner tests: user R (two sessions, a change event, three probes)."""

USER_MESSAGE = "Could you look into this for me please?"
"""What the scripted simulator says on every turn."""

PA_REPLY = "Here is what I found in your files."
"""What the scripted PA answers once its interaction tools are called."""

SESSION_ENTRY = "I asked my assistant for help with a task today. It answered and we finished quickly."


def _fill(schema: dict[str, Any]) -> object:
    """A value matching a JSON schema (booleans false: no checker rule is violated)."""
    kind = schema.get("type")
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object":
        props: dict[str, Any] = schema.get("properties", {})
        return {key: (SESSION_ENTRY if key == "entry" else _fill(sub)) for key, sub in props.items()}
    if kind == "array":
        return ["The assistant answers plainly."]
    if kind == "boolean":
        return False
    if kind in ("integer", "number"):
        return max(int(schema.get("minimum", 4)), min(4, int(schema.get("maximum", 4))))
    return "fine"


def run_responder(request: ScriptedRequest) -> ScriptedReply | str:
    """Plays every role of a run (see the module docstring)."""
    schema = request.json_schema
    if schema is not None:
        import json

        return json.dumps(_fill(schema))
    if request.model.endswith("-pa"):
        last_user = max((i for i, m in enumerate(request.messages) if m.role == "user"), default=0)
        called = {
            call.name
            for message in request.messages[last_user:]
            if message.role == "assistant"
            for call in (message.tool_calls or [])
        }
        for tool in request.tools:
            if tool.name.startswith("IX_") and tool.name not in called:
                setting = tool.parameters["properties"]["setting"]["enum"][0]
                return ScriptedReply(tool_calls=[ScriptedToolCall(name=tool.name, arguments={"setting": setting})])
        return ScriptedReply(text=PA_REPLY, prompt_tokens=40, completion_tokens=8)
    if request.model.endswith("-simulator"):
        if any('"entry"' in (m.content or "") for m in request.messages):  # the session entry
            import json

            return json.dumps({"entry": SESSION_ENTRY, "impressions": ["The assistant answers plainly."]})
        # a new message after the first: one that repeats an earlier user message word for word
        # is sent back (simulator conversation check), and the step would end invalid
        said = request.messages[1].content.count("\nYou: ") if len(request.messages) > 1 else 0
        message = USER_MESSAGE + (f" This is my message number {said + 1}." if said else "")
        return (
            "<factual_check>none</factual_check><turn_assessment>advance</turn_assessment>"
            f"<message>{message}</message>"
        )
    return "ok"


def write_profile(profile: ModelProfile, models_dir: Path, name: str = "scripted") -> Path:
    """Write ``profile`` as ``<models_dir>/<name>.yaml`` (what ``load_profile`` reads back)."""
    models_dir.mkdir(parents=True, exist_ok=True)
    data = profile.model_dump(mode="json", exclude_none=True)
    data["name"] = name
    path = models_dir / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@dataclass
class TuiFolders:
    """The app's folders under a test's temporary directory."""

    root: Path
    settings: AppSettings


def make_folders(root: Path, worlds: Path = WORLDS) -> TuiFolders:
    """Settings with the given worlds and fresh models, saves and memory folders under ``root``."""
    return TuiFolders(root, AppSettings(
        worlds_dir=worlds, models_dir=root / "models", saves_dir=root / "saves",
        local_memory_dir=root / "local_memory",
    ))


async def fixed_scorer(run: Any, probe: Probe, target: str, result: Any, world: WorldState) -> Any:
    """BRS 4 and PRS 5 without a judge call (scoring is not what the TUI tests check)."""
    from mempa_tui.runner._scoring import RealizationScores

    return RealizationScores(brs=4, brs_reason="fixed in the TUI tests", prs=5, prs_reason="fixed")


async def until(pilot: Pilot[None], check: Callable[[], bool]) -> None:
    """Let the app work, one message pass at a time, until ``check`` holds.

    No wall-clock deadline: a loaded machine only needs more passes. A state that never comes is
    caught by the test's own pytest timeout (a hang guard, not a deadline the work must meet).
    """
    while not check():
        await pilot.pause()


async def settle(app: MempaApp, pilot: Pilot[None]) -> None:
    """Wait for the app's workers; an exclusive worker replaced by a newer one is not a failure."""
    for _ in range(5):
        try:
            await app.workers.wait_for_complete()
            break
        except WorkerCancelled:
            continue
    await pilot.pause()


async def view_and_resume_saved_play(
    app: MempaApp, pilot: Pilot[None], play_id: str, seat_screen: type[Screen[None]], step: str, said: str,
) -> None:
    """The play is listed in the launcher; ``v`` shows its stored transcript (with ``said``), ``r``
    reopens the seat's screen with the same step and profile chosen."""
    await app.switch_mode("launcher")
    launcher = app.screen
    assert isinstance(launcher, LauncherScreen)
    launcher.load_saved()
    await settle(app, pilot)
    rows = [s.run.id for s in launcher.saved]
    assert play_id in rows
    table = launcher.query_one("#saved-runs", DataTable)
    table.focus()
    table.move_cursor(row=rows.index(play_id))
    earlier = {n.identity for n in app._notifications}  # errors the flow raised on purpose may linger
    await pilot.press("v")
    await settle(app, pilot)
    assert isinstance(app.screen, SessionScreen)
    assert not [n for n in app._notifications if n.severity == "error" and n.identity not in earlier], list(
        app._notifications
    )
    assert said in session_text(app.screen)

    await app.switch_mode("launcher")
    await pilot.pause()
    table.focus()
    table.move_cursor(row=rows.index(play_id))
    await pilot.press("r")
    await pilot.pause()
    await settle(app, pilot)
    seat = app.screen
    assert isinstance(seat, seat_screen)
    assert seat.query_one("#play-step", Select).value == step
    assert seat.query_one("#play-profile", Select).value == "scripted"
    assert play_id in str(seat.query_one("#play-status", Label).render())


def session_text(screen: SessionScreen) -> str:
    """The plain text of the session view's transcript."""
    return screen.query_one(TranscriptView).plain_text()
