"""Pilot tests of the terminal app against the scripted model (offline, real runner and store).

Each test drives ``MempaApp`` with ``run_test(size=(120, 40))``: it picks the tiny user R in the
launcher, starts a run, waits for the workers, and reads the dashboard, the session view and the
run store. See test_tui_support.py for the scripted model that plays every role.
"""

from __future__ import annotations

import argparse
import io
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from rich.text import Text
from test_tui_support import (
    PA_REPLY,
    USER_MESSAGE,
    WORLDS,
    TuiFolders,
    fixed_scorer,
    make_folders,
    run_responder,
    until,
    write_profile,
)
from textual.binding import Binding
from textual.pilot import Pilot
from textual.widgets import (
    Checkbox,
    DataTable,
    Label,
    ProgressBar,
    Select,
    SelectionList,
    Static,
)
from textual.worker import WorkerCancelled, WorkerFailed, WorkerState

from mempa_tui.cli._commands import cmd_runs
from mempa_tui.cli.main import main
from mempa_tui.ix.types import CallStatus, ExecutedCall
from mempa_tui.llm import ScriptedModelServer, ScriptedReply, ScriptedRequest
from mempa_tui.runner import StepEvent
from mempa_tui.runner._episode_events import (
    PAReplyEvent,
    ToolCallEvent,
    UserMessageEvent,
)
from mempa_tui.scripts.schema import Probe
from mempa_tui.store import RunRecord, RunStatus, RunStore
from mempa_tui.tui import AppSettings, MempaApp, RunnerOptions, RunRequest
from mempa_tui.tui.commands import MempaCommands
from mempa_tui.tui.screens import (
    DashboardScreen,
    HelpScreen,
    LauncherScreen,
    SessionScreen,
)
from mempa_tui.tui.widgets import MemoryPanel, RunCard, TranscriptView
from mempa_tui.world import WorldState

RUN_ID = "R-file-scripted-s0"


@dataclass
class Env:
    """A scripted model server and the app's folders with its profile written."""

    server: ScriptedModelServer
    folders: TuiFolders

    def app(self, scorer: Any = fixed_scorer) -> MempaApp:
        return MempaApp(self.folders.settings, options=RunnerOptions(scorer=scorer, resamples=100))


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    async with ScriptedModelServer(run_responder) as server:
        folders = make_folders(tmp_path)
        write_profile(server.profile(context_window=131072), folders.settings.models_dir)
        yield Env(server, folders)


@dataclass
class HeldEnv(Env):
    """An :class:`Env` whose simulator blocks in step R-s2 (``reached`` set) until ``release``."""

    reached: threading.Event
    release: threading.Event


@asynccontextmanager
async def _held_at_step_two(tmp_path: Path) -> AsyncIterator[HeldEnv]:
    """The scripted model holds the simulator's first call of step R-s2; ``release`` is set on
    leaving, so the server's thread never outlives the test."""
    reached, release = threading.Event(), threading.Event()

    def responder(request: ScriptedRequest) -> ScriptedReply | str:
        task = "Task: Answer Dana about the venue"
        if request.model.endswith("-simulator") and any(task in (m.content or "") for m in request.messages):
            reached.set()
            release.wait(timeout=600)  # a hang guard; the test sets it when it is done
        return run_responder(request)

    async with ScriptedModelServer(responder) as server:
        folders = make_folders(tmp_path)
        write_profile(server.profile(context_window=131072), folders.settings.models_dir)
        try:
            yield HeldEnv(server, folders, reached, release)
        finally:
            release.set()


async def _start_from_launcher(app: MempaApp, pilot: Pilot[None], *, memory: str = "file", repeats: int = 1) -> None:
    screen = app.screen
    assert isinstance(screen, LauncherScreen)
    for field, value in (("user", "R"), ("memory", memory), ("profile", "scripted")):
        picks = screen.query_one(f"#{field}", SelectionList)
        picks.deselect_all()
        picks.select(value)
    screen.query_one("#repeats", Select).value = repeats
    before = len(app.book)
    await pilot.click("#start")
    await until(pilot, lambda: len(app.book) != before)  # the request switches modes first


async def _settle(app: MempaApp, pilot: Pilot[None]) -> list[BaseException]:
    """Wait until no worker is pending or running (finishing workers start others), then for messages.

    It waits on worker states, never on a wall-clock deadline (issue 15.8).

    Returns:
        The errors of the workers that failed (the app shows them; the tests assert on them).
    """
    failures: list[BaseException] = []
    seen: set[int] = set()
    while True:
        await pilot.pause()
        live = [w for w in app.workers if w.state in (WorkerState.PENDING, WorkerState.RUNNING)]
        finished = [w for w in app.workers if id(w) not in seen and w.state is WorkerState.ERROR]
        for worker in finished:
            seen.add(id(worker))
            assert worker.error is not None
            failures.append(worker.error)
        if not live:
            break
        for worker in live:
            if worker.state is WorkerState.PENDING:
                continue  # not started yet; the next pass waits for it
            try:
                await worker.wait()
            except WorkerFailed as exc:
                if id(worker) not in seen:
                    seen.add(id(worker))
                    failures.append(exc.error)
            except WorkerCancelled:
                continue  # an exclusive worker (e.g. the saved-runs listing) replaced by a newer one
    await pilot.pause()
    return failures


def _log_text(log: TranscriptView) -> str:
    return log.plain_text()


def _static_text(widget: Static) -> str:
    content = widget.content
    assert isinstance(content, Text)
    return content.plain


def _notifications(app: MempaApp) -> list[tuple[str, str]]:
    return [(n.severity, n.message) for n in app._notifications]


async def test_a_run_started_from_the_launcher_completes_with_transcript_and_memory(env: Env) -> None:
    app = env.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await _start_from_launcher(app, pilot)
        assert isinstance(app.screen, DashboardScreen)
        await _settle(app, pilot)

        (entry,) = list(app.book)
        assert entry.state == "completed", entry.error
        card = app.screen.query_one(RunCard)
        assert card.has_class("-completed")
        steps, probes = card.query(ProgressBar)
        assert (steps.progress, steps.total) == (3, 3)  # R-s1, R-s2, R-ev1
        assert (probes.progress, probes.total) == (3, 3)  # three probes x one repeat
        assert ("information", f"run {RUN_ID} completed") in _notifications(app)

        await pilot.press("v")
        await _settle(app, pilot)
        assert isinstance(app.screen, SessionScreen)
        text = _log_text(app.screen.query_one(TranscriptView))
        assert f"USER {USER_MESSAGE}" in text
        assert f"PA   {PA_REPLY}" in text
        assert "◆ IX verbosity = Terse" in text  # the PA's IX selection, operator view
        assert "── R-s2 " in text and "── R-final-work-verbosity · repeat 1 " in text
        assert "⚙ tool calendar_event_search(" in text and "[executed]" in text  # R-ev1, replayed

        panel = app.screen.query_one(MemoryPanel)
        memory = _static_text(panel.query_one("#memory-body", Static))
        assert "checkpoint after step 3 (R-ev1)" in memory
        assert f"Assistant: {PA_REPLY}" in memory  # File memory's pending turns
        assert panel.has_class("-has-memory")
        evidence = _static_text(panel.query_one("#evidence-body", Static))
        assert "No turn played yet" not in evidence
        assert entry.evidence is not None

    async with RunStore(env.folders.settings.saves_dir / "mempa.sqlite") as store:
        run = await store.get_run(RUN_ID)
        assert run is not None and run.status is RunStatus.COMPLETED


async def test_a_failing_engine_shows_a_notification_and_the_app_stays_alive(env: Env) -> None:
    async def broken_judge(run: Any, probe: Probe, target: str, result: Any, world: WorldState) -> Any:
        raise RuntimeError("judge server went away")

    app = env.app(scorer=broken_judge)
    async with app.run_test(size=(120, 40)) as pilot:
        await _start_from_launcher(app, pilot)
        failures = await _settle(app, pilot)
        # a finished worker may leave the app's list before _settle looks; the entry keeps the error
        assert all(str(f) == "judge server went away" for f in failures)

        (entry,) = list(app.book)
        assert entry.state == "failed"
        assert entry.error is not None and "judge server went away" in entry.error
        assert any(sev == "error" and "judge server went away" in msg for sev, msg in _notifications(app))
        card = app.screen.query_one(RunCard)
        assert card.has_class("-failed") and card.has_class("-has-error")

        # the app still answers: switch to the launcher, whose saved runs show the failed run
        await pilot.press("l")
        await _settle(app, pilot)
        assert isinstance(app.screen, LauncherScreen)
        table = app.screen.query_one("#saved-runs", DataTable)
        assert table.get_row_at(0)[:2] == [RUN_ID, "failed"]

    async with RunStore(env.folders.settings.saves_dir / "mempa.sqlite") as store:
        run = await store.get_run(RUN_ID)
        assert run is not None and run.status is RunStatus.FAILED
        assert run.error is not None and "judge server went away" in run.error


async def test_a_config_mismatch_is_reported_not_raised(env: Env) -> None:
    async with RunStore(env.folders.settings.saves_dir / "mempa.sqlite") as store:
        await store.create_run(RunRecord(
            id=RUN_ID, user="R", profile="scripted", memory="file", seed=0, repeats=1,
            config_json='{"user": "R", "profile": "scripted", "memory": "file", "repeats": 7}',
            config_hash="0" * 64,
        ))
    app = env.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await _start_from_launcher(app, pilot)
        await _settle(app, pilot)
        (entry,) = list(app.book)
        assert entry.state == "failed"
        assert entry.error is not None and "refusing to resume" in entry.error
        assert "repeats: 7 -> 1" in entry.error
        assert not env.server.requests  # nothing was played
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)


async def test_two_runs_play_at_once_each_in_its_own_worker(env: Env) -> None:
    app = env.app()
    async with app.run_test(size=(120, 40)) as pilot:
        launcher = app.screen
        assert isinstance(launcher, LauncherScreen)
        # Two File memory seeds: a reference run beside its donor would be refused (issue 11.4:
        # No Memory and Oracle wait for a completed File memory run).
        for seed in (0, 1):
            launcher.post_message(LauncherScreen.StartRequested(
                RunRequest(user="R", memory="file", profile="scripted", repeats=1, seed=seed)
            ))
        started: set[str] = set()

        def both_started() -> bool:  # each request switches modes first: that takes passes
            started.update(w.name for w in app.workers if w.group.startswith("run:"))
            return len(started) >= 2

        await until(pilot, both_started)
        assert sorted(started) == ["R-file-scripted-s0", "R-file-scripted-s1"]
        await _settle(app, pilot)
        assert {e.label: e.state for e in app.book} == {
            "R-file-scripted-s0": "completed", "R-file-scripted-s1": "completed",
        }
        cards = list(app.screen.query(RunCard))
        assert len(cards) == 2
        second = next(c for c in cards if c.entry.label == "R-file-scripted-s1")
        steps, probes = second.query(ProgressBar)
        assert (probes.progress, probes.total) == (3, 3)
        assert second.entry.progress is not None and second.entry.progress.steps_total == steps.total


async def test_a_saved_run_is_listed_viewable_and_resumes_without_replaying(env: Env) -> None:
    first = env.app()
    async with first.run_test(size=(120, 40)) as pilot:
        await _start_from_launcher(first, pilot)
        await _settle(first, pilot)
    played = len(env.server.requests)
    assert played > 0

    app = env.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(app, pilot)
        table = app.screen.query_one("#saved-runs", DataTable)
        assert table.row_count == 1
        assert table.get_row_at(0)[:4] == [RUN_ID, "completed", "3/3", "3/3"]

        await pilot.press("v")  # the stored transcript and the checkpoint's memory
        await _settle(app, pilot)
        assert isinstance(app.screen, SessionScreen)
        text = _log_text(app.screen.query_one(TranscriptView))
        assert "stored transcript" in text and f"USER {USER_MESSAGE}" in text
        memory = _static_text(app.screen.query_one("#memory-body", Static))
        assert "checkpoint after step 3" in memory

        await pilot.press("l", "r")  # resume: everything is stored, so nothing is played again
        await _settle(app, pilot)
        (entry,) = list(app.book)
        assert entry.state == "completed"
        assert len(env.server.requests) == played


async def test_help_lists_keys_with_ids_and_the_palette_switches_screens(env: Env) -> None:
    app = env.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        table = app.screen.query_one("#help-keys", DataTable)
        rows = [table.get_row_at(i) for i in range(table.row_count)]
        ids = {row[3] for row in rows}
        assert {"app.launcher", "app.dashboard", "app.session", "launcher.start", "launcher.resume"} <= ids
        start = next(row for row in rows if row[3] == "launcher.start")
        assert start[0] == "n" and "Start" in start[2]
        await pilot.press("escape")
        assert isinstance(app.screen, LauncherScreen)

        await pilot.press("ctrl+p")
        await pilot.press(*"Open dashboard")
        await _settle(app, pilot)
        await pilot.press("enter")
        await _settle(app, pilot)
        assert app.current_mode == "dashboard"


async def test_a_paused_run_resumes_from_its_last_checkpoint(tmp_path: Path) -> None:
    """Pause (x) while step R-s2 waits on the model, then resume (r): R-s1 is not played again."""
    async with _held_at_step_two(tmp_path) as held:
        folders, reached, release, app = held.folders, held.reached, held.release, held.app()
        async with app.run_test(size=(120, 40)) as pilot:
            await _start_from_launcher(app, pilot)
            assert await anyio.to_thread.run_sync(reached.wait, 600)  # a hang guard, not a deadline
            await pilot.press("x")
            failures = await _settle(app, pilot)
            assert failures == []
            (entry,) = list(app.book)
            assert entry.state == "stopped"
            assert entry.progress is not None and entry.progress.steps_done == 1
            card = app.screen.query_one(RunCard)
            assert card.has_class("-stopped")
            # a pause is not a problem (issue 6.5): no error, no CLI wording, the row says how to resume
            assert entry.paused and entry.error is None
            assert str(card.query_one(".run-state", Label).render()) == "paused"
            assert "0 problem(s)" in str(card.query_one(".run-stats", Label).render())
            assert str(card.query_one(".run-note", Label).render()) == "paused; r resumes"
            assert str(card.query_one(".run-error", Label).render()) == ""
            release.set()

            await pilot.press("r")
            await _settle(app, pilot)
            (resumed,) = list(app.book)  # the same entry, played again
            assert resumed is entry and resumed.state == "completed", resumed.error

    async with RunStore(folders.settings.saves_dir / "mempa.sqlite") as store:
        steps = await store.steps(RUN_ID)
        assert [(s.step_id, s.attempts) for s in steps] == [("R-s1", 1), ("R-s2", 1), ("R-ev1", 1)]
        run = await store.get_run(RUN_ID)
        assert run is not None and run.status is RunStatus.COMPLETED


async def test_quitting_while_a_run_plays_stores_it_stopped_without_an_error(tmp_path: Path) -> None:
    """Closing the app mid-step cancels the run's worker; the dashboard waits for it quietly."""
    async with _held_at_step_two(tmp_path) as held:
        folders, reached, app = held.folders, held.reached, held.app()
        async with app.run_test(size=(120, 40)) as pilot:
            await _start_from_launcher(app, pilot)
            assert await anyio.to_thread.run_sync(reached.wait, 600)  # a hang guard, not a deadline
        # leaving the block shuts the app down; before the fix this raised WorkerCancelled

    async with RunStore(folders.settings.saves_dir / "mempa.sqlite") as store:
        run = await store.get_run(RUN_ID)
        assert run is not None and run.status is RunStatus.STOPPED
        assert [s.step_id for s in await store.steps(RUN_ID)] == ["R-s1"]


async def test_a_cancelled_run_is_stored_as_cancelled_with_its_steps_kept(tmp_path: Path) -> None:
    """Cancel (c) while step R-s2 waits on the model: the worker stops, R-s1 stays stored with its
    checkpoint, and the run record, the launcher and ``mempa runs`` say ``cancelled``."""
    async with _held_at_step_two(tmp_path) as held:
        folders, reached, release, app = held.folders, held.reached, held.release, held.app()
        async with app.run_test(size=(120, 40)) as pilot:
            await _start_from_launcher(app, pilot)
            assert await anyio.to_thread.run_sync(reached.wait, 600)  # a hang guard, not a deadline
            await pilot.press("c")
            failures = await _settle(app, pilot)
            release.set()
            assert failures == []
            (entry,) = list(app.book)
            assert entry.state == "cancelled" and not entry.active
            assert app.screen.query_one(RunCard).has_class("-cancelled")
            assert not any(w.group == f"run:{entry.key}" and not w.is_finished for w in app.workers)

            await app.switch_mode("launcher")
            launcher = app.screen
            assert isinstance(launcher, LauncherScreen)
            launcher.load_saved()
            await _settle(app, pilot)
            table = launcher.query_one("#saved-runs", DataTable)
            assert table.get_row_at(0)[:2] == [RUN_ID, "cancelled"]

    async with RunStore(folders.settings.saves_dir / "mempa.sqlite") as store:
        run = await store.get_run(RUN_ID)
        assert run is not None and run.status is RunStatus.CANCELLED and "cancelled" in (run.error or "")
        assert [s.step_id for s in await store.steps(RUN_ID)] == ["R-s1"]
        checkpoint = await store.latest_checkpoint(RUN_ID)
        assert checkpoint is not None and checkpoint.step_id == "R-s1"
    out = io.StringIO()
    assert await cmd_runs(argparse.Namespace(saves=folders.settings.saves_dir), out) == 0
    listed = out.getvalue()
    assert any(line.startswith(RUN_ID) and " cancelled " in line for line in listed.splitlines()), listed


async def test_the_command_palette_offers_every_key_of_every_screen(env: Env) -> None:
    app = env.app()
    async with app.run_test(size=(120, 40)) as pilot:
        for mode in ("launcher", "dashboard", "session", "play_user", "play_agent", "stepper", "results"):
            await app.switch_mode(mode)
            await pilot.pause()
            provider = MempaCommands(app.screen)
            texts = {text for text, _, _ in provider._commands()}
            own = [b for b in app.screen.BINDINGS if isinstance(b, Binding) and b.description]
            assert own, mode
            for binding in own:
                key = binding.key_display or binding.key
                assert any(t.endswith(f": {binding.description} ({key})") for t in texts), (mode, binding)
            assert {"Open launcher", "Open results", "Play as the PA", "Show keys"} <= texts
        await app.switch_mode("launcher")
        await pilot.pause()
        [(_, refresh, _)] = [c for c in MempaCommands(app.screen)._commands() if c[0].startswith("Launcher: Refresh")]
        await refresh()
        await _settle(app, pilot)
        assert not [n for n in app._notifications if n.severity == "error"]


def test_mempa_tui_opens_the_app_with_the_folders_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[AppSettings] = []

    def fake_run(self: MempaApp) -> None:
        opened.append(self.settings)

    monkeypatch.setattr(MempaApp, "run", fake_run)
    code = main(["tui", "--worlds", str(WORLDS), "--models", str(tmp_path / "m"), "--saves", str(tmp_path / "s"),
                 "--local-memory", str(tmp_path / "lm")])
    assert code == 0
    assert opened == [AppSettings(worlds_dir=WORLDS, models_dir=tmp_path / "m", saves_dir=tmp_path / "s",
                                  local_memory_dir=tmp_path / "lm")]


def _tool_turn(i: int) -> list[object]:
    call = ExecutedCall(call_id=f"c{i}", tool="mcp_state_document_read", arguments={"document_id": f"doc_{i:04d}"},
                        status=CallStatus.EXECUTED, result=f"result of call {i}\nsecond line {i}")
    return [UserMessageEvent(turn_index=i, text=f"question {i}"), ToolCallEvent(turn_index=i, call=call),
            PAReplyEvent(turn_index=i, text=f"answer {i}")]


async def test_a_long_live_transcript_is_appended_without_rebuilding_and_scrolls(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """300 turns with a tool call each arrive live: nothing is rebuilt, every call is its own
    collapsible (one opens alone; e opens all), and the view scrolls to both ends."""
    rebuilds: list[int] = []
    original = TranscriptView.replay

    def counting_replay(self: TranscriptView, *args: Any, **kwargs: Any) -> None:
        rebuilds.append(1)
        original(self, *args, **kwargs)

    monkeypatch.setattr(TranscriptView, "replay", counting_replay)
    app = env.app()
    async with app.run_test(size=(120, 40)) as pilot:
        entry = app.book.add(RunRequest(user="R", memory="file", profile="scripted", repeats=1))
        entry.run_id, entry.state = RUN_ID, "running"
        entry.memory_origin = "live"  # keeps the view from reading a checkpoint that does not exist
        await app.show_session(entry.key)
        await pilot.pause()
        log = app.screen.query_one(TranscriptView)
        assert rebuilds == [1] and log.lines_written == 0
        turns = 300
        for i in range(turns):
            for event in _tool_turn(i):
                item = StepEvent(run_id=RUN_ID, step_id="R-s1", event=event)
                entry.apply(item)
                app.publish(entry.key, item)
        await pilot.pause()
        assert rebuilds == [1]  # nothing was redrawn from scratch
        assert log.lines_written == 1 + 3 * turns  # the step rule, then one line or call per event
        calls = log.calls
        assert len(calls) == turns and all(c.collapsed for c in calls)
        assert log.plain_text().endswith(f"PA   answer {turns - 1}")

        await pilot.pause()
        assert log.max_scroll_y > 0 and log.scroll_y == log.max_scroll_y  # followed the newest line
        assert log.shown_text().rstrip().endswith(f"PA   answer {turns - 1}")
        log.scroll_home(animate=False)
        await pilot.pause()
        assert log.scroll_y == 0
        assert "question 0" in log.render_line(1).text

        log.focus()
        for _ in range(4):
            await pilot.press("j")  # select calls 0..3 (brought into view)
        await pilot.press("enter")
        await pilot.pause()
        assert log.selected == 3 and [i for i, c in enumerate(log.calls) if not c.collapsed] == [3]
        assert "second line 3" in log.shown_text() and "second line 4" not in log.shown_text()
        # a click on call 7's title line opens it too
        fold = log.calls[7]
        await pilot.click(TranscriptView, offset=(4, fold.start - log.scroll_y))
        await pilot.pause()
        assert [i for i, c in enumerate(log.calls) if not c.collapsed] == [3, 7]

        await pilot.press("e")
        await pilot.pause()
        assert not any(c.collapsed for c in log.calls)
        assert f"second line {turns - 1}" in log.shown_text()
        log.scroll_end(animate=False)
        await pilot.pause()
        assert log.scroll_y == log.max_scroll_y > 0
        assert f"answer {turns - 1}" in log.render_line(log.scrollable_content_region.height - 1).text

        app.screen.show_run(entry.key)  # a run switch rebuilds once, in one batch
        await pilot.pause()
        assert rebuilds == [1, 1] and len(log.calls) == turns and log.lines_written == 1 + 3 * turns


async def test_the_launcher_starts_one_run_per_chosen_combination(env: Env) -> None:
    app = env.app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, LauncherScreen)
        memories = screen.query_one("#memory", SelectionList)
        memories.deselect_all()
        await pilot.pause()
        assert screen.requests() == []
        # the notification lands a message pass or two later
        await until(pilot, lambda: any("tick at least one memory" in m for _, m in _notifications(app)))
        for field, values in (("user", ["R"]), ("memory", ["file", "none"]), ("profile", ["scripted"])):
            picks = screen.query_one(f"#{field}", SelectionList)
            picks.deselect_all()
            for value in values:
                picks.select(value)
        screen.query_one("#repeats", Select).value = 2
        await pilot.pause()
        requests = screen.requests()
        assert sorted((r.key, r.repeats) for r in requests) == [("R-file-scripted-s0", 2), ("R-none-scripted-s0", 2)]
        assert screen.query_one("#quick", Checkbox).value  # on by default, but R's timeline names no quick list
        assert not any(r.slice or r.quick for r in requests)
        assert "2 run(s) chosen" in str(screen.query_one("#run-count", Static).render())


async def test_the_session_view_exports_its_transcript_as_markdown(tmp_path: Path) -> None:
    from test_tui_snapshots import _fill

    folders = make_folders(tmp_path)
    app = MempaApp(folders.settings)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("x")  # launcher: no such key; session: nothing to export yet
        entry = app.book.add(RunRequest(user="R", memory="file", profile="scripted", repeats=1))
        await app.show_session(entry.key)
        await pilot.press("x")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, SessionScreen) and screen.last_export is None
        _fill(entry)
        await app.show_session(entry.key)
        await pilot.press("x")
        await pilot.pause()
        assert screen.last_export is not None
        assert screen.last_export.parent == folders.settings.saves_dir / "R-file-scripted-s0"
        text = screen.last_export.read_text(encoding="utf-8")
    assert text.startswith("# Session transcript: R-file-scripted-s0")
    assert "## R-s2" in text
    assert "**User:** What did Dana want about the venue?" in text
    assert "- IX `autonomy_level` = **Reactive**" in text
    assert "- tool `email_message_send`" in text and "**held** `held_0001`" in text
    assert "- consent `held_0001`: approved" in text
    assert "0.91 She wants outgoing mail shown before it is sent." in text
    assert "**Step completed**" in text


async def test_notifications_show_their_text_as_written_never_as_markup(env: Env) -> None:
    app = env.app()
    async with app.run_test(size=(120, 40)) as pilot:
        hint = 'install the embedded extra: pip install -e ".[embedded]"'
        app.screen.notify(hint, severity="error")  # a screen's notify goes through the app's
        await pilot.pause()
        shown = list(app._notifications)[-1]
        assert shown.message == hint and shown.markup is False
