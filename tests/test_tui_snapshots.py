"""Snapshot tests (pytest-textual-snapshot) of the launcher and the session view.

The content is fixed: the launcher reads the runner's fixture worlds (user R) and one profile
file written here; the session view shows a run entry filled with hand-made episode events, so no
model or runner is involved. Update with ``pytest tests/test_tui_snapshots.py --snapshot-update``
after an intended change of the layout, and look at the new SVGs before committing them.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import yaml
from test_tui_support import make_folders
from textual.pilot import Pilot

from mempa_tui.ix.types import CallStatus, ExecutedCall, HeldItem
from mempa_tui.memory import EvidenceItem, MemoryInspection
from mempa_tui.runner import RunProgress, StepEvent
from mempa_tui.runner._episode_events import (
    BeatChangeEvent,
    ConsentEvent,
    EvidenceEvent,
    HeldItemsEvent,
    IXSelectionEvent,
    NoticeEvent,
    PAReplyEvent,
    StepStatusEvent,
    ToolCallEvent,
    UserMessageEvent,
)
from mempa_tui.store import TokenTotals
from mempa_tui.tui import MempaApp, RunRequest
from mempa_tui.tui.book import RunEntry
from mempa_tui.tui.screens.dashboard import CANCELLED_MESSAGE

SIZE = (120, 40)


def _profile_file(models_dir: Path) -> None:
    models_dir.mkdir(parents=True, exist_ok=True)
    profile = {
        "name": "scripted",
        "description": "Scripted responder on loopback (snapshot)",
        "runtime": "scripted",
        "default": {"model": "ollama_chat/scripted-default", "api_base": "http://127.0.0.1:9"},
    }
    (models_dir / "scripted.yaml").write_text(yaml.safe_dump(profile), encoding="utf-8")


def test_launcher(snap_compare: Any, tmp_path: Path) -> None:
    folders = make_folders(tmp_path)
    _profile_file(folders.settings.models_dir)
    assert snap_compare(MempaApp(folders.settings), terminal_size=SIZE)


def _session_events() -> list[Any]:
    at = datetime(2026, 3, 9, 10, 0)
    send = ExecutedCall(
        call_id="c2", tool="email_message_send", arguments={"to": "dana@example.org", "body": "Hall is fine."},
        status=CallStatus.HELD, held_id="held_0001", write=True, tag="outward",
    )
    return [
        BeatChangeEvent(beat_id="opening", index=0),
        UserMessageEvent(text="What did Dana want about the venue?", beat_id="opening"),
        EvidenceEvent(
            system_text="",
            items=[
                EvidenceItem(text="She wants outgoing mail shown before it is sent.", score=0.91, source="h3"),
                EvidenceItem(text="Prefers short answers at work.", score=0.42, source="h1"),
            ],
            prior_messages=2,
        ),
        ToolCallEvent(call=ExecutedCall(
            call_id="c1", tool="email_message_search", arguments={"query": "venue"},
            status=CallStatus.EXECUTED,
            result='{"count": 1, "messages": [{"id": "em_0003", "from": "Dana Pike", "subject": '
                   '"Venue for the volunteer evening", "body": "Is the hall fine for Thursday?"}]}',
        )),
        IXSelectionEvent(attribute="autonomy_level", setting="Reactive", ok=True, newly_selected=True),
        ToolCallEvent(call=send),
        PAReplyEvent(text="Dana asks whether the hall works for Thursday. I drafted a reply for you to approve."),
        HeldItemsEvent(items=[HeldItem(id="held_0001", kind="action", attribute="autonomy_level",
                                       tool="email_message_send", text="Send the reply to Dana")]),
        BeatChangeEvent(beat_id="decide", index=1, turn_index=1),
        UserMessageEvent(turn_index=1, text="Yes, send it, and say we start at 18:30.", beat_id="decide"),
        ConsentEvent(turn_index=1, decisions={"held_0001": True},
                     executed=[send.model_copy(update={"status": CallStatus.EXECUTED, "result": "sent"})]),
        NoticeEvent(turn_index=1, at=at.replace(hour=11), text="A new email arrived from Dana."),
        PAReplyEvent(turn_index=1, text="Sent. Dana has just replied to confirm 18:30."),
        StepStatusEvent(turn_index=1, status="completed"),
    ]


def _fill(entry: RunEntry) -> None:
    entry.run_id = "R-file-scripted-s0"
    entry.state = "running"
    for event in _session_events():
        entry.apply(StepEvent(run_id="R-file-scripted-s0", step_id="R-s2", event=event))
    entry.progress = RunProgress(
        run_id="R-file-scripted-s0", phase="timeline", steps_total=3, steps_done=1, current="R-s2",
        probes_total=3, tokens=TokenTotals(),
    )
    entry.memory = MemoryInspection(
        system="file",
        stored=["MEMORY.md\n- Shows outgoing mail before sending.\n- Short answers at work.",
                "HISTORY [2026-03-02] Summarised the boiler inspection email."],
        stats={"turns_written": 4.0, "history_entries": 1.0},
    )
    entry.memory_origin = "checkpoint after step 1 (R-s1)"


def test_session_view(snap_compare: Any, tmp_path: Path) -> None:
    folders = make_folders(tmp_path)
    _profile_file(folders.settings.models_dir)
    app = MempaApp(folders.settings)

    async def show(pilot: Pilot[None]) -> None:
        entry = app.book.add(RunRequest(user="R", memory="file", profile="scripted", repeats=1))
        _fill(entry)
        await app.show_session(entry.key)
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=show)


def test_dashboard(snap_compare: Any, tmp_path: Path) -> None:
    """One running run with its bars, and one cancelled from the dashboard (state and reason shown)."""
    folders = make_folders(tmp_path)
    _profile_file(folders.settings.models_dir)
    app = MempaApp(folders.settings, initial_mode="dashboard")

    async def show(pilot: Pilot[None]) -> None:
        running = app.book.add(RunRequest(user="R", memory="file", profile="scripted", repeats=1))
        _fill(running)
        cancelled = app.book.add(RunRequest(user="R", memory="rag", profile="scripted", repeats=1))
        cancelled.run_id = "R-rag-scripted-s0"
        cancelled.progress = RunProgress(run_id="R-rag-scripted-s0", phase="stopped", steps_total=3, steps_done=2,
                                         probes_total=3, tokens=TokenTotals())
        cancelled.cancel(CANCELLED_MESSAGE)
        screen = await app.dashboard()
        for entry in (running, cancelled):
            screen._card(entry)
        await pilot.pause()
        for entry in (running, cancelled):
            screen._refresh(entry)
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=show)
