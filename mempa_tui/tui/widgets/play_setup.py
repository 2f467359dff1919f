"""The form on top of both play screens: user, step, model profile, memory, starting point."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Label, Select
from textual.widgets.select import InvalidSelectValueError

from mempa_tui.runner.play import PlayRequest, Seat, playable_steps
from mempa_tui.scripts.loader import WorldFileError, load_user
from mempa_tui.tui.engine import discover_choices, error_line
from mempa_tui.tui.plain import PlainNotify

if TYPE_CHECKING:
    from mempa_tui.tui.app import MempaApp

__all__ = ["FIXTURE_WORLD", "NARROW_BELOW", "PlaySetup"]

FIXTURE_WORLD = "fixture world"
"""The starting-point choice that uses no stored run (the fixture tree, an empty memory)."""

_FIELDS = (("user", "User"), ("step", "Session or probe"), ("profile", "Model profile"),
           ("memory", "Memory"), ("source", "Start from"))


NARROW_BELOW = 120
"""Below this many columns the five pickers stack in a grid of three per row (issue 16: at 80
columns five side by side left each label and choice a few letters wide)."""


class PlaySetup(PlainNotify, Horizontal):
    """Pickers for what to play; :meth:`request` turns them into a :class:`PlayRequest`.

    The step list follows the chosen user; the starting points are the user's stored runs (their
    last checkpoint before the step) or the fixture world with an empty memory. Narrower than
    :data:`NARROW_BELOW` columns the pickers wrap onto two rows (class ``-narrow``).
    """

    DEFAULT_CSS = """
    PlaySetup.-narrow {
        layout: grid;
        grid-size: 3;
        grid-rows: auto;
        grid-columns: 1fr 1fr 1fr;
        grid-gutter: 0 1;
    }
    """

    @property
    def mempa(self) -> MempaApp:
        """The app, typed."""
        return cast("MempaApp", self.app)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._labels: dict[str, str] = {}
        self._preset: PlayRequest | None = None

    def preset(self, request: PlayRequest) -> None:
        """Choose what ``request`` played (user, step, profile, memory, starting point).

        The starting point's list is read from the store in a worker, so the choice is kept and
        applied when the list arrives; choosing another user drops it.
        """
        self._preset = request
        for field, value in (("user", request.user), ("profile", request.profile), ("memory", request.memory)):
            try:
                self.query_one(f"#play-{field}", Select).value = value
            except InvalidSelectValueError:
                self.notify(f"the stored play's {field} {value!r} is no longer offered; choose another",
                            severity="warning", title="Resume play")
        self._user_changed()

    def compose(self) -> ComposeResult:
        """One labelled picker per field; the chosen step described under its picker."""
        for field, label in _FIELDS:
            with Vertical(classes="play-field"):
                yield Label(label, classes="field-label")
                yield Select[str]([], id=f"play-{field}", prompt=f"choose {label.lower()}")
                if field == "step":
                    yield Label("", id="play-step-label", classes="field-label")

    def on_mount(self) -> None:
        """Fill the pickers from the folders."""
        self.refresh_choices()

    def on_resize(self) -> None:
        """Stack the pickers when the screen is narrow (see :data:`NARROW_BELOW`)."""
        self.set_class(self.app.size.width < NARROW_BELOW, "-narrow")

    def refresh_choices(self) -> None:
        """Read users, profiles and memory conditions again; the user's steps and runs follow."""
        choices = discover_choices(self.mempa.settings)
        self._set("user", [(u, u) for u in choices.users])
        self._set("profile", [(p.name, p.name) for p in choices.profiles if p.valid])
        self._set("memory", [(m, m) for m in choices.memories], prefer="none")
        self._user_changed()

    def _set(self, field: str, options: list[tuple[str, str]], prefer: str | None = None) -> None:
        select = self.query_one(f"#play-{field}", Select)
        current = select.value
        select.set_options(options)
        values = [v for _, v in options]
        if current in values:
            select.value = current
        elif prefer in values:
            select.value = prefer
        elif values:
            select.value = values[0]

    def on_select_changed(self, event: Select.Changed) -> None:
        """A new user: list its steps and stored runs. A new step: describe it."""
        if event.select.id == "play-user":
            if self._preset is not None and event.value != self._preset.user:
                self._preset = None
            self._user_changed()
        elif event.select.id == "play-step" and isinstance(event.value, str):
            self.query_one("#play-step-label", Label).update(self._labels.get(event.value, ""))

    def _user_changed(self) -> None:
        user = self.query_one("#play-user", Select).value
        if not isinstance(user, str):
            return
        try:
            steps = playable_steps(load_user(self.mempa.settings.worlds_dir, user))
        except (WorldFileError, OSError, KeyError, ValueError) as exc:  # shown, never raised
            self.notify(error_line(exc), severity="error", title=f"user {user}")
            steps = []
        self._labels = {s.id: s.label for s in steps}
        preset = self._preset if self._preset is not None and self._preset.user == user else None
        self._set("step", [(s.id, s.id) for s in steps], prefer=preset.step_id if preset else None)
        if preset is not None:
            self.query_one("#play-step", Select).value = preset.step_id
        self._set("source", [(FIXTURE_WORLD, FIXTURE_WORLD)])
        self.load_sources(user)

    @work(exclusive=True, group="play-sources", exit_on_error=False)
    async def load_sources(self, user: str) -> None:
        """The user's stored runs as starting points (play runs left out)."""
        runs = [s.run.id for s in await self.mempa.service.saved_runs()
                if s.run.user == user and not s.run.id.startswith("play-")]
        preset = self._preset if self._preset is not None and self._preset.user == user else None
        self._set("source", [(FIXTURE_WORLD, FIXTURE_WORLD), *((r, r) for r in runs)],
                  prefer=(preset.source_run or FIXTURE_WORLD) if preset else None)
        if preset is not None and preset.source_run in runs:
            self.query_one("#play-source", Select).value = preset.source_run

    def request(self, seat: Seat) -> PlayRequest:
        """The pickers as a request.

        Raises:
            ValueError: a picker has no choice (the message names it).
        """
        values: dict[str, str] = {}
        for field, label in _FIELDS:
            value = self.query_one(f"#play-{field}", Select).value
            if not isinstance(value, str):
                raise ValueError(f"choose {label.lower()} first")  # noqa: TRY004 - a missing choice
            values[field] = value
        return PlayRequest(
            user=values["user"], step_id=values["step"], seat=seat, profile=values["profile"],
            memory=values["memory"], worlds_dir=self.mempa.settings.worlds_dir,
            source_run=None if values["source"] == FIXTURE_WORLD else values["source"],
        )
