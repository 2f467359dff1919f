"""Command palette provider (ctrl+p): the app's actions, every key of the current screen, and the
actions of each run (view, pause or resume, cancel)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.dom import DOMNode

if TYPE_CHECKING:
    from mempa_tui.tui.app import MempaApp

__all__ = ["MempaCommands"]


class MempaCommands(Provider):
    """Switching screens, the key list, every binding of the screen the palette was opened from
    (so each key's action is also a command), and viewing, pausing, resuming or cancelling each run."""

    @property
    def mempa(self) -> MempaApp:
        """The app, typed."""
        return cast("MempaApp", self.app)

    def _commands(self) -> list[tuple[str, Callable[[], object], str]]:
        app = self.mempa
        commands: list[tuple[str, Callable[[], object], str]] = [
            ("Open launcher", partial(app.switch_mode, "launcher"), "Start runs; resume or view saved runs"),
            ("Open dashboard", partial(app.switch_mode, "dashboard"), "Progress of every run of this session"),
            ("Open session view", partial(app.switch_mode, "session"), "Live transcript and memory panel"),
            ("Play as the user", partial(app.switch_mode, "play_user"),
             "Type the user's turns in a live session; the simulator's answers are kept beside yours"),
            ("Play as the PA", partial(app.switch_mode, "play_agent"),
             "Fill the PA seat: tool palette, IX setting picker, reply editor"),
            ("Open probe stepper", partial(app.switch_mode, "stepper"),
             "Replay a stored probe one model call at a time; then target, BRS and PRS"),
            ("Open results", partial(app.switch_mode, "results"),
             "PSA, CS, PET, BRS, PRS by user, condition, model, dimension; chart; export"),
            ("Open run browser", partial(app.show_browser),
             "Every stored run, step and probe repeat in full; filter probes by cell and outcome"),
            ("Compare runs probe by probe", partial(app.switch_mode, "compare"),
             "Per probe and repeat: each run's selection, target, BRS, PRS and its memory's evidence; filter; export"),
            ("Show keys", app.action_help, "List every key of the current screen"),
        ]
        for entry in app.book:
            commands.append((f"View run {entry.label}", partial(app.show_session, entry.key),
                             f"Session view of {entry.label} ({entry.state})"))
            if entry.run_id is not None:
                commands.append((f"Browse run {entry.label}", partial(app.show_browser, entry.run_id),
                                 f"Run browser on {entry.label}: every stored step and probe repeat"))
            if entry.active:
                commands.append((f"Pause run {entry.label}", partial(app.stop_run, entry.key),
                                 "Stop it after the current call; resume continues it"))
            else:
                commands.append((f"Resume run {entry.label}", partial(app.resume_run, entry.key),
                                 "Play it again from its last checkpoint"))
            if entry.state != "cancelled" and entry.request.play is None:
                commands.append((f"Cancel run {entry.label}", partial(app.cancel_run, entry.key),
                                 "Stop it and mark it cancelled in the run store (its steps are kept)"))
        commands.extend(self._screen_commands())
        return commands

    def _screen_commands(self) -> list[tuple[str, Callable[[], object], str]]:
        """One command per binding of the screen below the palette (app-wide keys are listed above)."""
        screen = self.screen
        out: list[tuple[str, Callable[[], object], str]] = []
        seen: set[str] = set()
        for active in screen.active_bindings.values():
            binding = active.binding
            if active.node is self.app or not binding.description or binding.action in seen:
                continue
            seen.add(binding.action)
            key = binding.key_display or binding.key
            out.append((f"{screen.__class__.__name__.removesuffix('Screen')}: {binding.description} ({key})",
                        partial(self._run_on, active.node, binding.action),
                        binding.tooltip or binding.description))
        return out

    async def _run_on(self, node: DOMNode, action: str) -> None:
        await self.app.run_action(action, node)

    async def discover(self) -> Hits:
        """Every command, before anything is typed."""
        for text, command, help_text in self._commands():
            yield DiscoveryHit(text, command, help=help_text)

    async def search(self, query: str) -> Hits:
        """Commands matching ``query`` (fuzzy)."""
        matcher = self.matcher(query)
        for text, command, help_text in self._commands():
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), command, text=text, help=help_text)
