"""The app's record of the runs it started: requests, live progress, transcript, memory view.

Imports nothing from Textual, so the bookkeeping is tested without a terminal. The runner's
observer hands every :class:`~mempa_tui.runner.RunEvent` and :class:`~mempa_tui.runner.StepEvent`
to :meth:`RunEntry.apply`; the screens read the entries and render them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mempa_tui.memory import MemoryInspection
from mempa_tui.runner import RunEvent, RunProgress, StepEvent
from mempa_tui.runner._episode_events import BeatChangeEvent, EvidenceEvent
from mempa_tui.runner.config import OptionValue
from mempa_tui.runner.play import PlayRequest

__all__ = ["RunBook", "RunEntry", "RunLifecycle", "RunRequest", "TranscriptSource", "state_label"]

RunLifecycle = Literal["preparing", "running", "completed", "stopped", "failed", "cancelled", "elsewhere"]
"""Where a run started from the app stands (``preparing``: profile, model server, store;
``cancelled``: a person cancelled it, see :meth:`RunEntry.cancel`; ``elsewhere``: a stored run that
another process is playing now, it holds the run's lease, so this app only shows what is stored)."""

TranscriptSource = Literal["live", "stored"]
"""Whether an entry's transcript came from the running runner or from the run store."""

MAX_KEPT_EVENTS = 20_000
"""Episode events an entry keeps for redisplay (older ones are dropped; the store has them all)."""


class RunRequest(BaseModel):
    """What the launcher asks for: one user x memory condition x model profile x seed."""

    model_config = ConfigDict(frozen=True)

    user: str = Field(min_length=1)
    """User label (``worlds/users/<user>``)."""
    memory: str = Field(min_length=1)
    """Memory condition (``none``, ``oracle``, ``file``...)."""
    profile: str = Field(min_length=1)
    """Model profile name (``models/<profile>.yaml``)."""
    repeats: int = Field(default=3, ge=1, le=20)
    """Repeats per probe (paper Section 3.5: three)."""
    seed: int = 0
    """Run seed (part of the run id)."""
    memory_options: dict[str, OptionValue] = Field(default_factory=dict)
    """Condition options, as ``mempa run --memory-option``."""
    donor_run: str | None = None
    """No Memory / Oracle: the run whose checkpoints to probe from (None: the runner picks)."""
    fresh: bool = False
    """Move a stored run with the same id aside and start over."""
    slice: bool = False
    """Play only the timeline's quick-start slice (``mempa run --slice``); ``-slice`` in the run id."""
    quick: bool = False
    """Play only the timeline's quick start (``mempa run --quick``); ``-quick`` in the run id."""
    play: PlayRequest | None = None
    """Set when the stored run is a play (a person in a seat, ``play-...``): what was played. Such a
    request is never given to the runner; resuming it puts the person back in that seat."""
    stored_id: str | None = None
    """The stored run's id when it does not follow ``<user>-<memory>-<profile>-s<seed>`` (a play)."""

    @property
    def key(self) -> str:
        """The run id this request maps to when the profile's name equals its file name
        (``stored_id`` when set)."""
        if self.stored_id is not None:
            return self.stored_id
        return (f"{self.user}-{self.memory}-{self.profile}-s{self.seed}" + ("-slice" if self.slice else "")
                + ("-quick" if self.quick else ""))


@dataclass
class RunEntry:
    """One run as the app knows it.

    Attributes:
        key: the request's key (the run id once the runner reports it, see ``run_id``).
        request: what was asked.
        state: where the run stands.
        run_id: the runner's id (None until the run started).
        progress: the latest progress snapshot.
        error: why the run failed or stopped, if it did (a pause is not an error).
        paused: the person paused the run in this session (state ``stopped``; r resumes it).
        events: episode events in arrival order (capped at :data:`MAX_KEPT_EVENTS`).
        dropped: how many old events were dropped from ``events``.
        notes: run-level lines (warnings, retries, the report path), newest last.
        step / repeat / beat: where the live session is (step or probe id, probe repeat, beat).
        playing: the steps and probe repeats started and not yet finished, in start order, as
            ``(step or probe id, repeat)`` (repeat 0 for a step); probes run concurrently, so
            several may be in flight (the dashboard names each with its repeat, ``r2``).
        memory: the memory's contents as last inspected (live or from a checkpoint).
        memory_origin: where ``memory`` came from, for the side panel's title.
        thresholds: File memory's thresholds as the run uses them (its stored
            ``file_memory_budget``; a reference run: its donor's), for the side panel; ``""``
            until read, or for a condition without them.
        evidence: the evidence handed to the PA in the latest turn.
        source: whether the transcript is live or loaded from the store.
    """

    key: str
    request: RunRequest
    state: RunLifecycle = "preparing"
    run_id: str | None = None
    progress: RunProgress | None = None
    error: str | None = None
    paused: bool = False
    waiting: str | None = None
    """A model call still waiting for its reply (``waiting for the model: 95 s (pa, call 3)``);
    None once any other run event arrives."""
    events: list[StepEvent] = field(default_factory=list)
    dropped: int = 0
    notes: list[str] = field(default_factory=list)
    step: str | None = None
    repeat: int = 0
    beat: str | None = None
    playing: list[tuple[str, int]] = field(default_factory=list)
    memory: MemoryInspection | None = None
    memory_origin: str = ""
    thresholds: str = ""
    evidence: EvidenceEvent | None = None
    source: TranscriptSource = "live"

    @property
    def label(self) -> str:
        """The run id when known, else the request's key."""
        return self.run_id or self.key

    @property
    def active(self) -> bool:
        """True while the run's worker is preparing or playing it."""
        return self.state in ("preparing", "running")

    def apply(self, item: RunEvent | StepEvent) -> None:
        """Fold one observer item into the entry.

        Args:
            item: a run-level event (progress, notes, final status) or a live episode event
                (transcript, beat, evidence, memory snapshot).
        """
        if isinstance(item, RunEvent):
            self._apply_run_event(item)
            return
        self.run_id = self.run_id or item.run_id
        self.step, self.repeat = item.step_id, item.repeat
        self.events.append(item)
        if len(self.events) > MAX_KEPT_EVENTS:
            overflow = len(self.events) - MAX_KEPT_EVENTS
            del self.events[:overflow]
            self.dropped += overflow
        event = item.event
        if isinstance(event, BeatChangeEvent):
            self.beat = event.beat_id
        elif isinstance(event, EvidenceEvent):
            self.evidence = event
        inspection = getattr(event, "inspection", None)
        if isinstance(inspection, MemoryInspection):
            self.memory = inspection
            self.memory_origin = f"live, after a turn of {item.step_id}"

    def _apply_run_event(self, event: RunEvent) -> None:
        self.run_id = event.run_id
        self.progress = event.progress
        # a model call still waiting for its reply (``model_waiting``); any other event ends the wait
        self.waiting = event.message if event.kind == "model_waiting" else None
        if event.kind == "model_waiting":
            return
        if event.kind == "run_started":
            self.state = "running"
        elif event.kind in ("warning", "step_retry", "report_written"):
            self.notes.append(event.message)
        elif event.kind == "run_finished":
            self.state = "completed" if event.status == "completed" else "stopped"
            if event.status != "completed":
                self.error = "; ".join(event.progress.errors[-1:]) or event.message
        elif event.kind == "run_stopped":  # paused: not a problem, so no error (issue 6.5)
            self.state = "stopped"
            self.paused = True
        elif event.kind == "run_failed":
            self.state = "failed"
            self.error = event.message
        if event.kind in ("step_started", "probe_started") and event.step_id:
            self.step, self.repeat = event.step_id, event.repeat
            self.playing.append((event.step_id, event.repeat))
        elif event.kind in ("step_finished", "probe_finished") and event.step_id:
            with suppress(ValueError):
                self.playing.remove((event.step_id, event.repeat))
        elif event.kind in ("run_finished", "run_stopped", "run_failed"):
            self.playing.clear()

    def fail(self, message: str) -> None:
        """Mark the run failed with a one-line reason (an error the runner raised)."""
        self.state = "failed"
        self.error = message

    def stop(self) -> None:
        """Mark the run paused (its worker was cancelled); resuming plays it on from its last
        checkpoint. A pause is not an error: :attr:`error` is left as it was."""
        if self.active:
            self.state = "stopped"
            self.paused = True

    def cancel(self, message: str) -> None:
        """Mark the run cancelled (its worker is stopped or was not running); an explicit resume
        still plays it on from its last checkpoint."""
        self.state = "cancelled"
        self.error = message

    def restart(self, request: RunRequest) -> None:
        """Reset the live fields for another play of the same run (resume or fresh start)."""
        self.request = request
        self.state = "preparing"
        self.paused = False
        self.error = None
        self.events.clear()
        self.dropped = 0
        self.notes.clear()
        self.playing.clear()
        self.beat = None
        self.evidence = None
        self.source = "live"


class RunBook:
    """The runs of this app session, in the order they were first started."""

    def __init__(self) -> None:
        self._entries: dict[str, RunEntry] = {}

    def __iter__(self) -> Iterator[RunEntry]:
        return iter(list(self._entries.values()))

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> RunEntry | None:
        """The entry of ``key`` (request key or run id), or None."""
        found = self._entries.get(key)
        if found is not None:
            return found
        return next((e for e in self._entries.values() if e.run_id == key), None)

    def add(self, request: RunRequest) -> RunEntry:
        """Register a request; a known key is restarted in place (one entry per run).

        Raises:
            ValueError: the run is still active (its worker is preparing or playing it).
        """
        entry = self.get(request.key)
        if entry is not None:
            if entry.active:
                raise ValueError(f"run {entry.label} is already running")
            entry.restart(request)
            return entry
        entry = RunEntry(key=request.key, request=request)
        self._entries[request.key] = entry
        return entry


def state_label(entry: RunEntry) -> str:
    """The words shown for ``entry``'s state (``paused``, ``playing in another process``, or the
    state itself; a running run whose model call is waiting adds the wait, e.g.
    ``running · waiting for the model: 95 s (pa, call 3)``)."""
    if entry.state == "running" and entry.waiting:
        return f"running · {entry.waiting}"
    if entry.paused and entry.state == "stopped":
        return "paused"
    if entry.state == "elsewhere":
        return "playing in another process"
    return entry.state
