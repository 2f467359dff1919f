"""The user's seat in the episode loop: the turn type and the protocol a simulator or a person
fills (SPEC section 4.11 'Play as the user'; paper Appendix D.1).

The seat's input is :class:`~mempa_tui.ix.types.DeliveredTurn` only, so whoever sits in it never
receives the PA's selection or withheld content (Table 9).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, Field

from mempa_tui.ix.types import DeliveredTurn
from mempa_tui.scripts.schema import AccumulationSession, Beat, Probe
from mempa_tui.simulator._blocks import Assessment
from mempa_tui.taxonomy import Context

__all__ = ["RejectedAttempt", "Script", "SimulatorStateError", "UserSeat", "UserTurn"]

Script = AccumulationSession | Probe


class SimulatorStateError(RuntimeError):
    """The simulator was used out of order (e.g. ``next_turn`` before ``start``)."""


class RejectedAttempt(BaseModel):
    """A reply that was not delivered, with the problems that stopped it (for the audit)."""

    reply: str
    problems: list[str]


class UserTurn(BaseModel):
    """One user turn as the episode loop receives it.

    Attributes:
        message: the visible message to deliver to the PA; empty when nothing is to be delivered
            (``invalid`` or ``waiting_for_event``, and usually ``done``). A ``done`` turn that
            still carries a message is delivered, and the session ends after the PA's reply.
        consent: held item id -> approve (True) or deny (False). Consent that decides a held
            item always gets the PA a turn: with the message, or, without one, a turn on the
            harness's notes of what ran (issue 15.1), before any end.
        beat_id: the beat the message belongs to (for logs; never shown to the PA).
        done: the session is over; nothing more will be said.
        invalid: every attempt failed the checks; the episode loop marks the session invalid.
        invalid_reason: the problems of the last rejected attempt.
        waiting_for_event: the current beat opens with a world event: deliver it to the PA, then
            call ``advance_beat()`` and ``next_turn`` with what the PA delivered.
        released_facts: ids of facts released since the previous turn (write-lock releases).
        factual_check: the private factual check of the delivered attempt.
        assessment: the private turn assessment of the delivered attempt.
        rejected: attempts that failed the checks, in order.
        checker_warnings: message-checker failures that were recorded and passed.
    """

    message: str = ""
    consent: dict[str, bool] = Field(default_factory=dict)
    beat_id: str | None = None
    done: bool = False
    invalid: bool = False
    invalid_reason: str | None = None
    waiting_for_event: bool = False
    released_facts: list[str] = Field(default_factory=list)
    factual_check: str = ""
    assessment: Assessment | None = None
    rejected: list[RejectedAttempt] = Field(default_factory=list)
    checker_warnings: list[str] = Field(default_factory=list)


@runtime_checkable
class UserSeat(Protocol):
    """The user's seat in the episode loop: a simulator or a person can take it."""

    def start(self, script: Script, targets: Mapping[str, str], context: Context | None = None) -> None:
        """Begin a session or probe with the user's current settings of its context."""
        ...

    async def next_turn(self, delivered: DeliveredTurn | None) -> UserTurn:
        """Read what the PA delivered (None before the first turn) and write the next turn."""
        ...

    @property
    def current_beat(self) -> Beat | None:
        """The beat in play, or None when the session is over."""
        ...

    def advance_beat(self) -> Beat | None:
        """Move past the current beat (used after a world-event beat); the new beat or None."""
        ...

    @property
    def released_facts(self) -> tuple[str, ...]:
        """Ids of all facts released so far."""
        ...
