"""Typed rows of the run store: what goes into and comes out of :class:`~mempa_tui.store.RunStore`.

Every table of the store has a pydantic model here, so nothing crosses the store's boundary as a
loose dict. Times are timezone-aware UTC wall-clock datetimes (when something happened on this
machine); story times (the benchmark's calendar) are naive datetimes, as in the world schema.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from enum import Enum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mempa_tui.llm.types import LLMCallRecord

__all__ = [
    "CheckpointData",
    "CheckpointRecord",
    "LLMCallRow",
    "ProbeResultRecord",
    "ProbeStatus",
    "RoleTokens",
    "RunRecord",
    "RunStatus",
    "RunSummary",
    "StepAttemptRecord",
    "StepKind",
    "StepRecord",
    "StepStatus",
    "TokenTotals",
    "TranscriptEventRecord",
    "utc_now",
]


def utc_now() -> datetime:
    """The current wall-clock time, timezone-aware UTC."""
    return datetime.now(UTC)


class RunStatus(str, Enum):
    """Where a run stands."""

    CREATED = "created"
    """Registered; no step played yet."""
    RUNNING = "running"
    """Playing the timeline or its probes."""
    STOPPED = "stopped"
    """Interrupted (Ctrl-C, cancellation or an error); rerunning resumes it."""
    COMPLETED = "completed"
    """Timeline, probes and report done."""
    FAILED = "failed"
    """Stopped by an error that a rerun will meet again (the error text says which)."""
    CANCELLED = "cancelled"
    """Cancelled by a person (the app's dashboard); every committed step is kept, and an explicit
    resume plays it on from its last checkpoint like a stopped run."""


StepKind = Literal["accumulation", "change_event"]
"""Kinds of timeline step (probes are kept in their own table)."""

StepStatus = Literal["completed", "invalid", "failed", "floored"]
"""How a step ended (the episode loop's statuses). Only ``completed`` steps are committed."""

ProbeStatus = Literal["completed", "invalid", "failed", "floored"]
"""How a probe ended (paper Appendix F.2: ``floored`` scores PSA 0 and BRS 1)."""


class RoleTokens(BaseModel):
    """Token use of one model role."""

    calls: int = 0
    """Model calls made."""
    prompt_tokens: int = 0
    """Prompt tokens, summed over calls."""
    completion_tokens: int = 0
    """Generated tokens, summed over calls."""
    reused_prefix_tokens: int = 0
    """Prompt tokens a KV cache could reuse (SPEC section 7), summed over calls."""


class TokenTotals(BaseModel):
    """Token use by role (keys are :class:`~mempa_tui.llm.types.Role` values: ``pa``, ...)."""

    by_role: dict[str, RoleTokens] = Field(default_factory=dict)
    """Role value -> its token use."""

    @classmethod
    def from_calls(cls, calls: Iterable[LLMCallRecord]) -> TokenTotals:
        """Sum a sequence of logged calls by role."""
        totals = cls()
        for call in calls:
            totals.add_call(call)
        return totals

    def add_call(self, call: LLMCallRecord) -> None:
        """Add one logged call in place."""
        role = self.by_role.setdefault(call.role.value, RoleTokens())
        role.calls += 1
        role.prompt_tokens += call.prompt_tokens
        role.completion_tokens += call.completion_tokens
        role.reused_prefix_tokens += call.reused_prefix_tokens

    def plus(self, other: TokenTotals) -> TokenTotals:
        """A new total adding ``other`` to this one."""
        out = self.model_copy(deep=True)
        for name, tokens in other.by_role.items():
            mine = out.by_role.setdefault(name, RoleTokens())
            mine.calls += tokens.calls
            mine.prompt_tokens += tokens.prompt_tokens
            mine.completion_tokens += tokens.completion_tokens
            mine.reused_prefix_tokens += tokens.reused_prefix_tokens
        return out

    @property
    def total(self) -> int:
        """Prompt plus completion tokens over all roles."""
        return sum(t.prompt_tokens + t.completion_tokens for t in self.by_role.values())

    @property
    def calls(self) -> int:
        """Model calls over all roles."""
        return sum(t.calls for t in self.by_role.values())


class RunRecord(BaseModel):
    """One run: a user x model profile x memory condition x seed (SPEC section 4.8)."""

    model_config = ConfigDict(frozen=True)

    id: str
    """Readable id, e.g. ``A-file-embedded-s0``."""
    user: str
    """User label, e.g. ``A``."""
    profile: str
    """Model profile name."""
    memory: str
    """Memory condition (``none``, ``oracle``, ``file``, ...)."""
    seed: int
    """Run seed."""
    repeats: int
    """Repeats per probe."""
    config_json: str
    """The full :class:`~mempa_tui.runner.RunConfig` as JSON."""
    config_hash: str
    """sha256 over the result-relevant configuration; a resume must match it."""
    donor_run: str | None = None
    """Run whose checkpoints the probes start from (No Memory and Oracle), if any."""
    status: RunStatus = RunStatus.CREATED
    """Where the run stands."""
    error: str | None = None
    """Why the run last stopped or failed, if it did."""
    total_steps: int = 0
    """Timeline steps the run plays (0 for probe-only conditions)."""
    total_probes: int = 0
    """Probe x repeat units the run scores."""
    created_at: datetime = Field(default_factory=utc_now)
    """When the run was registered."""
    updated_at: datetime = Field(default_factory=utc_now)
    """When the run's row last changed."""


class RunSummary(BaseModel):
    """A run with its progress counts, for ``mempa runs`` and the dashboard."""

    run: RunRecord
    """The run's row."""
    steps_done: int
    """Timeline steps stored (any status)."""
    steps_completed: int
    """Timeline steps stored as completed (committed)."""
    probes_done: int
    """Probe x repeat results stored."""
    tokens: TokenTotals
    """Token use over every logged call of the run."""


class StepRecord(BaseModel):
    """A timeline step as stored once it is settled (committed or discarded for good)."""

    index: int = Field(ge=0)
    """0-based position in the timeline."""
    step_id: str
    """Session or change-event id."""
    kind: StepKind
    """Accumulation session or change event."""
    status: StepStatus
    """How the step ended."""
    reason: str | None = None
    """Why the step was invalid, failed or floored."""
    attempts: int = Field(default=1, ge=1)
    """How many times the step was played (discarded attempts included)."""
    selection: str | None = None
    """The PA's setting for the tested attribute (first IX call), if any."""
    started_at: datetime
    """When the last attempt started."""
    finished_at: datetime
    """When the last attempt ended."""
    tokens: TokenTotals = Field(default_factory=TokenTotals)
    """Token use of the last attempt."""
    result_json: str = ""
    """The episode's StepResult as JSON, without the world (transcript, traces, logs)."""


class StepAttemptRecord(BaseModel):
    """A discarded attempt of a step that was played again (paper Appendix C.3: may be retried)."""

    step_id: str
    """Session or change-event id."""
    attempt: int = Field(ge=1)
    """1-based attempt number."""
    status: StepStatus
    """How the attempt ended (never ``completed``)."""
    reason: str | None = None
    """Why."""
    started_at: datetime
    """When it started."""
    finished_at: datetime
    """When it ended."""
    tokens: TokenTotals = Field(default_factory=TokenTotals)
    """Its token use."""


class CheckpointData(BaseModel):
    """What a checkpoint saves, as the runner hands it to the store.

    The world goes in as its file map; the store keeps only a manifest in the checkpoint row and
    each distinct file once in the blob table (SPEC section 7).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    step_index: int = Field(ge=-1)
    """Index of the last step included; -1 is the run's start (the fixture world)."""
    step_id: str | None = None
    """Id of that step (None at the start)."""
    story_time: datetime | None = None
    """Story time of that step's start (None at the start)."""
    world_files: dict[str, bytes]
    """The persistent world after the step: relative path -> bytes."""
    world_manifest: dict[str, str]
    """Relative path -> sha256 of the bytes, as ``WorldState.manifest()`` gives it."""
    memory_snapshot: bytes | None = None
    """``MemorySystem.snapshot()`` after the step (None for conditions without a store)."""
    simulator_memory_json: str = ""
    """The simulator memory after the step, serialised by its own model."""
    tokens: TokenTotals = Field(default_factory=TokenTotals)
    """Token use of the run up to and including this step."""


class CheckpointRecord(BaseModel):
    """A stored checkpoint (the world is a manifest; load it with ``RunStore.load_world``)."""

    run_id: str
    """Owning run."""
    step_index: int
    """Index of the last step included; -1 is the run's start."""
    step_id: str | None
    """Id of that step."""
    story_time: datetime | None
    """Story time of that step's start."""
    world_manifest: dict[str, str]
    """Relative path -> sha256 of the bytes (keys of the blob table)."""
    memory_blob: str | None
    """sha256 of the memory snapshot in the blob table, if any."""
    simulator_blob: str | None
    """sha256 of the simulator memory JSON in the blob table, if any."""
    tokens: TokenTotals
    """Token use of the run up to this checkpoint."""
    created_at: datetime
    """When it was written."""


class TranscriptEventRecord(BaseModel):
    """One live event of a step or probe, in order (the episode's EpisodeEvent as JSON)."""

    seq: int = Field(ge=0)
    """0-based order within the step or probe repeat."""
    kind: str
    """The event's kind tag (e.g. ``user_message``), for filtering without parsing."""
    event_json: str
    """The event serialised by its own model."""


class ProbeResultRecord(BaseModel):
    """One probe x repeat result (paper Section 3.5; Appendix F.2)."""

    probe_id: str
    """Probe id."""
    repeat: int = Field(ge=1)
    """1-based repeat."""
    kind: Literal["final", "pre_event"]
    """Final or pre-event probe."""
    context: str
    """``work`` or ``personal``."""
    attribute: str
    """Key of the tested attribute."""
    target: str
    """The user's setting of the cell at the probe's time (ground truth; never shown to the PA
    except under Oracle)."""
    selection: str | None = None
    """The PA's selected setting (first IX call), if any."""
    status: ProbeStatus
    """How the probe ended."""
    reason: str | None = None
    """Why it was invalid, failed or floored."""
    attempts: int = Field(default=1, ge=1)
    """Runs of this probe x repeat (floored probes are rerun, Appendix F.2)."""
    checkpoint_run: str | None = None
    """Run whose checkpoint the probe started from (None: the fixture world)."""
    checkpoint_index: int | None = None
    """Index of that checkpoint's last step (-1: the run's start)."""
    brs: int | None = Field(default=None, ge=1, le=5)
    """Behavioral Realization Score from the judge (final probes), None if not scored."""
    brs_reason: str | None = None
    """The judge's reason, or why BRS is missing."""
    prs: int | None = Field(default=None, ge=1, le=5)
    """Perceived Realization Score from the simulator without memory (final probes)."""
    prs_reason: str | None = None
    """The rater's reason, or why PRS is missing."""
    started_at: datetime
    """When the last attempt started."""
    finished_at: datetime
    """When scoring ended."""
    tokens: TokenTotals = Field(default_factory=TokenTotals)
    """Token use of the probe and its scoring."""
    result_json: str = ""
    """The episode's StepResult as JSON, without the world."""


class LLMCallRow(BaseModel):
    """One logged model call with where it happened (SPEC section 7: tokens and reused prefix)."""

    step_id: str
    """Step or probe id the call belongs to."""
    repeat: int = 0
    """Probe repeat (0 for timeline steps)."""
    seq: int = Field(ge=0)
    """Order within the step."""
    call: LLMCallRecord
    """The call as the client logged it (read from the store: ``prompt`` and ``reply`` are filled
    only by :meth:`~mempa_tui.store.RunStore.llm_call`, never by the listing)."""
    call_id: int | None = None
    """The stored row's id (None before the call is stored); :meth:`RunStore.llm_call` reads it."""
    prompt_stored: bool = False
    """Whether the store holds the call's prompt (False: stored before schema 3, or not yet read
    from a store)."""
