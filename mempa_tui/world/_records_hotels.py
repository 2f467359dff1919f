"""Record types of the Hotels domain (paper Table 7; Appendix C.2).

Collections: ``hotels/hotels`` (hotels with room types and how many of each are free) and
``hotels/bookings`` (the user's stays).
"""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mempa_tui.world.records import Record

__all__ = ["Hotel", "HotelBooking", "HotelRoomType"]


class HotelRoomType(BaseModel):
    """A kind of room a hotel sells; ``available`` rooms of it are free each night."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="e.g. 'double', 'twin', 'family suite'.")
    nightly_rate: float = Field(ge=0)
    max_guests: int = Field(ge=1)
    available: int = Field(ge=0, description="Rooms of this type free per night before the user's bookings.")


class Hotel(Record):
    """A hotel that can be booked (collection ``hotels/hotels``)."""

    name: str
    city: str
    address: str = ""
    stars: int | None = Field(default=None, ge=1, le=5)
    room_types: list[HotelRoomType] = Field(min_length=1)
    amenities: list[str] = Field(default_factory=list)
    closed_dates: list[date] = Field(default_factory=list, description="Nights it takes no guests.")
    notes: str = ""


class HotelBooking(Record):
    """A stay the user booked (collection ``hotels/bookings``); one room of one type."""

    hotel_id: str
    hotel_name: str
    city: str
    room_type: str
    check_in: date
    check_out: date
    guests: int = Field(ge=1)
    nightly_rate: float = Field(ge=0)
    total_cost: float = Field(ge=0)
    notes: str = ""
    status: Literal["confirmed", "cancelled"] = "confirmed"
