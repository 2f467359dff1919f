"""Cinema tools (paper Table 7, domain Cinema: 2 reads, 1 outward write).

Collections: ``cinema/showtimes`` and ``cinema/tickets``. Buying tickets acts toward the cinema,
so ``cinema_ticket_purchase`` is tagged outward (Table 7's dagger).

Decisions (Appendix C.2 leaves them open):
- ``cinema_showtime_search`` lists only screenings that have not started yet; ``city`` and
  ``cinema`` must name ones in the listings (rejected with the closest names otherwise).
- A purchase is 1 to 10 seats of one screening that has not started and has that many seats
  left; it stores a ticket and takes the seats off the screening, so a later search shows fewer.
- ``cinema_ticket_read`` without an id lists every ticket, soonest screening first.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, JsonValue

from mempa_tui.tools._common import (
    DateArg,
    Limit,
    TimeArg,
    ToolError,
    known_name,
    matches,
    require,
    view,
)
from mempa_tui.tools._registry import tool
from mempa_tui.world import WorkingCopy
from mempa_tui.world._records_cinema import CinemaTicket, Showtime

__all__ = ["cinema_showtime_search", "cinema_ticket_purchase", "cinema_ticket_read"]

SHOWTIMES, TICKETS = "cinema/showtimes", "cinema/tickets"

Seats = Annotated[int, Field(ge=1, le=10)]


@tool(domain="cinema")
def cinema_showtime_search(
    wc: WorkingCopy,
    query: str = "",
    city: str = "",
    cinema: str = "",
    date: DateArg | None = None,
    after: TimeArg | None = None,
    before: TimeArg | None = None,
    limit: Limit = 20,
) -> JsonValue:
    """Find upcoming film screenings, earliest first.

    Args:
        query: words that must all appear in the film title, format or language; empty matches all.
        city: only cinemas in this city.
        cinema: only this cinema, by its name.
        date: only screenings on this day, YYYY-MM-DD.
        after: only screenings starting at or after this time of day, 24-hour HH:MM.
        before: only screenings starting at or before this time of day, 24-hour HH:MM.
        limit: most screenings to return.

    Returns:
        the number of matches and the screenings with price per seat and seats left; buy with
        cinema_ticket_purchase.
    """
    if after is not None and before is not None and before < after:
        raise ToolError(f"before '{before:%H:%M}' is earlier than after '{after:%H:%M}'")
    shows = wc.records_as(SHOWTIMES, Showtime)
    town = known_name(city, (s.city for s in shows), "city", "city with cinema listings") if city.strip() else ""
    venue = known_name(cinema, (s.cinema for s in shows), "cinema", "cinema") if cinema.strip() else ""
    found = [
        s
        for s in shows
        if s.start >= wc.now
        and matches(query, s.film, s.format, s.language)
        and (not town or s.city == town)
        and (not venue or s.cinema == venue)
        and (date is None or s.start.date() == date)
        and (after is None or s.start.time() >= after)
        and (before is None or s.start.time() <= before)
    ]
    found.sort(key=lambda s: (s.start, s.cinema))
    return {"count": len(found), "showtimes": [view(s, None) for s in found[:limit]]}


@tool(domain="cinema")
def cinema_ticket_read(wc: WorkingCopy, ticket_id: str | None = None) -> JsonValue:
    """Read one of the user's cinema tickets, or list them (soonest screening first).

    Args:
        ticket_id: the ticket's id; leave out to list all tickets.

    Returns:
        the ticket, or the number of tickets and the tickets.
    """
    if ticket_id is not None:
        return view(require(wc, TICKETS, CinemaTicket, ticket_id, "ticket_id", "cinema ticket"), "purchased_at")
    rows = sorted(wc.records_as(TICKETS, CinemaTicket), key=lambda t: t.start)
    return {"count": len(rows), "tickets": [view(t, "purchased_at") for t in rows]}


@tool(domain="cinema", write=True, tag="outward")
def cinema_ticket_purchase(wc: WorkingCopy, showtime_id: str, seats: Seats = 1) -> JsonValue:
    """Buy seats for a screening (paid and confirmed with the cinema at once).

    Args:
        showtime_id: the screening's id, from cinema_showtime_search.
        seats: how many seats.

    Returns:
        the new ticket's id and the ticket with its total price.
    """
    show = require(wc, SHOWTIMES, Showtime, showtime_id, "showtime_id", "screening")
    if show.start < wc.now:
        raise ToolError(
            f"showtime_id '{showtime_id}' started at {show.start:%Y-%m-%dT%H:%M}, "
            f"before now ({wc.now:%Y-%m-%dT%H:%M}); pick a later screening"
        )
    if seats > show.seats_available:
        raise ToolError(f"seats {seats} is more than the {show.seats_available} seat(s) left for {showtime_id}")
    wc.replace(SHOWTIMES, show.model_copy(update={"seats_available": show.seats_available - seats}))
    ticket = wc.create(
        TICKETS,
        {
            "showtime_id": show.id,
            "film": show.film,
            "cinema": show.cinema,
            "city": show.city,
            "start": show.start,
            "seats": seats,
            "price_each": show.price,
            "total": round(show.price * seats, 2),
        },
    )
    return {"ticket_id": ticket.id, "ticket": view(ticket, "purchased_at")}
