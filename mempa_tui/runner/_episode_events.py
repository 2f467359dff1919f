"""Live events of the episode loop (for the TUI, logs and the stored transcript).

A small pydantic union discriminated by ``type``. Events that carry the PA's selection or the
memory's evidence (``ix_selection``, ``evidence``) are for the operator's view only; use
:func:`public_transcript` for anything the user, the judge or the PRS rater may read (Table 9).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, Field, TypeAdapter

from mempa_tui.ix.types import CallStatus, ExecutedCall, HeldItem
from mempa_tui.memory.base import EvidenceItem

__all__ = [
    "BeatChangeEvent",
    "ConsentEvent",
    "EpisodeEvent",
    "EvidenceEvent",
    "HeldItemsEvent",
    "IXSelectionEvent",
    "NoticeEvent",
    "PAReplyEvent",
    "StepStatusEvent",
    "ToolCallEvent",
    "UserMessageEvent",
    "episode_event_adapter",
    "public_transcript",
]


class _Event(BaseModel):
    """Fields every event has."""

    turn_index: int = Field(
        default=0, description="PA turn the event belongs to (0-based)."
    )

    @property
    def kind(self) -> str:
        """The event's ``type`` (what the run store files it under)."""
        return str(getattr(self, "type"))  # noqa: B009 - each subclass declares ``type``


class UserMessageEvent(_Event):
    """The user's delivered message."""

    type: Literal["user_message"] = "user_message"
    text: str
    beat_id: str | None = Field(
        default=None, description="Operator view only; never shown to the PA."
    )


class PAReplyEvent(_Event):
    """The PA's delivered (rendered) reply; empty when Proactive Outreach 'Low' suppressed it."""

    type: Literal["pa_reply"] = "pa_reply"
    text: str
    status: Literal["ok", "capped", "wrapped_up"] = "ok"
    reason: str | None = Field(
        default=None,
        description="Why the reply was forced (the call cap, or a repeated call under "
        "pa_repeated_call: wrap_up). Operator view only: it may quote the PA's calls.",
    )
    repeated_calls: int = Field(
        default=0,
        ge=0,
        description="Tool calls of the turn identical to an earlier call of it (0 on events "
        "stored before they were counted).",
    )
    echoed_replies: int = Field(
        default=0,
        ge=0,
        description="Replies of the turn that echoed the harness's own text (the copy never "
        "delivered): re-asked, or cut to the PA's own sentences (``echoes_cut``); 0 on events "
        "stored before they were counted.",
    )
    echoes_cut: int = Field(
        default=0,
        ge=0,
        description="Of the echoed replies, those whose copied sentences were cut and whose "
        "remaining whole sentences were delivered instead of a re-ask (0 on events stored "
        "before they were counted: those label every echo re-asked).",
    )
    ix_text_withheld: int = Field(
        default=0,
        ge=0,
        description="Sentences of an accumulation session's reply withheld for carrying "
        "interaction-tool text (an IX tool's name, or a selected attribute with its setting); 0 "
        "on events stored before they were counted.",
    )

    def note(self) -> str:
        """What to print after the reply: `` (model-call cap reached)``, `` (wrapped up after a
        repeated call; 3 repeated identical calls; 1 echoed harness note re-asked)``, or ``""``
        for an ordinary turn."""
        parts = []
        if self.status == "capped":
            parts.append("model-call cap reached")
        elif self.status == "wrapped_up":
            parts.append("wrapped up after a repeated call")
        if self.repeated_calls:
            n = self.repeated_calls
            parts.append(f"{n} repeated identical call{'s' if n != 1 else ''}")
        reasked = self.echoed_replies - min(self.echoes_cut, self.echoed_replies)
        if reasked:
            parts.append(f"{reasked} echoed harness note{'s' if reasked != 1 else ''} re-asked")
        if self.echoes_cut:
            n = self.echoes_cut
            parts.append(f"{n} echoed harness note{'s' if n != 1 else ''} cut, the PA's own sentences kept")
        if self.ix_text_withheld:
            n = self.ix_text_withheld
            parts.append(f"{n} sentence{'s' if n != 1 else ''} with interaction-tool text withheld")
        return f" ({'; '.join(parts)})" if parts else ""


class ToolCallEvent(_Event):
    """One world-tool call with its status (executed, held, blocked, rejected)."""

    type: Literal["tool_call"] = "tool_call"
    call: ExecutedCall


class IXSelectionEvent(_Event):
    """One IX call and the wrapper's answer (operator view only)."""

    type: Literal["ix_selection"] = "ix_selection"
    attribute: str
    setting: str | None = None
    ok: bool
    newly_selected: bool = False
    message: str = ""


class HeldItemsEvent(_Event):
    """Items awaiting the user's consent after a PA turn."""

    type: Literal["held_items"] = "held_items"
    items: list[HeldItem]


class ConsentEvent(_Event):
    """The user's consent decisions and what they released."""

    type: Literal["consent"] = "consent"
    decisions: dict[str, bool]
    executed: list[ExecutedCall] = Field(default_factory=list)
    denied: list[str] = Field(default_factory=list)
    unknown: list[str] = Field(default_factory=list)


class EvidenceEvent(_Event):
    """The memory's evidence handed to the PA for a turn, with scores (operator view only)."""

    type: Literal["evidence"] = "evidence"
    system_text: str
    items: list[EvidenceItem] = Field(default_factory=list)
    prior_messages: int = Field(default=0, description="Raw prior messages carried in.")


class BeatChangeEvent(_Event):
    """The simulator moved to another beat (operator view only)."""

    type: Literal["beat_change"] = "beat_change"
    beat_id: str | None
    """The beat now current; None once the simulator has moved past the script's last beat."""
    index: int | None = None

    NO_BEAT: ClassVar[str] = "(none)"
    """How every view names the beat after the last one (the app's transcript and export say
    ``beat (none)``; ``mempa show`` says the same, issue 12.5)."""

    @property
    def shown_beat(self) -> str:
        """The beat as views print it: its id, or :attr:`NO_BEAT` past the last beat."""
        return self.beat_id or self.NO_BEAT


class NoticeEvent(_Event):
    """A world event delivered to the PA as a notification (not from the user)."""

    type: Literal["notice"] = "notice"
    at: datetime
    text: str


class StepStatusEvent(_Event):
    """How the step ended (or a floor, invalid turn or failure as it happens)."""

    type: Literal["step_status"] = "step_status"
    status: Literal["completed", "invalid", "failed", "floored"]
    reason: str | None = None
    pa_repeated_calls: int = Field(
        default=0,
        ge=0,
        description="The step's PA tool calls identical to an earlier call of their turn (every "
        "turn, floored and failed ones too); 0 on events stored before they were counted.",
    )
    pa_repeat_turns: int = Field(
        default=0, ge=0, description="PA turns of the step with at least one repeated call."
    )
    pa_echoed_replies: int = Field(
        default=0,
        ge=0,
        description="The step's PA replies that echoed the harness's own text (re-asked or the "
        "turn failed; never delivered); 0 on events stored before they were counted.",
    )
    pa_ix_text_withheld: int = Field(
        default=0,
        ge=0,
        description="The step's reply sentences withheld for carrying interaction-tool text "
        "(accumulation sessions; a probe with such a reply is floored instead); 0 on events "
        "stored before they were counted.",
    )
    simulator_checks: dict[str, int] = Field(
        default_factory=dict,
        description="The user simulator's message-check counts for the step "
        "(``UserSimulator.check_counts``: rejected_attempts, repeated_messages, stalled_messages, "
        "cut_replies, assistant_voice, invalid_turns, ...; Appendix D.4); empty when a person held "
        "the user seat and on events stored before they were carried.",
    )

    def simulator_count(self, key: str) -> int:
        """One of :attr:`simulator_checks` (a ``CHECK_COUNT_KEYS`` name), 0 when absent."""
        return int(self.simulator_checks.get(key, 0) or 0)


EpisodeEvent = Annotated[
    UserMessageEvent
    | PAReplyEvent
    | ToolCallEvent
    | IXSelectionEvent
    | HeldItemsEvent
    | ConsentEvent
    | EvidenceEvent
    | BeatChangeEvent
    | NoticeEvent
    | StepStatusEvent,
    Field(discriminator="type"),
]
"""One live event of the episode loop."""

#: Validates/serialises :data:`EpisodeEvent` values (``episode_event_adapter.validate_json(...)``).
episode_event_adapter: TypeAdapter[EpisodeEvent] = TypeAdapter(EpisodeEvent)


def public_transcript(events: list[EpisodeEvent]) -> list[EpisodeEvent]:
    """Only what the user could see: messages, notices, delivered replies, calls that ran, held
    items and consent. Drops IX selections, evidence, beat changes, step status and calls that
    did not run, and strips a reply's operator note (Table 9: no selection or withheld content for
    the simulator, judge or rater)."""
    keep: list[EpisodeEvent] = []
    for event in events:
        if (
            isinstance(event, ToolCallEvent)
            and event.call.status is not CallStatus.EXECUTED
        ):
            continue
        if isinstance(event, (UserMessageEvent, NoticeEvent)):
            keep.append(
                event.model_copy(update={"beat_id": None})
                if isinstance(event, UserMessageEvent)
                else event
            )
        elif isinstance(event, PAReplyEvent):  # its reason may quote an IX call's setting
            keep.append(event.model_copy(update={"reason": None}))
        elif isinstance(event, (ToolCallEvent, HeldItemsEvent, ConsentEvent)):
            keep.append(event)
    return keep
