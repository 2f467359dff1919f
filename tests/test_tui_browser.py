"""Run browser screen (issue 16), driven with a pilot over runs stored by the scripted model.

Two runs of user R are played first through the app's engine facade (File memory with two repeats,
No Memory probing from its checkpoints); then the app opens the browser, picks a run, a session and
a probe repeat, filters the probes, and the content shown is checked against the store. Snapshots
at 80x24 and 160x48 are shot once the tables and the detail (memory included) are loaded.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from test_tui_support import (
    TuiFolders,
    fixed_scorer,
    make_folders,
    run_responder,
    settle,
    until,
    write_profile,
)
from textual.pilot import Pilot
from textual.widgets import Collapsible, DataTable, Select, TabbedContent
from textual.widgets._collapsible import CollapsibleTitle

from mempa_tui.llm import ScriptedModelServer
from mempa_tui.store import RunStatus
from mempa_tui.tui import MempaApp, RunnerOptions, RunRequest, RunService
from mempa_tui.tui.commands import MempaCommands
from mempa_tui.tui.screens.browser import RUN_COLUMNS, STEP_COLUMNS, BrowserScreen, CallFold
from mempa_tui.tui.screens.dashboard import DashboardScreen
from mempa_tui.tui.screens.help import HelpScreen
from mempa_tui.tui.screens.session import SessionScreen
from mempa_tui.tui.widgets import RunCard, TranscriptView

FILE_RUN = "R-file-scripted-s0"
NONE_RUN = "R-none-scripted-s0"
PROBE = "R-final-work-verbosity"
CONSOLIDATES: dict[str, Any] = {"consolidate_at_tokens": 800, "consolidate_to_tokens": 700}
"""File memory's thresholds for the stored File memory run: its PA prompt reaches about 1,100 tokens."""


@dataclass
class Env:
    """The app's folders with the stored runs, and the scripted server."""

    folders: TuiFolders
    server: ScriptedModelServer

    def app(self, mode: str = "browser") -> MempaApp:
        return MempaApp(self.folders.settings, options=RunnerOptions(scorer=fixed_scorer, resamples=50),
                        initial_mode=mode)


async def _store_runs(folders: TuiFolders) -> None:
    service = RunService(folders.settings, RunnerOptions(scorer=fixed_scorer, resamples=50))
    try:
        # File memory consolidates on this short timeline (below the paper's thresholds), so its
        # health reads ok and its memory holds a MEMORY.md (one that never did reads BROKEN, issue 12)
        for memory, repeats, options in (("file", 2, CONSOLIDATES), ("none", 1, {})):
            outcome = await service.execute(
                RunRequest(user="R", memory=memory, profile="scripted", repeats=repeats, memory_options=options),
                lambda item: None, lambda line: None,
            )
            assert outcome.status is RunStatus.COMPLETED, outcome
    finally:
        await service.aclose()


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A saves folder with both runs, made once (each test copies it)."""
    root = tmp_path_factory.mktemp("browser-runs")

    async def make() -> None:
        async with ScriptedModelServer(run_responder) as server:
            folders = make_folders(root)
            write_profile(server.profile(context_window=131072), folders.settings.models_dir)
            await _store_runs(folders)

    asyncio.run(make())
    return root


@pytest.fixture
async def env(tmp_path: Path, stored: Path) -> AsyncIterator[Env]:
    async with ScriptedModelServer(run_responder) as server:
        folders = make_folders(tmp_path)
        shutil.copytree(stored / "saves", folders.settings.saves_dir)
        shutil.copytree(stored / "local_memory", folders.settings.local_memory_dir)
        write_profile(server.profile(context_window=131072), folders.settings.models_dir)
        yield Env(folders, server)


def _browser(app: MempaApp) -> BrowserScreen:
    screen = app.screen
    assert isinstance(screen, BrowserScreen), screen
    return screen


async def _loaded(app: MempaApp, pilot: Pilot[None]) -> BrowserScreen:
    screen = _browser(app)
    await until(pilot, lambda: screen.runs is not None)
    await settle(app, pilot)
    return screen


def _table_keys(table: DataTable[str]) -> list[str]:
    return [str(row.value) for row in table.rows]


async def _pick(pilot: Pilot[None], table: DataTable[str], key: str) -> None:
    table.focus()
    table.move_cursor(row=_table_keys(table).index(key))
    await pilot.press("enter")


async def test_runs_steps_and_a_probe_in_full(env: Env) -> None:
    app = env.app()
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _loaded(app, pilot)
        runs = screen.query_one("#browser-runs", DataTable)
        assert set(_table_keys(runs)) == {FILE_RUN, NONE_RUN}, (screen.runs, list(env.folders.settings.saves_dir.iterdir()))
        row = [str(c) for c in runs.get_row(FILE_RUN)]
        assert row[:7] == [FILE_RUN, "completed", "ok", "R", "file", "scripted", "whole timeline"]
        none_row = [str(c) for c in runs.get_row(NONE_RUN)]
        assert none_row[6] == "probes only (whole timeline)" and none_row[2] == "n/a"

        await _pick(pilot, runs, FILE_RUN)
        await until(pilot, lambda: screen.listing is not None)
        await settle(app, pilot)
        assert screen.query_one(TabbedContent).active == "tab-steps"
        listing = screen.listing
        assert listing is not None
        steps = [f"step:{s.step_id}" for s in listing.steps]
        probes = [f"probe:{p.probe_id}:{p.repeat}" for p in listing.probes]
        assert steps and screen.row_keys == steps + probes
        assert f"probe:{PROBE}:1" in probes and f"probe:{PROBE}:2" in probes  # each repeat is a row
        assert "memory health" in str(screen.query_one("#steps-head").render())

        # a session in full: its stored transcript, calls and the memory after it
        session = listing.steps[0]
        await _pick(pilot, screen.query_one("#browser-steps", DataTable), f"step:{session.step_id}")
        await until(pilot, lambda: screen.memory_view is not None)
        await settle(app, pilot)
        assert screen.query_one(TabbedContent).active == "tab-detail"
        detail = screen.detail
        assert detail is not None and detail.step_id == session.step_id and detail.calls
        text = screen.query_one(TranscriptView).plain_text()
        assert "Could you look into this for me please?" in text and "Here is what I found" in text
        side = screen.side_text()
        assert f"Model calls ({len(detail.calls)})" in str(
            screen.query_one("#detail-calls-box").title)
        assert "checkpoint after step 1 (R-s1) of R-file-scripted-s0" in side  # the stepper's numbering

        # the change event: no evidence stored, said so (not "no turn played yet"); the checkpoint
        # in the stepper's numbering (1-based step position)
        await pilot.press("escape")
        await _pick(pilot, screen.query_one("#browser-steps", DataTable), "step:R-ev1")
        await until(pilot, lambda: "checkpoint after step 3 (R-ev1) of R-file-scripted-s0" in screen.side_text())
        side = screen.side_text()
        assert "No turn played yet" not in side and "change event replays its fixed transcript" in side

        # a probe repeat in full: the IX selection, the target and the scores with reasons
        await pilot.press("escape")
        assert screen.query_one(TabbedContent).active == "tab-steps"
        await _pick(pilot, screen.query_one("#browser-steps", DataTable), f"probe:{PROBE}:2")
        await until(pilot, lambda: screen.memory_view is not None)
        await settle(app, pilot)
        detail = screen.detail
        assert detail is not None and (detail.step_id, detail.repeat) == (PROBE, 2)
        side = screen.side_text()
        assert "IX selection: Terse" in side
        assert f"target: {detail.target} → {detail.outcome}" in side
        assert "BRS 4  judge: fixed in the TUI tests" in side and "PRS 5  user: fixed" in side
        assert "where the probe started: checkpoint after step " in side, side
        assert "Evidence this turn" in side
        assert "IX verbosity = Terse" in screen.query_one(TranscriptView).plain_text()

        # ] opens the next row in full without going back to the list
        await pilot.press("right_square_bracket")
        await until(pilot, lambda: screen.detail is not None and screen.detail is not detail)
        await settle(app, pilot)
        assert screen.detail is not None and (screen.detail.step_id, screen.detail.repeat) != (PROBE, 2)


async def test_a_model_call_opens_to_its_prompt_and_reply(env: Env) -> None:
    """Issue 16: each stored call is a fold titled with its role, tokens and time; opening one
    reads that call's prompt messages and reply from the store (in a worker) and shows them."""
    app = env.app()
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _loaded(app, pilot)
        screen.open_run(FILE_RUN, "step:R-s1")
        await until(pilot, lambda: screen.memory_view is not None)
        await settle(app, pilot)
        detail = screen.detail
        assert detail is not None and detail.calls
        folds = list(screen.query(CallFold))
        assert len(folds) == len(detail.calls)
        side = screen.side_text()
        assert "not stored" not in side and "not its messages" not in side  # the old note is gone
        assert not any(f.loaded for f in folds)  # nothing read before a call is opened
        pa = next(f for f in folds if f.line.role == "pa")
        assert f"pa · prompt {pa.line.prompt_tokens} (reused {pa.line.reused_prefix_tokens})" in str(
            pa.query_one(CollapsibleTitle).render())
        # open the calls box, then the PA call, with the keyboard
        screen.query_one("#detail-calls-box", Collapsible).query_one(CollapsibleTitle).focus()
        await pilot.press("enter")
        pa.query_one(CollapsibleTitle).focus()
        await pilot.press("enter")
        await until(pilot, lambda: pa.loaded)
        await settle(app, pilot)
        assert not pa.collapsed and [f for f in folds if f.loaded] == [pa]
        shown = str(pa.query_one(".call-text").render())
        assert "[1] system:" in shown and "Could you look into this for me please?" in shown
        assert "tools offered: " in shown and "IX_" in shown and "-- reply (finish:" in shown


async def test_c_opens_the_model_calls_list_from_the_keyboard_and_the_footer_names_it(env: Env) -> None:
    """Issue 12 follow-up: the Detail tab's "Model calls (N)" list opened only with the mouse (or by
    tabbing to its title). ``c`` opens it on the Detail tab with its first call focused (enter
    opens that call), a second ``c`` closes it; the footer and the ``?`` list name the key."""
    app = env.app()
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _loaded(app, pilot)
        screen.open_run(FILE_RUN, "step:R-s1")
        await until(pilot, lambda: screen.memory_view is not None)
        await settle(app, pilot)
        box = screen.query_one("#detail-calls-box", Collapsible)
        assert box.collapsed
        assert any(b.binding.key == "c" and b.binding.description == "Model calls"
                   for b in screen.active_bindings.values() if b.binding.show)
        await pilot.press("c")
        first = screen.query(CallFold).first()
        await until(pilot, lambda: app.focused is first.query_one(CollapsibleTitle))
        assert not box.collapsed and screen.query_one("#browser-tabs", TabbedContent).active == "tab-detail"
        await pilot.press("enter")
        await until(pilot, lambda: first.loaded)
        assert not first.collapsed
        await pilot.press("c")
        await pilot.pause()
        assert box.collapsed


async def test_probe_filters(env: Env) -> None:
    app = env.app()
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _loaded(app, pilot)
        screen.open_run(FILE_RUN)
        await until(pilot, lambda: screen.listing is not None)
        await settle(app, pilot)
        listing = screen.listing
        assert listing is not None
        every = len(screen.row_keys)
        screen.query_one("#f-attribute", Select).value = "verbosity"
        await pilot.pause()
        assert screen.row_keys and all(k.startswith(f"probe:{PROBE}:") for k in screen.row_keys)
        assert "probe repeat(s) match the filter" in str(screen.query_one("#browser-steps", DataTable).border_title)
        screen.query_one("#f-outcome", Select).value = "wrong"
        await pilot.pause()
        wrong = [p for p in listing.probes if p.attribute == "verbosity" and p.outcome == "wrong"]
        assert len(screen.row_keys) == len(wrong)
        screen.query_one("#f-attribute", Select).clear()
        screen.query_one("#f-outcome", Select).value = "correct"
        screen.query_one("#f-context", Select).value = "personal"
        await pilot.pause()
        kept = [p for p in listing.probes if p.outcome == "correct" and p.context == "personal"]
        assert screen.row_keys == [f"probe:{p.probe_id}:{p.repeat}" for p in kept]
        screen.query_one("#f-context", Select).clear()
        screen.query_one("#f-outcome", Select).clear()
        dimension = listing.probes[0].dimension
        screen.query_one("#f-dimension", Select).value = dimension
        await pilot.pause()
        assert screen.row_keys == [f"probe:{p.probe_id}:{p.repeat}" for p in listing.probes
                                   if p.dimension == dimension]
        await pilot.press("0")  # clear every filter
        await pilot.pause()
        assert len(screen.row_keys) == every

        # the user filter on the Runs tab
        await pilot.press("1")
        picker = screen.query_one("#f-user", Select)
        picker.value = "R"
        await pilot.pause()
        assert len(_table_keys(screen.query_one("#browser-runs", DataTable))) == 2


async def test_keys_reach_every_control_and_the_help_lists_b(env: Env) -> None:
    app = env.app("dashboard")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert any(r.key == "b" and r.binding_id == "dashboard.browse" for r in app.screen.rows)
        await pilot.press("escape")
        await pilot.press("l")
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert any(r.key == "b" and r.binding_id == "app.browser" for r in app.screen.rows)
        await pilot.press("escape")
        await pilot.press("b")
        screen = await _loaded(app, pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        ids = {r.binding_id for r in app.screen.rows}
        assert {"browser.runs", "browser.steps", "browser.detail", "browser.filters", "browser.clear",
                "browser.prev", "browser.next", "browser.expand", "browser.back"} <= ids
        await pilot.press("escape")
        # Tab on the Runs tab: the tab bar, the user filter, the runs table
        seen: list[str] = []
        for _ in range(4):
            await pilot.press("tab")
            seen.append(app.focused.id or type(app.focused).__name__ if app.focused else "")
        assert "f-user" in seen and "browser-runs" in seen
        await pilot.press("2")
        seen = []
        for _ in range(7):
            await pilot.press("tab")
            seen.append(app.focused.id or type(app.focused).__name__ if app.focused else "")
        for control in ("f-context", "f-attribute", "f-dimension", "f-outcome", "browser-steps"):
            assert control in seen, seen
        screen.open_run(FILE_RUN, f"probe:{PROBE}:1")
        await until(pilot, lambda: screen.memory_view is not None)
        await settle(app, pilot)
        seen = []
        for _ in range(6):
            await pilot.press("tab")
            seen.append(app.focused.id or type(app.focused).__name__ if app.focused else "")
        assert "detail-transcript" in seen and "CollapsibleTitle" in seen, seen
        await pilot.press("f")
        assert app.focused is not None and app.focused.id == "f-context"


async def test_the_focused_pane_is_marked(env: Env) -> None:
    """A fresh user could not tell which pane had the keys: the focused table, transcript or side
    panel has a heavy accent rule on top; the others a thin one (the cue moves nothing)."""
    app = env.app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _loaded(app, pilot)

        def rule(selector: str) -> str:
            return str(screen.query_one(selector).styles.border_top[0])

        screen.query_one("#browser-runs").focus()
        await pilot.pause()
        assert rule("#browser-runs") == "heavy"
        screen.query_one("#f-user").focus()
        await pilot.pause()
        assert rule("#browser-runs") == "solid"
        screen.open_run(FILE_RUN, f"probe:{PROBE}:1")
        await until(pilot, lambda: screen.memory_view is not None)
        await settle(app, pilot)
        screen.query_one("#detail-transcript").focus()
        await pilot.pause()
        assert (rule("#detail-transcript"), rule("#detail-side")) == ("heavy", "solid")
        screen.query_one("#detail-calls-box CollapsibleTitle").focus()
        await pilot.pause()
        assert (rule("#detail-transcript"), rule("#detail-side")) == ("solid", "heavy")
        await pilot.press("1")
        await pilot.pause()
        assert app.focused is screen.query_one("#browser-runs") and rule("#browser-runs") == "heavy"


def _fits(table: DataTable[str]) -> list[str]:
    """The table's column labels, after checking that every column lies wholly in its width."""
    used = sum(c.get_render_width(table) for c in table.ordered_columns)
    assert used <= table.scrollable_content_region.width, (used, table.scrollable_content_region)
    return [str(c.label) for c in table.ordered_columns]


async def test_narrow_tables_leave_out_what_the_id_repeats_and_keep_ids_status_and_scores(env: Env) -> None:
    """At 80x24 the Runs and Steps tables cut their last columns (a fresh user saw no probe counts
    and no status): they leave out what the run or probe id already says, so what stays fits; at
    160 columns every column is back, and a resize fits the table again."""
    app = env.app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _loaded(app, pilot)
        runs = screen.query_one("#browser-runs", DataTable)
        assert _fits(runs) == ["run", "status", "health", "steps", "probes"]
        assert [str(c) for c in runs.get_row(FILE_RUN)] == [FILE_RUN, "completed", "ok", "3/3", "6/6"]
        screen.open_run(FILE_RUN)
        await until(pilot, lambda: screen.listing is not None)
        await settle(app, pilot)
        steps = screen.query_one("#browser-steps", DataTable)
        assert _fits(steps) == ["#", "step", "outcome", "selection", "target", "BRS", "PRS"]
        await pilot.resize_terminal(160, 48)
        await settle(app, pilot)
        assert _fits(steps) == list(STEP_COLUMNS)
        await pilot.press("1")
        await settle(app, pilot)
        assert _fits(runs) == list(RUN_COLUMNS)


async def test_dashboard_opens_a_finished_run_with_its_stored_transcript(env: Env) -> None:
    """Issue 16.2: a run resumed after it had finished plays nothing, so no live event arrives;
    its session view shows the stored transcript, and ``b`` opens it in the browser."""
    app = env.app("dashboard")
    async with app.run_test(size=(160, 48)) as pilot:
        dashboard = app.screen
        assert isinstance(dashboard, DashboardScreen)
        entry = dashboard.start_run(RunRequest(user="R", memory="file", profile="scripted", repeats=2,
                                                memory_options=CONSOLIDATES))
        assert entry is not None
        await until(pilot, lambda: entry.state == "completed")
        await settle(app, pilot)
        assert not entry.events  # nothing was left to play
        app.screen.query_one(RunCard).focus()
        await pilot.press("v")
        await until(pilot, lambda: isinstance(app.screen, SessionScreen))
        await settle(app, pilot)
        text = app.screen.query_one(TranscriptView).plain_text()
        assert "Could you look into this for me please?" in text

        texts = {text for text, _, _ in MempaCommands(app.screen)._commands()}
        assert {"Open run browser", f"Browse run {FILE_RUN}"} <= texts

        await pilot.press("d")
        await pilot.pause()
        app.screen.query_one(RunCard).focus()
        await pilot.press("b")
        await until(pilot, lambda: isinstance(app.screen, BrowserScreen))
        screen = _browser(app)
        await until(pilot, lambda: screen.listing is not None)
        assert screen.listing is not None and screen.listing.run.id == FILE_RUN


def _snapshot_app(env_root: Path, stored: Path) -> MempaApp:
    folders = make_folders(env_root)
    shutil.copytree(stored / "saves", folders.settings.saves_dir)
    shutil.copytree(stored / "local_memory", folders.settings.local_memory_dir)
    return MempaApp(folders.settings, initial_mode="browser")


async def _filled(pilot: Pilot[None], view: str) -> None:
    """Wait until the Runs tab is filled; then for ``steps`` the run's steps, for ``probe`` one
    probe repeat with the memory at its checkpoint."""
    app = pilot.app
    assert isinstance(app, MempaApp)
    screen = _browser(app)
    await until(pilot, lambda: screen.runs is not None)
    await settle(app, pilot)
    if view == "runs":
        return
    screen.open_run(FILE_RUN, f"probe:{PROBE}:1" if view == "probe" else None)
    await until(pilot, lambda: screen.listing is not None)
    await settle(app, pilot)
    if view == "probe":
        await until(pilot, lambda: screen.memory_view is not None)
        await settle(app, pilot)


@pytest.mark.parametrize(("size", "view"), [
    ((80, 24), "runs"), ((80, 24), "steps"), ((80, 24), "probe"),
    ((160, 48), "runs"), ((160, 48), "steps"), ((160, 48), "probe"),
], ids=["runs-80x24", "steps-80x24", "probe-80x24", "runs-160x48", "steps-160x48", "probe-160x48"])
def test_browser_snapshot(snap_compare: Any, tmp_path: Path, stored: Path, size: tuple[int, int],
                          view: str) -> None:
    """The Runs tab, a run's Steps, and a probe repeat in full, once every table and the memory
    are loaded (no tmp path is shown: the screen names runs, never folders)."""
    app = _snapshot_app(tmp_path, stored)

    async def filled(pilot: Pilot[None]) -> None:
        await _filled(pilot, view)

    assert snap_compare(app, terminal_size=size, run_before=filled)


async def test_health_plays_evidence_scores_and_floored_probes_of_a_hand_made_store(tmp_path: Path) -> None:
    """The hand-made store of the browse tests: a BROKEN memory is marked on its row and in red on
    its steps; a play says which seat; a File memory probe shows the evidence it was handed with
    its score and what the memory held; the floored filter finds No Memory's floored repeat; a
    snapshot that cannot be rebuilt is a note, not a crash."""
    from test_browse_support import FILE_RUN as HAND_FILE
    from test_browse_support import MEM0AI_RUN, PLAY_RUN
    from test_browse_support import NONE_RUN as HAND_NONE
    from test_browse_support import seed

    folders = make_folders(tmp_path)
    folders.settings.saves_dir.mkdir(parents=True)
    await seed(folders.settings.saves_dir / "mempa.sqlite")
    app = MempaApp(folders.settings, initial_mode="browser")
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _loaded(app, pilot)
        runs = screen.query_one("#browser-runs", DataTable)
        cells = {key: [str(c) for c in runs.get_row(key)] for key in _table_keys(runs)}
        assert cells[MEM0AI_RUN][2] == "BROKEN" and cells[HAND_FILE][2] == "ok"
        assert cells[PLAY_RUN][6] == "play"  # its id says so (this hand-made one stores no seat)

        screen.open_run(MEM0AI_RUN, "step:R-s1")
        await until(pilot, lambda: screen.memory_view is not None)
        await settle(app, pilot)
        head = screen.query_one("#steps-head")
        assert head.has_class("-broken") and "66/66 malformed" in str(head.render())
        assert "could not rebuild the mem0 memory" in screen.side_text()

        screen.open_run(HAND_FILE, "probe:R-final-work-verbosity:1")
        await until(pilot, lambda: screen.memory_view is not None and screen.detail is not None
                    and screen.detail.run_id == HAND_FILE)
        await settle(app, pilot)
        side = screen.side_text()
        assert "0.91 prefers terse replies" in side  # the evidence item with its retrieval score
        assert "- The user prefers terse replies at work." in side  # the memory at the checkpoint
        assert "BRS 4  judge: judge: matches" in side
        assert "Model calls (1)" in str(screen.query_one("#detail-calls-box").title)
        assert "prompt 120 (reused 100) · completion 9 · 0.25s" in side

        screen.open_run(HAND_NONE)
        await until(pilot, lambda: screen.listing is not None and screen.listing.run.id == HAND_NONE)
        await settle(app, pilot)
        screen.query_one("#f-outcome", Select).value = "floored"
        await pilot.pause()
        assert screen.row_keys == ["probe:R-final-work-solution_breadth:2"]


async def _scale_thresholds(saves: Path) -> None:
    """Store the File run as a run on a small window would be: thresholds scaled to 13,401 ->
    6,700 in its ``file_memory_budget`` and none set by ``--memory-option`` (the quick start)."""
    import json

    from mempa_tui.store import RunStore

    async with RunStore(saves / "mempa.sqlite") as store:
        record = await store.get_run(FILE_RUN)
        assert record is not None
        config = json.loads(record.config_json)
        config["memory_options"] = {}
        config["file_memory_budget"] = {
            "consolidate_at_tokens": 13401, "consolidate_to_tokens": 6700, "scaled": 1, "set_by_option": 0,
            "pa_window": 32768, "tool_tokens": 5166, "base_prompt_tokens": 580,
        }
        await store.update_run(FILE_RUN, config=(json.dumps(config), record.config_hash))


async def test_the_memory_panel_shows_the_runs_own_thresholds_and_a_reference_runs_donors(env: Env) -> None:
    """Issue 12 (a fresh user): the memory panel showed File memory's defaults (20000 / 10000)
    for a run that consolidated at 13,401 -> 6,700; it shows the run's stored values, worded as
    the run's settings line words them, and a No Memory run shows its donor's."""
    from textual.widgets import Static

    from mempa_tui.tui.screens.launcher import LauncherScreen

    await _scale_thresholds(env.folders.settings.saves_dir)
    scaled = "File memory consolidates at 13,401 -> 6,700 tokens of PA prompt (scaled from the paper's"
    app = env.app("launcher")
    async with app.run_test(size=(160, 48)) as pilot:
        launcher = app.screen
        assert isinstance(launcher, LauncherScreen)
        await settle(app, pilot)
        rows = [s.run.id for s in launcher.saved]
        table = launcher.query_one("#saved-runs", DataTable)
        table.focus()
        table.move_cursor(row=rows.index(FILE_RUN))
        await pilot.press("v")
        await until(pilot, lambda: isinstance(app.screen, SessionScreen))
        session = app.screen

        def memory_text() -> str:
            return str(session.query_one("#memory-body", Static).content)

        await until(pilot, lambda: scaled in memory_text() and "consolidate_at_tokens" in memory_text())
        await settle(app, pilot)
        text = memory_text()
        assert "consolidate_at_tokens=13401 consolidate_to_tokens=6700" in text, text  # the rebuilt memory's
        assert "20000" not in text and "10000" not in text, text

        await app.switch_mode("browser")
        screen = await _loaded(app, pilot)
        screen.open_run(NONE_RUN, f"probe:{PROBE}:1")
        await until(pilot, lambda: screen.memory_view is not None and screen.detail is not None
                    and screen.detail.run_id == NONE_RUN)
        await settle(app, pilot)
        assert f"donor's {scaled}" in screen.side_text(), screen.side_text()
        screen.open_run(FILE_RUN, f"probe:{PROBE}:1")
        await until(pilot, lambda: screen.memory_view is not None and screen.detail is not None
                    and screen.detail.run_id == FILE_RUN)
        await settle(app, pilot)
        assert scaled in screen.side_text()
