"""Weather tool (paper Table 7, domain Weather: 1 read).

Collection: ``weather/forecasts``.

Decision: a forecast is the record for that city and day issued most recently before the step's
time (a later issue supersedes an earlier one); a day with no visible forecast is listed under
``no_forecast`` instead of failing the call. At most 14 days per call.
"""

from __future__ import annotations

import datetime as dt
from datetime import timedelta

from pydantic import JsonValue

from mempa_tui.tools._common import DateArg, TextArg, ToolError, check_range, known_name, view
from mempa_tui.tools._registry import tool
from mempa_tui.world import WorkingCopy
from mempa_tui.world._records_weather import Forecast

__all__ = ["weather_forecast_read"]

FORECASTS = "weather/forecasts"
MAX_DAYS = 14


@tool(domain="weather")
def weather_forecast_read(
    wc: WorkingCopy,
    city: TextArg,
    date: DateArg | None = None,
    end_date: DateArg | None = None,
) -> JsonValue:
    """Read the weather forecast for a city, for one day or a range of days.

    Args:
        city: the city's name, e.g. as given by place_search.
        date: the (first) day, YYYY-MM-DD; today if left out.
        end_date: the last day of a range, YYYY-MM-DD; a range spans at most 14 days.

    Returns:
        the city, the forecasts by day (summary, high_c and low_c in Celsius, precipitation_chance
        in percent, wind_kph, issued_at) and the days with no forecast yet.
    """
    first = date or wc.now.date()
    last = end_date or first
    check_range(first, last, "date", "end_date")
    if (last - first).days >= MAX_DAYS:
        raise ToolError(f"end_date '{last}' is more than {MAX_DAYS - 1} days after date '{first}'")
    forecasts = wc.records_as(FORECASTS, Forecast)
    name = known_name(city, [f.city for f in forecasts], "city", "city with forecasts")
    latest: dict[dt.date, Forecast] = {}
    for f in forecasts:
        if f.city == name and first <= f.date <= last:
            held = latest.get(f.date)
            if held is None or f.entered_at >= held.entered_at:
                latest[f.date] = f
    days = [first + timedelta(days=i) for i in range((last - first).days + 1)]
    out: list[JsonValue] = []
    for day in days:
        if day in latest:
            shown = view(latest[day], "issued_at")
            shown.pop("city")
            out.append(shown)
    missing: list[JsonValue] = [d.isoformat() for d in days if d not in latest]
    return {"city": name, "forecasts": out, "no_forecast": missing}
