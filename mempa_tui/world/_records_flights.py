"""Record types of the Flights domain (paper Table 7; Appendix C.2).

Collections: ``flights/flights`` (scheduled flights with fares and free seats) and
``flights/bookings`` (flights the user booked).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mempa_tui.world.records import Record

__all__ = ["Fare", "Flight", "FlightBooking"]


class Fare(BaseModel):
    """A cabin on a flight: its price per passenger and seats free before the user's bookings."""

    model_config = ConfigDict(extra="forbid")

    cabin: str = Field(description="e.g. 'economy', 'business'.")
    price: float = Field(ge=0)
    seats: int = Field(ge=0)


class Flight(Record):
    """A scheduled flight (collection ``flights/flights``); times are local story times."""

    flight_number: str
    airline: str
    origin_city: str
    origin_airport: str = Field(description="Airport code, e.g. 'HFY'.")
    destination_city: str
    destination_airport: str
    departure: datetime
    arrival: datetime
    stops: int = Field(default=0, ge=0)
    fares: list[Fare] = Field(min_length=1)

    @model_validator(mode="after")
    def _arrives_after_departing(self) -> Flight:
        if self.arrival <= self.departure:
            raise ValueError("arrival is not after departure")
        return self


class FlightBooking(Record):
    """A booked flight (collection ``flights/bookings``); ``entered_at`` is when booked."""

    flight_id: str
    flight_number: str
    departure: datetime
    origin_city: str
    destination_city: str
    cabin: str
    passengers: list[str] = Field(min_length=1)
    price_per_passenger: float = Field(ge=0)
    total_cost: float = Field(ge=0)
    status: Literal["confirmed", "cancelled"] = "confirmed"
