"""State shared by the runner's layers: the run context, event plumbing, memory construction."""

from __future__ import annotations

import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mempa_tui.llm.errors import LLMError
from mempa_tui.llm.types import LLMCallRecord
from mempa_tui.memory import FileMemory, MemorySystem, make_memory
from mempa_tui.runner._budget import pa_base_prompt_tokens, prompt_budget
from mempa_tui.runner._calls import capture_calls
from mempa_tui.runner.config import RunConfig
from mempa_tui.runner.progress import (
    RunEvent,
    RunEventKind,
    RunObserver,
    RunProgress,
    StepEvent,
)
from mempa_tui.store import LLMCallRow, RunStore, TokenTotals, TranscriptEventRecord

if TYPE_CHECKING:
    from mempa_tui.llm import LLMClient
    from mempa_tui.scripts.loader import UserBundle
    from mempa_tui.tools import ToolRegistry

__all__ = [
    "EpisodeFunctions",
    "EventCollector",
    "RunContext",
    "call_rows",
    "capture_calls",
    "event_kind",
    "server_exited",
    "stop_on_model_failure",
]


@dataclass(frozen=True)
class EpisodeFunctions:
    """The episode loop's three entry points (``mempa_tui.runner.episode``).

    Tests may pass their own to exercise the runner's bookkeeping alone; by default the real
    functions are used.
    """

    run_accumulation: Callable[[Any, Any], Awaitable[Any]]
    """``(AccumulationSession, EpisodeContext) -> StepResult``."""
    replay_change_event: Callable[[Any, Any], Awaitable[Any]]
    """``(ChangeEvent, EpisodeContext) -> StepResult``."""
    run_probe: Callable[[Any, Any], Awaitable[Any]]
    """``(Probe, EpisodeContext) -> StepResult`` (its world and memory changes are discarded)."""
    make_context: Callable[..., Any]
    """Builds the ``EpisodeContext`` from keyword fields (persona, targets, world, registry,
    memory, client, simulator_memory, observer, oracle)."""

    @classmethod
    def default(cls) -> EpisodeFunctions:
        """The real episode loop."""
        from mempa_tui.runner import episode

        return cls(
            run_accumulation=episode.run_accumulation,
            replay_change_event=episode.replay_change_event,
            run_probe=episode.run_probe,
            make_context=episode.EpisodeContext,
        )


def event_kind(event: object) -> str:
    """The kind tag of an episode event (its ``kind`` field, else its class name)."""
    kind = getattr(event, "kind", None)
    return str(getattr(kind, "value", kind)) if kind is not None else type(event).__name__


def _event_json(event: object) -> str:
    dump = getattr(event, "model_dump_json", None)
    if callable(dump):
        return str(dump())
    raise TypeError(f"episode event {type(event).__name__} is not a pydantic model")


_NOT_OUTAGES = frozenset({"ContextWindowError"})
"""Call failures that say something about the step (a prompt that cannot fit), not the server:
they fail the step like any other capability failure instead of stopping the run, since a resume
would hit them again."""


def server_exited(calls: list[LLMCallRecord]) -> bool:
    """Whether one of ``calls`` failed because mempa's own model server process exited
    (:class:`~mempa_tui.llm.errors.ModelServerExitedError`): playing the step or probe again
    cannot help, so the run stops at once instead of using its remaining attempts."""
    return any(not c.ok and c.error_kind == "ModelServerExitedError" for c in calls)


def stop_on_model_failure(what: str, status: str, calls: list[LLMCallRecord]) -> None:
    """Stop the run when a step or probe ended badly because a model call itself failed.

    The episode loop turns a failed model call (server down, timeout, HTTP error after the
    client's retries) into a ``failed`` step. That failure says nothing about the PA or the user,
    so it must not be stored as a discarded step or an incomplete probe: the runner stops instead,
    keeps nothing of the step, and the same command resumes it once the server is back.

    Args:
        what: the step or probe (for the message).
        status: how its last attempt ended.
        calls: the model calls of that attempt.

    Raises:
        LLMError: ``status`` is not ``completed`` and one of ``calls`` failed.
    """
    failed = [c for c in calls if not c.ok and c.error_kind not in _NOT_OUTAGES]
    if status != "completed" and failed:
        last = failed[-1]
        raise LLMError(last.role.value, last.model, f"{last.error or 'call failed'} ({what} was not kept)")


@dataclass
class EventCollector:
    """Collects a step's episode events for the store and forwards them to the run's observer.

    Args:
        run: the run context (for the observer and run id).
        step_id: the step or probe id.
        repeat: the probe repeat (0 for timeline steps).
    """

    run: RunContext
    step_id: str
    repeat: int = 0
    events: list[object] = field(default_factory=list)

    def __call__(self, event: object) -> None:
        """Record ``event`` and forward it wrapped in a :class:`StepEvent`."""
        self.events.append(event)
        self.run.notify(StepEvent(run_id=self.run.run_id, step_id=self.step_id, repeat=self.repeat, event=event))

    def records(self) -> list[TranscriptEventRecord]:
        """The collected events as store rows, in order."""
        return [
            TranscriptEventRecord(seq=i, kind=event_kind(e), event_json=_event_json(e))
            for i, e in enumerate(self.events)
        ]


def call_rows(step_id: str, calls: list[LLMCallRecord], repeat: int = 0) -> list[LLMCallRow]:
    """Logged calls of one step or probe repeat as store rows."""
    return [LLMCallRow(step_id=step_id, repeat=repeat, seq=i, call=c) for i, c in enumerate(calls)]


@dataclass
class RunContext:
    """Everything the timeline and probe layers of one run share."""

    config: RunConfig
    store: RunStore
    client: LLMClient
    registry: ToolRegistry
    bundle: UserBundle
    episodes: EpisodeFunctions
    memory_root: Path
    observer: RunObserver | None = None
    progress: RunProgress = field(default_factory=lambda: RunProgress(run_id=""))
    _observer_broken: bool = False

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self.config.run_id

    # ---- observer -------------------------------------------------------------------------

    def notify(self, item: RunEvent | StepEvent) -> None:
        """Hand ``item`` to the observer; an observer that raises is reported once, then dropped."""
        if self.observer is None or self._observer_broken:
            return
        try:
            self.observer(item)
        except Exception as exc:  # noqa: BLE001 - a display bug must never stop a run
            self._observer_broken = True
            self.progress.errors.append(f"observer disabled after it raised: {exc!r}")

    def emit(
        self,
        kind: RunEventKind,
        message: str,
        *,
        step_id: str | None = None,
        repeat: int = 0,
        status: str | None = None,
    ) -> None:
        """Send a run-level event with a copy of the current progress."""
        self.notify(RunEvent(
            run_id=self.run_id, kind=kind, message=message, step_id=step_id, repeat=repeat,
            status=status, progress=self.progress.model_copy(deep=True),
        ))

    def warn(self, message: str) -> None:
        """Record a warning in the progress and send it as an event."""
        self.progress.errors.append(message)
        self.emit("warning", message)

    def add_tokens(self, calls: list[LLMCallRecord]) -> None:
        """Count a finished unit's model calls into the progress."""
        self.progress.tokens = self.progress.tokens.plus(TokenTotals.from_calls(calls))

    # ---- memory ---------------------------------------------------------------------------

    def memory_folder(self, *parts: str) -> Path:
        """``<memory_root>/<run_id>/<parts...>``."""
        return self.memory_root.joinpath(self.run_id, *parts)

    def new_memory(self, folder: Path) -> MemorySystem:
        """A fresh memory system of the run's condition, storing under ``folder``.

        Raises:
            MemoryConfigError: invalid condition options.
        """
        memory = make_memory(
            self.config.memory, client=self.client, folder=folder, context_window=self.memory_room(),
            **self.config.memory_options,
        )
        if isinstance(memory, FileMemory):  # its thresholds count the PA's whole prompt (issue 11.4)
            memory.base_prompt_tokens = pa_base_prompt_tokens(self.client)
        return memory

    def memory_room(self) -> int:
        """Tokens of the PA's context window left for memory and conversation (File memory's scale).

        The PA's window less what every PA prompt carries anyway: the world tools' schemas (all 83,
        paper Appendix C.2; about 19,000 tokens) and the reply. At least 2,048.
        """
        return prompt_budget(self.client, self.registry).room

    @staticmethod
    def drop_folder(folder: Path) -> None:
        """Remove a probe branch's memory folder (the branch is discarded)."""
        shutil.rmtree(folder, ignore_errors=True)
