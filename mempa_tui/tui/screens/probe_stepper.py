"""Probe stepper (SPEC section 4.11): choose a stored run, a probe and a checkpoint; replay the
probe on a private branch one model call at a time; after the PA's selection reveal the target,
then BRS and PRS with the judge's and the user's reasons.

The engine is :class:`~mempa_tui.runner._stepper.ProbeStepper`: one long worker holds it open
(its episode task lives there), each step runs in a short worker. Nothing is written to the run
store or the run's memory folder.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, ClassVar, cast

import anyio
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Button, Footer, Header, Label, RichLog, Select, Static
from textual.worker import Worker, WorkerState

from mempa_tui.runner import StepEvent
from mempa_tui.runner._stepper import (
    ModelCallView,
    ProbeStepper,
    StepperChoices,
    StepperUpdate,
)
from mempa_tui.tui.engine import checkpoint_words, error_line, play_from_record
from mempa_tui.tui.plain import PlainNotify
from mempa_tui.tui.render import event_lines, place_text

if TYPE_CHECKING:
    from mempa_tui.tui.app import MempaApp

__all__ = ["ProbeStepperScreen", "call_lines", "prompt_text", "update_lines"]

_PROMPT_CHARS = 4000
"""Characters of one prompt message shown in the side panel."""


def _flat(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def call_lines(call: ModelCallView) -> list[Text]:
    """A model call as transcript lines: who called, what was offered, what came back."""
    lines = [Text(f"── call {call.index} · {call.role.value} " + "─" * 40, style="bold cyan")]
    last = call.messages[-1] if call.messages else None
    if last is not None and last.role != "system":
        lines.append(Text(f"  ▸ last {last.role} message: {_flat(last.content, 160)}", style="dim"))
    if call.tools:
        ix = [t for t in call.tools if t.startswith("IX_")]
        extra = f" incl. {', '.join(ix)}" if ix else ""
        lines.append(Text(f"  ▸ {len(call.tools)} tool(s) offered{extra}"
                          + (f"; forced {call.tool_choice}" if call.tool_choice else ""), style="dim"))
    if call.error:
        lines.append(Text(f"  ✗ call failed: {call.error}", style="bold red"))
        return lines
    for tc in call.tool_calls:
        args = json.dumps(tc.arguments, ensure_ascii=False)
        lines.append(Text(f"  ↳ calls {tc.name}({_flat(args, 120)})", style="bold blue"))
    if call.text:
        lines.append(Text(f"  ↳ says: {_flat(call.text, 300)}"))
    lines.append(Text(f"  ({call.prompt_tokens} prompt + {call.completion_tokens} completion tokens)", style="dim"))
    return lines


def update_lines(update: StepperUpdate, probe_id: str) -> list[Text]:
    """One stepper update as transcript lines (calls, then the events they led to, then the
    stage's news: selection, target, scores)."""
    lines: list[Text] = []
    for call in update.calls:
        lines.extend(call_lines(call))
    for event in update.events:
        lines.extend(event_lines(StepEvent(run_id="", step_id=probe_id, event=event)))
    if update.kind == "episode_end":
        lines.append(Text(f"■ episode {update.status}" + (f": {update.reason}" if update.reason else ""),
                          style="bold"))
        lines.append(Text(f"◆ PA's selection: {update.selection or '(none)'}   (press n to reveal the target)",
                          style="bold blue"))
    elif update.kind == "target":
        hit = update.selection is not None and update.selection == update.target
        lines.append(Text.assemble(("◎ target: ", "bold"), (update.target or "?", "bold magenta"),
                                   ("   ✓ selection matches" if hit else "   ✗ selection differs",
                                    "green" if hit else "red")))
    elif update.kind == "scores":
        lines.append(Text.assemble(("BRS ", "bold"), (str(update.brs or "—"), "bold yellow"),
                                   ("  judge: ", "dim"), update.brs_reason or ""))
        lines.append(Text.assemble(("PRS ", "bold"), (str(update.prs or "—"), "bold yellow"),
                                   ("  user: ", "dim"), update.prs_reason or ""))
    elif update.kind == "finished":
        lines.append(Text("■ done: the stored run was not changed", style="bold green"))
    if update.next_role is not None:
        lines.append(Text(f"… next: a {update.next_role.value} call (press n)", style="italic dim"))
    return lines


def prompt_text(call: ModelCallView | None) -> Text:
    """The full prompt of a call, one block per message (long messages shortened)."""
    if call is None:
        return Text("No model call yet. Open a probe (o), then step (n).", style="dim")
    out = Text(f"Prompt of call {call.index} ({call.role.value}), {len(call.messages)} message(s)\n",
               style="bold")
    for message in call.messages:
        out.append(f"\n[{message.role}]\n", style="bold cyan")
        content = message.content
        if len(content) > _PROMPT_CHARS:
            content = content[:_PROMPT_CHARS] + f"\n… ({len(message.content) - _PROMPT_CHARS} more characters)"
        out.append(content + "\n")
        for tc in message.tool_calls:
            out.append(f"→ {tc.name} {json.dumps(tc.arguments, ensure_ascii=False)}\n", style="blue")
    return out


class ProbeStepperScreen(PlainNotify, Screen[None]):
    """Step one probe of a stored run, one model call at a time."""

    CSS_PATH = "probe_stepper.tcss"
    # at 80 columns the prompt goes under the step log, which gets the width (issue 16)
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]] | None] = [(0, "-narrow"), (120, "-wide")]
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("o", "open", "Open probe", id="stepper.open",
                tooltip="Start the chosen probe on a private branch of the chosen checkpoint"),
        Binding("n", "step", "Step", id="stepper.step",
                tooltip="Let one model call through (then: target, then BRS and PRS)"),
        Binding("t", "to_selection", "To selection", id="stepper.to_selection",
                tooltip="Step until the episode has ended and the PA's selection is known"),
        Binding("c", "close", "Close probe", id="stepper.close",
                tooltip="Stop the stepped probe (nothing was stored)"),
        Binding("f5", "refresh", "Refresh runs", id="stepper.refresh",
                tooltip="List the stored runs again"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.stepper: ProbeStepper | None = None
        self.choices: StepperChoices | None = None
        self._release = anyio.Event()
        self._stepping = False

    @property
    def mempa(self) -> MempaApp:
        """The app, typed."""
        return cast("MempaApp", self.app)

    def compose(self) -> ComposeResult:
        """Pickers on the left; the step log in the middle; the latest prompt on the right."""
        yield Header()
        with Horizontal(id="stepper"):
            with Vertical(id="stepper-form"):
                yield Label("Stored run", classes="field-label")
                yield Select[str]([], id="run", prompt="choose a run")
                yield Label("Probe", classes="field-label")
                yield Select[str]([], id="probe", prompt="choose a probe")
                yield Label("Checkpoint", classes="field-label")
                yield Select[int]([], id="checkpoint", prompt="the runner's choice")
                yield Button("Open probe", id="open", variant="primary")
                yield Label("", id="stepper-state")
            # min_width: wrap to the column as it is (the default 78 scrolls sideways at 80 columns)
            yield RichLog(id="step-log", wrap=True, markup=False, auto_scroll=True, max_lines=20_000, min_width=20)
            with VerticalScroll(id="prompt-box"):
                yield Static(prompt_text(None), id="prompt")
        yield Footer()

    def on_mount(self) -> None:
        """List the stored runs."""
        self.load_runs()

    async def on_unmount(self) -> None:
        """Stop a probe still held open."""
        self._release.set()

    # ---- choices --------------------------------------------------------------------------

    @work(exclusive=True, group="stepper-runs", exit_on_error=False)
    async def load_runs(self) -> None:
        """Stored runs into the run picker (a person's plays left out: they have no model PA to step)."""
        runs = [s for s in await self.mempa.service.saved_runs() if play_from_record(s.run.config_json) is None]
        select = self.query_one("#run", Select)
        current = select.value
        select.set_options([(f"{s.run.id} ({s.probes_done} probe results)", s.run.id) for s in runs])
        if current in [s.run.id for s in runs]:
            select.value = current

    @work(exclusive=True, group="stepper-choices", exit_on_error=False)
    async def load_choices(self, run_id: str) -> None:
        """The chosen run's probes and checkpoints into their pickers."""
        self.choices = choices = await self.mempa.service.stepper_choices(run_id)
        self.query_one("#probe", Select).set_options(
            [(f"{p.probe_id} ({p.kind}, {p.attribute})", p.probe_id) for p in choices.probes]
        )
        self.query_one("#checkpoint", Select).set_options(
            [(c.label, c.step_index) for c in choices.checkpoints]
        )

    def on_select_changed(self, event: Select.Changed) -> None:
        """A run chosen: load its probes and checkpoints; a probe chosen: preselect its checkpoint."""
        if event.select.id == "run" and isinstance(event.value, str):
            self.load_choices(event.value)
        elif event.select.id == "probe" and self.choices is not None:
            probe = next((p for p in self.choices.probes if p.probe_id == event.value), None)
            ckpt = self.query_one("#checkpoint", Select)
            if probe is not None and probe.default_checkpoint is not None:
                ckpt.value = probe.default_checkpoint
            elif probe is not None:
                ckpt.clear()

    # ---- opening and stepping -------------------------------------------------------------

    def action_open(self) -> None:
        """Open the chosen probe (a probe already open is closed first)."""
        run, probe = self.query_one("#run", Select).value, self.query_one("#probe", Select).value
        if not isinstance(run, str) or not isinstance(probe, str):
            self.notify("choose a run and a probe first", severity="warning", title="Probe stepper")
            return
        ckpt = self.query_one("#checkpoint", Select).value
        self._release.set()
        self._release = anyio.Event()
        log = self.query_one("#step-log", RichLog)
        log.clear()
        log.write(Text(f"Opening {probe} of {run}…", style="bold"))
        self.hold(run, probe, ckpt if isinstance(ckpt, int) else None, self._release)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """The Open button."""
        if event.button.id == "open":
            self.action_open()

    @work(exclusive=True, group="stepper-hold", exit_on_error=False)
    async def hold(self, run_id: str, probe_id: str, checkpoint: int | None, release: anyio.Event) -> None:
        """Open the stepper and keep it open (its episode task lives here) until released."""
        say = lambda line: self.notify(line, title="Probe stepper", timeout=6)
        stepper = await self.mempa.service.open_stepper(run_id, probe_id, checkpoint, say)
        async with stepper:
            self.stepper = stepper
            point = stepper.checkpoint  # the numbering and words of the run browser's memory panel
            where = (checkpoint_words(point.run_id, point.step_index, step_id=point.step_id)
                     if point is not None else None)
            self.query_one("#step-log", RichLog).write(Text(
                f"Branch of {run_id} " + (where if where is not None else "(fixture world)")
                + f"; probe {place_text(probe_id, stepper.repeat)} ({stepper.probe.attribute}, "
                f"{stepper.probe.context.value}), replayed with repeat {stepper.repeat}'s sampling seeds. "
                "The target stays hidden until the PA has selected.", style="dim"))
            self._show(stepper.opening)
            try:
                await release.wait()
            finally:
                if self.stepper is stepper:
                    self.stepper = None
                self._set_state("closed")

    def _set_state(self, text: str) -> None:
        if self.is_mounted:
            self.query_one("#stepper-state", Label).update(text)

    def _show(self, update: StepperUpdate) -> None:
        log = self.query_one("#step-log", RichLog)
        for line in update_lines(update, self.stepper.probe.id if self.stepper else ""):
            log.write(line)
        if update.calls:
            self.query_one("#prompt", Static).update(prompt_text(update.calls[-1]))
        stepper = self.stepper
        tokens = stepper.total_tokens if stepper else 0
        probe = f"probe: {place_text(stepper.probe.id, stepper.repeat)}\n" if stepper else ""
        self._set_state(f"{probe}stage: {update.kind}\ncalls: {stepper.client.gate.count if stepper else 0}"
                        f"\ntokens: {tokens:,}")

    def _ready(self) -> ProbeStepper | None:
        if self.stepper is None:
            self.notify("open a probe first (o)", severity="warning", title="Probe stepper")
            return None
        if self._stepping:
            self.notify("a step is still running", severity="warning", title="Probe stepper")
            return None
        if self.stepper.finished:
            self.notify("this probe is done: open another (o)", severity="information", title="Probe stepper")
            return None
        return self.stepper

    def action_step(self) -> None:
        """One step."""
        if self._ready() is not None:
            self.advance(None)

    def action_to_selection(self) -> None:
        """Step until the episode has ended."""
        if self._ready() is not None:
            self.advance("episode_end")

    @work(group="stepper-step", exit_on_error=False)
    async def advance(self, until: str | None) -> None:
        """Run one step (or up to the selection) and show each update."""
        stepper = self.stepper
        if stepper is None:
            return
        self._stepping = True
        try:
            while True:
                update = await stepper.step()
                self._show(update)
                if until is None or update.kind not in ("opened", "model_call"):
                    break
        finally:
            self._stepping = False

    def action_close(self) -> None:
        """Close the open probe."""
        if self.stepper is None:
            self.notify("no probe is open", severity="warning", title="Probe stepper")
            return
        self._release.set()
        self.query_one("#step-log", RichLog).write(Text("closed; nothing was stored", style="dim"))

    def action_refresh(self) -> None:
        """List the stored runs again."""
        self.load_runs()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Errors show in the log and as a notification; the app carries on."""
        if event.state is WorkerState.ERROR and event.worker.error is not None:
            line = error_line(event.worker.error)
            self.notify(line, severity="error", title="Probe stepper")
            if self.is_mounted:
                self.query_one("#step-log", RichLog).write(Text(f"error: {line}", style="bold red"))
