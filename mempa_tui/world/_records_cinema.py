"""Record types of the Cinema domain (paper Table 7; Appendix C.2).

Collections: ``cinema/showtimes`` (screenings with seats left) and ``cinema/tickets`` (tickets the
user bought; each purchase also takes its seats off the screening).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from mempa_tui.world.records import Record

__all__ = ["CinemaTicket", "Showtime"]


class Showtime(Record):
    """One screening of a film (collection ``cinema/showtimes``)."""

    film: str
    cinema: str = Field(description="The cinema's name.")
    city: str
    start: datetime
    runtime_minutes: int = Field(ge=1)
    screen: str = ""
    format: str = Field(default="2D", description="e.g. '2D', '3D', 'IMAX', 'relaxed screening'.")
    language: str = Field(default="", description="Audio language and subtitles, e.g. 'English, subtitled'.")
    age_rating: str = ""
    price: float = Field(ge=0, description="Price of one seat.")
    seats_available: int = Field(ge=0)


class CinemaTicket(Record):
    """Seats the user bought for one screening (collection ``cinema/tickets``)."""

    showtime_id: str
    film: str
    cinema: str
    city: str
    start: datetime
    seats: int = Field(ge=1)
    price_each: float = Field(ge=0)
    total: float = Field(ge=0)
    status: Literal["confirmed", "cancelled"] = "confirmed"
