"""The PA seat: what one PA turn receives and returns, whoever fills the seat (model or person).

Paper Section 3.1 Eq. 2 (the policy pi turns the user message and evidence into a selection and
an interaction) and Section 3.4 ('PA and Memory Interface'). The episode loop talks to any
:class:`AgentSeat`; :class:`mempa_tui.agent.PersonalAgent` fills it with a model, and a human PA
seat in the TUI can fill it by driving the same :class:`~mempa_tui.agent.TurnActions`.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from mempa_tui.ix.types import ExecutedCall
from mempa_tui.memory.base import Evidence
from mempa_tui.taxonomy import Context

if TYPE_CHECKING:
    from mempa_tui.agent.actions import TurnActions

__all__ = [
    "AgentSeat",
    "AgentSessionStart",
    "AgentTurnInput",
    "AgentTurnResult",
    "OracleHint",
    "TurnStatus",
]

TurnStatus = Literal["ok", "floored", "capped", "wrapped_up", "failed"]
"""How a PA turn ended: a reply; floored (Appendix C.3 (4), F.2); the 40-call cap was hit;
wrapped up (a tool call repeated an earlier one of the turn exactly and the profile's
``pa_repeated_call`` is ``wrap_up``, so the reply was forced before the cap); or failed (no
usable reply: the model sent an empty one, or one that echoed the harness's own text, again after
the turn's one re-ask, or with no model call left for it)."""


class OracleHint(BaseModel):
    """Under Oracle, the probed cell's target and its definition (paper Section 3.5, Table 9 a).

    Attributes:
        attribute: attribute key of the probed cell.
        setting: the target setting.
    """

    attribute: str
    setting: str


class AgentSessionStart(BaseModel):
    """What the PA seat learns when a step starts.

    Attributes:
        step_id: the session, probe or change event id (for logs; never put in the prompt).
        context: work or personal (kept for logs; the prompt does not name it).
        starts_at: story date and time at the step's start (stated in the system prompt).
        is_probe: True inside a probe.
        oracle: set only in an Oracle probe.
    """

    step_id: str
    context: Context
    starts_at: datetime
    is_probe: bool = False
    oracle: OracleHint | None = None


class AgentTurnInput(BaseModel):
    """One PA turn's input.

    Attributes:
        user_message: the user's delivered message; '' on a turn where the user only decided
            held items (the PA acts on ``runtime_notes``, issue 15.1); None on a world-event turn.
        notice: the world event's notice on an event turn (marked as not from the user).
        now: the story time of the turn (moves forward on event turns).
        runtime_notes: harness feedback about held items released or denied by the user's
            consent before this turn (Appendix E.4); shown to the PA, never to memory.
        evidence: the memory's evidence for this turn (Eq. 2, E_t).
        offered_ix: attribute keys whose IX tools are offered this turn (activated so far).
        required_ix: the tested attribute's key when its IX call is required this session
            (active from its decision-point beat), else None.
    """

    user_message: str | None = None
    notice: str | None = None
    now: datetime
    runtime_notes: list[str] = Field(default_factory=list)
    evidence: Evidence = Field(default_factory=Evidence)
    offered_ix: list[str] = Field(default_factory=list)
    required_ix: str | None = None


class AgentTurnResult(BaseModel):
    """What one PA turn produced.

    Attributes:
        reply: the PA's final reply text (before the wrapper renders it); empty when floored.
        status: ok, floored, capped, wrapped_up or failed (an empty or echoed reply after the
            turn's one re-ask; the step fails).
        reason: why the turn was floored, capped, wrapped up or failed.
        model_calls: model calls made in the turn (at most 40).
        repeated_calls: tool calls of the turn whose name and arguments (compared as canonical
            JSON, so key order does not matter) equal an earlier call of the same turn; counted
            whatever the profile does with them (a run problem: wasted model time).
        reminded / forced: whether the missing-IX reminder and the forced call were used.
        calls: every world-tool call the PA proposed, with its status and result, in order.
        thinking: reasoning the model emitted (scoring record only; never delivered).
        empty_retried: an empty reply got the one reminder this turn.
        echoed_replies: replies of the turn that echoed text the harness wrote into the PA's
            conversation (:func:`mempa_tui.agent.echo.harness_echo`); none of them was taken
            as the reply (issue 12). At most 2: the echo and the one re-ask's echo.
        echo_retried: an echoed reply got the turn's one re-ask (shared with
            ``empty_retried``: a turn is re-asked at most once).
        echoes_cut: echoed replies whose copied sentences were cut and whose remaining whole
            sentences of the PA's own were delivered (not re-asked); the re-asked ones are
            ``echoed_replies - echoes_cut``.
        ix_text_withheld: sentences of an accumulation session's reply withheld for carrying
            interaction-tool text, found in the reply as the model wrote it (before the echo
            filter; :func:`mempa_tui.agent.actions.withhold_ix_sentences`).
        no_final_reply: the turn used up its model calls without a final reply (the cap passed);
            a probe that ends so is floored as a model-capability failure (Appendix F.2).
    """

    reply: str = ""
    status: TurnStatus = "ok"
    reason: str | None = None
    model_calls: int = 0
    repeated_calls: int = 0
    reminded: bool = False
    forced: bool = False
    calls: list[ExecutedCall] = Field(default_factory=list)
    thinking: list[str] = Field(default_factory=list)
    empty_retried: bool = False
    echoed_replies: int = 0
    echo_retried: bool = False
    echoes_cut: int = 0
    ix_text_withheld: int = 0
    no_final_reply: bool = False


@runtime_checkable
class AgentSeat(Protocol):
    """The PA seat of an episode (a model loop or a person)."""

    def begin_session(self, start: AgentSessionStart) -> None:
        """Forget the previous step's history and start a new one."""
        ...

    async def respond(
        self, turn: AgentTurnInput, actions: TurnActions
    ) -> AgentTurnResult:
        """Play one PA turn: call tools through ``actions`` and return the reply text."""
        ...
