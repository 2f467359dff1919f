"""Results: the engine (mempa_tui.runner._results) on hand-made stored results, and the Results
screen driven with a pilot (grouping, chart metric, export).

Two stored runs of user R with two final probes x two repeats each:
File memory selects every target (PSA 100%, BRS 4, PRS 5); No Memory selects the target of
``verbosity`` only (PSA 50%, BRS 2 and 4, PRS 3).
"""

from __future__ import annotations

import asyncio
import csv
from pathlib import Path
from typing import Any

import pytest
from test_tui_support import WORLDS, make_folders
from textual.pilot import Pilot
from textual.widgets import DataTable, Select, Static
from textual.worker import WorkerState

from mempa_tui.runner import RunConfig
from mempa_tui.runner._results import (
    bar_chart,
    export_results,
    partial_runs,
    results_rows,
    stored_outcomes,
)
from mempa_tui.store import ProbeResultRecord, RunRecord, RunStatus, RunStore, utc_now
from mempa_tui.tui import MempaApp, RunnerOptions
from mempa_tui.tui.screens.results import ResultsScreen, bars_text

PROBES = {  # probe id -> (attribute, target, wrong setting)
    "R-final-work-verbosity": ("verbosity", "Terse", "Detailed"),
    "R-final-work-solution_breadth": ("solution_breadth", "Low", "High"),
}


async def seed(db: Path) -> None:
    """Store the two runs described in the module docstring."""
    async with RunStore(db) as store:
        for memory in ("file", "none"):
            config = RunConfig(user="R", profile="scripted", memory=memory, repeats=2, worlds_dir=WORLDS)
            await store.create_run(RunRecord(
                id=config.run_id, user="R", profile="scripted", memory=memory, seed=0, repeats=2,
                config_json=config.model_dump_json(), config_hash=config.config_hash(),
                status=RunStatus.COMPLETED, total_probes=4,
            ))
            for probe_id, (attribute, target, wrong) in PROBES.items():
                for repeat in (1, 2):
                    right = memory == "file" or attribute == "verbosity"
                    await store.save_probe_result(config.run_id, ProbeResultRecord(
                        probe_id=probe_id, repeat=repeat, kind="final", context="work",
                        attribute=attribute, target=target, selection=target if right else wrong,
                        status="completed", brs=4 if right else 2, brs_reason="judge",
                        prs=5 if memory == "file" else 3, prs_reason="user",
                        started_at=utc_now(), finished_at=utc_now(),
                    ))


async def test_engine_rows_chart_and_export(tmp_path: Path) -> None:
    db = tmp_path / "mempa.sqlite"
    await seed(db)
    async with RunStore(db) as store:
        outcomes = await stored_outcomes(store)
        assert len(outcomes) == 8
        only_file = await stored_outcomes(store, ["R-file-scripted-s0"])
        assert {o.memory for o in only_file} == {"file"}
    rows = {r.memory: r for r in results_rows(outcomes)}
    assert rows["file"].psa.mean == pytest.approx(100.0)
    assert rows["none"].psa.mean == pytest.approx(50.0)
    assert rows["none"].brs.mean == pytest.approx(3.0)
    assert rows["file"].prs.mean == pytest.approx(5.0)
    bars = {b.label.split(" · ")[0]: b for b in bar_chart(list(rows.values()), "PSA")}
    assert bars["File memory"].fraction == pytest.approx(1.0)
    assert bars["No Memory"].fraction == pytest.approx(0.5) and bars["No Memory"].text == "50.0%"
    prs = {b.label.split(" · ")[0]: b for b in bar_chart(list(rows.values()), "PRS")}
    assert prs["No Memory"].fraction == pytest.approx(3 / 5)
    by_dim = results_rows(outcomes, "dimension")
    assert {(r.memory, r.breakdown) for r in by_dim} >= {("none", "Expression Style"), ("none", "Initiative & Autonomy")}
    dim = {(r.memory, r.breakdown): r for r in by_dim}
    assert dim[("none", "Expression Style")].psa.mean == pytest.approx(100.0)
    assert dim[("none", "Initiative & Autonomy")].psa.mean == pytest.approx(0.0)
    with pytest.raises(ValueError, match="choose one of"):
        results_rows(outcomes, "colour")  # type: ignore[arg-type]

    done = export_results(outcomes, tmp_path / "saves", by="user", resamples=50)
    assert all(p.is_file() for p in done.all())
    main = {r["memory"]: r for r in csv.DictReader(done.report.main_csv.open(encoding="utf-8"))}
    assert float(main["none"]["psa_mean"]) == pytest.approx(50.0)
    users = list(csv.DictReader(done.by_user_csv.open(encoding="utf-8")))
    psa_none = next(r for r in users if r["memory"] == "none" and r["metric"] == "PSA")
    assert (psa_none["user"], float(psa_none["mean"])) == ("R", 50.0)
    assert "| Memory | Model | User |" in done.screen_md.read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="no probe results"):
        export_results([], tmp_path / "saves")


def test_bars_text_without_rows() -> None:
    assert "No probe results yet" in bars_text([], "PSA").plain


async def _wait_workers(app: MempaApp, pilot: Pilot[None], group: str) -> None:
    while True:  # worker states, no wall-clock deadline
        await pilot.pause()
        live = [w for w in app.workers if w.group == group and w.state in (WorkerState.PENDING, WorkerState.RUNNING)]
        if not live:
            return
        for worker in live:
            if worker.state is WorkerState.RUNNING:
                await worker.wait()


def _cells(table: DataTable[str]) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


async def test_results_screen_groups_charts_and_exports(tmp_path: Path) -> None:
    folders = make_folders(tmp_path)
    folders.settings.saves_dir.mkdir(parents=True)
    await seed(folders.settings.saves_dir / "mempa.sqlite")
    app = MempaApp(folders.settings, options=RunnerOptions(resamples=50))
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.press("R")  # the app's Results key
        screen = app.screen
        assert isinstance(screen, ResultsScreen)
        await _wait_workers(app, pilot, "results")
        table = screen.query_one("#results-table", DataTable)
        rows = _cells(table)
        assert [r[0] for r in rows] == ["File memory", "No Memory"]
        assert rows[0][1].startswith("100.0") and rows[1][1].startswith("50.0")  # PSA right after Memory
        chart = screen.query_one("#chart", Static)
        shown = str(chart.render())
        assert "PSA by row" in shown and "100.0%" in shown and "50.0%" in shown
        # under the table, as `mempa results` prints them (issue 12): random selection on these
        # cells, the fixed choice that scores PSA 100 here, and the command that runs Oracle
        validity = str(screen.query_one("#results-validity", Static).render())
        assert "random selection on these cells: PSA 50.0, CS N/A, PET N/A" in validity
        assert "a PA that always picks Low for solution_breadth, Terse for verbosity scores PSA 100.0" in validity
        assert ("R-file-scripted-s0: the PA selected Low in both probes of solution_breadth (every target Low); "
                "selected Terse in both probes of verbosity (every target Terse): the fixed choice above") in validity
        assert "`mempa run --user R --memory oracle --model scripted --repeats 2`" in validity

        await pilot.press("g")  # by user
        await _wait_workers(app, pilot, "results")
        assert screen.query_one("#grouping", Select).value == "user"
        rows = _cells(table)
        labels = [str(c.label) for c in table.ordered_columns]
        assert labels[:8] == ["Memory", "PSA", "CS", "PET", "BRS", "PRS", "Health", "Covers"]
        assert [r[labels.index("user")] for r in rows] == ["R", "R"]  # the breakdown follows Health, Covers
        assert [r[labels.index("Covers")] for r in rows] == ["R 2x2", "R 2x2"]

        await pilot.press("c")  # chart CS
        assert screen.query_one("#metric", Select).value == "CS"

        await pilot.press("x")
        await _wait_workers(app, pilot, "results-export")
        assert screen.last_export is not None
        assert screen.last_export.report.main_md.is_file()
        assert screen.last_export.folder.parent == folders.settings.saves_dir
        # finding 5: the app's report.md and main.csv carry each row's Health, as the screen shows it
        written = screen.last_export.report.main_md.read_text(encoding="utf-8").split("## Pooled")[0]
        assert "| Incomplete | Health |" in written
        shown = {r[0]: r[labels.index("Health")] for r in _cells(table)}
        health = {r["memory_label"]: r["health"]
                  for r in csv.DictReader(screen.last_export.report.main_csv.open(encoding="utf-8"))}
        assert health == shown and set(health) == {"File memory", "No Memory"}


def test_results_snapshot(snap_compare: Any, tmp_path: Path) -> None:
    folders = make_folders(tmp_path)
    folders.settings.saves_dir.mkdir(parents=True)
    asyncio.run(seed(folders.settings.saves_dir / "mempa.sqlite"))
    app = MempaApp(folders.settings, options=RunnerOptions(resamples=50), initial_mode="results")

    def _laid_out(table: DataTable) -> bool:  # type: ignore[type-arg]
        # filled is not enough: a loaded suite's shot had the difference rows filled but the table
        # not yet given its height on screen (nothing drawn under its title)
        first = str(table.get_row_at(0)[0])
        return (first in "".join(segment.text for segment in table.render_line(1))
                and table.region.height >= min(table.row_count + 1, 3))

    async def loaded(pilot: Pilot[None]) -> None:
        # the load worker starts from on_mount: wait until it has run and drawn, however busy the machine
        for _ in range(500):
            await pilot.pause()
            await app.workers.wait_for_complete()
            table = app.screen.query("#results-table")
            # rows and the differences from No Memory drawn, and no load pending or running (the
            # initial grouping's Changed may queue a second, exclusive load after the first)
            idle = not any(w.state in (WorkerState.PENDING, WorkerState.RUNNING) for w in app.workers)
            diff = app.screen.query("#diff-table")
            if (getattr(app.screen, "rows", None) and getattr(app.screen, "differences", None) and idle
                    and table and table.first().row_count and diff and diff.first().row_count
                    and _laid_out(diff.first())):
                break
        for _ in range(3):  # let the filled table lay out its column widths before the shot
            await pilot.pause()

    assert snap_compare(app, terminal_size=(140, 40), run_before=loaded)


async def test_partial_runs_are_named_with_their_probe_counts(tmp_path: Path) -> None:
    """A run stopped before all its probes still contributes rows, and the results say so."""
    db = tmp_path / "mempa.sqlite"
    await seed(db)
    async with RunStore(db) as store:
        assert await partial_runs(store) == []
        await store.update_run("R-none-scripted-s0", total_probes=10)
        assert await partial_runs(store) == ["R-none-scripted-s0 4/10 probes"]


async def test_results_screen_leaves_out_a_run_moved_aside_by_fresh(tmp_path: Path) -> None:
    """An archived copy (``<id>~1``) of a run that was played again with ``--fresh`` holds the same
    probes: the screen shows the runs `mempa results` shows, not a duplicate-outcome error."""
    folders = make_folders(tmp_path)
    folders.settings.saves_dir.mkdir(parents=True)
    db = folders.settings.saves_dir / "mempa.sqlite"
    await seed(db)
    async with RunStore(db) as store:
        assert await store.archive_run("R-file-scripted-s0") == "R-file-scripted-s0~1"
        # the run played again under its id
        config = RunConfig(user="R", profile="scripted", memory="file", repeats=2, worlds_dir=WORLDS)
        await store.create_run(RunRecord(
            id=config.run_id, user="R", profile="scripted", memory="file", seed=0, repeats=2,
            config_json=config.model_dump_json(), config_hash=config.config_hash(),
            status=RunStatus.COMPLETED, total_probes=4,
        ))
        for probe_id, (attribute, target, _wrong) in PROBES.items():
            for repeat in (1, 2):
                await store.save_probe_result(config.run_id, ProbeResultRecord(
                    probe_id=probe_id, repeat=repeat, kind="final", context="work", attribute=attribute,
                    target=target, selection=target, status="completed", brs=4, brs_reason="judge",
                    prs=5, prs_reason="user", started_at=utc_now(), finished_at=utc_now(),
                ))
    app = MempaApp(folders.settings, options=RunnerOptions(resamples=50))
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.press("R")
        screen = app.screen
        assert isinstance(screen, ResultsScreen)
        await _wait_workers(app, pilot, "results")
        rows = _cells(screen.query_one("#results-table", DataTable))
        assert [r[0] for r in rows] == ["File memory", "No Memory"]
        assert len(screen.outcomes) == 8  # the new File memory run and No Memory; not the archived copy


async def test_results_screen_marks_a_broken_memory_and_says_what_rows_cover(tmp_path: Path) -> None:
    """Health and Covers as ``mempa results`` prints them (issue 16.1/16.4): mem0's run stored
    nothing (66 of 66 replies malformed), so its row reads BROKEN and a note names the run; File
    memory is ok, No Memory has no store (n/a); each row covers user R, 2 probes x 2 repeats."""
    from test_browse_support import MEM0AI_RUN
    from test_browse_support import seed as seed_with_health

    folders = make_folders(tmp_path)
    folders.settings.saves_dir.mkdir(parents=True)
    await seed_with_health(folders.settings.saves_dir / "mempa.sqlite")
    app = MempaApp(folders.settings, options=RunnerOptions(resamples=50))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("R")
        screen = app.screen
        assert isinstance(screen, ResultsScreen)
        await _wait_workers(app, pilot, "results")
        table = screen.query_one("#results-table", DataTable)
        labels = [str(c.label) for c in table.ordered_columns]
        rows = {r[0]: r for r in _cells(table)}
        health = {m: r[labels.index("Health")] for m, r in rows.items()}
        assert health == {"File memory": "ok", "Mem0": "BROKEN 1/1", "No Memory": "n/a"}, health
        assert {r[labels.index("Covers")] for r in rows.values()} == {"R 2x2"}
        notes = str(screen.query_one("#results-notes", Static).render())
        assert f"BROKEN memory in {MEM0AI_RUN}" in notes and "66/66 malformed memory-model replies" in notes
        title = str(screen.query_one("#diff-title", Static).render())
        assert "marked BROKEN above has a broken memory" in title
        # the play (a person in the user's seat) is not in the rows, so not in the notes either
        assert screen.partial == [] and not any(line.startswith("play-") for line in screen.settings)


async def test_results_table_scrolls_sideways_to_health_and_covers_at_80x24(tmp_path: Path) -> None:
    """At 80 columns the metrics are on screen and the rest is reached by ⇧→, which the footer names."""
    folders = make_folders(tmp_path)
    folders.settings.saves_dir.mkdir(parents=True)
    await seed(folders.settings.saves_dir / "mempa.sqlite")
    app = MempaApp(folders.settings, options=RunnerOptions(resamples=50), initial_mode="results")
    async with app.run_test(size=(80, 24)) as pilot:
        await _wait_workers(app, pilot, "results")
        screen = app.screen
        assert isinstance(screen, ResultsScreen)
        table = screen.query_one("#results-table", DataTable)
        await pilot.pause()
        assert table.max_scroll_x > 0 and table.scroll_x == 0  # wider than the screen
        footer = {b.binding.description for b in screen.active_bindings.values() if b.binding.show}
        assert "Scroll columns" in footer
        await pilot.press("shift+right")
        await pilot.pause()
        assert table.scroll_x > 0
        await pilot.press("shift+left")
        await pilot.pause()
        assert table.scroll_x == 0


async def _seed_quick(db: Path) -> None:
    """The same two runs again, played as a quick start (``-quick``): same user, conditions, model."""
    async with RunStore(db) as store:
        for memory in ("file", "none"):
            config = RunConfig(user="R", profile="scripted", memory=memory, repeats=2, worlds_dir=WORLDS, quick=True)
            await store.create_run(RunRecord(
                id=config.run_id, user="R", profile="scripted", memory=memory, seed=0, repeats=2,
                config_json=config.model_dump_json(), config_hash=config.config_hash(),
                status=RunStatus.COMPLETED, total_probes=2,
            ))
            for probe_id, (attribute, target, _wrong) in list(PROBES.items())[:1]:
                await store.save_probe_result(config.run_id, ProbeResultRecord(
                    probe_id=probe_id, repeat=1, kind="final", context="work", attribute=attribute,
                    target=target, selection=target, status="completed", brs=4, brs_reason="judge",
                    prs=5, prs_reason="user", started_at=utc_now(), finished_at=utc_now(),
                ))


async def test_results_screen_splits_runs_by_timeline_and_refuses_an_empty_export(tmp_path: Path) -> None:
    """Quick-start and whole-timeline runs of one user and condition are shown one timeline at a
    time (``t`` picks the next), as ``mempa results`` splits them, never a duplicate-outcome error;
    ``x`` with no row writes nothing and says why."""
    folders = make_folders(tmp_path)
    folders.settings.saves_dir.mkdir(parents=True)
    db = folders.settings.saves_dir / "mempa.sqlite"
    await seed(db)
    await _seed_quick(db)
    app = MempaApp(folders.settings, options=RunnerOptions(resamples=50))
    notes: list[str] = []
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.press("R")
        screen = app.screen
        assert isinstance(screen, ResultsScreen)
        await _wait_workers(app, pilot, "results")
        assert screen.timeline == "whole timeline"
        assert [r[0] for r in _cells(screen.query_one("#results-table", DataTable))] == ["File memory", "No Memory"]
        assert len(screen.outcomes) == 8
        heading = str(screen.query_one("#results-timeline", Static).render())
        assert "whole timeline runs" in heading and "quick start" in heading and "t: next timeline" in heading
        assert not any(n.severity == "error" for n in app._notifications)
        await pilot.press("t")
        await _wait_workers(app, pilot, "results")
        assert screen.timeline == "quick start" and len(screen.outcomes) == 2
        assert {o.memory for o in screen.outcomes} == {"file", "none"}
        assert "quick start runs" in str(screen.query_one("#results-timeline", Static).render())
        notes = [n.message for n in app._notifications]
        assert not any("DuplicateOutcomeError" in n for n in notes), notes

    empty = make_folders(tmp_path / "empty")
    app = MempaApp(empty.settings, options=RunnerOptions(resamples=50), initial_mode="results")
    async with app.run_test(size=(100, 30)) as pilot:
        await _wait_workers(app, pilot, "results")
        await pilot.press("x")
        await pilot.pause()
        assert [n.message for n in app._notifications] == ["no probe results to export yet"]
        assert not empty.settings.saves_dir.exists() or not any(empty.settings.saves_dir.iterdir())
