"""The scoring input: one probe result (paper Section 3.5, Appendix F.2).

A :class:`ProbeOutcome` is everything scoring needs from one probe run; the runner builds one per
probe per repeat. Its status follows the failure rules of Appendix F.2:

- ``completed``: the probe ran; the selection (possibly None or invalid, which scores incorrect)
  is scored as it is.
- ``floored``: the PA's own output broke the interaction-tool contract (a model-capability
  failure). PSA 0 and BRS 1, kept in every denominator; a CS pair or PET cell with a floored
  endpoint does not pass.
- ``incomplete``: an artifact is missing for a reason outside the PA (the run stopped, the
  simulator went invalid...). Kept apart from every score and reported, never counted as zero.
"""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mempa_tui.scripts.schema import ProbeKind
from mempa_tui.taxonomy import Attribute, Context, attribute

__all__ = ["CONDITION_LABELS", "ProbeOutcome", "ProbeStatus", "condition_label"]


CONDITION_LABELS: dict[str, str] = {
    "none": "No Memory",
    "oracle": "Oracle",
    "file": "File memory",
    "rag": "Simple RAG",
    "mem0": "Mem0",
    "memos": "MemOS",
    "prefstate": "Preference-state memory (taxonomy-aware, ours)",
    "ours-rag": "Whole-turn RAG (ours)",
}
"""Display names of the memory conditions, keyed by the name ``make_memory`` takes: the paper's
conditions first, then ours (marked), so tables list them apart."""


def condition_label(name: str) -> str:
    """The display name of a memory condition (the name itself when unknown)."""
    return CONDITION_LABELS.get(name, name)


class ProbeStatus(str, Enum):
    """How a probe ended, for scoring (Appendix F.2 'Failure handling')."""

    COMPLETED = "completed"
    FLOORED = "floored"
    INCOMPLETE = "incomplete"


class ProbeOutcome(BaseModel):
    """One scored probe run.

    Identity of the cell is ``(user, context, attribute)``; of the run, ``(memory, model,
    repeat)``; ``probe_kind`` separates the final probe from a cell's pre-event probe.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    user: str = Field(min_length=1)
    """User label, e.g. ``A``."""
    context: Context
    """Context of the probed cell."""
    attribute: str
    """Key of the probed attribute (display names are accepted and stored as the key)."""
    probe_kind: ProbeKind
    """``final`` or ``pre_event``."""
    repeat: int = Field(ge=1)
    """Repeat number, 1-based."""
    target: str
    """The cell's target setting at the probe's time (must be a setting of the attribute)."""
    selection: str | None = None
    """The PA's selected setting (its first IX call on the attribute); None when it made none.
    A value that is not a setting of the attribute scores incorrect."""
    status: ProbeStatus = ProbeStatus.COMPLETED
    """completed | floored | incomplete."""
    brs: int | None = Field(default=None, ge=1, le=5)
    """Behavioral Realization Score from the judge; None when missing (judge failed, not run)."""
    prs: int | None = Field(default=None, ge=1, le=5)
    """Perceived Realization Score from the simulator; None when missing."""
    memory: str = "none"
    """Memory condition name (``none``, ``oracle``, ``file``...)."""
    model: str = "default"
    """PA backbone label (the profile's PA model)."""
    probe_id: str = ""
    """The probe's id in ``worlds/`` (for reports and tracing)."""
    reason: str | None = None
    """Why the probe was floored or is incomplete."""
    differs_in_matrix: bool | None = None
    """Whether the user's preference matrix (Appendix B.4, the settings at the start of the
    timeline) gives this attribute different settings at work and in personal life: the pair
    ``(user, attribute)`` is then in CS's set D (Section 3.5; 18 pairs over the paper's four
    users), and carry-over counts over the same pairs (F.3). None when the outcome was built
    without the matrix: such a pair is never in D (CS then reads N/A rather than a value
    computed from the wrong pairs)."""

    @field_validator("attribute")
    @classmethod
    def _attribute_key(cls, value: str) -> str:
        try:
            return attribute(value).key
        except KeyError as exc:
            raise ValueError(str(exc.args[0])) from None

    @model_validator(mode="after")
    def _target_is_a_setting(self) -> ProbeOutcome:
        try:
            self.attr.setting(self.target)
        except KeyError as exc:
            raise ValueError(f"target: {exc.args[0]}") from None
        return self

    @property
    def attr(self) -> Attribute:
        """The probed attribute."""
        return attribute(self.attribute)

    @property
    def cell(self) -> tuple[str, Context, str]:
        """``(user, context, attribute)``."""
        return (self.user, self.context, self.attribute)

    @property
    def condition(self) -> tuple[str, str]:
        """``(memory, model)``."""
        return (self.memory, self.model)

    @property
    def scorable(self) -> bool:
        """False for incomplete probes, which are kept out of every score."""
        return self.status is not ProbeStatus.INCOMPLETE

    @property
    def correct(self) -> bool:
        """Exact match of selection and target on a completed probe (a floored one never is)."""
        return self.status is ProbeStatus.COMPLETED and self.selection == self.target

    @property
    def valid_selection(self) -> str | None:
        """The selection if it is a setting of the attribute, else None."""
        if self.selection is not None and self.selection in self.attr.setting_names:
            return self.selection
        return None

    @property
    def brs_scored(self) -> float | None:
        """BRS as scored: 1 for a floored probe, the judge's score otherwise, None if missing."""
        if self.status is ProbeStatus.FLOORED:
            return 1.0
        if self.status is ProbeStatus.INCOMPLETE or self.brs is None:
            return None
        return float(self.brs)

    @property
    def prs_scored(self) -> float | None:
        """PRS as given (floors apply to PSA and BRS only); None if missing or incomplete."""
        if self.status is ProbeStatus.INCOMPLETE or self.prs is None:
            return None
        return float(self.prs)
