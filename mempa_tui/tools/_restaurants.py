"""Restaurant tools (paper Table 7, domain Restaurants: 2 read, 2 outward writes).

Collections: ``restaurants/restaurants`` (venues) and ``restaurants/reservations`` (the user's
tables). Both writes act toward the restaurant, so both are tagged outward (Table 7's dagger).

Decisions (Appendix C.2 leaves them open):
- ``restaurant_reservation_search`` searches restaurants, not the user's reservations: it is the
  only way to find a venue, and with a date and time it says whether a table is free and why not.
  The user's own reservations are listed by ``restaurant_reservation_read``.
- A table is free when the venue is open that day (weekday hours, not a closed date), the time
  leaves a full sitting before closing, the party fits ``max_party_size``, and the confirmed
  reservations whose sittings overlap leave enough of the venue's ``seats``.
- Reservations cannot be made or moved into the past; cancelling is ``cancel=true`` on update
  and keeps the record with status ``cancelled``.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from typing import Annotated, Any

from pydantic import Field, JsonValue

from mempa_tui.tools._common import DateArg, Limit, TimeArg, ToolError, matches, require, view
from mempa_tui.tools._registry import tool
from mempa_tui.world import WorkingCopy
from mempa_tui.world._records_restaurants import Restaurant, RestaurantReservation, hours_on

__all__ = [
    "restaurant_reservation_create",
    "restaurant_reservation_read",
    "restaurant_reservation_search",
    "restaurant_reservation_update",
]

VENUES, RESERVATIONS = "restaurants/restaurants", "restaurants/reservations"

PartySize = Annotated[int, Field(ge=1, le=50)]


def _hhmm(t: time) -> str:
    return t.strftime("%H:%M")


def _minutes(t: time) -> int:
    return t.hour * 60 + t.minute


def table_problem(
    wc: WorkingCopy, venue: Restaurant, day: date, at: time, party: int, ignore: str | None = None
) -> tuple[str, str] | None:
    """Why no table can be had, as ``(argument, reason)``, or None when one is free.

    Args:
        wc: the working copy (its visible confirmed reservations take seats).
        venue: the restaurant.
        day: the date wanted; at: the time wanted; party: the number of guests.
        ignore: a reservation id whose seats do not count (the one being moved).
    """
    if day in venue.closed_dates:
        return "date", f"is a day {venue.name} is closed"
    hours = hours_on(venue.hours, day)
    if hours is None:
        return "date", f"is a {day:%A}, when {venue.name} is closed"
    last = (datetime.combine(day, hours.close) - timedelta(minutes=venue.sitting_minutes)).time()
    if at < hours.open or at > last:
        return "time", (
            f"is outside {venue.name}'s seating times on {day:%A}s "
            f"({_hhmm(hours.open)} to {_hhmm(last)} for a {venue.sitting_minutes}-minute sitting)"
        )
    if party > venue.max_party_size:
        return "party_size", f"is more than {venue.name} seats at one table ({venue.max_party_size})"
    taken = sum(
        r.party_size
        for r in wc.records_as(RESERVATIONS, RestaurantReservation)
        if r.restaurant_id == venue.id
        and r.status == "confirmed"
        and r.id != ignore
        and r.date == day
        and abs(_minutes(r.time) - _minutes(at)) < venue.sitting_minutes
    )
    if taken + party > venue.seats:
        return (
            "time",
            f"is fully booked at {venue.name} for {party} (seats left: {max(venue.seats - taken, 0)})",
        )
    return None


def _check_future(wc: WorkingCopy, day: date, at: time) -> None:
    if datetime.combine(day, at) < wc.now:
        raise ToolError(f"date '{day}' time '{_hhmm(at)}' is in the past (now is {wc.now:%Y-%m-%d %H:%M})")


def _raise(problem: tuple[str, str] | None, values: dict[str, str]) -> None:
    if problem is not None:
        arg, reason = problem
        raise ToolError(f"{arg} '{values[arg]}' {reason}")


def _venue_view(venue: Restaurant) -> dict[str, Any]:
    shown = view(venue, None)
    for key in ("seats", "max_party_size", "sitting_minutes"):
        shown.pop(key)
    shown["largest_party"] = venue.max_party_size
    return shown


@tool(domain="restaurants")
def restaurant_reservation_search(
    wc: WorkingCopy,
    query: str = "",
    city: str = "",
    date: DateArg | None = None,
    time: TimeArg | None = None,
    party_size: PartySize = 2,
    limit: Limit = 10,
) -> JsonValue:
    """Find restaurants to book and, for a date and time, whether a table is free.

    Args:
        query: words that must all appear in the name, cuisine, address or notes; empty matches all.
        city: only restaurants in this city; empty for any city.
        date: the day wanted, YYYY-MM-DD; with it each restaurant shows its hours that day.
        time: the time wanted, 24-hour HH:MM (needs date); each restaurant then shows
            whether a table is free.
        party_size: number of guests.
        limit: most restaurants to return.

    Returns:
        the number of matches and the restaurants, each with
        availability when a date is given; book with restaurant_reservation_create.
    """
    if time is not None and date is None:
        raise ToolError(f"time '{_hhmm(time)}' needs a date to check a table")
    venues = wc.records_as(VENUES, Restaurant)
    if city and not any(v.city.casefold() == city.strip().casefold() for v in venues):
        known = sorted({v.city for v in venues})
        raise ToolError(f"city '{city}' has no restaurants; known cities: {', '.join(known) or 'none'}")
    found = [
        v
        for v in venues
        if matches(query, v.name, v.cuisine, v.address, v.notes)
        and (not city or v.city.casefold() == city.strip().casefold())
    ]
    found.sort(key=lambda v: v.name)
    out: list[JsonValue] = []
    for v in found[:limit]:
        shown = _venue_view(v)
        if date is not None:
            hours = hours_on(v.hours, date)
            is_open = hours is not None and date not in v.closed_dates
            shown["open_that_day"] = is_open
            if hours is not None and is_open:
                shown["hours_that_day"] = f"{_hhmm(hours.open)}-{_hhmm(hours.close)}"
            if time is not None:
                problem = table_problem(wc, v, date, time, party_size)
                shown["table_free"] = problem is None
                if problem is not None:
                    shown["why_not"] = problem[1]
        out.append(shown)
    return {"count": len(found), "restaurants": out}


@tool(domain="restaurants")
def restaurant_reservation_read(
    wc: WorkingCopy, reservation_id: str | None = None, include_cancelled: bool = False
) -> JsonValue:
    """Read one of the user's restaurant reservations, or list them (soonest first).

    Args:
        reservation_id: the reservation's id; leave out to list.
        include_cancelled: when listing, also show cancelled reservations.

    Returns:
        the reservation, or the number of reservations and the reservations.
    """
    if reservation_id is not None:
        found = require(
            wc, RESERVATIONS, RestaurantReservation, reservation_id, "reservation_id", "reservation"
        )
        return view(found, "booked_at")
    rows = [
        r
        for r in wc.records_as(RESERVATIONS, RestaurantReservation)
        if include_cancelled or r.status == "confirmed"
    ]
    rows.sort(key=lambda r: (r.date, r.time))
    return {"count": len(rows), "reservations": [view(r, "booked_at") for r in rows]}


@tool(domain="restaurants", write=True, tag="outward")
def restaurant_reservation_create(
    wc: WorkingCopy,
    restaurant_id: str,
    date: DateArg,
    time: TimeArg,
    party_size: PartySize,
    notes: str = "",
) -> JsonValue:
    """Book a table at a restaurant (the restaurant is told at once).

    Args:
        restaurant_id: the restaurant's id, from restaurant_reservation_search.
        date: the day, YYYY-MM-DD.
        time: the time, 24-hour HH:MM.
        party_size: number of guests including the user.
        notes: requests for the restaurant.

    Returns:
        the new reservation's id and the reservation.
    """
    venue = require(wc, VENUES, Restaurant, restaurant_id, "restaurant_id", "restaurant")
    _check_future(wc, date, time)
    values = {"date": str(date), "time": _hhmm(time), "party_size": str(party_size)}
    _raise(table_problem(wc, venue, date, time, party_size), values)
    fields = {
        "restaurant_id": venue.id,
        "restaurant_name": venue.name,
        "date": date,
        "time": time,
        "party_size": party_size,
        "notes": notes,
    }
    made = wc.create(RESERVATIONS, fields)
    return {"reservation_id": made.id, "reservation": view(made, "booked_at")}


@tool(domain="restaurants", write=True, tag="outward")
def restaurant_reservation_update(
    wc: WorkingCopy,
    reservation_id: str,
    date: DateArg | None = None,
    time: TimeArg | None = None,
    party_size: PartySize | None = None,
    notes: str | None = None,
    cancel: bool = False,
) -> JsonValue:
    """Change or cancel one of the user's restaurant reservations (the restaurant is told).

    Only the fields given change; the new time must have a free table.

    Args:
        reservation_id: the reservation's id.
        date: new day, YYYY-MM-DD.
        time: new time, 24-hour HH:MM.
        party_size: new number of guests.
        notes: new requests (replace the old ones).
        cancel: true to cancel the reservation; give no other change with it.

    Returns:
        the reservation as it now stands.
    """
    old = require(wc, RESERVATIONS, RestaurantReservation, reservation_id, "reservation_id", "reservation")
    if old.status == "cancelled":
        raise ToolError(f"reservation_id '{reservation_id}' is already cancelled; book a new table instead")
    changes = {"date": date, "time": time, "party_size": party_size, "notes": notes}
    given = {k: v for k, v in changes.items() if v is not None}
    if cancel:
        if given:
            raise ToolError(
                f"cancel is true together with changes to {', '.join(given)}; do one or the other"
            )
        _check_future(wc, old.date, old.time)
        new = old.model_copy(update={"status": "cancelled"})
    else:
        if not given:
            raise ToolError("no change was given; pass date, time, party_size or notes, or cancel=true")
        new = RestaurantReservation.model_validate({**old.model_dump(), **given})
        _check_future(wc, new.date, new.time)
        venue = require(wc, VENUES, Restaurant, old.restaurant_id, "reservation_id", "bookable restaurant")
        values = {"date": str(new.date), "time": _hhmm(new.time), "party_size": str(new.party_size)}
        _raise(table_problem(wc, venue, new.date, new.time, new.party_size, ignore=old.id), values)
    wc.replace(RESERVATIONS, new)
    return {"reservation_id": new.id, "reservation": view(new, "booked_at")}
