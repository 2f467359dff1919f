"""Record types of the Room booking domain (paper Table 7; Appendix C.2).

Collections: ``room_booking/rooms`` (bookable rooms with their hours) and
``room_booking/bookings`` (bookings of those rooms: the user's, and other people's that block
slots).
"""

from __future__ import annotations

from datetime import date, time
from typing import Literal

from pydantic import Field

from mempa_tui.world._records_restaurants import OpeningHours
from mempa_tui.world.records import Record

__all__ = ["BookableRoom", "RoomBooking"]


class BookableRoom(Record):
    """A meeting or event room that can be booked (collection ``room_booking/rooms``)."""

    name: str
    venue: str = Field(description="Building or organisation the room belongs to.")
    city: str = ""
    capacity: int = Field(ge=1, description="Most people the room holds.")
    equipment: list[str] = Field(default_factory=list)
    hours: list[OpeningHours] = Field(min_length=1, description="When it can be booked.")
    closed_dates: list[date] = Field(default_factory=list)
    hourly_rate: float = Field(default=0.0, ge=0, description="Hire cost per hour; 0 is free.")
    notes: str = ""


class RoomBooking(Record):
    """One booking of a room (collection ``room_booking/bookings``).

    ``booked_by`` is empty for the user's own bookings and names the holder of anyone else's;
    other people's bookings only block their slot and are never shown in full.
    """

    room_id: str
    room_name: str
    date: date
    start_time: time
    end_time: time
    title: str
    attendees: int = Field(default=1, ge=1, description="Expected number of people.")
    booked_by: str = ""
    cost: float = Field(default=0.0, ge=0)
    status: Literal["confirmed", "cancelled"] = "confirmed"
