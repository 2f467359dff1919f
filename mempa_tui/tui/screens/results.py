"""Results (SPEC section 4.11, the tables of 4.9): PSA, CS, PET, BRS and PRS of every stored run
by memory condition and model, optionally split by user, dimension or reply-vs-action group, with
the floored count; each condition's paired difference from No Memory with its 95 % cluster-bootstrap
interval (paper Table 13, Appendix F.3) and every run's settings line (donor, File memory
thresholds, decoding; issue 11.4), as ``mempa results`` prints them; a bar chart of one metric;
export as Markdown and CSV. Scoring is the scoring package's (via
:mod:`mempa_tui.runner._results`); reading and scoring run in workers.

Each row also carries its memory health (:mod:`mempa_tui.runner._health`: a run whose memory is
broken is marked ``BROKEN`` on its row and named under the table, never averaged in silently) and
what it covers (users, probes x repeats; ``*`` marks a row that pools other users, probes or repeat
counts than the rest), the cells ``mempa results`` prints (:func:`~mempa_tui.tui.engine.
results_annotations`). Under the table, the same validity lines as ``mempa results`` (issue 12;
:func:`~mempa_tui.tui.engine.results_validity`): what random selection scores on these cells
(Appendix A.1), a fixed choice that would score PSA and CS 100, runs whose PA picked one setting
throughout an attribute, and the Oracle check against the paper's Table 2 (or the command that
plays Oracle).

Layout (issue 16.6): the metric columns come right after the memory condition and every part
scrolls in one column, so at 80x24 PRS and the differences are on screen, never cut off; the
columns after PRS (Health, Covers, counts, model) are reached by scrolling the table sideways
(``shift+→`` / ``shift+←`` anywhere, or ``←`` / ``→`` on the table), as the footer says.
``o`` opens the probe-by-probe comparison with the shown runs of one user ticked (a notification
says the ticks were replaced).

Timelines (issue 16 follow-up): runs that played different timelines (whole timeline, quick-start
slice, quick start; paper Section 3.3) are never scored in one table, as ``mempa results`` splits
them (:func:`~mempa_tui.runner._results.comparable_groups`): the screen shows one timeline's runs
at a time, named above the table, and ``t`` picks the next one. ``x`` refuses when no row is
shown."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, cast

import anyio
from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Label, Select, Static
from textual.worker import Worker, WorkerState

from mempa_tui.runner import settings_lines
from mempa_tui.runner._results import (
    GROUPINGS,
    SHOWN_METRICS,
    Bar,
    ExportedResults,
    Grouping,
    RunGroup,
    bar_chart,
    comparable_groups,
    export_results,
    paired_differences,
    results_rows,
)
from mempa_tui.runner._health import RowAnnotations
from mempa_tui.scoring import ConditionScores, Difference, MetricSummary, ProbeOutcome, condition_label, interval_note
from mempa_tui.scoring._report import VALIDITY_HEADING
from mempa_tui.tui.engine import error_line, results_annotations, results_validity
from mempa_tui.tui.plain import PlainNotify
from mempa_tui.tui.widgets.tables import fill_table

if TYPE_CHECKING:
    from mempa_tui.tui.app import MempaApp, RunUpdate

__all__ = ["ResultsScreen", "bars_text", "difference_cells", "metric_cell"]

BAR_WIDTH = 40
"""Cells of a full bar (where the screen is wide enough)."""

MIN_BAR_WIDTH = 10
"""The narrowest full bar :func:`bars_text` draws to fit a row on a narrow screen."""


def bars_text(bars: list[Bar], metric: str, width: int = BAR_WIDTH,
              broken: Sequence[bool] | None = None, columns: int | None = None) -> Text:
    """The bar chart as Rich text: ``label  ████████░░░░  62.5%`` per row.

    Args:
        bars: one per row (:func:`~mempa_tui.runner._results.bar_chart`).
        metric: the charted metric's name.
        width: cells of a full bar (at most; ``columns`` may narrow it).
        broken: per bar, whether its row's memory health is BROKEN (None: none is); such a bar
            is drawn hatched in red, ends with ``BROKEN`` and a note under the chart says it is
            not the condition's score.
        columns: the cells a row may take (the chart's width on screen; None: no limit). Each
            row then fits on one line: the label is cut (ending in ``…``) to at most a third of
            it and the bar narrowed, never below :data:`MIN_BAR_WIDTH` cells (fresh-user check:
            at 80x24 a row with ``BROKEN`` wrapped onto a second line).
    """
    if not bars:
        return Text("No probe results yet: finish a run's probes, then refresh (f5).", style="dim")
    marks = list(broken) if broken is not None else [False] * len(bars)
    label_width = min(44, max(len(b.label) for b in bars))
    if columns is not None:
        tail = max(len(b.text) for b in bars) + (len("  BROKEN") if any(marks) else 0)
        label_width = max(8, min(label_width, columns // 3))
        width = max(MIN_BAR_WIDTH, min(width, columns - label_width - 4 - tail))
    out = Text(f"{metric} by row (full bar = {'100%' if metric in ('PSA', 'CS', 'PET') else '5'})\n",
               style="bold")
    for bar, bad in zip(bars, marks, strict=True):
        filled = round(bar.fraction * width)
        label = bar.label if len(bar.label) <= label_width else bar.label[:label_width - 1] + "…"
        out.append(f"{label:<{label_width}}  ")
        if bad:  # hatched, not solid: the height is not the condition's score
            out.append("▚" * filled, style="red")
        else:
            out.append("█" * filled, style="green" if bar.value is not None else "dim")
        out.append("░" * (width - filled), style="dim")
        out.append(f"  {bar.text}")
        out.append("  BROKEN\n" if bad else "\n", style="bold red")
    if any(marks):
        out.append("BROKEN (hatched): that row's memory is broken (see the notes above), so its bar is "
                   "not the condition's score\n", style="red")
    return out


def metric_cell(summary: MetricSummary | None) -> str:
    """A results cell: ``mean±SD`` without spaces (``62.5±12.5``, ``3.00±0.50``), ``N/A`` when no
    item is eligible; narrow, so the five metrics fit an 80-column terminal."""
    if summary is None or summary.mean is None:
        return "N/A"
    return summary.formatted(interval=False).replace(" ± ", "±")


def difference_cells(diff: Difference) -> tuple[str, str]:
    """The point and the 95 % interval of one paired difference as cells: ``("+12.5",
    "[+3.1, +20.0] n=28×3")`` or ``("+0.0", "n=1×1: no interval")`` (percentage points; paper Table 13, Appendix F.3); ``("N/A", "")`` when
    either side has no eligible item."""
    if diff.point is None:
        return "N/A", ""
    # as the command line prints it: bounds with their n, or "n=1×1: no interval" where bounds
    # from one unit (or units that all agree) would read as certainty (issue 12)
    interval = interval_note(diff.interval, 1, signed=True).strip() or "no interval"
    return f"{diff.point:+.1f}", interval


class ResultsScreen(PlainNotify, Screen[None]):
    """Scores of the stored runs, one grouping and one charted metric at a time."""

    CSS_PATH = "results.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("shift+right", "scroll_columns(1)", "Scroll columns", key_display="⇧←→", id="results.right",
                tooltip="Scroll the results table right to Health, Covers, the counts and the model (⇧← back)"),
        Binding("shift+left", "scroll_columns(-1)", "Scroll columns back", key_display="⇧←", show=False,
                id="results.left", tooltip="Scroll the results table back to the memory and the metrics"),
        Binding("o", "compare", "Compare", id="results.compare",
                tooltip="Compare runs probe by probe (the shown runs of one user ticked)"),
        Binding("t", "cycle_timeline", "Timeline", id="results.timeline",
                tooltip="Show the runs of the next timeline (whole timeline, quick-start slice, quick start)"),
        Binding("g", "cycle_grouping", "Group by", id="results.group",
                tooltip="Split rows by nothing more, by user, by dimension or by reply-vs-action group"),
        Binding("c", "cycle_metric", "Chart metric", id="results.metric",
                tooltip="Chart PSA, CS, PET, BRS or PRS"),
        Binding("x", "export", "Export", id="results.export",
                tooltip="Write report.md and CSVs (with bootstrap intervals) under saves/results-<time>/"),
        Binding("f5", "refresh", "Refresh", id="results.refresh",
                tooltip="Read the stored probe results again"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.outcomes: list[ProbeOutcome] = []
        self.partial: list[str] = []
        """Runs whose probes are not all done (their rows cover only the probes stored so far)."""
        self.rows: list[ConditionScores] = []
        self.differences: list[Difference] = []
        """Each condition's paired difference from No Memory (empty without a No Memory run)."""
        self.unpaired: dict[str, int] = {}
        """Per condition, its probe repeats without a No Memory counterpart (left out of the difference)."""
        self.settings: list[str] = []
        """``<run id>: <settings>`` of every shown run with probe results (donor, thresholds, decoding;
        plays and archived runs are not shown)."""
        self.annotations = RowAnnotations(health={}, covers={}, notes=[])
        """The Health and Covers cells of the rows and the notes under the table."""
        self.validity: list[str] = []
        """The lines under the table on what its scores could reach without memory (random and
        fixed choices) and the Oracle check, as ``mempa results`` prints them (issue 12)."""
        self.groups: list[RunGroup] = []
        """The shown runs split by the timeline they played (one table each, never pooled)."""
        self.timeline: str | None = None
        """The timeline whose runs the table shows (``whole timeline``, ``quick-start slice``,
        ``quick start``), None before the first load or without runs."""
        self.last_export: ExportedResults | None = None
        self._loaded_by: str | None = None
        """The grouping the latest load was started for (its Select's own Changed is skipped)."""
        self._resumed = False
        """Whether the screen was shown once (its first ScreenResume comes with on_mount's load)."""

    @property
    def mempa(self) -> MempaApp:
        """The app, typed."""
        return cast("MempaApp", self.app)

    def compose(self) -> ComposeResult:
        """Pickers, the table, the chart."""
        yield Header()
        with Horizontal(id="results-bar"):
            yield Label("Group by", classes="field-label")
            yield Select[str]([(g, g) for g in GROUPINGS], id="grouping", value="condition", allow_blank=False)
            yield Label("Chart", classes="field-label")
            yield Select[str]([(m, m) for m in SHOWN_METRICS], id="metric", value="PSA", allow_blank=False)
        with VerticalScroll(id="results-body"):
            yield Static("", id="results-timeline")
            yield Static("", id="results-count")
            yield DataTable(id="results-table", zebra_stripes=True, cursor_type="row")
            yield Static("", id="results-notes")
            yield Static("", id="diff-title", classes="results-title")
            yield DataTable(id="diff-table", zebra_stripes=True, cursor_type="row")
            # under the tables, not between them: at 80x24 the differences stay on screen (16.6)
            yield Static("", id="results-validity")
            yield Static("", id="results-settings")
            yield Static(id="chart")
        yield Footer()

    def on_mount(self) -> None:
        """Read the results; follow finished runs."""
        self._loaded_by = self.grouping
        self.load()
        self.mempa.run_signal.subscribe(self, self._on_run_update)

    def on_screen_resume(self) -> None:
        """Coming back: runs may have finished probes meanwhile (the first showing is on_mount's)."""
        if self._resumed and self.is_mounted:
            self.load()
        self._resumed = True

    def _on_run_update(self, update: RunUpdate) -> None:
        if getattr(update.item, "kind", None) in ("run_finished", "probe_finished"):
            self.load()

    @property
    def grouping(self) -> Grouping:
        """The chosen grouping."""
        return cast(Grouping, self.query_one("#grouping", Select).value)

    @property
    def metric(self) -> str:
        """The charted metric."""
        return str(self.query_one("#metric", Select).value)

    # ---- loading --------------------------------------------------------------------------

    @work(exclusive=True, group="results", exit_on_error=False)
    async def load(self) -> None:
        """Read every stored probe outcome, then score the chosen grouping."""
        service = self.mempa.service
        shown = await service.result_run_ids()  # plays and archived runs are not in the rows
        records = {r.id: r for r in await (await service.store()).list_runs()} if shown else {}
        self.groups = comparable_groups([records[i] for i in shown if i in records], named=False)
        kinds = [g.timeline for g in self.groups]
        if self.timeline not in kinds:
            self.timeline = kinds[0] if kinds else None
        group = self._group()
        ids = group.run_ids if group is not None else []
        self.outcomes = await service.outcomes(ids) if ids else []
        self.partial = [line for line in await service.partial_runs() if line.split(" ", 1)[0] in set(ids)]
        self.settings = await self._settings(set(ids))
        await self._score()

    def _group(self) -> RunGroup | None:
        """The shown timeline's group of runs (None without runs)."""
        return next((g for g in self.groups if g.timeline == self.timeline), None)

    def _timeline_text(self) -> Text:
        """The line above the table: which timeline's runs are shown, the others, and runs left out."""
        group = self._group()
        if group is None or (len(self.groups) < 2 and not group.left_out):
            return Text("")  # one timeline, nothing left out: as `mempa results`, no heading
        out = Text(f"{group.timeline} runs", style="bold")
        if len(self.groups) > 1:
            others = ", ".join(g.timeline for g in self.groups if g is not group)
            out.append(f"  ({self.groups.index(group) + 1} of {len(self.groups)}; also stored: {others}; "
                       "t: next timeline; runs of different timelines are never scored together)")
        if group.left_out:
            out.append("\nleft out (a completed, lower-seed or newer run holds the same user, condition and "
                       "model): " + ", ".join(group.left_out), style="dim")
        return out

    async def _annotate(self, outcomes: list[ProbeOutcome], by: Grouping) -> None:
        """Health and Covers of the rows (a failed read is shown in the column, not swallowed)."""
        try:
            group = self._group()
            self.annotations = await results_annotations(
                self.mempa.service, outcomes, by, run_ids=group.run_ids if group is not None else [])
        except Exception as exc:  # noqa: BLE001 - shown as the table's note and a notification
            self.annotations = RowAnnotations(health={}, covers={}, notes=[f"memory health not read: {error_line(exc)}"])
            self.notify(error_line(exc), severity="error", title="Results: memory health")

    async def _validity(self, outcomes: list[ProbeOutcome]) -> None:
        """The validity lines (a failed read is shown in their place and notified, not swallowed)."""
        try:
            group = self._group()
            self.validity = await results_validity(
                self.mempa.service, outcomes, run_ids=group.run_ids if group is not None else [])
        except Exception as exc:  # noqa: BLE001 - shown under the table and as a notification
            self.validity = [f"not read: {error_line(exc)}"]
            self.notify(error_line(exc), severity="error", title="Results: reading these scores")

    async def _settings(self, shown: set[str]) -> list[str]:
        """The settings line of every shown run (of ``shown``) that has probe results (none
        without a database)."""
        service = self.mempa.service
        if not self.outcomes or not service.database.is_file():
            return []
        store = await service.store()
        records = await store.list_runs()
        scored = {s.run.id for s in await store.summaries() if s.probes_done and s.run.id in shown}
        return settings_lines([r for r in records if r.id in scored], records)

    async def _score(self) -> None:
        outcomes, by = list(self.outcomes), self.grouping
        resamples = self.mempa.service.options.resamples
        self.rows = await anyio.to_thread.run_sync(lambda: results_rows(outcomes, by))
        await self._annotate(outcomes, by)
        await self._validity(outcomes)
        conditions = {o.memory for o in outcomes}
        if "none" in conditions and len(conditions) > 1:
            self.differences, self.unpaired = await anyio.to_thread.run_sync(
                lambda: paired_differences(outcomes, resamples=resamples))
        else:
            self.differences, self.unpaired = [], {}
        self._show()

    def _show(self) -> None:
        by = self.grouping
        table = self.query_one("#results-table", DataTable)
        # metrics first (after the condition), so PRS is on screen at 80 columns (issue 16.6)
        # then Health and Covers (issue 16.1/16.4), reached by scrolling sideways at 80 columns
        extra = self.annotations.columns()
        columns = ["Memory", *SHOWN_METRICS, *extra] + ([by] if by != "condition" else [])
        columns += ["probes", "floored", "incomplete", "model"]
        rows = []
        for r in self.rows:
            cells = [r.label, *(metric_cell(r.metric(name)) for name in SHOWN_METRICS)]
            cells += [cell(r) for cell in extra.values()]
            cells += [r.breakdown or ""] if by != "condition" else []
            rows.append([*cells, str(r.probes), str(r.floored), str(r.incomplete), r.model])
        fill_table(table, columns, rows)
        runs = len({(o.memory, o.model, o.user) for o in self.outcomes})
        count = Text(
            f"{len(self.outcomes)} probe result(s) from {runs} user × condition × model combination(s); "
            "cells are mean±SD over repeats; floored = the PA broke the IX contract (PSA 0, BRS 1); "
            "Health: memory health (BROKEN: not the condition's score); Covers: users probes×repeats"
            + (f"\nnot finished, rows cover only the probes so far: {', '.join(self.partial)}" if self.partial else "")
        )
        self.query_one("#results-count", Static).update(count)
        heading = self.query_one("#results-timeline", Static)
        line = self._timeline_text()
        heading.update(line)
        heading.display = bool(line.plain)
        notes = self.query_one("#results-notes", Static)
        notes.update(Text("\n".join(self.annotations.notes), style="bold red" if any(
            n.startswith("BROKEN") for n in self.annotations.notes) else ""))
        notes.display = bool(self.annotations.notes)
        validity = self.query_one("#results-validity", Static)
        validity.update(Text(f"{VALIDITY_HEADING}:\n" + "\n".join(f"  {line}" for line in self.validity)
                             if self.validity else ""))
        validity.display = bool(self.validity)
        self._show_differences()
        self.query_one("#results-settings", Static).update(Text(
            "run settings (donor, File memory thresholds, decoding):\n"
            + "\n".join(f"  {line}" for line in self.settings) if self.settings else ""
        ))
        self._chart()

    def _show_differences(self) -> None:
        """The paired differences from No Memory, one row per condition, model and metric."""
        title = self.query_one("#diff-title", Static)
        table = self.query_one("#diff-table", DataTable)
        conditions = {o.memory for o in self.outcomes}
        if not self.differences:
            title.update(Text(
                "" if len(conditions) < 2 else
                "no No Memory run among these, so no differences from it (start one with memory none)",
                style="dim"))
            fill_table(table, ["Memory", "metric", "Δ", "95% interval", "model"], [])
            table.display = False
            return
        table.display = True
        notes = [f"{condition_label(m)}: {n} probe repeat(s) without a No Memory counterpart left out"
                 for m, n in self.unpaired.items() if n]
        if any(cell.startswith("BROKEN") for cell in self.annotations.health.values()):
            notes.append("a condition marked BROKEN above has a broken memory: its difference is not the condition's")
        title.update(Text(
            "Difference from No Memory (percentage points; paired over the same probes and repeats; "
            "95% cluster-bootstrap interval)"
            + "".join(f"\n  {n}" for n in notes), style="bold"))
        rows = [[condition_label(d.memory), d.metric, *difference_cells(d), d.model] for d in self.differences]
        fill_table(table, ["Memory", "metric", "Δ", "95% interval", "model"], rows)
        # A height-auto DataTable refilled while shown can keep a height of 0 after its rows are
        # measured (seen in about one load in four: rows there, nothing drawn): lay it out again
        # once the refill has been measured.
        self.call_after_refresh(table.refresh, layout=True)

    def on_resize(self, event: events.Resize) -> None:
        """A new width redraws the chart to fit it (each row on one line)."""
        if self.rows:
            self._chart()

    def _chart(self) -> None:
        health = self.annotations.columns()["Health"]
        broken = [health(r).startswith("BROKEN") for r in self.rows]
        chart = self.query_one("#chart", Static)
        # the chart's own width once laid out; before that the screen's less the body's padding
        # and its scroll bar (results.tcss), so a row never wraps at 80 columns
        columns = chart.content_region.width or max(20, self.size.width - 4)
        chart.update(bars_text(bar_chart(self.rows, self.metric), self.metric, broken=broken, columns=columns))

    def on_select_changed(self, event: Select.Changed) -> None:
        """A new grouping reads and scores again; a new metric redraws the chart."""
        if event.select.id == "grouping" and self.is_mounted:
            if event.value == self._loaded_by:
                return  # the initial value's Changed: on_mount already reads this grouping
            self._loaded_by = str(event.value)
            self.load()
        elif event.select.id == "metric":
            self._chart()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A failed read, score or export shows as a notification; the screen carries on."""
        if event.state is WorkerState.ERROR and event.worker.error is not None:
            self.notify(error_line(event.worker.error), severity="error", title="Results")

    # ---- actions --------------------------------------------------------------------------

    def _cycle(self, selector: str, values: tuple[str, ...]) -> None:
        select = self.query_one(selector, Select)
        index = values.index(str(select.value)) if select.value in values else -1
        select.value = values[(index + 1) % len(values)]

    def action_cycle_grouping(self) -> None:
        """Next grouping."""
        self._cycle("#grouping", GROUPINGS)

    def action_cycle_timeline(self) -> None:
        """Show the next timeline's runs (a message when only one timeline is stored)."""
        kinds = [g.timeline for g in self.groups]
        if len(kinds) < 2:
            self.notify(f"only {kinds[0] if kinds else 'no'} runs are stored", title="Results")
            return
        index = kinds.index(self.timeline) if self.timeline in kinds else -1
        self.timeline = kinds[(index + 1) % len(kinds)]
        self.load()

    def action_cycle_metric(self) -> None:
        """Next charted metric."""
        self._cycle("#metric", SHOWN_METRICS)

    def action_scroll_columns(self, direction: int) -> None:
        """Scroll the results table sideways by about a third of its width (``direction`` 1: right)."""
        table = self.query_one("#results-table", DataTable)
        step = max(8, table.scrollable_content_region.width // 3)
        table.scroll_relative(x=step * direction, animate=False)

    async def action_compare(self) -> None:
        """Open the probe-by-probe comparison; when the shown runs are of one user, they are ticked."""
        from mempa_tui.tui.screens.compare import CompareScreen

        users = {o.user for o in self.outcomes}
        group = self._group()
        ids = sorted(group.run_ids) if len(users) == 1 and group is not None else []  # columns by run id
        await self.mempa.switch_mode("compare")
        screen = self.mempa.screen
        if isinstance(screen, CompareScreen):
            screen.preset(ids)

    def action_refresh(self) -> None:
        """Read the stored results again."""
        self.load()

    def action_export(self) -> None:
        """Write the results as Markdown and CSV; refused (with a message, nothing written) when the
        table shows no row."""
        if not self.outcomes or not self.rows:
            self.notify("no probe results to export yet", severity="warning", title="Results")
            return
        self.export()

    @work(exclusive=True, group="results-export", exit_on_error=False)
    async def export(self) -> None:
        """Export in a worker (bootstrap intervals take a while)."""
        outcomes, by = list(self.outcomes), self.grouping
        saves: Path = self.mempa.settings.saves_dir
        resamples = self.mempa.service.options.resamples
        validity = list(self.validity)
        extra, notes = self.annotations.columns(), list(self.annotations.notes)  # Health, as on screen
        done = await anyio.to_thread.run_sync(
            lambda: export_results(outcomes, saves, by=by, resamples=resamples, validity=validity or None,
                                   extra=extra, notes=notes)
        )
        self.last_export = done
        self.notify(f"wrote {len(done.all())} files to {done.folder}", title="Results exported", timeout=10)
