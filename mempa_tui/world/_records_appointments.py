"""Record types of the Appointments domain (paper Table 7: Appointments).

Collections: ``appointments/slots`` (bookable times offered by providers, published at
``entered_at``) and ``appointments/appointments`` (the user's bookings). A slot is free when it is
not ``taken`` and no booked appointment holds it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field, model_validator

from mempa_tui.world.records import Record

__all__ = ["Appointment", "AppointmentSlot"]


class AppointmentSlot(Record):
    """A time a provider offers for booking (collection ``appointments/slots``)."""

    provider: str = Field(description="Who offers it, e.g. 'Harbour Surgery'.")
    service: str = Field(description="What it is for, e.g. 'GP consultation'.")
    start: datetime
    end: datetime
    location: str = ""
    taken: bool = Field(default=False, description="Booked by someone else.")

    @model_validator(mode="after")
    def _check_order(self) -> AppointmentSlot:
        if self.end <= self.start:
            raise ValueError("end must be after start")
        return self


class Appointment(Record):
    """An appointment the user holds (collection ``appointments/appointments``)."""

    provider: str
    service: str
    start: datetime
    end: datetime
    location: str = ""
    slot_id: str | None = Field(default=None, description="Slot in appointments/slots it holds.")
    status: Literal["booked", "cancelled"] = "booked"
    for_person: str = Field(default="", description="Who it is for if not the user.")
    notes: str = ""

    @model_validator(mode="after")
    def _check_order(self) -> Appointment:
        if self.end <= self.start:
            raise ValueError("end must be after start")
        return self
