"""Maps and places tools (paper Table 7, domain Maps and places: 3 reads).

Collections: ``maps_places/places``, ``maps_places/routes``, ``maps_places/club_closures``.

Decisions: a stored route serves both directions with the same time and distance (the result says
when it is the reverse of the stored way); a place name, city or club that nothing in the world
has is an error naming the closest known ones, while a known name with no match (no route, no
closure) is an empty result. Opening hours ``HH:MM-24:00`` mean open until midnight.
"""

from __future__ import annotations

from datetime import date, datetime, time
from typing import Literal

from pydantic import JsonValue

from mempa_tui.tools._common import (
    DateArg,
    Limit,
    TimeArg,
    ToolError,
    check_range,
    known_name,
    matches,
    view,
)
from mempa_tui.tools._registry import tool
from mempa_tui.world import WorkingCopy
from mempa_tui.world._records_maps_places import WEEKDAYS, ClubClosure, Place, Route

__all__ = ["club_closure_calendar_read", "map_route_search", "place_search"]

PLACES, ROUTES, CLOSURES = "maps_places/places", "maps_places/routes", "maps_places/club_closures"


def _minutes(hhmm: str) -> int:
    h, m = hhmm.split(":")
    return int(h) * 60 + int(m)


def open_at(place: Place, day: date, at: time | None) -> bool:
    """Whether ``place`` is open on ``day`` (at ``at``, or at some time that day when None).

    Unknown hours (an empty mapping) count as open; a weekday not listed counts as closed.
    """
    if not place.opening_hours:
        return True
    hours = place.opening_hours.get(WEEKDAYS[day.weekday()], "closed")
    if hours == "closed":
        return False
    if at is None:
        return True
    start, end = hours.split("-")
    now = at.hour * 60 + at.minute
    return _minutes(start) <= now < _minutes(end)


@tool(domain="maps_places")
def place_search(
    wc: WorkingCopy,
    query: str = "",
    city: str = "",
    category: str = "",
    open_on: DateArg | None = None,
    open_at_time: TimeArg | None = None,
    limit: Limit = 10,
) -> JsonValue:
    """Find places (shops, clinics, clubs, venues) by words, city and category, optionally open at a time.

    Args:
        query: words that must all appear in the name, category, address or notes; empty for all.
        city: only places in this city (must be a city the map knows); empty for any city.
        category: part of the kind of place; empty for any.
        open_on: only places open on this day, YYYY-MM-DD.
        open_at_time: only places open at this time, 24-hour HH:MM (on open_on, or today).
        limit: most places to return.

    Returns:
        the number of matches and the places with address, phone and opening hours, by name.
    """
    places = wc.records_as(PLACES, Place)
    if city.strip():
        city = known_name(city, [p.city for p in places], "city", "city on the map")
    day = open_on or (wc.now.date() if open_at_time is not None else None)
    found = [
        p
        for p in places
        if matches(query, p.name, p.category, p.address, p.notes)
        and (not city or p.city == city)
        and matches(category, p.category)
        and (day is None or open_at(p, day, open_at_time))
    ]
    found.sort(key=lambda p: p.name.casefold())
    return {"count": len(found), "places": [view(p, None) for p in found[:limit]]}


@tool(domain="maps_places")
def map_route_search(
    wc: WorkingCopy,
    origin: str,
    destination: str,
    mode: Literal["walk", "cycle", "drive", "transit", "any"] = "any",
) -> JsonValue:
    """Find ways to travel between two named places, fastest first.

    Args:
        origin: where the trip starts: a place name as found by place_search or a route end.
        destination: where the trip ends, named the same way.
        mode: how to travel; any for every mode.

    Returns:
        the number of routes and the routes; reverse is true when the
        summary describes the way back.
    """
    routes = wc.records_as(ROUTES, Route)
    names = (
        [p.name for p in wc.records_as(PLACES, Place)]
        + [r.origin for r in routes]
        + [r.destination for r in routes]
    )
    start = known_name(origin, names, "origin", "place on the map")
    end = known_name(destination, names, "destination", "place on the map")
    if start == end:
        raise ToolError(f"destination {destination!r} is the same place as origin {origin!r}")
    found: list[tuple[Route, bool]] = []
    for r in routes:
        if mode != "any" and r.mode != mode:
            continue
        if (r.origin, r.destination) == (start, end):
            found.append((r, False))
        elif (r.origin, r.destination) == (end, start):
            found.append((r, True))
    found.sort(key=lambda pair: pair[0].duration_minutes)
    out: list[JsonValue] = []
    for r, rev in found:
        shown = view(r, None)
        shown.update({"origin": start, "destination": end, "reverse": rev})
        out.append(shown)
    return {"count": len(out), "routes": out}


def _closure_view(c: ClubClosure) -> dict[str, JsonValue]:
    shown = view(c, None)
    shown["all_day"] = c.start is None
    return shown


@tool(domain="maps_places")
def club_closure_calendar_read(
    wc: WorkingCopy,
    club: str = "",
    start_date: DateArg | None = None,
    end_date: DateArg | None = None,
    limit: Limit = 20,
) -> JsonValue:
    """List the days clubs are closed (holidays, maintenance, events), in date order.

    Args:
        club: the club's name as in the closure calendar; empty for every club.
        start_date: first day to include, YYYY-MM-DD.
        end_date: last day to include, YYYY-MM-DD.
        limit: most closures to return.

    Returns:
        the number of closures and the closures.
    """
    check_range(start_date, end_date, "start_date", "end_date")
    closures = wc.records_as(CLOSURES, ClubClosure)
    if club.strip():
        # A club is known from its visible closures or as a place: a club with no closure yet
        # has an empty calendar, not an unknown name.
        names = [c.club for c in closures] + [p.name for p in wc.records_as(PLACES, Place)]
        club = known_name(club, names, "club", "club in the closure calendar or a known place")
    found = [
        c
        for c in closures
        if (not club or c.club == club)
        and (start_date is None or c.date >= start_date)
        and (end_date is None or c.date <= end_date)
    ]
    found.sort(key=lambda c: datetime.combine(c.date, c.start or time()))
    return {"count": len(found), "closures": [_closure_view(c) for c in found[:limit]]}
