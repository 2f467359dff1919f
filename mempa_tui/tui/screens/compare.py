"""Compare runs probe by probe (issue 16, "Compare probe by probe"; SPEC 4.11 Results).

Pick two or more stored runs of one user and one kind of timeline; the table shows, per probe and
repeat, the target and each run's selection, outcome, BRS and PRS (paper Section 3.5: a probe is
right when the first selection equals the target; Appendix F.2: a floored probe broke the IX
contract; incomplete ones are kept apart). Below it, side by side, the evidence each run's memory
handed the PA before its first selection on the highlighted row. Filters: the common ones
("file right, none wrong", one per ordered pair of runs, and each run floored) as choices, or a
typed clause in :func:`~mempa_tui.runner._browse.parse_where`'s syntax. ``x`` writes the shown rows
as Markdown (:func:`~mempa_tui.runner._browse.compare_markdown`) under the saves folder.

Runs that cannot be compared (different users or timelines, fewer than two) are refused with the
engine's message. A run whose memory is broken (:mod:`mempa_tui.runner._health`) is marked in its
column, since its outcomes are a broken memory's, not its condition's.

Keys and focus (issue 16 follow-up): entering the screen focuses the run list on its first row.
A typed filter keeps the focus in its box after Enter (Escape or Tab leaves it), and the Show
picker names it (``typed: ...``) so the two never disagree. Once the ticks differ from the
compared runs the status line says the table is stale ("ticks changed: press c ..."); the
Results screen's ``o`` says when it replaced the ticks. ``⇧→`` / ``⇧←`` scroll the table
sideways (its run columns do not fit 80 columns); the evidence pane is titled and ``e`` focuses
and enlarges it (again: back). ``x`` refuses when no row is shown.

All reads go through :mod:`mempa_tui.tui.engine`, in workers owned by the screen.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, cast

from rich import box
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Input, Label, Select, Static
from textual.worker import Worker, WorkerState

from mempa_tui.tui.engine import (
    BrowseError,
    CompareCell,
    CompareChoice,
    CompareRow,
    Comparison,
    compare_choices,
    compare_stored,
    error_line,
    export_comparison,
    where_choices,
)
from mempa_tui.tui.plain import PlainNotify
from mempa_tui.tui.widgets.marks import MarkedSelectionList as SelectionList
from mempa_tui.tui.widgets.tables import fill_table

if TYPE_CHECKING:
    from mempa_tui.tui.app import MempaApp

__all__ = ["CompareScreen", "cell_text", "choice_label"]

TYPED = "typed"
"""The Show picker's value for a typed filter that is none of the common ones."""

MARKS = {"correct": "✓", "wrong": "✗", "floored": "floored", "incomplete": "incomplete"}
"""How an outcome shows in a table cell (a glyph or a word, never a colour alone)."""


def cell_text(cell: CompareCell | None) -> str:
    """One run's side of a row as a table cell: ``Low ✓ 4/5`` (selection, outcome mark, BRS/PRS;
    ``-`` for a missing score), ``not stored`` when the run has not stored the repeat."""
    if cell is None:
        return "not stored"

    def score(value: int | None) -> str:
        return "-" if value is None else str(value)

    return f"{cell.selection or '(none)'} {MARKS[cell.outcome]} {score(cell.brs)}/{score(cell.prs)}"


def choice_label(choice: CompareChoice) -> str:
    """A run as the picker lists it: id, condition with its memory health, user, timeline, probes,
    status (what decides comparability and trust first, so 80 columns show it)."""
    return (f"{choice.run_id} · {choice.memory}, memory {choice.health} · user {choice.user} · "
            f"{choice.timeline} · {choice.probes_done} probe repeat(s) · {choice.status}")


class CompareScreen(PlainNotify, Screen[None]):
    """Runs side by side per probe and repeat, filtered, with each memory's evidence."""

    CSS_PATH = "compare.tcss"
    # below 32 rows (80x24) the picker shrinks to two rows and its label goes, so the table and
    # the evidence keep most of the screen
    VERTICAL_BREAKPOINTS: ClassVar[list[tuple[int, str]] | None] = [(0, "-short"), (32, "-tall")]
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "compare", "Compare", id="compare.run",
                tooltip="Compare the ticked runs (two or more of one user and one timeline)"),
        Binding("f", "cycle_filter", "Filter", id="compare.filter",
                tooltip="Next common filter: every repeat, one run right while another is wrong, a run floored"),
        Binding("slash", "type_filter", "Type filter", key_display="/", id="compare.type",
                tooltip="Type a filter such as 'file right, none not right' or '#1 wrong' (enter applies)"),
        Binding("shift+right", "scroll_columns(1)", "Scroll columns", key_display="⇧←→", id="compare.right",
                tooltip="Scroll the comparison table right to the other runs' columns (⇧← back)"),
        Binding("shift+left", "scroll_columns(-1)", "Scroll columns back", key_display="⇧←", show=False,
                id="compare.left", tooltip="Scroll the comparison table back to the probe and target"),
        Binding("e", "evidence", "Evidence", id="compare.evidence",
                tooltip="Focus and enlarge the evidence pane (press e again to shrink it back)"),
        Binding("x", "export", "Export", id="compare.export",
                tooltip="Write the shown rows and every memory's evidence as Markdown under the saves folder"),
        Binding("f5", "refresh", "Refresh", id="compare.refresh", tooltip="List the stored runs again"),
        Binding("escape", "focus_table", "To table", show=False, id="compare.table",
                tooltip="Leave the filter field for the comparison table"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.choices: list[CompareChoice] = []
        """The runs the picker offers."""
        self.comparison: Comparison | None = None
        """The latest comparison (None: none yet, or the last pick was refused)."""
        self.where = ""
        """The filter the shown rows pass (``""``: every row)."""
        self.shown: list[CompareRow] = []
        """The rows in the table, in order."""
        self.refusal: str | None = None
        """The engine's message when the ticked runs could not be compared (or a filter failed)."""
        self.last_export: Path | None = None
        """The Markdown file written last."""
        self._filters: list[tuple[str, str]] = [("every probe repeat", "")]
        self._resumed = False
        """Whether the screen was shown once (its first ScreenResume comes with on_mount's load)."""
        self._pending: list[str] = []
        """Runs to tick (and compare) once the picker is filled (:meth:`preset`)."""
        self._preset_by: str | None = None
        """Who set the pending ticks (named in the notification that they replaced the ticks)."""
        self._placed = False
        """Whether the run list got the focus and its first row once (on the first load)."""

    @property
    def mempa(self) -> MempaApp:
        """The app, typed."""
        return cast("MempaApp", self.app)

    def compose(self) -> ComposeResult:
        """Picker, filter bar, status, table, evidence."""
        yield Header()
        with Vertical(id="compare-pick"):
            yield Label("Runs with probe results (space ticks; c compares them, columns in the order ticked)",
                        classes="field-label")
            yield SelectionList[str](id="compare-runs")
        with Horizontal(id="compare-bar"):
            yield Label("Show", classes="field-label")
            yield Select[str]([("every probe repeat", "0")], id="compare-where-choice", value="0",
                              allow_blank=False)
            yield Input(placeholder="or type: file right, none not right", id="compare-where")
        yield Static("", id="compare-status")
        yield DataTable(id="compare-table", zebra_stripes=True, cursor_type="row")
        box = VerticalScroll(id="compare-evidence-box")
        box.border_title = "Evidence handed to the PA (e: enlarge)"
        with box:
            yield Static("", id="compare-evidence")
        yield Footer()

    def on_mount(self) -> None:
        """List the runs."""
        fill_table(self.query_one("#compare-table", DataTable), ["Probe", "Rep", "Target"], [])
        self._status(Text("tick two or more runs of one user, then press c", style="dim"))
        self.load_choices()

    def on_screen_resume(self) -> None:
        """Coming back: runs may have stored probes meanwhile (the first showing is on_mount's)."""
        if self._resumed and self.is_mounted:
            self.load_choices()
        self._resumed = True

    def preset(self, run_ids: list[str], by: str = "the Results screen") -> None:
        """Tick ``run_ids`` (those the picker offers) and compare them when two or more are ticked
        (the Results screen's ``o``); a notification names ``by`` when earlier ticks are replaced."""
        self._pending, self._preset_by = list(run_ids), by
        self.load_choices()  # the list may have grown since; the ticks are applied once it is read

    # ---- loading ------------------------------------------------------------------------------

    @work(exclusive=True, group="compare-choices", exit_on_error=False)
    async def load_choices(self) -> None:
        """Read the stored runs that have probe results into the picker (ticks are kept)."""
        self.choices = await compare_choices(self.mempa.service)
        picks: SelectionList[str] = self.query_one("#compare-runs", SelectionList)
        ticked = set(picks.selected)
        picks.clear_options()
        picks.add_options([(choice_label(c), c.run_id, c.run_id in ticked) for c in self.choices])
        if not self.choices:
            self._status(Text("no stored run has probe results yet: finish a run's probes, then f5", style="dim"))
        elif not self._placed:
            self._placed = True
            picks.focus()
            picks.highlighted = 0
        self._apply_pending()

    def _apply_pending(self) -> None:
        pending, self._pending = self._pending, []
        known = {c.run_id for c in self.choices}
        chosen = [r for r in pending if r in known]
        if not chosen:
            return
        picks: SelectionList[str] = self.query_one("#compare-runs", SelectionList)
        before = list(picks.selected)
        if before and before != chosen:  # other runs, or the same in another column order
            self.notify(f"{self._preset_by or 'another screen'} replaced your ticks ({', '.join(before)}) "
                        f"with {', '.join(chosen)}", title="Compare", timeout=8)
        picks.deselect_all()
        for run_id in chosen:
            picks.select(run_id)
        if len(chosen) >= 2:
            self.run_compare(chosen)

    @work(exclusive=True, group="compare", exit_on_error=False)
    async def run_compare(self, run_ids: list[str]) -> None:
        """Compare ``run_ids``; a refusal (runs of different users or timelines) shows the
        engine's message and clears the table."""
        try:
            comparison = await compare_stored(self.mempa.service, run_ids)
        except BrowseError as exc:
            self.comparison, self.refusal = None, str(exc)
            self._show_rows([])
            self._status(Text(f"not compared: {exc}", style="bold red"))
            self.notify(str(exc), severity="error", title="Compare")
            return
        self.comparison, self.refusal = comparison, None
        memories = [next((c.memory for c in self.choices if c.run_id == r), r) for r in comparison.run_ids]
        self._filters = where_choices(comparison.run_ids, memories)
        select = self.query_one("#compare-where-choice", Select)
        with select.prevent(Select.Changed):
            select.set_options([(label, str(i)) for i, (label, _clause) in enumerate(self._filters)])
            select.value = "0"
        self.query_one("#compare-where", Input).value = ""
        self.where = ""
        self._refilter()

    # ---- showing ------------------------------------------------------------------------------

    def _status(self, text: Text) -> None:
        self.query_one("#compare-status", Static).update(text)

    def _refilter(self) -> None:
        comparison = self.comparison
        if comparison is None:
            return
        self._show_rows(comparison.filtered(self.where))
        self._show_runs_status()

    def _show_runs_status(self) -> None:
        """The status line: the compared runs, what is shown, a stale-ticks mark, broken memories."""
        comparison = self.comparison
        if comparison is None:
            return
        runs = Text()
        for i, run_id in enumerate(comparison.run_ids, 1):
            health = comparison.health.get(run_id)
            state = health.short() if health is not None else "n/a"
            runs.append(f"#{i} {run_id} (memory {state})", style="bold red" if state == "BROKEN" else "")
            runs.append("  ")
        shown = f"{len(self.shown)} of {len(comparison.rows)} probe repeat(s)"
        runs.append(f"\n{shown}" + (f" where {self.where}" if self.where else "")
                    + "; cells: selection ✓ right / ✗ wrong, BRS/PRS", style="dim")
        ticked = list(self.query_one("#compare-runs", SelectionList).selected)
        if ticked != list(comparison.run_ids):
            runs.append("\nticks changed: press c to compare these runs (the table shows the runs above)",
                        style="bold yellow")
        broken = [r for r, h in comparison.health.items() if h.broken]
        if broken:
            runs.append(f"\n{', '.join(broken)}: memory BROKEN, its outcomes are a broken memory's, "
                        "not the condition's", style="bold red")
        self._status(runs)

    def _show_rows(self, rows: list[CompareRow]) -> None:
        self.shown = rows
        table = self.query_one("#compare-table", DataTable)
        comparison = self.comparison
        ids = list(comparison.run_ids) if comparison is not None else []
        memories = {c.run_id: c.memory for c in self.choices}
        columns = ["Probe", "Rep", "Target", *(f"#{i} {memories.get(r, r)}" for i, r in enumerate(ids, 1))]
        fill_table(table, columns, [[r.probe_id, str(r.repeat), r.target, *(cell_text(r.cells.get(i)) for i in ids)]
                                    for r in rows], keys=[f"{r.probe_id}#{r.repeat}" for r in rows])
        self._show_evidence(rows[0] if rows else None)

    def _show_evidence(self, row: CompareRow | None) -> None:
        """Each run's evidence for ``row`` side by side, one column per run."""
        view = self.query_one("#compare-evidence", Static)
        comparison = self.comparison
        if row is None or comparison is None:
            view.update(Text("" if comparison is None else "(no probe repeat matches the filter)", style="dim"))
            return
        grid = Table(title=f"{row.probe_id} repeat {row.repeat} · {row.context} · {row.attribute} · "
                           f"target {row.target}", title_justify="left", title_style="bold", expand=True,
                     box=box.SIMPLE_HEAD, pad_edge=False)
        for i, run_id in enumerate(comparison.run_ids, 1):
            health = comparison.health.get(run_id)
            state = health.short() if health is not None else "n/a"
            grid.add_column(f"#{i} {run_id} (memory {state})", ratio=1, overflow="fold")
        cells: list[Text] = []
        for run_id in comparison.run_ids:
            cell = row.cells.get(run_id)
            if cell is None:
                cells.append(Text("not stored", style="dim"))
                continue
            text = Text(f"selected {cell.selection or '(none)'}: {cell.outcome}; BRS "
                        f"{'-' if cell.brs is None else cell.brs}, PRS {'-' if cell.prs is None else cell.prs}\n",
                        style="bold")
            text.append(f"evidence handed to the PA ({cell.evidence_items} item(s)):\n", style="dim")
            text.append(cell.evidence.strip() or "(the memory handed the PA nothing)")
            cells.append(text)
        grid.add_row(*cells)
        view.update(grid)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """The highlighted row's evidence."""
        if event.data_table.id == "compare-table" and 0 <= event.cursor_row < len(self.shown):
            self._show_evidence(self.shown[event.cursor_row])

    # ---- filters ------------------------------------------------------------------------------

    def _apply_where(self, where: str) -> bool:
        """Show the rows passing ``where``; a clause that does not parse is shown and kept out."""
        comparison = self.comparison
        if comparison is None:
            self.notify("compare two or more runs first (tick them, press c)", severity="warning", title="Compare")
            return False
        try:
            comparison.filtered(where)
        except BrowseError as exc:
            self.notify(str(exc), severity="error", title="Compare filter")
            self._status(Text(f"filter not applied: {exc}", style="bold red"))
            return False
        self.where = where.strip()
        self._refilter()
        return True

    def on_select_changed(self, event: Select.Changed) -> None:
        """A common filter chosen: apply it and show its clause in the typed field."""
        if event.select.id != "compare-where-choice" or event.value is Select.BLANK or self.comparison is None:
            return  # the initial value's Changed on mount, before anything is compared
        if event.value == TYPED:
            return  # the typed filter's own entry: it is applied already
        index = int(str(event.value))
        if 0 <= index < len(self._filters):
            clause = self._filters[index][1]
            self.query_one("#compare-where", Input).value = clause
            self._apply_where(clause)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """A typed filter: apply it and show it in the Show picker (a common filter by its name,
        another as ``typed: ...``); the focus stays in the box, so the next keys type there
        (Escape or Tab leaves it)."""
        if event.input.id == "compare-where" and self._apply_where(event.value):
            self._pick_typed(self.where)

    def _pick_typed(self, where: str) -> None:
        """Make the Show picker agree with the applied filter ``where``."""
        select = self.query_one("#compare-where-choice", Select)
        options = [(label, str(i)) for i, (label, _clause) in enumerate(self._filters)]
        index = next((i for i, (_label, clause) in enumerate(self._filters) if clause == where), None)
        with select.prevent(Select.Changed):
            if index is None:
                select.set_options([*options, (f"typed: {where}", TYPED)])
                select.value = TYPED
            else:
                select.set_options(options)
                select.value = str(index)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A failed read or export shows as a notification and in the status line."""
        if event.state is WorkerState.ERROR and event.worker.error is not None:
            message = error_line(event.worker.error)
            self._status(Text(message, style="bold red"))
            self.notify(message, severity="error", title="Compare")

    # ---- actions ------------------------------------------------------------------------------

    def action_compare(self) -> None:
        """Compare the ticked runs, as columns in the order they were ticked (the engine refuses runs
        that cannot be compared)."""
        known = {c.run_id for c in self.choices}
        order = [r for r in self.query_one("#compare-runs", SelectionList).selected if r in known]  # tick order
        if len(order) < 2:
            message = f"tick two or more runs to compare ({len(order)} ticked; space ticks)"
            self._status(Text(message, style="bold red"))
            self.notify(message, severity="warning", title="Compare")
            return
        self.run_compare(order)

    def action_cycle_filter(self) -> None:
        """Next common filter."""
        select = self.query_one("#compare-where-choice", Select)
        value = str(select.value)
        current = int(value) if value.isdigit() else -1  # blank or the typed filter's entry
        if value == TYPED:
            select.set_options([(label, str(i)) for i, (label, _clause) in enumerate(self._filters)])
        select.value = str((current + 1) % len(self._filters))

    def action_type_filter(self) -> None:
        """Focus the typed filter."""
        self.query_one("#compare-where", Input).focus()

    def action_focus_table(self) -> None:
        """Focus the comparison table."""
        self.query_one("#compare-table", DataTable).focus()

    def action_refresh(self) -> None:
        """List the stored runs again."""
        self.load_choices()

    def action_scroll_columns(self, direction: int) -> None:
        """Scroll the comparison table sideways by about a third of its width (``direction`` 1: right)."""
        table = self.query_one("#compare-table", DataTable)
        step = max(8, table.scrollable_content_region.width // 3)
        table.scroll_relative(x=step * direction, animate=False)

    def action_evidence(self) -> None:
        """Focus the evidence pane and enlarge it over the picker and table; again: shrink it back
        and return the focus to the table."""
        big = not self.has_class("-evidence-big")
        self.set_class(big, "-evidence-big")
        box = self.query_one("#compare-evidence-box", VerticalScroll)
        box.border_title = f"Evidence handed to the PA (e: {'shrink' if big else 'enlarge'})"
        if big:
            box.focus()
        else:
            self.query_one("#compare-table", DataTable).focus()

    def on_selection_list_selected_changed(self, event: SelectionList.SelectedChanged[str]) -> None:
        """Ticks that differ from the compared runs mark the table as stale (the status line)."""
        if event.selection_list.id == "compare-runs":
            self._show_runs_status()

    def action_export(self) -> None:
        """Write the shown rows as Markdown; refused (nothing written) when no row is shown."""
        if self.comparison is None:
            self.notify("nothing compared yet: tick two or more runs and press c", severity="warning",
                        title="Compare")
            return
        if not self.shown:
            self.notify("no probe repeat is shown, so nothing to export: choose another filter (f)",
                        severity="warning", title="Compare")
            return
        self.export()

    @work(exclusive=True, group="compare-export", exit_on_error=False)
    async def export(self) -> None:
        """Write the Markdown file in a worker and say where it is."""
        import anyio

        comparison, rows, where = self.comparison, list(self.shown), self.where
        assert comparison is not None
        folder = Path(self.mempa.settings.saves_dir)
        path = await anyio.to_thread.run_sync(lambda: export_comparison(comparison, rows, where, folder))
        self.last_export = path
        self.notify(f"wrote {len(rows)} row(s) to {path}", title="Comparison exported", timeout=10)
