"""The Textual app (SPEC section 4.11): launcher, dashboard and session view as modes.

The app holds the engine service (:class:`~mempa_tui.tui.engine.RunService`) and the run book;
the dashboard owns the run workers. Every runner event is folded into the run's entry and then
published on :attr:`MempaApp.run_signal`, which the screens follow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual.app import App
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.signal import Signal

from mempa_tui.runner import RunEvent, StepEvent
from mempa_tui.runner.play import PlayRequest
from mempa_tui.store import RunRecord, RunStatus
from mempa_tui.tui.book import RunBook, RunEntry, RunLifecycle
from mempa_tui.tui.commands import MempaCommands
from mempa_tui.tui.engine import (
    RunnerOptions,
    RunService,
    error_line,
    request_from_record,
)
from mempa_tui.tui.screens import (
    DashboardScreen,
    HelpScreen,
    LauncherScreen,
    SessionScreen,
    key_rows,
)
from mempa_tui.tui.screens.browser import BrowserScreen
from mempa_tui.tui.screens.compare import CompareScreen
from mempa_tui.tui.screens.play_agent import PlayAgentScreen
from mempa_tui.tui.screens.play_user import PlayUserScreen
from mempa_tui.tui.screens.probe_stepper import ProbeStepperScreen
from mempa_tui.tui.screens.results import ResultsScreen
from mempa_tui.tui.settings import AppSettings

__all__ = ["MempaApp", "RunUpdate"]

_STORED_STATE: dict[RunStatus, RunLifecycle] = {
    RunStatus.CREATED: "stopped",
    RunStatus.RUNNING: "stopped",  # nobody holds its lease: it was killed (else "elsewhere")
    RunStatus.STOPPED: "stopped",
    RunStatus.COMPLETED: "completed",
    RunStatus.FAILED: "failed",
    RunStatus.CANCELLED: "cancelled",
}


@dataclass(frozen=True)
class RunUpdate:
    """What :attr:`MempaApp.run_signal` carries: which run changed and the runner's item, if any
    (None: the entry's state changed without a runner event, e.g. the worker failed or started)."""

    key: str
    item: RunEvent | StepEvent | None


class MempaApp(App[None]):
    """The ``mempa tui`` app.

    Args:
        settings: the folders to use (default: ``worlds``, ``models``, ``saves``, ``local_memory``
            in the working directory).
        options: runner settings the app does not show (tests pass a scorer).
        initial_mode: the mode shown first (``launcher``, ``dashboard`` or ``session``).
    """

    CSS_PATH = "app.tcss"
    TITLE = "mempa"
    SUB_TITLE = "MemPABench playground"
    MODES: ClassVar[dict[str, str | type[Screen[None]]]] = {  # type: ignore[assignment]
        "launcher": LauncherScreen,
        "dashboard": DashboardScreen,
        "session": SessionScreen,
        "stepper": ProbeStepperScreen,
        "results": ResultsScreen,
        "compare": CompareScreen,
        "play_user": PlayUserScreen,
        "play_agent": PlayAgentScreen,
        "browser": BrowserScreen,
    }
    DEFAULT_MODE = "launcher"
    COMMANDS = App.COMMANDS | {MempaCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("l", "switch_mode('launcher')", "Launcher", id="app.launcher",
                tooltip="Pick a user, memory, profile and repeats; start or resume runs"),
        Binding("d", "switch_mode('dashboard')", "Dashboard", id="app.dashboard",
                tooltip="One progress bar per run: timeline steps, probes, tokens, errors"),
        Binding("s", "switch_mode('session')", "Session", id="app.session",
                tooltip="The live transcript of a run with the memory's contents and evidence"),
        Binding("u", "switch_mode('play_user')", "Play user", id="app.play_user",
                tooltip="Play as the user: you type the user's turns; the simulator's answers are kept beside"),
        Binding("a", "switch_mode('play_agent')", "Play PA", id="app.play_agent",
                tooltip="Play as the PA: call tools from a palette, pick the IX setting, write the reply"),
        Binding("p", "switch_mode('stepper')", "Probe stepper", id="app.stepper",
                tooltip="Replay a stored probe one model call at a time; target, BRS and PRS revealed after"),
        Binding("R", "switch_mode('results')", "Results", id="app.results",
                tooltip="PSA, CS, PET, BRS and PRS of the stored runs; bar chart; Markdown and CSV export"),
        Binding("b", "switch_mode('browser')", "Run browser", id="app.browser",
                tooltip="Every stored run, step and probe repeat: transcript, calls, evidence, memory, scores"),
        # not in the footer (it is full at 80 columns); listed by ? and the command palette
        Binding("C", "switch_mode('compare')", "Compare", id="app.compare", show=False,
                tooltip="Compare runs of one user probe by probe: selections, scores and each memory's evidence"),
        Binding("question_mark", "help", "Keys", key_display="?", id="app.help",
                tooltip="List every key of this screen"),
        Binding("ctrl+q", "quit", "Quit", id="app.quit", priority=True,
                tooltip="Stop the running runs (they resume later) and leave"),
    ]

    def __init__(
        self,
        settings: AppSettings | None = None,
        *,
        options: RunnerOptions | None = None,
        initial_mode: str = "launcher",
    ) -> None:
        super().__init__()
        self.settings = settings or AppSettings()
        self.service = RunService(self.settings, options)
        self.book = RunBook()
        self.run_signal: Signal[RunUpdate] = Signal(self, "run-update")
        self._initial_mode = initial_mode

    def on_mount(self) -> None:
        """Show the first mode."""
        if self._initial_mode != self.DEFAULT_MODE:
            self.switch_mode(self._initial_mode)

    async def on_unmount(self) -> None:
        """Close the run store and stop the model servers the app started."""
        await self.service.aclose()

    def publish(self, key: str, item: RunEvent | StepEvent | None) -> None:
        """Tell the screens that run ``key`` changed."""
        self.run_signal.publish(RunUpdate(key, item))

    # ---- modes ----------------------------------------------------------------------------

    async def dashboard(self) -> DashboardScreen:
        """The dashboard screen (its mode is set up on first use, without switching to it)."""
        try:
            stack = self.get_screen_stack("dashboard")
        except KeyError:  # Textual 8 raises for a mode never shown yet instead of returning []
            stack = []
        if not stack:
            current = self.current_mode
            await self.switch_mode("dashboard")
            await self.switch_mode(current)
        screen = self.get_screen_stack("dashboard")[0]
        assert isinstance(screen, DashboardScreen)
        return screen

    async def show_session(self, key: str) -> None:
        """Switch to the session view showing run ``key``."""
        await self.switch_mode("session")
        screen = self.screen
        if isinstance(screen, SessionScreen):
            screen.show_run(key)

    async def show_browser(self, run_id: str | None = None) -> None:
        """Switch to the run browser; with ``run_id``, show that stored run's steps."""
        await self.switch_mode("browser")
        screen = self.screen
        if run_id is not None and isinstance(screen, BrowserScreen):
            screen.open_run(run_id)

    def action_help(self) -> None:
        """Open the key list of the current screen."""
        if isinstance(self.screen, HelpScreen):
            return
        self.push_screen(HelpScreen(key_rows(self.screen.active_bindings)))

    # ---- runs -----------------------------------------------------------------------------

    async def on_launcher_screen_start_requested(self, message: LauncherScreen.StartRequested) -> None:
        """Start (or resume) a run and show the dashboard; a stored play reopens its seat instead."""
        if message.request.play is not None:
            await self.resume_play(message.request.play, message.request.key)
            return
        await self.switch_mode("dashboard")
        (await self.dashboard()).start_run(message.request)

    async def on_launcher_screen_view_requested(self, message: LauncherScreen.ViewRequested) -> None:
        """Show a saved run in the session view (its stored transcript and checkpoint memory)."""
        run = message.summary.run
        entry = self.book.get(run.id)
        if entry is None:
            try:
                request = request_from_record(run.config_json, run_id=run.id)
            except ValueError as exc:
                self.notify(error_line(exc), severity="error", title=run.id, markup=False)
                return
            entry = self.book.add(request)
            self._load_record(entry, run.id, run.status, run.error, self._elsewhere(run))
        elif not entry.active:
            self._load_record(entry, run.id, run.status, run.error, self._elsewhere(run))
        await self.show_session(entry.key)

    def _elsewhere(self, run: RunRecord) -> bool:
        """Whether another process plays stored run ``run`` now (it holds the run's lease)."""
        return self.service.shown_status(run) == "running"

    @staticmethod
    def _load_record(
        entry: RunEntry, run_id: str, status: RunStatus, error: str | None, elsewhere: bool = False
    ) -> None:
        entry.run_id = run_id
        entry.state = "elsewhere" if elsewhere else _STORED_STATE[status]
        entry.error = error
        entry.source = "stored"
        entry.events.clear()

    async def resume_play(self, play: PlayRequest, run_id: str) -> None:
        """Put the person back in the seat of stored play ``run_id``: the seat's screen opens with
        the same user, step, profile, memory and starting point chosen (``ctrl+r`` plays it again,
        stored as a new play; the step is played from its start, as a stopped runner step is)."""
        await self.switch_mode("play_agent" if play.seat == "agent" else "play_user")
        screen = self.screen
        if isinstance(screen, PlayUserScreen | PlayAgentScreen):
            screen.preset(play, run_id)

    async def stop_run(self, key: str) -> None:
        """Pause run ``key`` (it resumes from its last checkpoint)."""
        entry = self.book.get(key)
        if entry is not None:
            (await self.dashboard()).stop_run(entry)

    async def cancel_run(self, key: str) -> None:
        """Cancel run ``key``: stop its worker if it plays and mark it ``cancelled`` in the store."""
        entry = self.book.get(key)
        if entry is not None:
            (await self.dashboard()).cancel_run(entry)

    async def resume_run(self, key: str) -> None:
        """Play run ``key`` again from its last checkpoint."""
        entry = self.book.get(key)
        if entry is None:
            return
        if entry.request.play is not None:
            await self.resume_play(entry.request.play, entry.label)
            return
        await self.switch_mode("dashboard")
        (await self.dashboard()).start_run(entry.request.model_copy(update={"fresh": False}))
