"""Command palette provider (ctrl+p): the app's actions and one entry per run."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from mempa_tui.tui.app import MempaApp

__all__ = ["MempaCommands"]


class MempaCommands(Provider):
    """Switching screens, the key list, and viewing, pausing or resuming each run."""

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
            ("Show keys", app.action_help, "List every key of the current screen"),
        ]
        for entry in app.book:
            commands.append((f"View run {entry.label}", partial(app.show_session, entry.key),
                             f"Session view of {entry.label} ({entry.state})"))
            if entry.active:
                commands.append((f"Pause run {entry.label}", partial(app.stop_run, entry.key),
                                 "Stop it after the current call; resume continues it"))
            else:
                commands.append((f"Resume run {entry.label}", partial(app.resume_run, entry.key),
                                 "Play it again from its last checkpoint"))
        return commands

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
