"""Run browser (issue 16; SPEC section 4.11): every stored run, every step of the chosen run
(accumulation sessions, change events, each probe repeat) with its outcome, and one step or
probe repeat in full.

Three tabs, so each gets the whole terminal at 80x24 as at 160x48:

* **Runs** - id, user, memory, model, what it played, status, memory health; filter by user.
* **Steps** - the chosen run's timeline steps and probe repeats (selection, target, outcome,
  BRS, PRS); probe filters by context, attribute, dimension and outcome (paper Section 3.5 and
  Appendix F.2: correct, wrong, floored, incomplete). Setting a probe filter hides the timeline
  steps, which have no cell.
* **Detail** - the stored transcript (tool calls fold open and shut), and beside it the step's
  summary (IX selection, target and scores with the judge's and the user's reasons once the
  probe is done), the model calls (collapsed; each call is a fold titled with its role, tokens
  and time, which opens to its prompt messages and reply, read from the store in a worker when it
  is first opened), the evidence the memory handed the PA with its scores and the memory's
  contents at the step's checkpoint (the memory panel), and each turn's full memory section
  (collapsed).

Everything is read from the store through :mod:`mempa_tui.tui.engine` (which wraps
:mod:`mempa_tui.runner._browse`), in workers; nothing is written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, cast

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.events import Resize
from textual.screen import Screen
from textual.widgets import (
    Collapsible,
    DataTable,
    Footer,
    Header,
    Label,
    Select,
    Static,
    TabbedContent,
    TabPane,
)
from textual.worker import Worker, WorkerState

from mempa_tui.memory import MemoryInspection
from mempa_tui.runner import StepEvent
from mempa_tui.runner._episode_events import EvidenceEvent
from mempa_tui.runner._health import pa_problem_phrases
from mempa_tui.store import StoreError
from mempa_tui.taxonomy import ATTRIBUTES, Dimension
from mempa_tui.tui.book import RunEntry, RunRequest
from mempa_tui.tui.engine import (
    NOT_STORED,
    checkpoint_words,
    OUTCOMES,
    BrowsedRun,
    BrowseError,
    MemoryView,
    ModelCallDetail,
    ModelCallLine,
    ProbeFilter,
    RunListing,
    StepDetail,
    error_line,
)
from mempa_tui.tui.plain import PlainNotify
from mempa_tui.tui.render import evidence_renderable
from mempa_tui.tui.widgets import MemoryPanel, TranscriptView
from mempa_tui.tui.widgets.tables import FitTable

if TYPE_CHECKING:
    from mempa_tui.tui.app import MempaApp

__all__ = ["RUN_COLUMNS", "STEP_COLUMNS", "BrowserScreen", "CallFold", "summary_text"]

RUN_COLUMNS = ("run", "status", "health", "user", "memory", "model", "played", "steps", "probes")
"""Columns of the Runs tab."""

RUN_DROP = ("user", "memory", "model", "played")
"""Runs tab columns left out, in this order, while the rows do not fit (80 columns): the run id
names the user, condition and model (and ``-slice``/``-quick``), so the id, status, health and
progress stay readable."""

STEP_COLUMNS = ("#", "step", "outcome", "selection", "target", "BRS", "PRS", "kind", "cell", "status")
"""Columns of the Steps tab, the outcome first so it shows at 80 columns (``#``: a timeline
step's position or a probe's repeat; ``outcome``: a probe repeat's correct / wrong / floored /
incomplete, a timeline step's status; ``cell``: a probe's context / attribute)."""

STEP_DROP = ("status", "cell", "kind")
"""Steps tab columns left out, in this order, while the rows do not fit (80 columns): a step's
status is its outcome, and a probe's id names its kind and cell, so the selection, target and
scores stay readable."""

NARROW = 120
"""Below this many columns the detail tab stacks the transcript over the side panel."""

_ANY = Select.NULL


def _score(value: int | None) -> str:
    return "-" if value is None else str(value)


def summary_text(detail: StepDetail) -> Text:
    """A step's or probe repeat's head: kind, status and reason, cell, the PA's own problems
    (repeated calls, echoed replies, reply sentences withheld for interaction-tool text, as
    ``mempa show`` lists them), IX selection, and for a probe the target, the outcome and BRS / PRS
    with their reasons (paper Section 3.5)."""
    where = detail.step_id + (f" · repeat {detail.repeat}" if detail.repeat else "")
    out = Text(f"{where}\n", style="bold")
    out.append(f"{detail.kind} · {detail.status}" + (f": {detail.reason}" if detail.reason else "") + "\n")
    if detail.context:
        out.append(f"cell: {detail.context} / {detail.attribute}\n")
    for phrase in pa_problem_phrases(*detail.pa_repeats, detail.pa_echoes, detail.pa_ix_withheld,
                                     detail.simulator_checks):
        out.append(f"run problem (warning): {phrase}\n", style="yellow")
    out.append(f"IX selection: {detail.selection or '(none)'}\n", style="bold blue")
    if detail.target is not None:
        style = {"correct": "green", "wrong": "red", "floored": "yellow"}.get(detail.outcome or "", "dim")
        out.append(f"target: {detail.target} → {detail.outcome}\n", style=style)
        out.append(f"BRS {_score(detail.brs_scored)}" + (f"  judge: {detail.brs_reason}" if detail.brs_reason else "") + "\n")
        out.append(f"PRS {_score(detail.prs)}" + (f"  user: {detail.prs_reason}" if detail.prs_reason else "") + "\n")
    if detail.memory_stats:
        counters = ", ".join(f"{k} {v:g}" for k, v in sorted(detail.memory_stats.items()))
        out.append(f"memory counters after the step: {counters}\n", style="dim")
    if detail.unreadable_events:
        out.append(f"{detail.unreadable_events} stored event(s) could not be read and are not shown\n", style="red")
    return out


class CallFold(Collapsible):
    """One model call of the Detail tab: collapsed, its title is the call's role, tokens and time
    (SPEC section 7); opened, it shows the prompt messages and the reply, which the screen reads
    from the store the first time it opens (:meth:`BrowserScreen.load_call`)."""

    def __init__(self, number: int, line: ModelCallLine) -> None:
        """Args:
            number: the call's position in the step (1-based).
            line: the call as :func:`~mempa_tui.runner._browse.step_details` listed it.
        """
        body = Static(Text("(opening ...)" if line.prompt_stored else NOT_STORED, style="dim"),
                      classes="call-text")
        super().__init__(body, title=Content(f"{number:>3} {line.head()}"), collapsed=True,
                         classes="call-fold" + ("" if line.ok else " -failed"))
        self.line = line
        """The call's head (role, model, tokens, time, ``call_id``)."""
        self.loaded = not line.prompt_stored
        """Whether the body shows the stored prompt and reply (or the note that none is stored)."""

    def show(self, call: ModelCallDetail) -> None:
        """Fill the body with the call's prompt and reply."""
        self.query_one(".call-text", Static).update(Text(call.text(head=False)))
        self.loaded = True



class BrowserScreen(PlainNotify, Screen[None]):
    """Stored runs, their steps and probe repeats, and one in full (see the module docstring)."""

    CSS_PATH = "browser.tcss"
    AUTO_FOCUS = "#browser-runs"
    """The runs list has focus on open: enter opens the run under the cursor (not the user filter)."""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("1", "show_tab('tab-runs')", "Runs", id="browser.runs",
                tooltip="The stored runs: user, memory, model, what each played, status, memory health"),
        Binding("2", "show_tab('tab-steps')", "Steps", id="browser.steps",
                tooltip="The chosen run's steps and probe repeats with their outcomes"),
        Binding("3", "show_tab('tab-detail')", "Detail", id="browser.detail",
                tooltip="The chosen step or probe repeat in full"),
        Binding("escape", "back", "Back", id="browser.back",
                tooltip="Go back one tab (detail -> steps -> runs)"),
        Binding("f", "filters", "Filters", id="browser.filters",
                tooltip="Focus the first filter of this tab (user on Runs; context on Steps)"),
        Binding("0", "clear_filters", "Clear filters", id="browser.clear",
                tooltip="Show every run and every step again"),
        Binding("left_square_bracket", "neighbour(-1)", "Prev step", key_display="[", id="browser.prev",
                tooltip="Open the previous row of the Steps list"),
        Binding("right_square_bracket", "neighbour(1)", "Next step", key_display="]", id="browser.next",
                tooltip="Open the next row of the Steps list"),
        Binding("c", "model_calls", "Model calls", id="browser.calls",
                tooltip="Open (or close) the Detail tab's Model calls list and focus its first call "
                        "(enter opens one; tab moves to the next)"),
        Binding("e", "toggle_expanded", "Open/close calls", id="browser.expand",
                tooltip="Open or close every tool call of the transcript (j/k and enter: one call)"),
        Binding("f5", "refresh", "Refresh", id="browser.refresh",
                tooltip="Read the stored runs again"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.runs: list[BrowsedRun] | None = None
        """The stored runs as last read (None: not read yet)."""
        self.listing: RunListing | None = None
        """The chosen run's steps and probes (None: no run chosen or still loading)."""
        self._thresholds = ""
        """File memory's thresholds of the listed run (a reference run: its donor's), for the panel."""
        self.detail: StepDetail | None = None
        """The step or probe repeat shown on the Detail tab."""
        self.memory_view: MemoryView | None = None
        """The memory at that step's checkpoint (None: still loading)."""
        self.row_keys: list[str] = []
        """Keys of the Steps rows shown (``step:<id>`` or ``probe:<id>:<repeat>``), in order."""
        self._wanted: tuple[str, str | None] | None = None
        self._panel_entry: RunEntry | None = None

    @property
    def mempa(self) -> MempaApp:
        """The app, typed."""
        return cast("MempaApp", self.app)

    # ---- layout ---------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        """The three tabs (see the module docstring)."""
        yield Header()
        with TabbedContent(initial="tab-runs", id="browser-tabs"):
            with TabPane("Runs", id="tab-runs"):
                with Horizontal(classes="browser-bar"):
                    yield Label("user", classes="field-label")
                    yield Select[str]([], prompt="any user", id="f-user")
                    yield Label("", id="runs-count")
                # a run database that cannot be read is named here, not shown as an empty list
                yield Label("", id="runs-error")
                yield FitTable(id="browser-runs", cursor_type="row", zebra_stripes=True, drop=RUN_DROP)
            with TabPane("Steps", id="tab-steps"):
                yield Label("Choose a run on the Runs tab (1) with enter.", id="steps-head")
                with Horizontal(classes="browser-bar"):
                    yield Select[str]([("work", "work"), ("personal", "personal")], prompt="context",
                                      id="f-context")
                    yield Select[str]([(a.name, a.key) for a in ATTRIBUTES], prompt="attribute",
                                      id="f-attribute")
                    yield Select[str]([(d.value, d.value) for d in Dimension], prompt="dimension",
                                      id="f-dimension")
                    yield Select[str]([(o, o) for o in OUTCOMES], prompt="outcome", id="f-outcome")
                yield FitTable(id="browser-steps", cursor_type="row", zebra_stripes=True, drop=STEP_DROP)
            with TabPane("Detail", id="tab-detail"):
                with Horizontal(id="detail-body"):
                    yield TranscriptView(id="detail-transcript")
                    with VerticalScroll(id="detail-side"):
                        yield Static("Choose a step or probe on the Steps tab (2) with enter.", id="detail-summary")
                        with Collapsible(title="Model calls", id="detail-calls-box", collapsed=True):
                            yield Vertical(id="detail-calls")
                        yield MemoryPanel(id="detail-memory")
                        with Collapsible(title="Memory section of every turn", id="detail-sections-box",
                                         collapsed=True):
                            yield Static("", id="detail-sections")
        yield Footer()

    def on_mount(self) -> None:
        """Empty tables, then read the stored runs."""
        self.query_one("#browser-runs", FitTable).fill(RUN_COLUMNS, [])
        self.query_one("#browser-steps", FitTable).fill(STEP_COLUMNS, [])
        # each pane's title sits in its top rule, which marks the pane that has focus (browser.tcss)
        self.query_one("#browser-runs").border_title = "stored runs · enter: its steps"
        self.query_one("#detail-transcript").border_title = "transcript"
        self.query_one("#detail-side").border_title = "scores, model calls, memory"
        self.query_one(MemoryPanel).show(None)
        self.load_runs()

    def on_screen_resume(self) -> None:
        """Coming back: read the runs again (runs may have finished meanwhile)."""
        if self.runs is not None:
            self.load_runs()

    def on_resize(self, event: Resize) -> None:
        """Narrow terminals stack the detail's transcript over its side panel."""
        self.set_class(event.size.width < NARROW, "-narrow")

    # ---- runs -----------------------------------------------------------------------------

    @work(exclusive=True, group="browser-runs", exit_on_error=False)
    async def load_runs(self) -> None:
        """Read every stored run into the Runs tab."""
        active = [e.run_id for e in self.mempa.book if e.active and e.run_id]
        try:
            self.runs = await self.mempa.service.browse_runs(active)
        except StoreError as exc:  # the file is left as it is; the Runs tab says why it is empty
            self.runs = []
            self._fill_runs(error=f"cannot list the stored runs: {exc}")
            self.notify(str(exc), severity="error", title="Run browser")
            return
        users = sorted({r.user for r in self.runs})
        picker = self.query_one("#f-user", Select)
        chosen = picker.value
        picker.set_options([(u, u) for u in users])
        if chosen in users:
            picker.value = chosen
        self._fill_runs()
        if self._wanted is not None:
            run_id, step = self._wanted
            self._wanted = None
            self.choose_run(run_id, step)

    def _shown_runs(self) -> list[BrowsedRun]:
        user = self.query_one("#f-user", Select).value
        return [r for r in self.runs or [] if user is _ANY or r.user == user]

    def _fill_runs(self, error: str = "") -> None:
        """Fill the Runs tab from :attr:`runs`; ``error`` (why the runs cannot be read) shows in
        red above the table in place of the count."""
        table = self.query_one("#browser-runs", FitTable)
        cursor = table.cursor_row
        shown = self._shown_runs()
        table.fill(RUN_COLUMNS,
                   [[r.run_id, r.status, r.health, r.user, r.memory, r.profile, r.played, r.steps, r.probes]
                    for r in shown],
                   keys=[r.run_id for r in shown])
        if shown:
            table.move_cursor(row=min(max(cursor, 0), len(shown) - 1))
        total = len(self.runs or [])
        count = f"{len(shown)} of {total} stored run(s)" if len(shown) != total else f"{total} stored run(s)"
        if not total:
            count = "No stored runs yet: start one from the launcher (l)."
        self.query_one("#runs-count", Label).update("" if error else count + " · enter: its steps")
        shown = self.query_one("#runs-error", Label)
        shown.update(error)
        shown.set_class(bool(error), "-shown")

    @on(DataTable.RowSelected, "#browser-runs")
    def _run_chosen(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.choose_run(str(event.row_key.value))

    def open_run(self, run_id: str, step: str | None = None) -> None:
        """Show run ``run_id``'s steps (and, given ``step`` as a Steps row key, that step in
        full) once the runs are read; used by the dashboard's ``b``."""
        if self.runs is None:
            self._wanted = (run_id, step)
        else:
            self.choose_run(run_id, step)

    def choose_run(self, run_id: str, step: str | None = None) -> None:
        """Read ``run_id``'s steps and probes and show the Steps tab."""
        self.listing = None
        self._fill_steps()  # no rows of the previous run while this one is read
        self.load_listing(run_id, step)
        self.action_show_tab("tab-steps")

    @work(exclusive=True, group="browser-listing", exit_on_error=False)
    async def load_listing(self, run_id: str, step: str | None = None) -> None:
        """Read one run's steps and probe repeats into the Steps tab."""
        self.query_one("#steps-head", Label).update(f"reading {run_id} ...")
        try:
            listing = await self.mempa.service.run_listing(run_id)
            self._thresholds = await self.mempa.service.memory_thresholds(run_id)
        except BrowseError as exc:
            self.query_one("#steps-head", Label).update(str(exc))
            self.notify(str(exc), severity="error", title="Run browser")
            return
        self.listing = listing
        run = listing.run
        played = next((r.played for r in self.runs or [] if r.run_id == run.id), "")
        head = (f"{run.id}: user {run.user}, memory {run.memory}, model {run.profile}, {played}, "
                f"{run.status.value} · {listing.health.text()}")
        if listing.repeats is not None and listing.repeats.any:  # the PA's own warning (issue 12)
            head += f" · {listing.repeats.text()}"
        if run.donor_run:
            head += f" · probes start from the checkpoints of {run.donor_run}"
        label = self.query_one("#steps-head", Label)
        label.update(head)
        label.set_class(listing.health.broken, "-broken")
        self._fill_steps()
        if step is not None:
            self.open_row(step)

    # ---- steps ----------------------------------------------------------------------------

    def probe_filter(self) -> ProbeFilter | None:
        """The probe filter the Steps tab's pickers set (None: no picker set)."""
        values = {name: self.query_one(f"#f-{name}", Select).value
                  for name in ("context", "attribute", "dimension", "outcome")}
        chosen = {k: str(v) for k, v in values.items() if v is not _ANY}
        return ProbeFilter.model_validate(chosen).check() if chosen else None

    def _fill_steps(self) -> None:
        listing = self.listing
        table = self.query_one("#browser-steps", FitTable)
        if listing is None:
            table.fill(STEP_COLUMNS, [])
            self.row_keys = []
            return
        flt = self.probe_filter()
        rows: list[list[str]] = []
        keys: list[str] = []
        if flt is None:
            for s in listing.steps:
                rows.append([str(s.index + 1), s.step_id, s.status, s.selection or "-", "", "", "", s.kind,
                             "", s.status])
                keys.append(f"step:{s.step_id}")
        probes = [p for p in listing.probes if flt is None or flt.keeps(p)]
        for p in probes:
            rows.append([f"r{p.repeat}", p.probe_id, p.outcome, p.selection or "-", p.target, _score(p.brs_scored),
                         _score(p.prs), p.kind, f"{p.context}/{p.attribute}", p.status])
            keys.append(f"probe:{p.probe_id}:{p.repeat}")
        table.fill(STEP_COLUMNS, rows, keys=keys)
        self.row_keys = keys
        shown = (f"{len(probes)} of {len(listing.probes)} probe repeat(s) match the filter"
                 if flt is not None else f"{len(listing.steps)} step(s), {len(listing.probes)} probe repeat(s)")
        table.border_title = shown + " · enter: in full"

    @on(Select.Changed, "#f-context, #f-attribute, #f-dimension, #f-outcome")
    def _probe_filter_changed(self) -> None:
        self._fill_steps()

    @on(Select.Changed, "#f-user")
    def _user_filter_changed(self) -> None:
        self._fill_runs()

    @on(DataTable.RowSelected, "#browser-steps")
    def _step_chosen(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.open_row(str(event.row_key.value))

    def open_row(self, key: str) -> None:
        """Show the Steps row ``key`` (``step:<id>`` or ``probe:<id>:<repeat>``) in full.

        Raises:
            ValueError: ``key`` is neither form.
        """
        listing = self.listing
        if listing is None:
            return
        kind, _, rest = key.partition(":")
        if kind == "step":
            step_id, repeat = rest, None
        elif kind == "probe":
            step_id, _, number = rest.rpartition(":")
            repeat = int(number)
        else:
            raise ValueError(f"steps row key {key!r}: expected step:<id> or probe:<id>:<repeat>")
        if key in self.row_keys:
            self.query_one("#browser-steps", DataTable).move_cursor(row=self.row_keys.index(key))
        self.detail, self.memory_view = None, None
        self.load_detail(listing.run.id, step_id, repeat)
        self.action_show_tab("tab-detail")

    # ---- detail ---------------------------------------------------------------------------

    @work(exclusive=True, group="browser-detail", exit_on_error=False)
    async def load_detail(self, run_id: str, step_id: str, repeat: int | None) -> None:
        """Read one step or probe repeat and the memory at its checkpoint into the Detail tab."""
        summary = self.query_one("#detail-summary", Static)
        summary.update(f"reading {step_id} ...")
        try:
            details = await self.mempa.service.step_details(run_id, step_id, repeat)
        except BrowseError as exc:
            summary.update(str(exc))
            self.notify(str(exc), severity="error", title="Run browser")
            return
        detail = details[0]
        self.detail = detail
        self.query_one(TranscriptView).replay(
            [StepEvent(run_id=run_id, step_id=step_id, repeat=detail.repeat, event=e) for e in detail.events])
        summary.update(summary_text(detail))
        self.query_one("#detail-calls-box", Collapsible).title = f"Model calls ({len(detail.calls)})"
        calls = self.query_one("#detail-calls", Vertical)
        await calls.remove_children()
        await calls.mount_all([CallFold(i, c) for i, c in enumerate(detail.calls, 1)]
                              or [Static(Text("(no model call logged)", style="dim"))])
        evidence = detail.evidence
        sections = Text()
        for n, ev in enumerate(evidence, 1):
            sections.append(f"turn {n}: {len(ev.items)} item(s)\n", style="bold")
            sections.append_text(evidence_renderable(ev))
            sections.append("\n")
            sections.append((ev.system_text.strip() or "(empty memory section)") + "\n\n", style="dim")
        self.query_one("#detail-sections-box", Collapsible).title = f"Memory section of every turn ({len(evidence)})"
        self.query_one("#detail-sections", Static).update(sections or Text("(no evidence event stored)", style="dim"))
        panel = self.query_one(MemoryPanel)
        self._panel_entry = self._entry(detail, None)
        self._show_panel(panel, self._panel_entry, detail)
        view = await self.mempa.service.step_memory(run_id, step_id, detail.repeat or None)
        if self.detail is not detail:
            return
        self.memory_view = view
        self._panel_entry = self._entry(detail, view)
        self._show_panel(panel, self._panel_entry, detail)

    def _show_panel(self, panel: MemoryPanel, entry: RunEntry, detail: StepDetail) -> None:
        """The side panel for a stored step: a step that stored no evidence (a change event replays
        a fixed transcript; No Memory hands nothing) says so, not "no turn played yet"."""
        panel.show(entry)
        if entry.evidence is None:
            what = ("a change event replays its fixed transcript, so no memory section was handed to the PA"
                    if detail.kind == "change_event" else "this step stored no evidence event")
            panel.query_one("#evidence-body", Static).update(Text(f"({detail.status} step; {what})", style="dim"))

    @on(Collapsible.Expanded, ".call-fold")
    def _call_opened(self, event: Collapsible.Expanded) -> None:
        fold = event.collapsible
        if isinstance(fold, CallFold) and not fold.loaded and self.detail is not None:
            self.load_call(self.detail.run_id, fold)

    @work(group="browser-call", exit_on_error=False)
    async def load_call(self, run_id: str, fold: CallFold) -> None:
        """Read one call's prompt and reply from the store into its fold (only that call is
        decompressed; a failure shows in the fold and as a notification)."""
        call_id = fold.line.call_id
        if call_id is None:
            return
        try:
            call = await self.mempa.service.model_call(run_id, call_id)
        except BrowseError as exc:
            fold.query_one(".call-text", Static).update(Text(str(exc), style="red"))
            self.notify(str(exc), severity="error", title="Run browser")
            return
        if fold.is_attached:
            fold.show(call)

    def _entry(self, detail: StepDetail, view: MemoryView | None) -> RunEntry:
        """The memory panel's input: the evidence of the PA's first turn (what a probe is decided
        on) and the memory at the checkpoint."""
        listing = self.listing
        run = listing.run if listing is not None else None
        request = RunRequest(user=run.user if run else "?", memory=run.memory if run else "?",
                             profile=run.profile if run else "?")
        entry = RunEntry(key=detail.run_id, request=request, run_id=detail.run_id, source="stored")
        evidence: list[EvidenceEvent] = detail.evidence
        entry.evidence = evidence[0] if evidence else None
        entry.thresholds = self._thresholds  # the run's own (a reference run: its donor's), issue 12
        if view is not None:
            when = "" if detail.repeat == 0 else "where the probe started: "
            where = (checkpoint_words(view.checkpoint_run, view.checkpoint_index, listing)
                     if view.checkpoint_run is not None else "no checkpoint")
            entry.memory = MemoryInspection(system=request.memory, stored=view.stored,
                                            stats=detail.memory_stats)
            # the stepper's numbering and words (1-based step position in the played timeline)
            entry.memory_origin = (f"{when}checkpoint {where}" if view.checkpoint_run is not None
                                   else f"{when}{where}") + (f"; {view.note}" if view.note else "")
        return entry

    # ---- actions --------------------------------------------------------------------------

    def action_show_tab(self, tab: str) -> None:
        """Show tab ``tab`` and focus its main control."""
        self.query_one(TabbedContent).active = tab
        target = {"tab-runs": "#browser-runs", "tab-steps": "#browser-steps", "tab-detail": "#detail-transcript"}
        self.query_one(target[tab]).focus()

    def action_back(self) -> None:
        """Go back one tab."""
        active = self.query_one(TabbedContent).active
        if active == "tab-detail":
            self.action_show_tab("tab-steps")
        elif active == "tab-steps":
            self.action_show_tab("tab-runs")

    def action_filters(self) -> None:
        """Focus the first filter of the shown tab (the Steps filters on the Detail tab)."""
        active = self.query_one(TabbedContent).active
        if active == "tab-runs":
            self.query_one("#f-user", Select).focus()
        else:
            self.action_show_tab("tab-steps")
            self.query_one("#f-context", Select).focus()

    def action_clear_filters(self) -> None:
        """Clear every filter."""
        for name in ("user", "context", "attribute", "dimension", "outcome"):
            self.query_one(f"#f-{name}", Select).clear()

    def action_neighbour(self, step: int) -> None:
        """Open the previous or next Steps row in full."""
        if not self.row_keys:
            return
        table = self.query_one("#browser-steps", DataTable)
        row = max(0, min(len(self.row_keys) - 1, table.cursor_row + step))
        self.open_row(self.row_keys[row])

    def action_model_calls(self) -> None:
        """Show the Detail tab with its Model calls list opened and its first call focused; a second
        press closes the list (issue 12 follow-up: the list opened only with the mouse)."""
        self.query_one(TabbedContent).active = "tab-detail"
        box = self.query_one("#detail-calls-box", Collapsible)
        box.collapsed = not box.collapsed
        if box.collapsed:
            self.query_one("#detail-transcript").focus()
            return
        folds = list(box.query(CallFold))
        target = (folds[0] if folds else box).query_one("CollapsibleTitle")  # enter opens it
        self.call_after_refresh(target.focus)
        self.call_after_refresh(box.scroll_visible)

    def action_toggle_expanded(self) -> None:
        """Open or close every tool call of the transcript."""
        view = self.query_one(TranscriptView)
        view.expanded = not view.expanded

    def action_refresh(self) -> None:
        """Read the stored runs (and the chosen run's steps) again."""
        self.load_runs()
        if self.listing is not None:
            self.load_listing(self.listing.run.id)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A failed read is a notification; the screen carries on."""
        if event.state is WorkerState.ERROR and event.worker.error is not None:
            self.notify(error_line(event.worker.error), severity="error", title="Run browser")

    def steps_text(self) -> str:
        """The Steps rows shown, as plain text (tests and a quick look)."""
        table = self.query_one("#browser-steps", DataTable)
        return "\n".join("  ".join(str(c) for c in table.get_row_at(i)) for i in range(table.row_count))

    def side_text(self) -> str:
        """The Detail tab's side panel as plain text (summary, calls, memory panel, sections)."""
        parts = []
        for widget in self.query_one("#detail-side").query(Static):
            content = widget.render()
            parts.append(content.plain if isinstance(content, Text) else str(content))
        return "\n".join(parts)
