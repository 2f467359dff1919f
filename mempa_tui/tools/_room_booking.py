"""Room booking tools (paper Table 7, domain Room booking: 2 read, 2 outward writes).

Collections: ``room_booking/rooms`` and ``room_booking/bookings``. Both writes reserve a room
with its owner, so both are tagged outward (Table 7's dagger).

Decisions (Appendix C.2 leaves them open):
- A booking slot exists when the room is open that day (weekday hours, not a closed date), the
  slot lies within those hours, starts and ends on the hour or half hour, and ends after it
  starts. It is free when no confirmed visible booking of the room overlaps it.
- The bookings collection also holds other people's bookings (``booked_by`` set): they block
  their slots and show in searches as busy times, but only the user's own bookings can be read
  or changed.
- ``attendees`` may not exceed the room's capacity; the cost is hours x the hourly rate.
- Bookings cannot be made or moved into the past; cancelling keeps the record as ``cancelled``.
"""

from __future__ import annotations

from datetime import date, datetime, time
from typing import Annotated, Any

from pydantic import Field, JsonValue

from mempa_tui.tools._common import DateArg, Limit, TextArg, TimeArg, ToolError, matches, require, view
from mempa_tui.tools._registry import tool
from mempa_tui.world import Record, WorkingCopy
from mempa_tui.world._records_restaurants import hours_on
from mempa_tui.world._records_room_booking import BookableRoom, RoomBooking

__all__ = ["room_booking_create", "room_booking_read", "room_booking_search", "room_booking_update"]

ROOMS, BOOKINGS = "room_booking/rooms", "room_booking/bookings"

Headcount = Annotated[int, Field(ge=1, le=1000)]


def _hhmm(t: time) -> str:
    return t.strftime("%H:%M")


def slot_problem(
    wc: WorkingCopy, room: BookableRoom, day: date, start: time, end: time, ignore: str | None = None
) -> tuple[str, str] | None:
    """Why the slot cannot be booked, as ``(argument, reason)``, or None when it is free."""
    if end <= start:
        return "end_time", f"is not after start_time '{_hhmm(start)}'"
    for arg, t in (("start_time", start), ("end_time", end)):
        if t.minute not in (0, 30):
            return arg, "is not a bookable slot boundary (rooms are booked on the hour or half hour)"
    if day in room.closed_dates:
        return "date", f"is a day {room.name} is closed"
    hours = hours_on(room.hours, day)
    if hours is None:
        return "date", f"is a {day:%A}, when {room.name} cannot be booked"
    if start < hours.open or end > hours.close:
        return "start_time" if start < hours.open else "end_time", (
            f"is outside {room.name}'s bookable hours on {day:%A}s ({_hhmm(hours.open)}-{_hhmm(hours.close)})"
        )
    for b in _room_day(wc, room.id, day):
        if b.id != ignore and b.start_time < end and start < b.end_time:
            return (
                "start_time",
                f"clashes with a booking of {room.name} from {_hhmm(b.start_time)} to {_hhmm(b.end_time)}",
            )
    return None


def _room_day(wc: WorkingCopy, room_id: str, day: date) -> list[RoomBooking]:
    rows = [
        b
        for b in wc.records_as(BOOKINGS, RoomBooking)
        if b.room_id == room_id and b.date == day and b.status == "confirmed"
    ]
    return sorted(rows, key=lambda b: b.start_time)


def _own(wc: WorkingCopy, booking_id: str) -> RoomBooking:
    found = wc.get_as(BOOKINGS, booking_id, RoomBooking)
    if found is None or found.booked_by:
        raise ToolError(f"booking_id {booking_id!r} names no room booking of the user's")
    return found


def _check(
    wc: WorkingCopy, room: BookableRoom, day: date, start: time, end: time, people: int, ignore: str | None
) -> float:
    if datetime.combine(day, start) < wc.now:
        raise ToolError(
            f"date '{day}' start_time '{_hhmm(start)}' is in the past (now is {wc.now:%Y-%m-%d %H:%M})"
        )
    if people > room.capacity:
        raise ToolError(f"attendees {people} is more than {room.name} holds ({room.capacity})")
    problem = slot_problem(wc, room, day, start, end, ignore)
    if problem is not None:
        values = {"date": str(day), "start_time": _hhmm(start), "end_time": _hhmm(end)}
        raise ToolError(f"{problem[0]} '{values[problem[0]]}' {problem[1]}")
    hours = (datetime.combine(day, end) - datetime.combine(day, start)).total_seconds() / 3600
    return round(hours * room.hourly_rate, 2)


def _booking_view(b: Record) -> dict[str, Any]:
    shown = view(b, "booked_at")
    shown.pop("booked_by")
    return shown


@tool(domain="room_booking")
def room_booking_search(
    wc: WorkingCopy,
    query: str = "",
    min_capacity: Headcount = 1,
    date: DateArg | None = None,
    start_time: TimeArg | None = None,
    end_time: TimeArg | None = None,
    limit: Limit = 10,
) -> JsonValue:
    """Find bookable rooms and, for a date, when they are busy or whether a slot is free.

    Args:
        query: words that must all appear in the room's name, venue, city, equipment or notes;
            empty matches all.
        min_capacity: only rooms holding at least this many people.
        date: the day wanted, YYYY-MM-DD; each room then shows its hours and busy times.
        start_time: slot start, 24-hour HH:MM (needs date and end_time).
        end_time: slot end, 24-hour HH:MM (needs date and start_time).
        limit: most rooms to return.

    Returns:
        the number of matches and the rooms,
        with busy times and, for a slot, whether it is free; book with room_booking_create.
    """
    if (start_time is None) != (end_time is None):
        given = "start_time" if start_time is not None else "end_time"
        raise ToolError(f"{given} was given alone; give both start_time and end_time, or neither")
    if start_time is not None and date is None:
        raise ToolError("start_time and end_time need a date")
    found = [
        r
        for r in wc.records_as(ROOMS, BookableRoom)
        if r.capacity >= min_capacity and matches(query, r.name, r.venue, r.city, r.equipment, r.notes)
    ]
    found.sort(key=lambda r: (r.venue, r.name))
    out: list[JsonValue] = []
    for r in found[:limit]:
        shown = view(r, None)
        if date is not None:
            hours = hours_on(r.hours, date)
            is_open = hours is not None and date not in r.closed_dates
            shown["open_that_day"] = is_open
            if hours is not None and is_open:
                shown["hours_that_day"] = f"{_hhmm(hours.open)}-{_hhmm(hours.close)}"
            shown["busy"] = [f"{_hhmm(b.start_time)}-{_hhmm(b.end_time)}" for b in _room_day(wc, r.id, date)]
            if start_time is not None and end_time is not None:
                problem = slot_problem(wc, r, date, start_time, end_time)
                shown["slot_free"] = problem is None
                if problem is not None:
                    shown["why_not"] = f"{problem[0]} {problem[1]}"
        out.append(shown)
    return {"count": len(found), "rooms": out}


@tool(domain="room_booking")
def room_booking_read(
    wc: WorkingCopy, booking_id: str | None = None, include_cancelled: bool = False
) -> JsonValue:
    """Read one of the user's room bookings, or list them (soonest first).

    Args:
        booking_id: the booking's id; leave out to list.
        include_cancelled: when listing, also show cancelled bookings.

    Returns:
        the booking, or the number of bookings and the bookings.
    """
    if booking_id is not None:
        return _booking_view(_own(wc, booking_id))
    rows = [
        b
        for b in wc.records_as(BOOKINGS, RoomBooking)
        if not b.booked_by and (include_cancelled or b.status == "confirmed")
    ]
    rows.sort(key=lambda b: (b.date, b.start_time))
    return {"count": len(rows), "bookings": [_booking_view(b) for b in rows]}


@tool(domain="room_booking", write=True, tag="outward")
def room_booking_create(
    wc: WorkingCopy,
    room_id: str,
    date: DateArg,
    start_time: TimeArg,
    end_time: TimeArg,
    title: TextArg,
    attendees: Headcount = 1,
) -> JsonValue:
    """Book a room for a time slot (the room's owner is told at once).

    Args:
        room_id: the room's id, from room_booking_search.
        date: the day, YYYY-MM-DD.
        start_time: start, 24-hour HH:MM on the hour or half hour.
        end_time: end, 24-hour HH:MM on the hour or half hour; after the start.
        title: what the room is for.
        attendees: expected number of people (at most the room's capacity).

    Returns:
        the new booking's id and the booking with its cost.
    """
    room = require(wc, ROOMS, BookableRoom, room_id, "room_id", "bookable room")
    cost = _check(wc, room, date, start_time, end_time, attendees, None)
    fields = {
        "room_id": room.id,
        "room_name": room.name,
        "date": date,
        "start_time": start_time,
        "end_time": end_time,
        "title": title,
        "attendees": attendees,
        "cost": cost,
    }
    made = wc.create(BOOKINGS, fields)
    return {"booking_id": made.id, "booking": _booking_view(made)}


@tool(domain="room_booking", write=True, tag="outward")
def room_booking_update(
    wc: WorkingCopy,
    booking_id: str,
    date: DateArg | None = None,
    start_time: TimeArg | None = None,
    end_time: TimeArg | None = None,
    title: TextArg | None = None,
    attendees: Headcount | None = None,
    cancel: bool = False,
) -> JsonValue:
    """Change or cancel one of the user's room bookings; only the fields given change.

    Args:
        booking_id: the booking's id.
        date: new day, YYYY-MM-DD.
        start_time: new start, 24-hour HH:MM.
        end_time: new end, 24-hour HH:MM.
        title: new title.
        attendees: new expected number of people.
        cancel: true to cancel the booking; give no other change with it.

    Returns:
        the booking as it now stands.
    """
    old = _own(wc, booking_id)
    if old.status == "cancelled":
        raise ToolError(f"booking_id '{booking_id}' is already cancelled; make a new booking instead")
    changes = {
        "date": date,
        "start_time": start_time,
        "end_time": end_time,
        "title": title,
        "attendees": attendees,
    }
    given = {k: v for k, v in changes.items() if v is not None}
    if cancel:
        if given:
            raise ToolError(
                f"cancel is true together with changes to {', '.join(given)}; do one or the other"
            )
        if datetime.combine(old.date, old.start_time) < wc.now:
            raise ToolError(
                f"booking_id '{booking_id}' has already started or passed; it cannot be cancelled"
            )
        new = old.model_copy(update={"status": "cancelled"})
    else:
        if not given:
            raise ToolError(
                "no change was given; pass date, start_time, end_time, title or attendees, or cancel=true"
            )
        new = RoomBooking.model_validate({**old.model_dump(), **given})
        room = require(wc, ROOMS, BookableRoom, old.room_id, "booking_id", "bookable room")
        cost = _check(wc, room, new.date, new.start_time, new.end_time, new.attendees, old.id)
        new = new.model_copy(update={"cost": cost})
    wc.replace(BOOKINGS, new)
    return {"booking_id": new.id, "booking": _booking_view(new)}
