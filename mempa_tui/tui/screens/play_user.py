"""Play as the user (SPEC §4.11; §6 simulator fidelity).

The person types the user's turns in a live session or probe; the PA, wrapper and memory run as
in any run. The panel shows the current beat, the acting sheet of the active preference, the facts
released so far and the held items waiting for consent (one picker each). At every turn the
simulator's shadow answer is recorded beside the person's and shown once the turn is sent; the
whole record is stored with the play (``play-user-...`` in the run store).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, cast

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Header, Input, Label, Select, Static
from textual.worker import Worker, WorkerState

from mempa_tui.runner import StepEvent
from mempa_tui.runner._episode_events import EpisodeEvent
from mempa_tui.runner.play import PlayOutcome, PlayRequest
from mempa_tui.scripts.loader import WorldFileError, load_user
from mempa_tui.simulator.human import HumanUserSeat, UserAction, UserPanel
from mempa_tui.tui.engine import error_line
from mempa_tui.tui.plain import PlainNotify
from mempa_tui.tui.play_render import (
    outcome_text,
    pair_text,
    user_panel_text,
    user_sees,
)
from mempa_tui.tui.widgets import TranscriptLog
from mempa_tui.tui.widgets.play_setup import PlaySetup

if TYPE_CHECKING:
    from mempa_tui.tui.app import MempaApp

__all__ = ["PlayUserScreen"]


class PlayUserScreen(PlainNotify, Screen[None]):
    """A person in the user's seat; the simulator answers in the shadow."""

    CSS_PATH: ClassVar[list[str]] = ["play.tcss", "play_user.tcss"]  # type: ignore[assignment,misc]
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r", "start", "Start", id="play_user.start", priority=True,
                tooltip="Start the chosen session or probe with you in the user's seat"),
        Binding("ctrl+s", "send", "Send", id="play_user.send", priority=True,
                tooltip="Send your message (enter in the message box does the same)"),
        Binding("ctrl+n", "advance", "Next beat", id="play_user.advance", priority=True,
                tooltip="This beat's goal is met: move on to the next beat (its facts are released)"),
        Binding("ctrl+o", "end", "End session", id="play_user.end", priority=True,
                tooltip="End the session (your message and consent choices go with it; the assistant answers them first)"),
    ]

    class PanelChanged(Message):
        """The seat's panel changed (handler: ``on_play_user_screen_panel_changed``)."""

        def __init__(self, panel: UserPanel) -> None:
            self.panel = panel
            """The new panel."""
            super().__init__()

    class EventArrived(Message):
        """An episode event arrived (handler: ``on_play_user_screen_event_arrived``)."""

        def __init__(self, event: EpisodeEvent) -> None:
            self.event = event
            """The event."""
            super().__init__()

    def __init__(self) -> None:
        super().__init__()
        self.seat: HumanUserSeat | None = None
        """The seat of the play in progress (None before the first start)."""
        self.panel: UserPanel | None = None
        """The latest panel."""
        self.outcome: PlayOutcome | None = None
        """How the last play ended."""
        self._step = ""
        self._shown_pairs = 0

    @property
    def mempa(self) -> MempaApp:
        """The app, typed."""
        return cast("MempaApp", self.app)

    def on_mount(self) -> None:
        """The transcript column is narrower than the session view's: wrap lines at its width."""
        self.query_one(TranscriptLog).min_width = 20

    def compose(self) -> ComposeResult:
        """Setup on top; transcript and panel; the message box and consent pickers below."""
        yield Header()
        yield PlaySetup(id="play-setup")
        yield Label("Play as the user: choose what to play, then ctrl+r.", id="play-status", classes="play-status")
        with Horizontal(classes="play-body"):
            yield TranscriptLog(id="play-transcript")
            with VerticalScroll(classes="play-panel", id="user-side"):
                yield Static(user_panel_text(None), id="user-panel")
                yield Vertical(id="consent")
                yield Static("", id="fidelity")
        yield Input(placeholder="your message to the assistant (enter sends)", id="message", disabled=True)
        yield Footer()

    # ---- starting -------------------------------------------------------------------------------

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
            self.notify("a play is in progress; end it first (ctrl+o)", severity="warning", title="Play")
            return
        try:
            request = self.query_one(PlaySetup).request("user")
            persona = load_user(self.mempa.settings.worlds_dir, request.user).persona
        except (ValueError, KeyError, OSError, WorldFileError) as exc:
            self.notify(error_line(exc), severity="error", title="Play as the user")
            return
        self.seat = HumanUserSeat(None, persona, on_change=self._post_panel)
        self.outcome, self._step, self._shown_pairs = None, request.step_id, 0
        self.query_one(TranscriptLog).replay([])
        self.query_one("#fidelity", Static).update("")
        self._status(f"starting {request.step_id} from "
                     f"{request.source_run or 'the fixture world'} with {request.profile}…")
        self.play(request)

    def workers_running(self) -> bool:
        """True while the play worker runs."""
        return any(w.group == "play" and w.is_running for w in self.workers)

    @work(exclusive=True, group="play", exit_on_error=False)
    async def play(self, request: PlayRequest) -> PlayOutcome:
        """Run the play in the engine (the seat's shadow uses the play's model client)."""
        assert self.seat is not None
        return await self.mempa.service.play(request, user_seat=self.seat, say=self._status,
                                             observer=self._post_event)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The play ended: show the outcome; an error is shown and stored, the app goes on."""
        if event.worker.group != "play":
            return
        if event.state is WorkerState.SUCCESS and isinstance(event.worker.result, PlayOutcome):
            self.outcome = event.worker.result
            self.query_one("#fidelity", Static).update(outcome_text(self.outcome))
            self._status(f"{self.outcome.step_id} {self.outcome.status}; stored as {self.outcome.play_id}")
            self._enable(False)
        elif event.state is WorkerState.ERROR and event.worker.error is not None:
            line = error_line(event.worker.error)
            self.notify(line, severity="error", title="Play as the user")
            self._status(f"stopped: {line}")
            self._enable(False)
        elif event.state is WorkerState.CANCELLED:
            self._enable(False)

    # ---- live updates ---------------------------------------------------------------------------

    async def on_play_user_screen_panel_changed(self, message: PanelChanged) -> None:
        """Redraw the panel, the consent pickers and the newest side-by-side turn."""
        self.panel = message.panel
        self.query_one("#user-panel", Static).update(user_panel_text(message.panel))
        self._enable(message.panel.waiting)
        await self._fill_consent(message.panel)
        if self.seat is not None and len(self.seat.fidelity) > self._shown_pairs:
            self._shown_pairs = len(self.seat.fidelity)
            self.query_one("#fidelity", Static).update(pair_text(self.seat.fidelity[-1]))
        if message.panel.waiting:
            self._status("your turn")
            self.query_one("#message", Input).focus()
        elif not message.panel.finished:
            self._status("the assistant is working…")

    def on_play_user_screen_event_arrived(self, message: EventArrived) -> None:
        """Append what the user may see to the transcript."""
        if user_sees(message.event):
            self.query_one(TranscriptLog).append(StepEvent(run_id="play", step_id=self._step, event=message.event))

    async def _fill_consent(self, panel: UserPanel) -> None:
        box = self.query_one("#consent", Vertical)
        wanted = [i.id for i in panel.pending] if panel.waiting else []
        have = [s.id.removeprefix("consent-") for s in box.query(Select) if s.id]
        if wanted == have:
            return
        await box.remove_children()
        widgets: list[Label | Select[str]] = []
        for item in panel.pending if panel.waiting else []:
            widgets.append(Label(f"consent for {item.id}: {item.text or item.label or item.tool}",
                                 classes="field-label"))
            widgets.append(Select[str]([("approve", "approve"), ("deny", "deny")], id=f"consent-{item.id}",
                                       prompt="undecided"))
        await box.mount_all(widgets)

    # ---- the person's actions -------------------------------------------------------------------

    def _consent(self) -> dict[str, bool]:
        out: dict[str, bool] = {}
        for select in self.query_one("#consent", Vertical).query(Select):
            if isinstance(select.value, str) and select.id:
                out[select.id.removeprefix("consent-")] = select.value == "approve"
        return out

    def _submit(self, action: UserAction) -> bool:
        if self.seat is None or not self.seat.waiting:
            self.notify("it is not your turn", severity="warning", title="Play as the user")
            return False
        try:
            self.seat.submit(action)
        except ValueError as exc:
            self.notify(str(exc), severity="warning", title="Play as the user")
            return False
        self._enable(False)
        return True

    @on(Input.Submitted, "#message")
    def _message_submitted(self) -> None:
        self.action_send()

    def action_send(self) -> None:
        """Send the message box's text with the consent choices."""
        box = self.query_one("#message", Input)
        if self._submit(UserAction(kind="say", text=box.value, consent=self._consent())):
            box.value = ""

    def action_advance(self) -> None:
        """Move on to the next beat."""
        self._submit(UserAction(kind="advance", consent=self._consent()))

    def action_end(self) -> None:
        """End the session; a message in the box and the consent choices go with it (the PA
        answers them before the session ends)."""
        box = self.query_one("#message", Input)
        if self._submit(UserAction(kind="end", text=box.value, consent=self._consent())):
            box.value = ""

    # ---- helpers --------------------------------------------------------------------------------

    def _post_panel(self, panel: UserPanel) -> None:
        """The seat's callback: hand the panel to the screen's message queue."""
        self.post_message(self.PanelChanged(panel))

    def _post_event(self, event: EpisodeEvent) -> None:
        """The episode's observer: hand the event to the screen's message queue."""
        self.post_message(self.EventArrived(event))

    def _enable(self, waiting: bool) -> None:
        self.query_one("#message", Input).disabled = not waiting
        self.set_class(waiting, "-waiting")

    def _status(self, line: str) -> None:
        self.query_one("#play-status", Label).update(line)
