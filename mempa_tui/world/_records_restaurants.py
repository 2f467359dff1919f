"""Record types of the Restaurants domain (paper Table 7; Appendix C.2).

Collections: ``restaurants/restaurants`` (venues with opening hours and seats) and
``restaurants/reservations`` (the user's table reservations).
"""

from __future__ import annotations

from datetime import date, time
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mempa_tui.world.records import Record

__all__ = ["WEEKDAYS", "OpeningHours", "Restaurant", "RestaurantReservation", "Weekday", "hours_on"]

#: Weekday keys in calendar order (``date.weekday()`` indexes this tuple).
WEEKDAYS: tuple[str, ...] = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")

Weekday = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]


class OpeningHours(BaseModel):
    """When a venue is open on some weekdays: from ``open`` to ``close`` the same day."""

    model_config = ConfigDict(extra="forbid")

    days: list[Weekday] = Field(min_length=1, description="Weekdays these hours apply to.")
    open: time = Field(description="Opening time, HH:MM.")
    close: time = Field(description="Closing time, HH:MM, after the opening time.")

    @model_validator(mode="after")
    def _close_after_open(self) -> OpeningHours:
        if self.close <= self.open:
            raise ValueError(f"close {self.close:%H:%M} is not after open {self.open:%H:%M}")
        return self


def hours_on(hours: list[OpeningHours], day: date) -> OpeningHours | None:
    """The opening hours that apply on ``day``'s weekday, or None when closed that weekday."""
    key = WEEKDAYS[day.weekday()]
    return next((h for h in hours if key in h.days), None)


class Restaurant(Record):
    """A restaurant that takes reservations (collection ``restaurants/restaurants``).

    A sitting lasts ``sitting_minutes``; the last table is taken that long before closing.
    ``seats`` is how many guests the reservations of one sitting can hold together.
    """

    name: str
    city: str
    address: str = ""
    cuisine: str = ""
    price_range: str = Field(default="", description="e.g. '$$' or 'mid-range'.")
    phone: str = ""
    hours: list[OpeningHours] = Field(min_length=1)
    closed_dates: list[date] = Field(default_factory=list, description="Extra days it is shut.")
    seats: int = Field(ge=1)
    max_party_size: int = Field(ge=1)
    sitting_minutes: int = Field(default=120, ge=30, le=360)
    notes: str = ""


class RestaurantReservation(Record):
    """A table reservation the user holds (collection ``restaurants/reservations``)."""

    restaurant_id: str
    restaurant_name: str
    date: date
    time: time
    party_size: int = Field(ge=1)
    notes: str = Field(default="", description="Requests passed to the restaurant.")
    status: Literal["confirmed", "cancelled"] = "confirmed"
