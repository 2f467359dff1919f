"""Flight tools (paper Table 7, domain Flights: 3 read, 1 outward write).

Collections: ``flights/flights`` (the schedule, with fares and free seats) and
``flights/bookings``. Booking buys tickets from the airline, so ``flight_book`` is tagged
outward (Table 7's dagger).

Decisions (Appendix C.2 leaves them open):
- ``flight_search`` takes cities or airport codes; one the schedule never serves is rejected
  with the known cities listed, as is the same place for origin and destination.
- Free seats are a cabin's ``seats`` less the passengers of the user's confirmed bookings of it.
- ``flight_book`` books one flight for one or more named passengers in one cabin; a return trip
  is two bookings. Flights that have left cannot be booked. Table 7 has no flight update tool,
  so a flight booking cannot be changed or cancelled here.
"""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue

from mempa_tui.tools._common import DateArg, Limit, NameList, ToolError, require, view
from mempa_tui.tools._registry import tool
from mempa_tui.world import WorkingCopy
from mempa_tui.world._records_flights import Fare, Flight, FlightBooking

__all__ = ["flight_book", "flight_booking_read", "flight_read", "flight_search"]

FLIGHTS, BOOKINGS = "flights/flights", "flights/bookings"


def seats_left(wc: WorkingCopy, flight: Flight, fare: Fare) -> int:
    """Seats still free in one cabin of a flight."""
    taken = sum(
        len(b.passengers)
        for b in wc.records_as(BOOKINGS, FlightBooking)
        if b.flight_id == flight.id and b.status == "confirmed" and b.cabin == fare.cabin
    )
    return max(fare.seats - taken, 0)


def _serves(f: Flight, place: str, side: str) -> bool:
    key = place.strip().casefold()
    city, code = (
        (f.origin_city, f.origin_airport) if side == "origin" else (f.destination_city, f.destination_airport)
    )
    return key in (city.casefold(), code.casefold())


def _flight_view(wc: WorkingCopy, f: Flight) -> dict[str, Any]:
    shown = view(f, None)
    shown["fares"] = [
        {"cabin": x.cabin, "price": x.price, "seats_left": seats_left(wc, f, x)} for x in f.fares
    ]
    return shown


@tool(domain="flights")
def flight_search(
    wc: WorkingCopy,
    origin: str,
    destination: str,
    date: DateArg,
    cabin: str = "",
    max_price: float | None = None,
    limit: Limit = 10,
) -> JsonValue:
    """Find scheduled flights from one place to another on a day, by departure time.

    Args:
        origin: departure city or airport code.
        destination: arrival city or airport code.
        date: the day of departure, YYYY-MM-DD.
        cabin: only flights selling this cabin; empty for any.
        max_price: only fares at most this price per passenger.
        limit: most flights to return.

    Returns:
        the number of matches and the flights; read one with flight_read, book with flight_book.
    """
    flights = wc.records_as(FLIGHTS, Flight)
    places: dict[str, str] = {}
    for f in flights:
        for city, code in ((f.origin_city, f.origin_airport), (f.destination_city, f.destination_airport)):
            places[city.casefold()] = city
            places[code.casefold()] = city
    cities: list[str] = []
    for arg, place in (("origin", origin), ("destination", destination)):
        resolved = places.get(place.strip().casefold())
        if resolved is None:
            known = ", ".join(sorted(set(places.values()))) or "none"
            raise ToolError(f"{arg} '{place}' is not a city or airport with flights; known cities: {known}")
        cities.append(resolved)
    if cities[0] == cities[1]:
        raise ToolError(f"destination '{destination}' is the same city as origin '{origin}'")
    cabins = {fare.cabin.casefold(): fare.cabin for f in flights for fare in f.fares}
    if cabin.strip() and cabin.strip().casefold() not in cabins:
        known_cabins = ", ".join(sorted(cabins.values())) or "none"
        raise ToolError(f"cabin '{cabin}' is not a cabin any flight sells; known cabins: {known_cabins}")
    found: list[JsonValue] = []
    for f in sorted(flights, key=lambda x: x.departure):
        if not (
            _serves(f, origin, "origin")
            and _serves(f, destination, "destination")
            and f.departure.date() == date
        ):
            continue
        shown = _flight_view(wc, f)
        fares = [
            x
            for x in shown["fares"]
            if (not cabin or x["cabin"].casefold() == cabin.strip().casefold())
            and (max_price is None or x["price"] <= max_price)
        ]
        if fares:
            shown["fares"] = fares
            found.append(shown)
    return {"count": len(found), "flights": found[:limit]}


@tool(domain="flights")
def flight_read(wc: WorkingCopy, flight_id: str) -> JsonValue:
    """Read one scheduled flight with its fares and free seats.

    Args:
        flight_id: the flight's id, from flight_search.

    Returns:
        the flight.
    """
    return _flight_view(wc, require(wc, FLIGHTS, Flight, flight_id, "flight_id", "flight"))


@tool(domain="flights")
def flight_booking_read(wc: WorkingCopy, booking_id: str | None = None) -> JsonValue:
    """Read one of the user's flight bookings, or list them (soonest departure first).

    Args:
        booking_id: the booking's id; leave out to list.

    Returns:
        the booking, or the number of bookings and the bookings.
    """
    if booking_id is not None:
        return view(
            require(wc, BOOKINGS, FlightBooking, booking_id, "booking_id", "flight booking"), "booked_at"
        )
    rows = sorted(wc.records_as(BOOKINGS, FlightBooking), key=lambda b: b.departure)
    return {"count": len(rows), "bookings": [view(b, "booked_at") for b in rows]}


@tool(domain="flights", write=True, tag="outward")
def flight_book(wc: WorkingCopy, flight_id: str, passengers: NameList, cabin: str = "economy") -> JsonValue:
    """Buy tickets on one flight for the named passengers (paid and ticketed at once).

    Args:
        flight_id: the flight's id, from flight_search.
        passengers: full names of everyone flying.
        cabin: the cabin to fly in, as the flight's fares name it; 'economy' if not given.

    Returns:
        the new booking's id and the booking with its total cost.
    """
    flight = require(wc, FLIGHTS, Flight, flight_id, "flight_id", "flight")
    if flight.departure <= wc.now:
        raise ToolError(
            f"flight_id '{flight_id}' departed at {flight.departure:%Y-%m-%d %H:%M}; it cannot be booked"
        )
    fare = next((x for x in flight.fares if x.cabin.casefold() == cabin.strip().casefold()), None)
    if fare is None:
        names = ", ".join(x.cabin for x in flight.fares)
        raise ToolError(f"cabin '{cabin}' is not sold on {flight.flight_number} (cabins: {names})")
    names_given = [" ".join(p.split()) for p in passengers]
    if not names_given:
        raise ToolError("passengers is empty; name at least one passenger")
    seen: set[str] = set()
    for i, p in enumerate(names_given):
        if p.casefold() in seen:
            raise ToolError(f"passengers[{i}] '{p}' is listed twice")
        seen.add(p.casefold())
    left = seats_left(wc, flight, fare)
    if len(names_given) > left:
        raise ToolError(
            f"passengers: {len(names_given)} seats wanted but only {left} left "
            f"in {fare.cabin} on {flight.flight_number}"
        )
    fields = {
        "flight_id": flight.id,
        "flight_number": flight.flight_number,
        "departure": flight.departure,
        "origin_city": flight.origin_city,
        "destination_city": flight.destination_city,
        "cabin": fare.cabin,
        "passengers": names_given,
        "price_per_passenger": fare.price,
        "total_cost": round(fare.price * len(names_given), 2),
    }
    made = wc.create(BOOKINGS, fields)
    return {"booking_id": made.id, "booking": view(made, "booked_at")}
