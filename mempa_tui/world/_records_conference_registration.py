"""Record types of the Conference registration domain (paper Table 7; Appendix C.2).

Collections: ``conference_registration/conferences`` (events open for registration) and
``conference_registration/registrations`` (registrations the user made).
"""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mempa_tui.world.records import Record

__all__ = ["Conference", "ConferenceRegistration", "TicketType"]


class TicketType(BaseModel):
    """One kind of ticket a conference sells."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="e.g. 'full', 'one-day', 'student'.")
    price: float = Field(ge=0)


class Conference(Record):
    """A conference or event one can register for (``conference_registration/conferences``)."""

    name: str
    city: str
    venue: str = ""
    start_date: date
    end_date: date
    registration_deadline: date = Field(description="Last day registrations are accepted.")
    ticket_types: list[TicketType] = Field(min_length=1)
    workshops: list[str] = Field(default_factory=list, description="Optional sessions to sign up for.")
    notes: str = ""


class ConferenceRegistration(Record):
    """A registration (``conference_registration/registrations``); ``entered_at`` is when made."""

    conference_id: str
    conference_name: str
    attendee_name: str
    ticket_type: str
    price: float = Field(ge=0)
    workshops: list[str] = Field(default_factory=list)
    dietary_requirements: str = ""
    notes: str = ""
    status: Literal["registered", "cancelled"] = "registered"
