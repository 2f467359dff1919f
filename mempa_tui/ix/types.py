"""Types that cross the IX wrapper's boundary (paper Section 3.4 'IX Wrapper', Appendix E).

The wrapper turns the PA's selected setting, reply material and proposed tool calls into what the
user sees (:class:`DeliveredTurn`) and a scoring record (:class:`ScoringTrace`). What it withholds
lives only in the scoring trace; memory and simulator never receive it (Table 9).

IX tool payloads (the arguments of ``IX_<attribute>`` besides ``setting``):

==========================  ===================================================================
attribute                   payload fields
==========================  ===================================================================
reasoning_visibility        ``rationale: str`` - paragraph naming evidence and deciding factor
uncertainty_expression      ``confidence_notes: list[{claim: str, level: high|medium|low}]``
process_visibility          ``opening: str``, ``call_notes: list[str]``, ``closing: str``
proactive_outreach          ``message: str`` - what to tell the user about the event
topic_management            ``topics: list[{label: str, content: str}]``
information_elicitation     ``questions: list[str]``
all others                  none (pass-through or pure execution control)
==========================  ===================================================================
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, Field

__all__ = [
    "CallStatus",
    "DeliveredTurn",
    "ExecutedCall",
    "GateDecision",
    "GateResult",
    "HeldItem",
    "IXCall",
    "ReleaseOutcome",
    "ScoringTrace",
    "SelectResult",
]


class CallStatus(str, Enum):
    """What happened to a world-tool call the PA proposed."""

    EXECUTED = (
        "executed"  # ran on the working copy (its result may still be a tool error)
    )
    HELD = "held"  # held by the wrapper for the user's consent; has not run
    BLOCKED = (
        "blocked"  # refused by the wrapper under the selected setting; will not run
    )
    REJECTED = "rejected"  # malformed: unknown tool, bad arguments JSON; did not run


class ExecutedCall(BaseModel):
    """One world-tool call and its outcome, as the PA saw it.

    Attributes:
        call_id: the model's (or generated) call id.
        tool: tool name without the ``mcp_state_`` prefix.
        arguments: the arguments object.
        status: see :class:`CallStatus`.
        result: the tool result text returned to the PA (JSON or an error message).
        error: True when the tool rejected the arguments or failed (nothing was written).
        write: True for write tools.
        tag: the write tag (``draft``, ``routine``, ``key``, ``outward``) or None for reads.
        held_id: for held calls, the held item's id.
    """

    call_id: str
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    status: CallStatus
    result: str = ""
    error: bool = False
    write: bool = False
    tag: str | None = None
    held_id: str | None = None


class HeldItem(BaseModel):
    """Something the wrapper holds for a later turn (Appendix E.3).

    Attributes:
        id: stable id shown to the user, e.g. ``held_0003``; the user's consent names it.
        kind: ``action`` (a proposed tool call), ``question`` (a later elicitation question) or
            ``topic`` (a deferred topic under One-at-a-time).
        attribute: the attribute whose setting caused the hold.
        tool / arguments: for actions, the call that runs if the user consents.
        text: what the user is shown about the item (for questions and topics, the content that
            is released later).
        label: for topics, the topic's label (named as deferred until released); else empty.
        status: ``pending`` until released (``approved``) or ``denied``.
    """

    id: str
    kind: Literal["action", "question", "topic"]
    attribute: str
    tool: str | None = None
    arguments: dict[str, Any] = Field(default_factory=dict)
    text: str = ""
    label: str = ""
    status: Literal["pending", "approved", "denied"] = "pending"


class IXCall(BaseModel):
    """The PA's call to an interaction tool, as memory may see it (setting and public parts only).

    ``payload`` keeps only the fields that were rendered to the user; withheld fields are removed
    (they go to :class:`ScoringTrace`).
    """

    attribute: str
    setting: str
    payload: dict[str, Any] = Field(default_factory=dict)


class DeliveredTurn(BaseModel):
    """What the user receives for one PA turn.

    Attributes:
        reply: the public reply text after rendering.
        executed: world-tool calls that actually ran this turn (including released items).
        held: items awaiting the user's consent after this turn (held this turn or still
            pending from an earlier one), with their ids: actions and deferred topics.
    """

    reply: str
    executed: list[ExecutedCall] = Field(default_factory=list)
    held: list[HeldItem] = Field(default_factory=list)


class ScoringTrace(BaseModel):
    """What the wrapper kept out of the public interaction, for scoring only (Appendix E.4).

    Never written to memory, never shown to the simulator or the BRS judge.
    """

    selections: dict[str, str] = Field(
        default_factory=dict, description="attribute -> setting"
    )
    withheld: dict[str, Any] = Field(
        default_factory=dict, description="payload field -> content"
    )
    blocked: list[ExecutedCall] = Field(default_factory=list)
    rendering_notes: list[str] = Field(default_factory=list)
    raw_reply: str = Field(
        default="", description="The PA's reply text before rendering."
    )
    unasked_holds: list[str] = Field(
        default_factory=list,
        description=(
            "Ids of Autonomy Level actions held this turn whose public reply asks the user "
            "nothing (Appendix F.2: 'held an action without asking'; the step is floored)."
        ),
    )


class GateDecision(str, Enum):
    """The wrapper's decision on one proposed world-tool call (Appendix E.3, execution control)."""

    EXECUTE = "execute"
    HOLD = "hold"
    BLOCK = "block"


class GateResult(BaseModel):
    """Outcome of :meth:`mempa_tui.ix.IXWrapper.gate` for one proposed call.

    Attributes:
        decision: execute, hold or block.
        attribute: key of the attribute whose setting caused a hold or block; None to execute.
        reason: a one-line reason for a hold or block (shown to the PA, kept in the trace).
    """

    decision: GateDecision
    attribute: str | None = None
    reason: str = ""


class SelectResult(BaseModel):
    """Outcome of one ``IX_<attribute>`` call handed to the wrapper.

    Attributes:
        ok: the call was accepted (a selection, a repeat of it, or a payload-only call).
        attribute: the attribute key.
        setting: the session's setting for the attribute after the call (None if still unset).
        newly_selected: True when this call made the session's selection.
        message: the tool result text returned to the PA (acceptance note or refusal reason).
    """

    ok: bool
    attribute: str
    setting: str | None = None
    newly_selected: bool = False
    message: str


class ReleaseOutcome(BaseModel):
    """What :meth:`mempa_tui.ix.IXWrapper.release` did with the user's consent decisions.

    Attributes:
        executed: approved actions that ran on the working copy, in id order.
        approved: every item approved by this consent (actions and topics).
        denied: items the user refused; they will never run.
        unknown: ids in the consent that name no pending item (ignored).
        by_answer: ids of Information Elicitation holds released by the user's answer rather
            than by an explicit consent (they are in ``approved`` and, for actions, ``executed``).
    """

    executed: list[ExecutedCall] = Field(default_factory=list)
    approved: list[HeldItem] = Field(default_factory=list)
    denied: list[HeldItem] = Field(default_factory=list)
    unknown: list[str] = Field(default_factory=list)
    by_answer: list[str] = Field(default_factory=list)
