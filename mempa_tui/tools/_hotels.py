"""Hotel tools (paper Table 7, domain Hotels: 2 read, 2 outward writes).

Collections: ``hotels/hotels`` and ``hotels/bookings``. Booking and changing a stay act toward
the hotel, so both writes are tagged outward (Table 7's dagger).

Decisions (Appendix C.2 leaves them open):
- ``hotel_search`` needs a city that has hotels in the world; an unknown city is rejected with
  the known ones listed. With dates it prices each room type for the stay and says whether it is
  free.
- A booking is one room of one type. The type is free when, on every night of the stay, fewer
  of the user's confirmed bookings hold it than the hotel's ``available`` count, no night is a
  closed date, and the guests fit ``max_guests``.
- Stays run 1 to 30 nights, check-out after check-in, check-in not before today; cancelling
  keeps the record as ``cancelled`` and must happen before check-in.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Annotated, Any

from pydantic import Field, JsonValue

from mempa_tui.tools._common import DateArg, Limit, ToolError, matches, require, view
from mempa_tui.tools._registry import tool
from mempa_tui.world import WorkingCopy
from mempa_tui.world._records_hotels import Hotel, HotelBooking, HotelRoomType

__all__ = ["hotel_book", "hotel_booking_read", "hotel_booking_update", "hotel_search"]

HOTELS, BOOKINGS = "hotels/hotels", "hotels/bookings"
MAX_NIGHTS = 30

Guests = Annotated[int, Field(ge=1, le=20)]


def _check_stay(wc: WorkingCopy, check_in: date, check_out: date) -> int:
    if check_out <= check_in:
        raise ToolError(f"check_out '{check_out}' is not after check_in '{check_in}'")
    nights = (check_out - check_in).days
    if nights > MAX_NIGHTS:
        raise ToolError(f"check_out '{check_out}' makes a stay of {nights} nights; the most is {MAX_NIGHTS}")
    if check_in < wc.now.date():
        raise ToolError(f"check_in '{check_in}' is in the past (today is {wc.now.date()})")
    return nights


def _room_type(hotel: Hotel, name: str) -> HotelRoomType:
    found = next((r for r in hotel.room_types if r.name.casefold() == name.strip().casefold()), None)
    if found is None:
        names = ", ".join(r.name for r in hotel.room_types)
        raise ToolError(f"room_type '{name}' is not a room type of {hotel.name} (types: {names})")
    return found


def room_problem(
    wc: WorkingCopy,
    hotel: Hotel,
    room: HotelRoomType,
    check_in: date,
    check_out: date,
    guests: int,
    ignore: str | None = None,
) -> str | None:
    """Why this room type cannot be had for the stay, or None when it can."""
    if guests > room.max_guests:
        return f"guests {guests} is more than a {room.name} room sleeps ({room.max_guests})"
    held = [
        b
        for b in wc.records_as(BOOKINGS, HotelBooking)
        if b.hotel_id == hotel.id and b.status == "confirmed" and b.id != ignore and b.room_type == room.name
    ]
    night = check_in
    while night < check_out:
        if night in hotel.closed_dates:
            return f"{hotel.name} takes no guests on the night of {night}"
        taken = sum(1 for b in held if b.check_in <= night < b.check_out)
        if taken >= room.available:
            return f"no {room.name} room is free at {hotel.name} on the night of {night}"
        night += timedelta(days=1)
    return None


@tool(domain="hotels")
def hotel_search(
    wc: WorkingCopy,
    city: str,
    check_in: DateArg | None = None,
    check_out: DateArg | None = None,
    guests: Guests = 1,
    query: str = "",
    max_nightly_rate: float | None = None,
    limit: Limit = 10,
) -> JsonValue:
    """Find hotels in a city and, for given dates, which room types are free and their cost.

    Args:
        city: the city to stay in.
        check_in: arrival day, YYYY-MM-DD (give with check_out).
        check_out: departure day, YYYY-MM-DD, after check_in.
        guests: number of guests in one room.
        query: words that must all appear in the hotel's name, address, amenities or notes.
        max_nightly_rate: only room types costing at most this per night.
        limit: most hotels to return.

    Returns:
        the number of matches and the hotels;
        with dates each room type shows free or not and the total cost; book with hotel_book.
    """
    if (check_in is None) != (check_out is None):
        given = "check_in" if check_in is not None else "check_out"
        raise ToolError(f"{given} was given alone; give both check_in and check_out, or neither")
    nights = _check_stay(wc, check_in, check_out) if check_in is not None and check_out is not None else 0
    hotels = wc.records_as(HOTELS, Hotel)
    wanted = city.strip().casefold()
    if not any(h.city.casefold() == wanted for h in hotels):
        known = sorted({h.city for h in hotels})
        raise ToolError(f"city '{city}' has no hotels; known cities: {', '.join(known) or 'none'}")
    found = [
        h
        for h in hotels
        if h.city.casefold() == wanted and matches(query, h.name, h.address, h.amenities, h.notes)
    ]
    found.sort(key=lambda h: h.name)
    out: list[JsonValue] = []
    for h in found[:limit]:
        shown = view(h, None)
        rooms: list[dict[str, Any]] = []
        for r in h.room_types:
            if max_nightly_rate is not None and r.nightly_rate > max_nightly_rate:
                continue
            row: dict[str, Any] = {"name": r.name, "nightly_rate": r.nightly_rate, "max_guests": r.max_guests}
            if check_in is not None and check_out is not None:
                problem = room_problem(wc, h, r, check_in, check_out, guests)
                row["free"] = problem is None
                row["total_cost"] = round(r.nightly_rate * nights, 2)
                if problem is not None:
                    row["why_not"] = problem
            rooms.append(row)
        shown["room_types"] = rooms
        shown.pop("closed_dates")
        out.append(shown)
    return {"count": len(found), "hotels": out}


@tool(domain="hotels")
def hotel_booking_read(
    wc: WorkingCopy, booking_id: str | None = None, include_cancelled: bool = False
) -> JsonValue:
    """Read one of the user's hotel bookings, or list them (soonest check-in first).

    Args:
        booking_id: the booking's id; leave out to list.
        include_cancelled: when listing, also show cancelled bookings.

    Returns:
        the booking, or the number of bookings and the bookings.
    """
    if booking_id is not None:
        return view(
            require(wc, BOOKINGS, HotelBooking, booking_id, "booking_id", "hotel booking"), "booked_at"
        )
    rows = [b for b in wc.records_as(BOOKINGS, HotelBooking) if include_cancelled or b.status == "confirmed"]
    rows.sort(key=lambda b: b.check_in)
    return {"count": len(rows), "bookings": [view(b, "booked_at") for b in rows]}


@tool(domain="hotels", write=True, tag="outward")
def hotel_book(
    wc: WorkingCopy,
    hotel_id: str,
    room_type: str,
    check_in: DateArg,
    check_out: DateArg,
    guests: Guests = 1,
    notes: str = "",
) -> JsonValue:
    """Book one hotel room for a stay (the hotel is told at once).

    Args:
        hotel_id: the hotel's id, from hotel_search.
        room_type: the room type's name as hotel_search shows it.
        check_in: arrival day, YYYY-MM-DD, today or later.
        check_out: departure day, YYYY-MM-DD, after check_in (at most 30 nights).
        guests: number of guests in the room.
        notes: requests for the hotel.

    Returns:
        the new booking's id and the booking with its total cost.
    """
    hotel = require(wc, HOTELS, Hotel, hotel_id, "hotel_id", "hotel")
    nights = _check_stay(wc, check_in, check_out)
    room = _room_type(hotel, room_type)
    problem = room_problem(wc, hotel, room, check_in, check_out, guests)
    if problem is not None:
        raise ToolError(problem)
    fields = {
        "hotel_id": hotel.id,
        "hotel_name": hotel.name,
        "city": hotel.city,
        "room_type": room.name,
        "check_in": check_in,
        "check_out": check_out,
        "guests": guests,
        "nightly_rate": room.nightly_rate,
        "total_cost": round(room.nightly_rate * nights, 2),
        "notes": notes,
    }
    made = wc.create(BOOKINGS, fields)
    return {"booking_id": made.id, "booking": view(made, "booked_at")}


@tool(domain="hotels", write=True, tag="outward")
def hotel_booking_update(
    wc: WorkingCopy,
    booking_id: str,
    check_in: DateArg | None = None,
    check_out: DateArg | None = None,
    room_type: str | None = None,
    guests: Guests | None = None,
    notes: str | None = None,
    cancel: bool = False,
) -> JsonValue:
    """Change or cancel one of the user's hotel bookings; only the fields given change.

    Args:
        booking_id: the booking's id.
        check_in: new arrival day, YYYY-MM-DD.
        check_out: new departure day, YYYY-MM-DD.
        room_type: new room type name at the same hotel.
        guests: new number of guests.
        notes: new requests (replace the old ones).
        cancel: true to cancel the booking before check-in; give no other change with it.

    Returns:
        the booking as it now stands, with the new total cost.
    """
    old = require(wc, BOOKINGS, HotelBooking, booking_id, "booking_id", "hotel booking")
    if old.status == "cancelled":
        raise ToolError(f"booking_id '{booking_id}' is already cancelled; book again instead")
    changes = {
        "check_in": check_in,
        "check_out": check_out,
        "room_type": room_type,
        "guests": guests,
        "notes": notes,
    }
    given = {k: v for k, v in changes.items() if v is not None}
    if cancel:
        if given:
            raise ToolError(
                f"cancel is true together with changes to {', '.join(given)}; do one or the other"
            )
        if old.check_in <= wc.now.date():
            raise ToolError(
                f"booking_id '{booking_id}' has check-in {old.check_in}, not after today; "
                "it cannot be cancelled"
            )
        new = old.model_copy(update={"status": "cancelled"})
    else:
        if not given:
            raise ToolError(
                "no change was given; pass check_in, check_out, room_type, guests or notes, or cancel=true"
            )
        hotel = require(wc, HOTELS, Hotel, old.hotel_id, "booking_id", "bookable hotel")
        merged = HotelBooking.model_validate({**old.model_dump(), **given})
        nights = _check_stay(wc, merged.check_in, merged.check_out)
        room = _room_type(hotel, merged.room_type)
        problem = room_problem(
            wc, hotel, room, merged.check_in, merged.check_out, merged.guests, ignore=old.id
        )
        if problem is not None:
            raise ToolError(problem)
        new = merged.model_copy(
            update={
                "room_type": room.name,
                "nightly_rate": room.nightly_rate,
                "total_cost": round(room.nightly_rate * nights, 2),
            }
        )
    wc.replace(BOOKINGS, new)
    return {"booking_id": new.id, "booking": view(new, "booked_at")}
