"""Record types of the Weather domain (paper Table 7: Weather).

Collection ``weather/forecasts``: one record per city and day as issued at ``entered_at``; a later
issue for the same city and day supersedes an earlier one once it is visible.
"""

from __future__ import annotations

from datetime import date

from pydantic import Field, model_validator

from mempa_tui.world.records import Record

__all__ = ["Forecast"]


class Forecast(Record):
    """A weather forecast for one city and day (collection ``weather/forecasts``)."""

    city: str
    date: date
    summary: str = Field(description="Short description, e.g. 'light rain, clearing later'.")
    high_c: float = Field(description="Highest temperature, degrees Celsius.")
    low_c: float = Field(description="Lowest temperature, degrees Celsius.")
    precipitation_chance: int = Field(ge=0, le=100, description="Chance of rain or snow, percent.")
    wind_kph: float = Field(default=0, ge=0, description="Mean wind speed, km/h.")

    @model_validator(mode="after")
    def _check_range(self) -> Forecast:
        if self.low_c > self.high_c:
            raise ValueError(f"low_c {self.low_c} is above high_c {self.high_c}")
        return self
