"""Play as the PA (SPEC §4.11): the person fills the PA seat of a live session or probe.

A tool palette lists every tool on offer this turn (world tools, then the activated IX tools) by
domain and bare name (``Email · message_send``), filtered by what is typed above it (enter picks
the first match); the chosen tool's form is generated from its JSON schema. At the decision point the palette opens the
IX tool of the tested attribute, whose setting picker lists its settings, so Tab reaches it; ctrl+b
reopens it and moves the cursor there. The reply editor sends the
turn; an empty reply is refused with a note (ctrl+g gives the turn up). Calls go through the same wrapper as a model PA's; the simulator, memory and checkpoints see
no difference, and a final probe is scored with BRS and PRS as in a run.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, ClassVar, cast

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Header, Input, Label, Select, Static, TextArea
from textual.worker import Worker, WorkerState

from mempa_tui.agent.forms import FormError, arguments_from_form, form_fields
from mempa_tui.agent.human import HumanAgentSeat, PAAction, PATurnView
from mempa_tui.llm.types import ToolSpec
from mempa_tui.runner import StepEvent
from mempa_tui.runner._episode_events import (
    BeatChangeEvent,
    EpisodeEvent,
    EvidenceEvent,
    UserMessageEvent,
)
from mempa_tui.runner.play import PlayOutcome, PlayRequest
from mempa_tui.tui.engine import error_line
from mempa_tui.tui.plain import PlainNotify
from mempa_tui.tui.play_render import agent_panel_text, outcome_text
from mempa_tui.tui.widgets import TranscriptLog
from mempa_tui.tui.widgets.play_setup import PlaySetup
from mempa_tui.tui.widgets.tool_palette import filter_palette

if TYPE_CHECKING:
    from mempa_tui.tui.app import MempaApp

__all__ = ["PlayAgentScreen"]

_HINT = {"text": "", "choice": "", "integer": "a whole number", "number": "a number", "boolean": "true or false",
         "list": "comma-separated", "json": "JSON"}


class PlayAgentScreen(PlainNotify, Screen[None]):
    """A person in the PA seat; the simulator plays the user."""

    CSS_PATH: ClassVar[list[str]] = ["play.tcss", "play_agent.tcss"]  # type: ignore[assignment,misc]
    # below 32 rows the reply editor and the palette's filter box shrink (issue 16.6: usable at 80x24)
    VERTICAL_BREAKPOINTS: ClassVar[list[tuple[int, str]] | None] = [(0, "-short"), (32, "-tall")]
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r", "start", "Start", id="play_agent.start", priority=True,
                tooltip="Start the chosen session or probe with you in the PA's seat"),
        Binding("ctrl+t", "call_tool", "Call tool", id="play_agent.call", priority=True,
                tooltip="Call the tool chosen in the palette with the form's arguments"),
        Binding("ctrl+b", "ix_picker", "IX picker", id="play_agent.ix", priority=True,
                tooltip="Open the interaction tool of the decision point (its setting picker)"),
        Binding("ctrl+s", "reply", "Send reply", id="play_agent.reply", priority=True,
                tooltip="Send the reply editor's text; it ends your turn"),
        Binding("ctrl+g", "give_up", "Give up turn", id="play_agent.give_up", priority=True,
                tooltip="End the turn with no reply (the step is floored, as for a model PA)"),
        Binding("f2", "focus_reply", "Reply editor", id="play_agent.focus_reply",
                tooltip="Move the cursor to the reply editor"),
        Binding("f3", "focus_palette", "Palette", id="play_agent.focus_palette",
                tooltip="Move the cursor to the tool palette"),
    ]

    class ViewChanged(Message):
        """The seat's view changed (handler: ``on_play_agent_screen_view_changed``)."""

        def __init__(self, view: PATurnView) -> None:
            self.view = view
            """The new view."""
            super().__init__()

    class EventArrived(Message):
        """An episode event arrived (handler: ``on_play_agent_screen_event_arrived``)."""

        def __init__(self, event: EpisodeEvent) -> None:
            self.event = event
            """The event."""
            super().__init__()

    def __init__(self) -> None:
        super().__init__()
        self.seat: HumanAgentSeat | None = None
        """The seat of the play in progress."""
        self.view: PATurnView | None = None
        """The latest view (None between turns)."""
        self.outcome: PlayOutcome | None = None
        """How the last play ended."""
        self._step = ""
        self._tools: dict[str, ToolSpec] = {}
        self._form_tool: str | None = None
        self._form_lock = asyncio.Lock()
        """Serialises form builds: the IX picker (run from the app's task) and the palette's
        change handler (the screen's task) may both build at once (issue 6.1)."""

    @property
    def mempa(self) -> MempaApp:
        """The app, typed."""
        return cast("MempaApp", self.app)

    def on_mount(self) -> None:
        """The transcript column is narrower than the session view's: wrap lines at its width."""
        self.query_one(TranscriptLog).min_width = 20

    def compose(self) -> ComposeResult:
        """Setup; transcript and the turn panel with the tool palette; the reply editor."""
        yield Header()
        yield PlaySetup(id="play-setup")
        yield Label("Play as the PA: choose what to play, then ctrl+r.", id="play-status", classes="play-status")
        with Horizontal(classes="play-body"):
            yield TranscriptLog(id="play-transcript")
            with VerticalScroll(classes="play-panel", id="agent-side"):
                yield Static(agent_panel_text(None), id="agent-panel")
            with VerticalScroll(classes="play-panel", id="palette"):
                yield Label("Tool palette", classes="field-label", id="palette-title")
                yield Input(placeholder="type to filter: domain or name", id="tool-filter")
                yield Select[str]([], id="tool-pick", prompt="choose a tool")
                yield Vertical(id="tool-form")
        yield TextArea(id="reply", disabled=True)
        yield Footer()

    # ---- starting -------------------------------------------------------------------------------

    def workers_running(self) -> bool:
        """True while the play worker runs."""
        return any(w.group == "play" and w.is_running for w in self.workers)

    def preset(self, request: PlayRequest, run_id: str) -> None:
        """Back in the seat of stored play ``run_id``: choose what it played; ``ctrl+r`` plays it again."""
        self.query_one(PlaySetup).preset(request)
        self.query_one("#play-status", Label).update(
            f"Resuming {run_id}: {request.step_id}, {request.profile}, memory {request.memory}, from "
            f"{request.source_run or 'the fixture world'}. ctrl+r plays the step again from its start "
            "(stored as a new play).")

    def action_start(self) -> None:
        """Start the play chosen in the setup (one at a time)."""
        if self.workers_running():
            self.notify("a play is in progress; give up its turn (ctrl+g) to end it", severity="warning",
                        title="Play")
            return
        try:
            request = self.query_one(PlaySetup).request("agent")
        except ValueError as exc:
            self.notify(error_line(exc), severity="error", title="Play as the PA")
            return
        self.seat = HumanAgentSeat(on_change=self._post_view)
        self.outcome, self._step = None, request.step_id
        self.query_one(TranscriptLog).replay([])
        self.query_one("#agent-panel", Static).update(agent_panel_text(None))
        self._status(f"starting {request.step_id} from {request.source_run or 'the fixture world'} "
                     f"with {request.profile}; the simulated user speaks first…")
        self.play(request)

    @work(exclusive=True, group="play", exit_on_error=False)
    async def play(self, request: PlayRequest) -> PlayOutcome:
        """Run the play in the engine."""
        assert self.seat is not None
        return await self.mempa.service.play(request, agent_seat=self.seat, say=self._status,
                                             observer=self._post_event)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The play ended: show the outcome (target revealed, scores); errors notify and stay shown."""
        if event.worker.group != "play":
            return
        if event.state is WorkerState.SUCCESS and isinstance(event.worker.result, PlayOutcome):
            self.outcome = event.worker.result
            self.query_one("#agent-panel", Static).update(outcome_text(self.outcome))
            self._status(f"{self.outcome.step_id} {self.outcome.status}; stored as {self.outcome.play_id}")
            self._enable(False)
        elif event.state is WorkerState.ERROR and event.worker.error is not None:
            line = error_line(event.worker.error)
            self.notify(line, severity="error", title="Play as the PA")
            self._status(f"stopped: {line}")
            self._enable(False)

    # ---- live updates ---------------------------------------------------------------------------

    async def on_play_agent_screen_view_changed(self, message: ViewChanged) -> None:
        """Redraw the turn panel and the palette; focus the reply editor when a turn opens."""
        view = message.view
        self.view = view if view.waiting else None
        self.query_one("#agent-panel", Static).update(agent_panel_text(view))
        self._enable(view.waiting)
        tools = {t.name: t for t in view.tools}
        if list(tools) != list(self._tools):
            self._tools = tools
            self._fill_palette()
        ix = f"IX_{view.required_ix}" if view.required_ix else None
        if view.waiting and ix in self._tools and self._form_tool is None:
            # the decision point's setting picker is laid out at once, so Tab reaches it without
            # ctrl+b (issue 16.6); the cursor stays where it is
            self.query_one("#tool-pick", Select).value = ix
            await self._build_form(ix)
        if view.note:
            self.notify(view.note, severity="warning", title="PA turn")
        self._status("your turn as the PA" if view.waiting else "the user is writing…")

    def on_play_agent_screen_event_arrived(self, message: EventArrived) -> None:
        """Append what the PA may see (no beat bookkeeping; evidence is in the panel)."""
        event = message.event
        if isinstance(event, (BeatChangeEvent, EvidenceEvent)):
            return
        if isinstance(event, UserMessageEvent):
            event = event.model_copy(update={"beat_id": None})
        self.query_one(TranscriptLog).append(StepEvent(run_id="play", step_id=self._step, event=event))

    def _fill_palette(self) -> None:
        """List the tools on offer that match the filter, by domain and bare name (the value of
        each entry is the full tool name); the chosen tool stays chosen while it still matches."""
        query = self.query_one("#tool-filter", Input).value
        entries = filter_palette(self._tools, query)
        pick = self.query_one("#tool-pick", Select)
        pick.set_options([(e.label, e.name) for e in entries])
        if self._form_tool in {e.name for e in entries}:
            pick.value = self._form_tool
        shown = f"{len(entries)} of {len(self._tools)}" if query.strip() else str(len(self._tools))
        self.query_one("#palette-title", Label).update(f"Tool palette ({shown})")

    def on_input_changed(self, event: Input.Changed) -> None:
        """Typing in the filter narrows the palette."""
        if event.input.id == "tool-filter":
            self._fill_palette()

    async def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in the filter picks its first match and moves to that tool's form."""
        if event.input.id != "tool-filter":
            return
        entries = filter_palette(self._tools, event.value)
        if not entries:
            self.notify(f"no tool on offer matches {event.value!r}", severity="warning", title="Tool palette")
            return
        self.query_one("#tool-pick", Select).value = entries[0].name
        await self._build_form(entries[0].name)
        fields = self.query_one("#tool-form", Vertical).query("Input, Select")
        (fields.first() if fields else self.query_one("#tool-pick", Select)).focus()

    async def on_select_changed(self, event: Select.Changed) -> None:
        """A tool chosen in the palette: build its form from the schema."""
        if event.select.id == "tool-pick" and isinstance(event.value, str):
            await self._build_form(event.value)

    async def _build_form(self, name: str) -> None:
        """Build the palette form of tool ``name`` (no form when it is not on offer).

        Builds never overlap: the old form's widgets are removed (awaited) before the new ones are
        mounted, so no field id is ever inserted twice.
        """
        async with self._form_lock:
            spec = self._tools.get(name)
            box = self.query_one("#tool-form", Vertical)
            if name == self._form_tool and spec is not None and box.children:
                return  # already built (the picker sets the palette and builds at once)
            await box.remove_children()
            self._form_tool = name if spec is not None else None
            if spec is None:
                return
            widgets: list[Widget] = [Static(spec.description[:300], classes="tool-description")]
            for field in form_fields(spec):
                mark = " *" if field.required else ""
                widgets.append(Label(f"{field.name}{mark} {_HINT[field.kind]}".rstrip(), classes="field-label"))
                if field.kind == "choice":
                    widgets.append(Select[str]([(c, c) for c in field.choices], id=f"arg-{field.name}",
                                               prompt=f"choose {field.name}"))
                else:
                    widgets.append(Input(value=field.default, placeholder=field.description[:80],
                                         id=f"arg-{field.name}"))
            await box.mount_all(widgets)

    # ---- the person's actions -------------------------------------------------------------------

    def _submit(self, action: PAAction) -> bool:
        if self.seat is None or self.view is None:
            self.notify("no PA turn is open", severity="warning", title="Play as the PA")
            return False
        try:
            self.seat.submit(action)
        except (RuntimeError, ValueError) as exc:
            self.notify(str(exc), severity="warning", title="Play as the PA")
            return False
        return True

    def form_values(self) -> dict[str, str]:
        """The tool form's entries as text (field name -> entry)."""
        values: dict[str, str] = {}
        for widget in self.query_one("#tool-form", Vertical).query("Input, Select"):
            if not widget.id:
                continue
            name = widget.id.removeprefix("arg-")
            if isinstance(widget, Input):
                values[name] = widget.value
            elif isinstance(widget, Select):
                values[name] = widget.value if isinstance(widget.value, str) else ""
        return values

    def action_call_tool(self) -> None:
        """Call the palette's tool with the form's arguments."""
        spec = self._tools.get(self._form_tool or "")
        if spec is None:
            self.notify("choose a tool in the palette first", severity="warning", title="Play as the PA")
            return
        try:
            arguments = arguments_from_form(spec, self.form_values())
        except FormError as exc:
            self.notify(str(exc), severity="error", title="Tool form")
            return
        self._submit(PAAction(kind="tool", tool=spec.name, arguments=arguments))

    async def action_ix_picker(self) -> None:
        """Open the decision point's IX tool in the palette and focus its setting picker."""
        view = self.view
        key = view.required_ix if view else None
        name = next((n for n in self._tools if key and n == f"IX_{key}"), None)
        name = name or next((n for n in self._tools if n.startswith("IX_")), None)
        if name is None:
            self.notify("no interaction tool is on offer yet", severity="warning", title="Play as the PA")
            return
        self.query_one("#tool-pick", Select).value = name
        await self._build_form(name)
        self.query_one("#arg-setting", Select).focus()

    def action_reply(self) -> None:
        """Send the reply editor's text (ends the turn)."""
        editor = self.query_one("#reply", TextArea)
        if self.view is not None and not editor.text.strip():
            # an empty reply would end the turn with nothing delivered to the user (issue 16.6)
            self.notify("the reply editor is empty: write the reply first (f2), or give the turn up "
                        "with ctrl+g", severity="warning", title="Play as the PA")
            return
        if self._submit(PAAction(kind="reply", text=editor.text)):
            editor.text = ""

    def action_focus_reply(self) -> None:
        """Put the cursor in the reply editor."""
        self.query_one("#reply", TextArea).focus()

    def action_focus_palette(self) -> None:
        """Put the cursor in the tool palette's filter box (typing there narrows the palette; tab
        moves on to the list), so typed words never reach the screen's one-letter keys."""
        self.query_one("#tool-filter", Input).focus()

    def action_give_up(self) -> None:
        """End the turn with no reply (floored)."""
        self._submit(PAAction(kind="give_up"))

    # ---- helpers --------------------------------------------------------------------------------

    def _post_view(self, view: PATurnView) -> None:
        """The seat's callback: hand a copy of the view to the screen's message queue (the seat
        keeps changing its own)."""
        self.post_message(self.ViewChanged(view.model_copy(deep=True)))

    def _post_event(self, event: EpisodeEvent) -> None:
        """The episode's observer: hand the event to the screen's message queue."""
        self.post_message(self.EventArrived(event))

    def _enable(self, waiting: bool) -> None:
        self.query_one("#reply", TextArea).disabled = not waiting
        self.set_class(waiting, "-waiting")

    def _status(self, line: str) -> None:
        self.query_one("#play-status", Label).update(line)
