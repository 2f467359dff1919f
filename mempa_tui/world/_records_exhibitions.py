"""Record types of the Exhibitions domain (paper Table 7; Appendix C.2).

Collections: ``exhibitions/exhibitions`` (shows with their run, opening days, entry times and
ticket prices) and ``exhibitions/tickets`` (tickets the user bought).
"""

from __future__ import annotations

from datetime import date, time
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mempa_tui.world.records import Record

__all__ = ["WEEKDAYS", "Exhibition", "ExhibitionTicket", "ExhibitionTicketType", "Weekday"]

Weekday = Literal["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
WEEKDAYS: tuple[str, ...] = Weekday.__args__  # type: ignore[attr-defined]


class ExhibitionTicketType(BaseModel):
    """A kind of ticket and its price, e.g. adult 14.00."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="e.g. 'adult', 'concession', 'child', 'member'.")
    price: float = Field(ge=0)


class Exhibition(Record):
    """An exhibition (collection ``exhibitions/exhibitions``)."""

    title: str
    venue: str
    city: str
    start_date: date = Field(description="First day of the run.")
    end_date: date = Field(description="Last day of the run.")
    description: str = ""
    opens: time = Field(description="Opening time each open day.")
    closes: time = Field(description="Closing time each open day.")
    closed_weekdays: list[Weekday] = Field(
        default_factory=list,
        description="Full day names; the three-letter forms other domains use (mon, tue ...) are accepted.",
    )
    closed_dates: list[date] = Field(default_factory=list)
    entry_times: list[time] = Field(
        default_factory=list, description="Timed-entry slots; empty means entry at any time while open."
    )
    ticket_types: list[ExhibitionTicketType] = Field(min_length=1)

    @field_validator("closed_weekdays", mode="before")
    @classmethod
    def _full_day_names(cls, value: object) -> object:
        if not isinstance(value, list):
            return value
        by_prefix = {day[:3].casefold(): day for day in WEEKDAYS}
        return [by_prefix.get(v.strip().casefold()[:3], v) if isinstance(v, str) else v for v in value]

    @model_validator(mode="after")
    def _ordered(self) -> Exhibition:
        if self.end_date < self.start_date:
            raise ValueError(f"end_date {self.end_date} is before start_date {self.start_date}")
        if self.closes <= self.opens:
            raise ValueError(f"closes {self.closes:%H:%M} is not after opens {self.opens:%H:%M}")
        return self


class ExhibitionTicket(Record):
    """Tickets the user bought for one visit (collection ``exhibitions/tickets``)."""

    exhibition_id: str
    title: str
    venue: str
    date: date
    entry_time: time | None = None
    ticket_type: str
    quantity: int = Field(ge=1)
    price_each: float = Field(ge=0)
    total: float = Field(ge=0)
    status: Literal["confirmed", "cancelled"] = "confirmed"
