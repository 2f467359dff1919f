"""Launcher (SPEC section 4.11): pick users, memory conditions, model profiles (several of each)
and repeats; start one run per combination. Runs stored in ``saves/`` are listed with their
progress and can be resumed or viewed.

The form starts as the README's quick start (``mempa run --quick --memory none,file --repeats
1``): *Quick start only* ticked, No Memory and File memory ticked, one repeat. At 80x24 the whole
form, its boxes included, shows above *Start runs* without scrolling (issue 12 follow-up).

The form's boxes match ``mempa run``'s flags: *Slice only* is ``--slice``, *Quick start only*
``--quick`` (the two exclude each other), *Start over* ``--fresh`` (a stored run with the same id
is moved aside as ``<id>~N`` by the runner, as the command does); all come before Start in the
focus order (issue 16)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, cast

from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import (
    Button,
    DataTable,
    Footer,
    Header,
    Label,
    Select,
)
from textual.worker import Worker, WorkerState

from mempa_tui.scripts.loader import has_quick, has_slice
from mempa_tui.store import RunSummary, StoreError
from mempa_tui.tui.book import RunRequest
from mempa_tui.tui.engine import (
    LauncherChoices,
    discover_choices,
    empty_pickers,
    error_line,
    request_from_record,
)
from mempa_tui.tui.plain import PlainNotify

# ticked boxes show a check mark, not only a colour (issue 16.6); the names stay Textual's
from mempa_tui.tui.widgets.marks import MarkedCheckbox as Checkbox
from mempa_tui.tui.widgets.marks import MarkedSelectionList as SelectionList
from mempa_tui.tui.widgets.tables import FitTable

if TYPE_CHECKING:
    from mempa_tui.tui.app import MempaApp, RunUpdate

__all__ = ["LauncherScreen"]

REPEAT_CHOICES = (1, 2, 3, 5, 10)
"""Repeats the launcher offers (the paper uses three)."""

SAVED_RUN_COLUMNS = ("run", "status", "timeline", "probes", "tokens", "updated")
"""Columns of the saved-runs table."""

SAVED_RUN_DROP = ("updated", "tokens", "timeline")
"""Saved-runs columns left out, in this order, while the rows do not fit (at 80x24 the table has
about 40 cells beside the form): the run id, its status and its probes stay readable; a run id
too long for what is left breaks into two lines after a ``-`` so the probes column is never cut."""

_RUN_BOXES = (
    ("slice", "Quick-start slice", False,
     "mempa run --slice: the timeline's slice and its probes (a full timeline is 94 sessions)"),
    ("quick", "Quick start only", True,
     "mempa run --quick: one attribute in both contexts, its change event, and those cells' probes"),
    ("fresh", "Start over (--fresh)", False,
     "mempa run --fresh: a stored run with the same id is moved aside as <id>~N and started again"),
)
"""The form's run boxes: id, label (short enough for the 80-column form), ticked, tooltip. Ticked
as the README's quick start: only *Quick start only*."""

DEFAULT_MEMORIES = ("none", "file")
"""Memory conditions ticked when the launcher first lists them (the README's quick start)."""

DEFAULT_REPEATS = 1
"""Repeats chosen when the launcher opens (the README's quick start; the paper uses three)."""

_TALL_FROM = 32
"""Screen rows from which the launcher's form has room for bordered pickers (``-tall``)."""

_FIELD_NAMES = {"user": "user", "memory": "memory condition", "profile": "model profile"}
"""How the launcher's pick lists are named in its messages."""


class LauncherScreen(PlainNotify, Screen[None]):
    """Start runs and pick up stored ones."""

    CSS_PATH = "launcher.tcss"
    # at 80 columns the form narrows so Saved runs shows several columns; below 32 rows the pick
    # lists shrink and Start is docked at the form's foot, always on screen (issue 16.6)
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]] | None] = [(0, "-narrow"), (100, "-wide")]
    VERTICAL_BREAKPOINTS: ClassVar[list[tuple[int, str]] | None] = [(0, "-short"), (_TALL_FROM, "-tall")]
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n", "start", "Start runs", id="launcher.start",
                tooltip="Start (or resume) one run per chosen user x memory condition x profile"),
        Binding("r", "resume", "Resume saved", id="launcher.resume",
                tooltip="Resume the saved run under the cursor from its last checkpoint"),
        Binding("v", "view", "View saved", id="launcher.view",
                tooltip="Open the session view of the saved run under the cursor"),
        Binding("f5", "refresh", "Refresh", id="launcher.refresh",
                tooltip="Read the users, profiles and saved runs again"),
    ]

    class StartRequested(Message):
        """The user asked to start or resume a run (handler: ``on_launcher_screen_start_requested``)."""

        def __init__(self, request: RunRequest) -> None:
            self.request = request
            """What to run."""
            super().__init__()

    class ViewRequested(Message):
        """The user asked to view a saved run (handler: ``on_launcher_screen_view_requested``)."""

        def __init__(self, summary: RunSummary) -> None:
            self.summary = summary
            """The stored run with its progress."""
            super().__init__()

    def __init__(self) -> None:
        super().__init__()
        self.choices = LauncherChoices()
        self.saved: list[RunSummary] = []
        self._told = ""  # the empty-picker note last notified (said once, not on every refresh)
        self._filled = False  # the pick lists were filled once (defaults are ticked only then)

    @property
    def mempa(self) -> MempaApp:
        """The app, typed."""
        return cast("MempaApp", self.app)

    def compose(self) -> ComposeResult:
        """The form on the left, the saved runs on the right."""
        yield Header()
        with Horizontal(id="launcher"):
            with Vertical(id="form-column"):
                with Vertical(id="form"):
                    yield Label("New run", classes="section-title")
                    yield Label("", id="choices-note")
                    yield Label("Users (space toggles)", classes="field-label")
                    yield SelectionList[str](id="user", classes="picks")
                    yield Label("Memory conditions", classes="field-label")
                    yield SelectionList[str](id="memory", classes="picks")
                    yield Label("Model profiles", classes="field-label")
                    yield SelectionList[str](id="profile", classes="picks")
                    yield Label("Repeats per probe", classes="field-label")
                    yield Select[int]([(str(n), n) for n in REPEAT_CHOICES], id="repeats", value=DEFAULT_REPEATS,
                                      allow_blank=False)
                    for box_id, label, ticked, tip in _RUN_BOXES:
                        box = Checkbox(label, value=ticked, id=box_id)
                        box.tooltip = tip
                        yield box
                    yield Label("", id="run-count")
                    # the chosen profiles' descriptions come last: they never push the boxes away
                    yield Label("", id="profile-note")
                # outside the scrolling form: always on screen, and last in the focus order
                yield Button("Start runs", id="start", variant="primary")
            with Vertical(id="saved"):
                yield Label("Saved runs", classes="section-title")
                # a run database that cannot be read is named here, not shown as an empty list
                yield Label("", id="saved-error")
                yield FitTable(id="saved-runs", cursor_type="row", zebra_stripes=True, drop=SAVED_RUN_DROP,
                                wrap="run")
                yield Label("r resume · v view · f5 refresh", id="saved-hint")
        yield Footer()

    def on_resize(self, event: events.Resize) -> None:
        """Below 32 rows the repeats picker and Start drop their borders (one row each), so the
        whole form shows above Start at 80x24 (issue 12 follow-up)."""
        short = event.size.height < _TALL_FROM
        self.query_one("#repeats", Select).compact = short
        self.query_one("#start", Button).compact = short

    def on_mount(self) -> None:
        """Fill the pickers, list the saved runs, follow run updates."""
        self.query_one("#saved-runs", FitTable).fill(SAVED_RUN_COLUMNS, [])
        self.fill_choices()
        self.load_saved()
        self.mempa.run_signal.subscribe(self, self._on_run_update)

    def on_screen_resume(self) -> None:
        """Coming back to the launcher: the saved runs may have moved on."""
        if self.is_mounted:
            self.load_saved()

    def _on_run_update(self, update: RunUpdate) -> None:
        kind = getattr(update.item, "kind", None)
        if update.item is None or kind in ("run_started", "step_finished", "run_finished", "run_failed",
                                           "run_stopped"):
            self.load_saved()

    # ---- pickers --------------------------------------------------------------------------

    def fill_choices(self) -> None:
        """Read users, conditions and profiles from the folders; keep current picks if still valid."""
        self.choices = discover_choices(self.mempa.settings)
        self._set_options("#user", [(u, u) for u in self.choices.users])
        self._set_options("#memory", [(m, m) for m in self.choices.memories],
                          defaults=() if self._filled else DEFAULT_MEMORIES)
        self._set_options("#profile", [
            (p.name if p.valid else f"{p.name} (invalid)", p.name) for p in self.choices.profiles
        ])
        self._filled = True
        self.set_class(not self.choices.users, "-no-users")
        note = "\n".join(empty_pickers(self.mempa.settings, self.choices))
        self.query_one("#choices-note", Label).update(note)
        self.query_one("#choices-note", Label).set_class(bool(note), "-shown")
        # without users nothing can start: say so once as a toast too (an empty profile list
        # shows in the note only, beside the picker; some screens' work needs no profile)
        if not self.choices.users and note != self._told:
            self.notify(note, severity="warning", title="Nothing to pick", markup=False)
        self._told = note

    def _set_options(self, selector: str, options: list[tuple[str, str]], defaults: tuple[str, ...] = ()) -> None:
        picks: SelectionList[str] = self.query_one(selector, SelectionList)
        current = set(picks.selected) | set(defaults)
        values = [v for _, v in options]
        keep = [v for v in values if v in current] or (values if len(values) == 1 else [])
        highlighted = picks.highlighted
        picks.clear_options()
        picks.add_options([(label, value, value in keep) for label, value in options])
        if options:  # a highlighted row, so the first space ticks it (issue 6.3)
            picks.highlighted = min(highlighted or 0, len(options) - 1)
        self._show_count()

    def picked(self, field: str) -> list[str]:
        """The values checked in the ``user``, ``memory`` or ``profile`` list, in list order."""
        picks: SelectionList[str] = self.query_one(f"#{field}", SelectionList)
        chosen = set(picks.selected)
        return [str(picks.get_option_at_index(i).value) for i in range(picks.option_count)
                if picks.get_option_at_index(i).value in chosen]

    def _show_count(self) -> None:
        if not self.is_mounted:
            return
        n = len(self.picked("user")) * len(self.picked("memory")) * len(self.picked("profile"))
        self.query_one("#run-count", Label).update(f"{n} run(s) chosen{self._whole_note()}" if n else "")

    def _whole_note(self) -> str:
        """`` (R: no quick list, whole timeline)`` for ticked users whose timeline lacks the list
        the ticked box plays (they play their whole timeline, as :meth:`requests` builds them)."""
        quick, sliced = (self.query_one(f"#{i}", Checkbox).value for i in ("quick", "slice"))
        if not (quick or sliced):
            return ""
        has, what = (has_quick, "quick list") if quick else (has_slice, "slice")
        lacking = [u for u in self.picked("user") if not has(self.mempa.settings.worlds_dir, u)]
        return f" ({', '.join(lacking)}: no {what}, whole timeline)" if lacking else ""

    def on_selection_list_selected_changed(self, event: SelectionList.SelectedChanged[str]) -> None:
        """Update the run count; show the chosen profiles' descriptions (or why they are invalid)."""
        self._show_count()
        if event.selection_list.id != "profile":
            return
        chosen = [p for p in self.choices.profiles if p.name in self.picked("profile")]
        note = self.query_one("#profile-note", Label)
        note.update("\n".join(f"{p.name}: {p.description}" for p in chosen))
        note.set_class(bool(chosen), "-shown")
        note.set_class(any(not p.valid for p in chosen), "-invalid")

    def requests(self) -> list[RunRequest]:
        """One request per chosen user x memory condition x profile (empty, with a notification
        naming what is missing or invalid, when the form is incomplete)."""
        picked = {field: self.picked(field) for field in ("user", "memory", "profile")}
        missing = [_FIELD_NAMES[field] for field, values in picked.items() if not values]
        if missing:
            self.notify(f"nothing started: tick at least one {' and one '.join(missing)} "
                        "(space ticks the highlighted row; tab moves between the lists)",
                        severity="warning", title="Launcher")
            return []
        for name in picked["profile"]:
            chosen = next((p for p in self.choices.profiles if p.name == name), None)
            if chosen is not None and not chosen.valid:
                self.notify(chosen.description, severity="error", title=f"profile {chosen.name}")
                return []
        repeats = self.query_one("#repeats", Select).value
        quick = self.query_one("#quick", Checkbox).value
        sliced = self.query_one("#slice", Checkbox).value and not quick  # as `mempa run`: one of the two
        fresh = self.query_one("#fresh", Checkbox).value
        worlds = self.mempa.settings.worlds_dir
        return [  # a user whose timeline names no quick list (or slice) plays the whole timeline
            RunRequest(user=u, memory=m, profile=p, repeats=int(str(repeats)), fresh=fresh,
                       quick=quick and has_quick(worlds, u), slice=sliced and has_slice(worlds, u))
            for u in picked["user"] for m in picked["memory"] for p in picked["profile"]
        ]

    def on_checkbox_changed(self, event: Checkbox.Changed) -> None:
        """Slice and quick start exclude each other (``mempa run`` refuses both): ticking one
        unticks the other."""
        other = {"slice": "#quick", "quick": "#slice"}.get(event.checkbox.id or "")
        if other is not None and event.value:
            self.query_one(other, Checkbox).value = False
        self._show_count()

    def request(self) -> RunRequest | None:
        """The first of :meth:`requests` (None when the form is incomplete)."""
        found = self.requests()
        return found[0] if found else None

    def action_start(self) -> None:
        """Start one run per chosen combination."""
        for request in self.requests():
            self.post_message(self.StartRequested(request))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """The Start button."""
        if event.button.id == "start":
            self.action_start()

    # ---- saved runs -----------------------------------------------------------------------

    @work(exclusive=True, group="saves", exit_on_error=False)
    async def load_saved(self) -> None:
        """Read the stored runs and their progress into the table."""
        try:
            summaries = await self.mempa.service.saved_runs()
        except StoreError as exc:  # the file is left as it is; the listing says why it is empty
            self.saved = []
            self.query_one("#saved-runs", FitTable).fill(SAVED_RUN_COLUMNS, [])
            self._show_saved_error(f"cannot list the saved runs: {exc}")
            self.set_class(True, "-no-saved")
            self.notify(str(exc), severity="error", title="Run database")
            return
        self._show_saved_error("")
        self.saved = summaries
        table = self.query_one("#saved-runs", FitTable)
        cursor = table.cursor_row
        rows = []
        for s in summaries:
            run = s.run
            timeline = f"{s.steps_done}/{run.total_steps}" if run.total_steps else "—"
            entry = self.mempa.book.get(run.id)
            status = self.mempa.service.shown_status(run, active_here=entry is not None and entry.active)
            rows.append([
                run.id, status, timeline, f"{s.probes_done}/{run.total_probes}",
                f"{s.tokens.total:,}", f"{run.updated_at:%Y-%m-%d %H:%M}",
            ])
        table.fill(SAVED_RUN_COLUMNS, rows, keys=[s.run.id for s in summaries])
        if summaries:
            table.move_cursor(row=min(cursor, len(summaries) - 1))
        self.set_class(not summaries, "-no-saved")

    def _show_saved_error(self, text: str) -> None:
        """Show ``text`` (why the saved runs cannot be listed) above the table; ``""`` hides it."""
        label = self.query_one("#saved-error", Label)
        label.update(text)
        label.set_class(bool(text), "-shown")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A failed listing shows as a notification; the app carries on."""
        if event.state is WorkerState.ERROR and event.worker.error is not None:
            self.notify(error_line(event.worker.error), severity="error", title="Saved runs")

    def _summary_under_cursor(self) -> RunSummary | None:
        table = self.query_one("#saved-runs", DataTable)
        if not self.saved or table.cursor_row < 0 or table.cursor_row >= len(self.saved):
            self.notify("no saved run selected", severity="warning", title="Saved runs")
            return None
        return self.saved[table.cursor_row]

    def action_resume(self) -> None:
        """Resume the saved run under the cursor with its stored configuration."""
        summary = self._summary_under_cursor()
        if summary is None:
            return
        try:
            request = request_from_record(summary.run.config_json, run_id=summary.run.id)
        except ValueError as exc:
            self.notify(str(exc), severity="error", title=summary.run.id)
            return
        self.post_message(self.StartRequested(request))

    def action_view(self) -> None:
        """Open the saved run under the cursor in the session view."""
        summary = self._summary_under_cursor()
        if summary is not None:
            self.post_message(self.ViewRequested(summary))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter on a saved run views it."""
        self.action_view()

    def action_refresh(self) -> None:
        """Read the folders and the saved runs again."""
        self.fill_choices()
        self.load_saved()
