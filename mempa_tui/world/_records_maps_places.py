"""Record types of the Maps and places domain (paper Table 7: Maps and places).

Collections: ``maps_places/places`` (venues with opening hours), ``maps_places/routes`` (travel
times between named places) and ``maps_places/club_closures`` (days a club is closed).
"""

from __future__ import annotations

import re
from datetime import date, time
from typing import Literal

from pydantic import Field, field_validator, model_validator

from mempa_tui.world.records import Record

__all__ = ["WEEKDAYS", "ClubClosure", "Place", "Route"]

#: Keys of :attr:`Place.opening_hours`, Monday first (``date.weekday()`` order).
WEEKDAYS: tuple[str, ...] = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")

_HOURS_RE = re.compile(r"^([01]\d|2[0-3]):[0-5]\d-([01]\d|2[0-4]):[0-5]\d$")


class Place(Record):
    """A venue the user can look up (collection ``maps_places/places``).

    ``opening_hours`` maps a weekday key (``mon`` ... ``sun``) to ``HH:MM-HH:MM`` or ``closed``;
    a weekday left out counts as closed. An empty mapping means the hours are unknown.
    """

    name: str
    category: str = Field(description="Kind of place, e.g. 'pharmacy', 'sports club'.")
    city: str
    address: str = ""
    phone: str = ""
    opening_hours: dict[str, str] = Field(default_factory=dict)
    notes: str = ""

    @field_validator("opening_hours")
    @classmethod
    def _check_hours(cls, value: dict[str, str]) -> dict[str, str]:
        for day, hours in value.items():
            if day not in WEEKDAYS:
                raise ValueError(f"opening_hours key {day!r} is not one of {', '.join(WEEKDAYS)}")
            if hours != "closed" and not _HOURS_RE.match(hours):
                raise ValueError(f"opening_hours[{day}] {hours!r} is not 'HH:MM-HH:MM' or 'closed'")
        return value


class Route(Record):
    """A way to travel between two named places (collection ``maps_places/routes``).

    A route serves both directions with the same time and distance.
    """

    origin: str
    destination: str
    mode: Literal["walk", "cycle", "drive", "transit"]
    duration_minutes: int = Field(ge=1)
    distance_km: float = Field(ge=0)
    summary: str = Field(default="", description="The way, written for the stored direction.")


class ClubClosure(Record):
    """A day (or part of a day) a club is closed (collection ``maps_places/club_closures``).

    ``start``/``end`` both empty means closed all day.
    """

    club: str
    date: date
    start: time | None = None
    end: time | None = None
    reason: str = ""

    @model_validator(mode="after")
    def _check_times(self) -> ClubClosure:
        if (self.start is None) != (self.end is None):
            raise ValueError("give both start and end, or neither for an all-day closure")
        if self.start is not None and self.end is not None and self.end <= self.start:
            raise ValueError("end must be after start")
        return self
