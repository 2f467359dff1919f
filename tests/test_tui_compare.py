"""The app's probe-by-probe comparison (issue 16, "Compare probe by probe"): pick runs of one user
by keys, see per probe and repeat each run's selection, target, BRS, PRS and the evidence its
memory handed the PA side by side, filter ("file right, none wrong", or a typed clause), export
the shown rows as Markdown; runs of different users are refused with the engine's message; the
Results screen opens it with its runs ticked. Data: ``test_browse_support.seed`` (File memory
right everywhere with evidence naming the setting, No Memory wrong then floored on
``solution_breadth``, mem0 with a broken memory).
"""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Any

import anyio
import pytest
from rich.console import Console
from rich.text import Text
from test_browse_support import FILE_RUN, MEM0AI_RUN, NONE_RUN, WORLDS, seed
from test_tui_support import make_folders
from textual.binding import Binding
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Select, Static
from textual.worker import WorkerState

from mempa_tui.runner import RunConfig
from mempa_tui.store import ProbeResultRecord, RunRecord, RunStatus, RunStore, utc_now
from mempa_tui.tui import MempaApp, RunnerOptions
from mempa_tui.tui.engine import where_choices
from mempa_tui.tui.screens.compare import CompareScreen, cell_text
from mempa_tui.tui.screens.help import HelpScreen
from mempa_tui.tui.screens.results import ResultsScreen

OTHER_RUN = "Q-file-scripted-s0"


async def _seed_other_user(db: Path) -> None:
    """One File memory run of another user (Q) with one probe result: not comparable with R's."""
    async with RunStore(db) as store:
        config = RunConfig(user="Q", profile="scripted", memory="file", repeats=1, worlds_dir=WORLDS)
        await store.create_run(RunRecord(
            id=OTHER_RUN, user="Q", profile="scripted", memory="file", seed=0, repeats=1,
            config_json=config.model_dump_json(), config_hash=config.config_hash(),
            status=RunStatus.COMPLETED, total_probes=1))
        await store.save_probe_result(OTHER_RUN, ProbeResultRecord(
            probe_id="Q-final-work-verbosity", repeat=1, kind="final", context="work", attribute="verbosity",
            target="Terse", selection="Terse", status="completed", brs=4, prs=5,
            started_at=utc_now(), finished_at=utc_now()))


def _app(tmp_path: Path, *, mode: str = "launcher") -> MempaApp:
    folders = make_folders(tmp_path)
    folders.settings.saves_dir.mkdir(parents=True)
    return MempaApp(folders.settings, options=RunnerOptions(resamples=50), initial_mode=mode)


async def _seeded(app: MempaApp, *, other_user: bool = False) -> MempaApp:
    """``app`` with the runs of ``test_browse_support.seed`` (and user Q's run) in its saves folder."""
    db = app.settings.saves_dir / "mempa.sqlite"
    await seed(db)
    if other_user:
        await _seed_other_user(db)
    return app


async def _idle(app: MempaApp, pilot: Pilot[None]) -> None:
    """Wait until no worker is pending or running (worker states, no wall-clock deadline)."""
    with anyio.fail_after(600):  # a hang guard only
        while True:
            await pilot.pause()
            live = [w for w in app.workers if w.state in (WorkerState.PENDING, WorkerState.RUNNING)]
            if not live:
                return
            for worker in live:
                if worker.state is WorkerState.RUNNING:
                    await worker.wait()


async def _tick(app: MempaApp, pilot: Pilot[None], *run_ids: str) -> None:
    """Tick ``run_ids`` in the picker by keys, in that order (focus it, home, down, space ticks)."""
    screen = app.screen
    assert isinstance(screen, CompareScreen)
    picks = screen.query_one("#compare-runs")
    picks.focus()
    order = [c.run_id for c in screen.choices]  # the picker lists the choices in this order
    for run_id in run_ids:  # ticked in this order: the columns follow it
        await pilot.press("home", *["down"] * order.index(run_id), "space")


def _cells(table: DataTable[str]) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


def _text(screen: CompareScreen, selector: str) -> str:
    """What a Static shows, as plain text (a Rich table rendered 200 columns wide)."""
    content = screen.query_one(selector, Static).content
    if isinstance(content, Text):
        return content.plain
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(content)
    return console.export_text()


def test_where_choices_name_runs_by_their_condition() -> None:
    choices = where_choices([FILE_RUN, NONE_RUN], ["file", "none"])
    assert choices[0] == ("every probe repeat", "")
    assert ("file right, none wrong", "file right, none wrong") in choices
    assert ("none right, file wrong", "none right, file wrong") in choices
    same = where_choices(["A-file-x-s0", "A-file-x-s1"], ["file", "file"])
    assert ("#1 right, #2 wrong", "#1 right, #2 wrong") in same


async def test_compare_file_and_none_filter_and_export(tmp_path: Path) -> None:
    app = await _seeded(_app(tmp_path))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("C")  # the app's Compare key
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        await _idle(app, pilot)
        assert {c.run_id for c in screen.choices} >= {FILE_RUN, NONE_RUN, MEM0AI_RUN}
        await _tick(app, pilot, FILE_RUN, NONE_RUN)
        await pilot.press("c")
        await _idle(app, pilot)
        assert screen.comparison is not None and screen.comparison.run_ids == (FILE_RUN, NONE_RUN)
        table = screen.query_one("#compare-table", DataTable)
        assert [str(c.label) for c in table.ordered_columns] == ["Probe", "Rep", "Target", "#1 file", "#2 none"]
        rows = {(r[0], r[1]): r for r in _cells(table)}
        assert len(rows) == 4
        assert rows[("R-final-work-solution_breadth", "1")][2:] == ["Low", "Low ✓ 4/5", "High ✗ 2/3"]
        assert rows[("R-final-work-solution_breadth", "2")][4] == "High floored 1/3"
        evidence = _text(screen, "#compare-evidence")
        assert "The user prefers terse replies at work." in evidence
        assert "(the memory handed the PA nothing)" in evidence
        status = _text(screen, "#compare-status")
        assert f"#1 {FILE_RUN} (memory ok)" in status and "4 of 4 probe repeat(s)" in status

        await pilot.press("f")  # the first common filter after "every probe repeat"
        await pilot.pause()
        assert screen.query_one("#compare-where-choice", Select).value == "1"
        assert screen.where == "file right, none wrong"
        assert [(r.probe_id, r.repeat) for r in screen.shown] == [("R-final-work-solution_breadth", 1)]
        assert table.row_count == 1
        assert screen.query_one("#compare-where", Input).value == "file right, none wrong"

        await pilot.press("slash")  # a typed clause
        where = screen.query_one("#compare-where", Input)
        assert where.has_focus
        where.value = ""
        await pilot.press(*"#2 floored", "enter")  # none of the common filters' words
        await pilot.pause()
        assert screen.where == "#2 floored"
        assert [(r.probe_id, r.repeat) for r in screen.shown] == [("R-final-work-solution_breadth", 2)]
        assert where.has_focus  # the next letters type in the box, not the app's keys
        show = screen.query_one("#compare-where-choice", Select)
        assert show.value == "typed"
        assert [str(label) for label, value in show._options if value == "typed"] == ["typed: #2 floored"]

        await pilot.press("slash")
        where.value = ""
        await pilot.press(*"file is great", "enter")  # refused: the rows stay as they were
        await pilot.pause()
        assert screen.where == "#2 floored" and len(screen.shown) == 1
        assert "write RUN [not] right" in _text(screen, "#compare-status")
        await pilot.press("escape")

        await pilot.press("slash")
        where.value = ""
        await pilot.press(*"file right, none wrong", "enter")
        await pilot.pause()
        assert show.value == "1"  # a typed common filter shows under its own name
        await pilot.press("escape")  # leaves the box for the table
        assert table.has_focus
        await pilot.press("x")
        await _idle(app, pilot)
        path = screen.last_export
        assert path is not None and path.parent == app.settings.saves_dir and path.suffix == ".md"
        text = path.read_text(encoding="utf-8")
        assert text.startswith("# Probe-by-probe comparison where file right, none wrong")
        assert "| R-final-work-solution_breadth | 1 | Low | Low correct BRS 4 PRS 5 | High wrong BRS 2 PRS 3 |" in text
        assert "R-final-work-verbosity" not in text
        assert "> - The user prefers terse replies at work." in text
        assert any(str(path) in n.message for n in app._notifications)


async def test_compare_refuses_runs_of_another_user_with_the_engines_message(tmp_path: Path) -> None:
    app = await _seeded(_app(tmp_path, mode="compare"), other_user=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await _idle(app, pilot)
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        await _tick(app, pilot, FILE_RUN)
        await pilot.press("c")  # one run: refused before the engine
        await pilot.pause()
        assert "tick two or more runs" in _text(screen, "#compare-status")
        await _tick(app, pilot, OTHER_RUN)
        await pilot.press("c")
        await _idle(app, pilot)
        assert screen.comparison is None
        assert screen.refusal is not None and screen.refusal.startswith("compare runs of one user")
        status = _text(screen, "#compare-status")
        assert "not compared: compare runs of one user" in status and "is user Q" in status
        assert screen.query_one("#compare-table", DataTable).row_count == 0


async def test_results_opens_the_comparison_with_its_runs_and_a_broken_memory_marked(tmp_path: Path) -> None:
    app = await _seeded(_app(tmp_path, mode="results"))
    async with app.run_test(size=(120, 40)) as pilot:
        await _idle(app, pilot)
        assert isinstance(app.screen, ResultsScreen)
        await pilot.press("o")
        await _idle(app, pilot)
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        assert screen.comparison is not None
        assert set(screen.comparison.run_ids) == {FILE_RUN, NONE_RUN, MEM0AI_RUN}
        status = _text(screen, "#compare-status")
        assert "(memory BROKEN)" in status and f"{MEM0AI_RUN}: memory BROKEN" in status

        await pilot.press("question_mark")  # the key list names the app's Compare key and this screen's keys
        await pilot.pause()
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        keys = {(r.key, r.description) for r in help_screen.rows}
        assert {("C", "Compare"), ("c", "Compare"), ("f", "Filter"), ("/", "Type filter"), ("x", "Export")} <= keys
        await pilot.press("escape")


async def test_command_palette_offers_the_comparison(tmp_path: Path) -> None:
    from mempa_tui.tui.commands import MempaCommands

    app = await _seeded(_app(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await _idle(app, pilot)
        provider = MempaCommands(app.screen)
        names = [text for text, _command, _help in provider._commands()]
        assert "Compare runs probe by probe" in names
        await pilot.press("C")
        await _idle(app, pilot)
        assert isinstance(app.screen, CompareScreen)
        texts = {text for text, _command, _help in MempaCommands(app.screen)._commands()}
        for binding in CompareScreen.BINDINGS:  # every key of the screen is also a command
            assert isinstance(binding, Binding)
            key = binding.key_display or binding.key
            assert f"Compare: {binding.description} ({key})" in texts, binding


def test_cell_text_of_a_missing_run() -> None:
    assert cell_text(None) == "not stored"


def _snapshot(snap_compare: Any, tmp_path: Path, size: tuple[int, int]) -> bool:
    app = _app(tmp_path, mode="compare")
    asyncio.run(_seeded(app))

    async def compared(pilot: Pilot[None]) -> None:
        await _idle(app, pilot)
        await _tick(app, pilot, FILE_RUN, NONE_RUN)
        await pilot.press("c")
        await _idle(app, pilot)
        screen = app.screen
        assert isinstance(screen, CompareScreen) and screen.comparison is not None
        await pilot.press("f")  # file right, none wrong
        await pilot.pause()
        screen.query_one("#compare-table", DataTable).focus()
        await _idle(app, pilot)
        for _ in range(3):  # let the filled table and the evidence lay out before the shot
            await pilot.pause()

    return bool(snap_compare(app, terminal_size=size, run_before=compared))


def test_compare_snapshot_80x24(snap_compare: Any, tmp_path: Path) -> None:
    assert _snapshot(snap_compare, tmp_path, (80, 24))


def test_compare_snapshot_160x48(snap_compare: Any, tmp_path: Path) -> None:
    assert _snapshot(snap_compare, tmp_path, (160, 48))


async def test_tab_reaches_every_control_at_80x24(tmp_path: Path) -> None:
    """Keyboard-complete at 80x24 (issue 16.6): Tab walks picker, filter choice, typed filter,
    table and the evidence pane, and every one of them is on screen."""
    app = await _seeded(_app(tmp_path, mode="compare"))
    async with app.run_test(size=(80, 24)) as pilot:
        await _idle(app, pilot)
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        wanted = ["compare-runs", "compare-where-choice", "compare-where", "compare-table", "compare-evidence-box"]
        assert [w.id for w in screen.focus_chain] == wanted
        seen = []
        for _ in wanted:
            await pilot.press("tab")
            focused = app.focused
            assert focused is not None and focused.region.height > 0
            assert screen.region.contains_region(focused.region), focused
            seen.append(focused.id)
        assert sorted(seen) == sorted(wanted)


@pytest.mark.slow
@pytest.mark.timeout(600)
async def test_compare_demo_model_runs_file_right_none_wrong_and_export(tmp_path: Path) -> None:
    """Runs made by the demo model (User A's quick-start slice, File memory then No Memory probing
    from its checkpoints, as ``test_demo_memory_slice``): the app shows the probes File memory got
    right and No Memory wrong, each with the notes File memory handed the PA, and exports them."""
    from mempa_tui.llm import LLMClient, ScriptedModelServer
    from mempa_tui.runner import Runner
    from mempa_tui.runner._browse import compare_runs, filter_compare, parse_where
    from mempa_tui.tools import default_registry
    from mempa_tui.tui.demo import demo_profile, demo_responder

    worlds = Path(__file__).resolve().parent.parent / "worlds"
    folders = make_folders(tmp_path, worlds)
    folders.settings.saves_dir.mkdir(parents=True)
    ids: list[str] = []
    async with ScriptedModelServer(demo_responder) as server:
        client = LLMClient(demo_profile(server))  # the demo as shipped: File memory consolidates
        async with RunStore(folders.settings.saves_dir / "mempa.sqlite") as store:
            for memory in ("file", "none"):
                config = RunConfig(user="A", profile="demo", memory=memory, repeats=1, worlds_dir=worlds, slice=True)
                outcome = await Runner(config, store, client, default_registry(),
                                       memory_root=folders.settings.local_memory_dir, resamples=50).run()
                assert outcome.status is RunStatus.COMPLETED, memory
                ids.append(outcome.run_id)
            expected = filter_compare(await compare_runs(store, ids), parse_where("file right, none wrong", ids))
    assert expected, "the demo model's File memory must win some probe for this test to mean anything"

    app = MempaApp(folders.settings, options=RunnerOptions(resamples=50), initial_mode="compare")
    async with app.run_test(size=(160, 48)) as pilot:
        await _idle(app, pilot)
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        await _tick(app, pilot, *ids)
        await pilot.press("c")
        await _idle(app, pilot)
        assert screen.comparison is not None and screen.comparison.run_ids == tuple(ids)
        await pilot.press("f")  # the first common filter: file right, none wrong
        await pilot.pause()
        assert screen.where == "file right, none wrong"
        assert [(r.probe_id, r.repeat) for r in screen.shown] == [(r.probe_id, r.repeat) for r in expected]
        first = screen.shown[0]
        file_cell, none_cell = first.cells[ids[0]], first.cells[ids[1]]
        assert file_cell is not None and none_cell is not None
        assert file_cell.outcome == "correct" and none_cell.outcome == "wrong"
        evidence = _text(screen, "#compare-evidence")
        # File memory handed the PA its notes; No Memory handed nothing; both shown side by side
        assert file_cell.evidence.strip() and none_cell.evidence == ""
        assert file_cell.evidence.strip().splitlines()[0][:30] in evidence
        assert "(the memory handed the PA nothing)" in evidence
        await pilot.press("x")
        await _idle(app, pilot)
        assert screen.last_export is not None
        text = screen.last_export.read_text(encoding="utf-8")
        assert text.startswith("# Probe-by-probe comparison where file right, none wrong")
        assert all(f"## {r.probe_id} repeat {r.repeat}" in text for r in expected)


QUICK_RUN = "R-file-scripted-s0-quick"


async def _seed_quick_run(db: Path) -> None:
    """A File memory run of user R that played the quick start, with one probe result."""
    async with RunStore(db) as store:
        config = RunConfig(user="R", profile="scripted", memory="file", repeats=1, worlds_dir=WORLDS, quick=True)
        assert config.run_id == QUICK_RUN
        await store.create_run(RunRecord(
            id=QUICK_RUN, user="R", profile="scripted", memory="file", seed=0, repeats=1,
            config_json=config.model_dump_json(), config_hash=config.config_hash(),
            status=RunStatus.COMPLETED, total_probes=1))
        await store.save_probe_result(QUICK_RUN, ProbeResultRecord(
            probe_id="R-final-work-verbosity", repeat=1, kind="final", context="work", attribute="verbosity",
            target="Terse", selection="Terse", status="completed", brs=4, prs=5,
            started_at=utc_now(), finished_at=utc_now()))


async def test_a_quick_start_run_is_named_so_and_not_compared_with_a_whole_timeline_run(tmp_path: Path) -> None:
    """The picker and the refusal name the quick start (not "whole timeline"); the engine refuses
    to compare a quick-start run with a whole-timeline run of the same user; No Memory's
    played cell names its timeline."""
    from mempa_tui.tui.engine import compare_choices

    app = await _seeded(_app(tmp_path, mode="compare"))
    await _seed_quick_run(app.settings.saves_dir / "mempa.sqlite")
    choices = {c.run_id: c.timeline for c in await compare_choices(app.service)}
    assert choices[QUICK_RUN] == "quick start" and choices[NONE_RUN] == "whole timeline"
    played = {r.run_id: r.played for r in await app.service.browse_runs()}
    assert played[NONE_RUN] == "probes only (whole timeline)"
    async with app.run_test(size=(120, 40)) as pilot:
        await _idle(app, pilot)
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        await _tick(app, pilot, NONE_RUN, QUICK_RUN)
        await pilot.press("c")
        await _idle(app, pilot)
        assert screen.comparison is None and screen.refusal is not None
        assert f"{QUICK_RUN} played the quick start" in screen.refusal
        assert f"{NONE_RUN} played the whole timeline" in screen.refusal
    await app.service.aclose()


async def test_focus_stale_ticks_empty_export_evidence_and_sideways_scroll_at_80x24(tmp_path: Path) -> None:
    """Entering Compare focuses the run list on its first row; changed ticks mark the table as
    stale; the Results screen's preset says it replaced the ticks; exporting 0 rows is refused;
    e enlarges and focuses the titled evidence pane; shift+right scrolls the table at 80x24."""
    app = await _seeded(_app(tmp_path, mode="compare"))
    async with app.run_test(size=(80, 24)) as pilot:
        await _idle(app, pilot)
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        picks = screen.query_one("#compare-runs")
        assert picks.has_focus and picks.highlighted == 0
        await _tick(app, pilot, FILE_RUN, NONE_RUN)
        await pilot.press("c")
        await _idle(app, pilot)
        assert "ticks changed" not in _text(screen, "#compare-status")
        await _tick(app, pilot, MEM0AI_RUN)
        assert "ticks changed: press c to compare these runs" in _text(screen, "#compare-status")
        assert screen.comparison is not None and screen.comparison.run_ids == (FILE_RUN, NONE_RUN)

        screen.preset([MEM0AI_RUN, FILE_RUN, NONE_RUN], by="the Results screen")
        await _idle(app, pilot)
        assert any("the Results screen replaced your ticks" in n.message for n in app._notifications)
        assert "ticks changed" not in _text(screen, "#compare-status")
        assert screen.comparison is not None and screen.comparison.run_ids == (MEM0AI_RUN, FILE_RUN, NONE_RUN)

        table = screen.query_one("#compare-table", DataTable)
        table.focus()
        await pilot.pause()
        assert table.max_scroll_x > 0  # three run columns do not fit 80 columns
        footer = {b.binding.description for b in screen.active_bindings.values() if b.binding.show}
        assert {"Scroll columns", "Evidence"} <= footer
        await pilot.press("shift+right")
        await pilot.pause()
        assert table.scroll_x > 0

        box = screen.query_one("#compare-evidence-box")
        assert "Evidence handed to the PA" in str(box.border_title)
        small = box.region.height
        await pilot.press("e")
        await pilot.pause()
        assert box.has_focus and box.region.height > small
        await pilot.press("e")
        await pilot.pause()
        assert table.has_focus and box.region.height == small

        await pilot.press("slash")
        await pilot.press(*"file floored", "enter")  # no row passes
        await pilot.pause()
        assert screen.shown == []
        await pilot.press("escape", "x")
        await pilot.pause()
        assert screen.last_export is None
        assert any("nothing to export" in n.message for n in app._notifications)
        assert not list(app.settings.saves_dir.glob("*.md"))
