"""Pydantic schema of the benchmark content in ``worlds/``: persona, preference matrix, timeline,
accumulation sessions, change events and probes.

Source: paper Section 3.3 and Appendices B.4 (preference matrix fields), C.3 (beats, decision
points, withheld facts, write locks, required IX call), C.4 (change events), C.5 (viability rules a
program can check), D.2 (active attributes per beat) and Section 3.5 (probes).

Layout of one user's folder (``worlds/users/<label>/``)::

    persona.yaml        Persona
    preferences.yaml    PreferenceMatrix
    timeline.yaml       Timeline: the ordered step ids
    fixtures/           the fixture tree (see mempa_tui.world)
    sessions/*.yaml     AccumulationSession, one per file
    events/*.yaml       ChangeEvent, one per file
    probes/*.yaml       Probe, one per file

Every model forbids unknown keys, so a misspelt field is an error that names the field. Times are
naive story-time datetimes written ``YYYY-MM-DDTHH:MM``. Record references are written
``<collection>:<record id>``, e.g. ``email/inbox:em_0012`` (collection paths are those of the
fixture tree, see :mod:`mempa_tui.world`).
"""

from __future__ import annotations

import re
from datetime import datetime
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mempa_tui.taxonomy import ATTRIBUTES, Attribute, Context, attribute

__all__ = [
    "AccumulationSession",
    "Beat",
    "ChangeEvent",
    "Confidence",
    "DecisionPoint",
    "EventTranscriptTurn",
    "Fact",
    "PACannedTurn",
    "Persona",
    "PreferenceCell",
    "PreferenceMatrix",
    "Probe",
    "ProbeKind",
    "RecordRef",
    "Relationship",
    "ScriptedCall",
    "SourceLabel",
    "Timeline",
    "ToolStep",
    "WorldEvent",
    "WriteLock",
]

_STRICT = ConfigDict(extra="forbid", frozen=True)

_REF_RE = re.compile(r"^[a-z][a-z0-9_]*(/[a-z][a-z0-9_]*)*:[A-Za-z0-9_.-]+$")

RecordRef = Annotated[
    str,
    Field(
        description="A world record, '<collection>:<id>', e.g. 'email/inbox:em_0012'.",
        pattern=_REF_RE.pattern,
    ),
]


def _check_attribute_key(value: str) -> str:
    attribute(value)  # raises KeyError naming the valid keys
    return value


# --------------------------------------------------------------------------------------------
# Persona and preference matrix (Appendix B.4)
# --------------------------------------------------------------------------------------------


class Relationship(BaseModel):
    """A recurring person in the user's life."""

    model_config = _STRICT

    name: str = Field(description="The person's name as it appears in the world's records.")
    relation: str = Field(description="Who they are to the user, e.g. 'manager', 'sister'.")
    context: Context = Field(description="The context the relationship mostly belongs to.")
    notes: str = Field(default="", description="How the user relates to them; what they share.")


class Persona(BaseModel):
    """An original fictional user (paper Section 3.2 'Persona-Grounded Users', Appendix B.4).

    The persona card is what the simulator plays and the PRS rater keeps; it never includes the
    preference matrix.
    """

    model_config = _STRICT

    label: str = Field(description="Benchmark label, e.g. 'A'.", pattern=r"^[A-Z]$")
    name: str = Field(description="The user's full name inside the world.")
    age: int = Field(ge=16, le=100)
    occupation: str
    workplace: str = Field(description="Employer or place of work, as named in the world.")
    town: str = Field(description="The fictional town the user lives in.")
    living_arrangement: str
    relationships: list[Relationship] = Field(min_length=1)
    routines: list[str] = Field(min_length=1, description="Recurring weekly or daily habits.")
    hobbies: list[str] = Field(default_factory=list)
    personality: str = Field(description="A short paragraph on temperament and values.")
    speech_style: str = Field(description="How the user writes messages: length, register, tics.")
    background: str = Field(description="A paragraph of life story that grounds the storyline.")


class SourceLabel(str, Enum):
    """How a cell's setting was assigned (paper Appendix B.3, Table 5 columns)."""

    CONFIRMED_HIGH = "confirmed_high"
    REVIEWED_KEPT = "reviewed_kept"
    REVIEWER_SET = "reviewer_set"
    SPECIFIED_MANUALLY = "specified_manually"


class Confidence(str, Enum):
    """Confidence of a cell's setting (paper Appendix B.3)."""

    HIGH = "high"
    MEDIUM_HIGH = "medium-high"
    MEDIUM = "medium"
    LOW = "low"


class PreferenceCell(BaseModel):
    """One context x attribute cell of the matrix: its setting, source label and confidence."""

    model_config = _STRICT

    setting: str
    source: SourceLabel
    confidence: Confidence


class PreferenceMatrix(BaseModel):
    """The user's 2 x 14 preference matrix at the start of the timeline (paper Appendix B.4).

    ``work`` and ``personal`` each map every attribute key to a :class:`PreferenceCell`. The
    validator requires all 14 attributes in both contexts and a valid setting name in each cell.
    """

    model_config = _STRICT

    work: dict[str, PreferenceCell]
    personal: dict[str, PreferenceCell]

    @model_validator(mode="after")
    def _complete_and_valid(self) -> PreferenceMatrix:
        expected = {a.key for a in ATTRIBUTES}
        for ctx_name, cells in (("work", self.work), ("personal", self.personal)):
            missing = expected - cells.keys()
            unknown = cells.keys() - expected
            if missing:
                raise ValueError(f"{ctx_name}: missing attributes: {', '.join(sorted(missing))}")
            if unknown:
                raise ValueError(f"{ctx_name}: unknown attributes: {', '.join(sorted(unknown))}")
            for key, cell in cells.items():
                attribute(key).setting(cell.setting)  # KeyError names the valid settings
        return self

    def cell(self, context: Context, attribute_key: str) -> PreferenceCell:
        """The cell of ``attribute_key`` in ``context``."""
        return (self.work if context is Context.WORK else self.personal)[attribute_key]

    def setting(self, context: Context, attribute_key: str) -> str:
        """The setting name of a cell at the start of the timeline."""
        return self.cell(context, attribute_key).setting


# --------------------------------------------------------------------------------------------
# Beats (Appendix C.3, D.2)
# --------------------------------------------------------------------------------------------


class Fact(BaseModel):
    """A task fact the user holds and reveals at a given beat (withheld fact, Appendix C.3 (1)).

    Before the beat that releases it the simulator does not see the fact at all.
    """

    model_config = _STRICT

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    text: str = Field(min_length=1, description="The fact as the user knows it.")


class ToolStep(BaseModel):
    """One world-tool call on the intended path of a script (Table 8, condition 1).

    ``worlds check`` runs the steps of a script in order on a scratch copy of the world at the
    script's time; every step must succeed unless ``expect_error`` is set (e.g. the blocked call of
    a Capability Boundary session).
    """

    model_config = _STRICT

    tool: str = Field(description="World tool name without the 'mcp_state_' prefix.")
    args: dict[str, Any] = Field(default_factory=dict)
    expect_error: bool = Field(default=False)


class WorldEvent(BaseModel):
    """A world event that opens a beat with no user request (Proactive Outreach).

    At ``at`` the session clock moves forward, the bound records become visible, and the PA gets
    ``notice`` as a notification that is not a user message.
    """

    model_config = _STRICT

    at: datetime
    notice: str = Field(min_length=1, description="What the PA is told happened.")
    records: list[RecordRef] = Field(default_factory=list)


class DecisionPoint(BaseModel):
    """The beat's decision about the tested attribute (paper Section 3.1, Appendix C.3).

    Attributes:
        attribute: key of the tested attribute; its IX tool becomes available at this beat.
        reactions: for every setting of the attribute, how the user reacts in the next beat if the
            PA carries out that setting (acceptance when it fits the user's current setting,
            the correcting move when it does not). Required for every setting (Table 8, cond. 5).
        falls_short: what the user does next when the PA's behaviour falls short of the goal.
    """

    model_config = _STRICT

    attribute: str
    reactions: dict[str, str]
    falls_short: str = Field(min_length=1)

    _check_attr = field_validator("attribute")(_check_attribute_key)

    @model_validator(mode="after")
    def _reaction_per_setting(self) -> DecisionPoint:
        attr = attribute(self.attribute)
        for name in self.reactions:
            attr.setting(name)  # KeyError names the valid settings
        missing = [s for s in attr.setting_names if s not in self.reactions]
        if missing:
            raise ValueError(f"reactions: no reaction for setting(s) {', '.join(missing)}")
        return self


class Beat(BaseModel):
    """One step of a session from the user's side (paper Appendix C.3).

    Attributes:
        id: unique within the script; never shown to the PA (a leak check looks for it).
        goal: what the user wants to get done at this beat.
        conveys: what the user says or asks at this beat, in plain terms (not a script line).
        starts_when: the condition under which the beat starts, e.g. 'session start' or 'after
            the PA has found the venue email'.
        records: world records the beat refers to; they must exist and be visible at the beat's
            time.
        releases: ids of facts revealed at this beat.
        active_attributes: attributes whose preference skill is loaded at this beat (Appendix
            D.2). A decision-point beat always lists its tested attribute.
        decision_point: present on the beat where the tested attribute becomes active.
        event: a world event that opens the beat instead of a user message (Proactive Outreach).
        max_turns: user turns allowed in this beat before the session moves on (Appendix D.2).
    """

    model_config = _STRICT

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    goal: str = Field(min_length=1)
    conveys: str = Field(min_length=1)
    starts_when: str = Field(default="after the previous beat's goal is met")
    records: list[RecordRef] = Field(default_factory=list)
    releases: list[str] = Field(default_factory=list)
    active_attributes: list[str] = Field(default_factory=list)
    decision_point: DecisionPoint | None = None
    event: WorldEvent | None = None
    max_turns: int = Field(default=3, ge=1, le=10)

    @field_validator("active_attributes")
    @classmethod
    def _known_attributes(cls, value: list[str]) -> list[str]:
        for key in value:
            _check_attribute_key(key)
        return value

    @model_validator(mode="after")
    def _decision_point_is_active(self) -> Beat:
        if self.decision_point and self.decision_point.attribute not in self.active_attributes:
            raise ValueError(
                f"active_attributes must include the decision point's attribute "
                f"{self.decision_point.attribute!r}"
            )
        return self


class WriteLock(BaseModel):
    """A write the world refuses until the user has supplied its content (Appendix C.3 (3)).

    Used by sessions and probes of Reasoning Visibility, Process Visibility, Autonomy Level,
    Information Elicitation and Topic Management. A call to ``tool`` whose arguments include every
    key/value of ``match`` is refused with an error until the beat that releases ``unlocked_by``
    has been played.
    """

    model_config = _STRICT

    tool: str
    match: dict[str, Any] = Field(default_factory=dict)
    unlocked_by: str = Field(description="Id of the fact whose release opens the lock.")


class _Script(BaseModel):
    """Fields shared by accumulation sessions and probes."""

    model_config = _STRICT

    id: str = Field(pattern=r"^[A-Z]-[A-Za-z0-9_-]+$")
    context: Context
    attribute: str = Field(description="Key of the tested attribute.")
    starts_at: datetime
    scenario: str = Field(min_length=1, description="Scenario type of the context (Appendix C.1).")
    task: str = Field(min_length=1, description="One line naming the task; tasks of one cell differ.")
    facts: list[Fact] = Field(default_factory=list)
    beats: list[Beat] = Field(min_length=1)
    write_lock: WriteLock | None = None
    tool_steps: list[ToolStep] = Field(default_factory=list)

    _check_attr = field_validator("attribute")(_check_attribute_key)

    @property
    def attr(self) -> Attribute:
        """The tested attribute."""
        return attribute(self.attribute)

    def decision_beat_index(self) -> int:
        """Index of the decision-point beat.

        Raises:
            ValueError: the script has no decision point (the validator prevents this).
        """
        for i, beat in enumerate(self.beats):
            if beat.decision_point is not None:
                return i
        raise ValueError(f"{self.id}: no decision point")

    @model_validator(mode="after")
    def _structure(self) -> _Script:
        ids = [b.id for b in self.beats]
        dupes = {i for i in ids if ids.count(i) > 1}
        if dupes:
            raise ValueError(f"beats: duplicate beat ids {', '.join(sorted(dupes))}")
        dps = [b for b in self.beats if b.decision_point is not None]
        if len(dps) != 1:
            raise ValueError(f"beats: need exactly one decision point, found {len(dps)}")
        if dps[0].decision_point.attribute != self.attribute:  # type: ignore[union-attr]
            raise ValueError(
                f"beats: the decision point tests {dps[0].decision_point.attribute!r} "  # type: ignore[union-attr]
                f"but the script's attribute is {self.attribute!r}"
            )
        fact_ids = {f.id for f in self.facts}
        released: list[str] = []
        for beat in self.beats:
            for fid in beat.releases:
                if fid not in fact_ids:
                    raise ValueError(f"beats: beat {beat.id!r} releases unknown fact {fid!r}")
                released.append(fid)
        if self.write_lock and self.write_lock.unlocked_by not in fact_ids:
            raise ValueError(
                f"write_lock: unlocked_by names unknown fact {self.write_lock.unlocked_by!r}"
            )
        return self


class AccumulationSession(_Script):
    """A live session in which the PA meets one preference cell (paper Section 3.3, Appendix C.3).

    The beat after the decision point carries the user's reaction (checked by ``worlds check``).
    """

    kind: Literal["accumulation"] = "accumulation"


class ProbeKind(str, Enum):
    """Final probes run after the last session; pre-event probes an hour before their event."""

    FINAL = "final"
    PRE_EVENT = "pre_event"


class Probe(_Script):
    """A short scored session with one decision point for one cell (paper Section 3.5).

    Attributes:
        probe_kind: final or pre-event.
        event: for a pre-event probe, the id of the change event it precedes; its ``starts_at``
            must be exactly one hour before the event.
        expected_replies: for every setting of the attribute, the reply a PA following that
            setting would give (Appendix C.5, condition 5).
    """

    kind: Literal["probe"] = "probe"
    probe_kind: ProbeKind
    event: str | None = None
    expected_replies: dict[str, str]

    @model_validator(mode="after")
    def _probe_rules(self) -> Probe:
        attr = attribute(self.attribute)
        for name in self.expected_replies:
            attr.setting(name)
        missing = [s for s in attr.setting_names if s not in self.expected_replies]
        if missing:
            raise ValueError(f"expected_replies: none for setting(s) {', '.join(missing)}")
        if (self.probe_kind is ProbeKind.PRE_EVENT) != (self.event is not None):
            raise ValueError("event: required for a pre-event probe and only for one")
        return self


# --------------------------------------------------------------------------------------------
# Change events (Appendix C.4)
# --------------------------------------------------------------------------------------------


class ScriptedCall(BaseModel):
    """A world-tool call in a change event's fixed transcript; replayed through the real tools."""

    model_config = _STRICT

    tool: str = Field(description="World tool name without the 'mcp_state_' prefix.")
    args: dict[str, Any] = Field(default_factory=dict)


class PACannedTurn(BaseModel):
    """The PA's fixed part of one exchange of a change event.

    ``ix_setting`` is the old setting the PA carries out (given on the turn where it selects);
    ``ix_payload`` holds the turn-level payload of the attribute's IX tool, if it has one.
    """

    model_config = _STRICT

    tool_calls: list[ScriptedCall] = Field(default_factory=list)
    ix_setting: str | None = None
    ix_payload: dict[str, Any] = Field(default_factory=dict)
    reply: str = Field(min_length=1)


class EventTranscriptTurn(BaseModel):
    """One exchange of a change event: the user's message, then the PA's fixed turn (if any).

    The last turn of an event carries the user's new rule and no PA turn.
    """

    model_config = _STRICT

    user: str = Field(min_length=1)
    pa: PACannedTurn | None = None


class ChangeEvent(BaseModel):
    """A controlled preference-change event (paper Section 3.3, Appendix C.4).

    The PA carries out ``old_setting`` in full, a consequence follows, and the user's last message
    states the new rule in their own words. From ``starts_at`` on the cell holds ``new_setting``.

    Attributes:
        slot: 1-3 are the work slots, 4-6 the personal slots, in time order.
        simulator_note: first-person note added to the simulator's memory.
    """

    model_config = _STRICT

    id: str = Field(pattern=r"^[A-Z]-[A-Za-z0-9_-]+$")
    kind: Literal["change_event"] = "change_event"
    context: Context
    attribute: str
    old_setting: str
    new_setting: str
    starts_at: datetime
    slot: int = Field(ge=1, le=6)
    task: str = Field(min_length=1)
    transcript: list[EventTranscriptTurn] = Field(min_length=2)
    simulator_note: str = Field(min_length=1)

    _check_attr = field_validator("attribute")(_check_attribute_key)

    @model_validator(mode="after")
    def _event_rules(self) -> ChangeEvent:
        attr = attribute(self.attribute)
        if attr.key == "proactive_outreach":
            raise ValueError("attribute: Proactive Outreach has no change events (Appendix C.4)")
        attr.setting(self.old_setting)
        attr.setting(self.new_setting)
        if self.old_setting == self.new_setting:
            raise ValueError("new_setting: must differ from old_setting")
        if (self.slot <= 3) != (self.context is Context.WORK):
            raise ValueError(f"slot: slot {self.slot} does not belong to context {self.context.value}")
        if self.transcript[-1].pa is not None:
            raise ValueError("transcript: the last turn is the user's new rule and has no PA turn")
        if not any(t.pa and t.pa.ix_setting for t in self.transcript):
            raise ValueError("transcript: no PA turn selects the old setting (ix_setting)")
        for t in self.transcript:
            if t.pa and t.pa.ix_setting and t.pa.ix_setting != self.old_setting:
                raise ValueError(
                    f"transcript: the PA selects {t.pa.ix_setting!r}, not the old setting "
                    f"{self.old_setting!r}"
                )
        return self


class Timeline(BaseModel):
    """A user's ordered steps: accumulation session and change-event ids (paper Section 3.3).

    Probes are not listed; final probes run after the last step and pre-event probes an hour before
    their event.
    """

    model_config = _STRICT

    user: str = Field(pattern=r"^[A-Z]$")
    steps: list[str] = Field(min_length=1)
    scope: Literal["slice", "full"] | None = Field(
        default=None,
        description=(
            "'full' for a complete four-month timeline (94 sessions, 5 events: the full count "
            "rules of ``worlds check`` apply); 'slice' for a partial one (the slice rules apply); "
            "left out (small test trees), no count rule applies."
        ),
    )
    slice: list[str] = Field(
        default_factory=list,
        description=(
            "The quick-start slice of a full timeline: some of ``steps``, in the same order, that "
            "``mempa run --slice`` plays (with the final probes and the pre-event probes of the "
            "events it includes). Empty: a ``slice``-scope timeline is its own slice."
        ),
    )
    quick: list[str] = Field(
        default_factory=list,
        description=(
            "The quick start: a few of ``steps``, in the same order, that ``mempa run --quick`` "
            "plays, covering one attribute in both contexts and its change event; the run probes "
            "only the cells its steps test (their final probes and the event's pre-event probe)."
        ),
    )

    @model_validator(mode="after")
    def _slice_within_steps(self) -> Timeline:
        position = {sid: i for i, sid in enumerate(self.steps)}
        for name, chosen in (("slice", self.slice), ("quick", self.quick)):
            last = -1
            for sid in chosen:
                if sid not in position:
                    raise ValueError(f"{name}: {sid!r} is not a step of the timeline")
                if position[sid] <= last:
                    raise ValueError(f"{name}: {sid!r} is repeated or out of the timeline's order")
                last = position[sid]
        return self
