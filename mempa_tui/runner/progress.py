"""Progress and events a run reports while it plays (for the CLI's lines and the TUI dashboard).

The runner calls its observer with two kinds of object:

* :class:`RunEvent` - run-level news (started, a step or probe started or finished, the report
  was written, a warning, the run stopped, a model call still waiting for its reply:
  ``model_waiting``, every few seconds of the wait), each carrying a :class:`RunProgress` snapshot;
* :class:`StepEvent` - one live :class:`~mempa_tui.runner.episode.EpisodeEvent` of a step or probe
  repeat, wrapped with where it happened (probes run concurrently, so the wrapper is what tells
  their transcripts apart).

Observers are plain callables and must not block; an observer that raises is reported once as a
warning and then ignored, so a broken display never stops a run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mempa_tui.store.rows import TokenTotals

__all__ = [
    "RunEvent",
    "RunEventKind",
    "RunObserver",
    "RunPhase",
    "RunProgress",
    "StepEvent",
]

RunPhase = Literal["starting", "timeline", "probes", "scoring", "done", "stopped", "failed"]
"""What the run is doing."""

RunEventKind = Literal[
    "run_started",
    "step_started",
    "step_finished",
    "step_retry",
    "probe_started",
    "probe_finished",
    "report_written",
    "warning",
    "run_finished",
    "run_stopped",
    "run_failed",
    "model_waiting",
]
"""Kinds of run-level event."""


class RunProgress(BaseModel):
    """A run's progress at one moment (SPEC section 4.11 'Dashboard')."""

    run_id: str
    """The run."""
    phase: RunPhase = "starting"
    """What the run is doing."""
    steps_total: int = 0
    """Timeline steps the run plays (0 for No Memory and Oracle)."""
    steps_done: int = 0
    """Timeline steps settled (committed or discarded)."""
    steps_discarded: int = 0
    """Settled steps that ended invalid, failed or floored (their changes were discarded)."""
    current: str | None = None
    """Id of the step or probe being played, if any."""
    probes_total: int = 0
    """Probe x repeat units the run scores."""
    probes_done: int = 0
    """Probe x repeat units stored."""
    tokens: TokenTotals = Field(default_factory=TokenTotals)
    """Token use of the run so far, by role."""
    errors: list[str] = Field(default_factory=list)
    """Problems met so far (discarded steps and probes, warnings), newest last."""

    @property
    def fraction(self) -> float:
        """Share of the run's units (steps and probes) done, in [0, 1]."""
        total = self.steps_total + self.probes_total
        return (self.steps_done + self.probes_done) / total if total else 0.0


class RunEvent(BaseModel):
    """A run-level event."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    """The run."""
    kind: RunEventKind
    """What happened."""
    message: str
    """One human-readable line."""
    step_id: str | None = None
    """The step or probe concerned, if any."""
    repeat: int = 0
    """The probe repeat concerned (0 for steps and run-level events)."""
    status: str | None = None
    """How the step or probe ended, for ``*_finished`` events."""
    progress: RunProgress
    """Progress right after the event."""


class StepEvent(BaseModel):
    """A live episode event with where it happened."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    run_id: str
    """The run."""
    step_id: str
    """Step or probe id."""
    repeat: int = 0
    """Probe repeat (0 for timeline steps)."""
    event: object
    """The :class:`~mempa_tui.runner.episode.EpisodeEvent` as the episode loop emitted it."""


RunObserver = Callable[[RunEvent | StepEvent], None]
"""Receives every :class:`RunEvent` and :class:`StepEvent` of a run, in order."""
