"""Exhibition tools (paper Table 7, domain Exhibitions: 2 reads, 1 outward write).

Collections: ``exhibitions/exhibitions`` and ``exhibitions/tickets``. Buying tickets acts toward
the venue, so ``exhibition_ticket_purchase`` is tagged outward (Table 7's dagger).

Decisions (Appendix C.2 leaves them open):
- ``exhibition_search`` hides shows whose run has ended; ``city`` must name a city with
  exhibitions. With ``date`` it keeps only shows open that day (within the run, not a closed
  weekday or closed date).
- A purchase is for one day, one ticket type and 1-10 tickets. The day must be today or later,
  inside the run and an open day; a timed-entry show needs ``entry_time`` set to one of its entry
  slots (a time it does not offer is rejected with the slots), and a show without slots refuses an
  ``entry_time`` outside its opening hours. A visit already under way (today, slot passed) is
  refused. No capacity is modelled.
"""

from __future__ import annotations

from datetime import date as Date
from datetime import datetime
from datetime import time as Time
from typing import Annotated, Any

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
from mempa_tui.world._records_exhibitions import WEEKDAYS, Exhibition, ExhibitionTicket

__all__ = ["exhibition_search", "exhibition_ticket_purchase", "exhibition_ticket_read"]

EXHIBITIONS, TICKETS = "exhibitions/exhibitions", "exhibitions/tickets"

Quantity = Annotated[int, Field(ge=1, le=10)]


def _closed_reason(ex: Exhibition, day: Date) -> str | None:
    """Why ``ex`` cannot be visited on ``day``, or None when it is open."""
    if day < ex.start_date:
        return f"'{ex.title}' opens on {ex.start_date}"
    if day > ex.end_date:
        return f"'{ex.title}' closed on {ex.end_date}"
    weekday = WEEKDAYS[day.weekday()]
    if weekday in ex.closed_weekdays:
        return f"{ex.venue} is closed on {weekday}s"
    if day in ex.closed_dates:
        return f"{ex.venue} is closed that day"
    return None


def _hhmm(t: Time) -> str:
    return t.strftime("%H:%M")


def _shown(ex: Exhibition) -> dict[str, Any]:
    out = view(ex, None)
    out["entry_times"] = [_hhmm(t) for t in ex.entry_times]
    return out


@tool(domain="exhibitions")
def exhibition_search(
    wc: WorkingCopy,
    query: str = "",
    city: str = "",
    date: DateArg | None = None,
    limit: Limit = 10,
) -> JsonValue:
    """Find exhibitions that have not ended, soonest closing first.

    Args:
        query: words that must all appear in the title, venue or description; empty matches all.
        city: only exhibitions in this city.
        date: only exhibitions open on this day, YYYY-MM-DD.
        limit: most exhibitions to return.

    Returns:
        the number of matches and the exhibitions; buy with
        exhibition_ticket_purchase.
    """
    shows = wc.records_as(EXHIBITIONS, Exhibition)
    town = known_name(city, (e.city for e in shows), "city", "city with exhibitions") if city.strip() else ""
    today = wc.now.date()
    found = [
        e
        for e in shows
        if e.end_date >= today
        and matches(query, e.title, e.venue, e.description)
        and (not town or e.city == town)
        and (date is None or _closed_reason(e, date) is None)
    ]
    found.sort(key=lambda e: (e.end_date, e.title))
    return {"count": len(found), "exhibitions": [_shown(e) for e in found[:limit]]}


@tool(domain="exhibitions")
def exhibition_ticket_read(wc: WorkingCopy, ticket_id: str | None = None) -> JsonValue:
    """Read one of the user's exhibition tickets, or list them (soonest visit first).

    Args:
        ticket_id: the ticket's id; leave out to list all tickets.

    Returns:
        the ticket, or the number of
        tickets and the tickets.
    """
    if ticket_id is not None:
        found = require(wc, TICKETS, ExhibitionTicket, ticket_id, "ticket_id", "exhibition ticket")
        return view(found, "purchased_at")
    rows = sorted(wc.records_as(TICKETS, ExhibitionTicket), key=lambda t: (t.date, t.entry_time or Time()))
    return {"count": len(rows), "tickets": [view(t, "purchased_at") for t in rows]}


def _check_entry(wc: WorkingCopy, ex: Exhibition, date: Date, entry_time: Time | None) -> None:
    if ex.entry_times:
        if entry_time is None:
            slots = ", ".join(_hhmm(t) for t in ex.entry_times)
            raise ToolError(f"entry_time is required: '{ex.title}' has timed entry at {slots}")
        if entry_time not in ex.entry_times:
            slots = ", ".join(_hhmm(t) for t in ex.entry_times)
            raise ToolError(f"entry_time '{_hhmm(entry_time)}' is not an entry slot of '{ex.title}' (slots: {slots})")
    elif entry_time is not None and not ex.opens <= entry_time < ex.closes:
        raise ToolError(
            f"entry_time '{_hhmm(entry_time)}' is outside the opening hours "
            f"{_hhmm(ex.opens)}-{_hhmm(ex.closes)} of {ex.venue}"
        )
    last = entry_time or ex.closes
    if datetime.combine(date, last) <= wc.now:
        raise ToolError(f"date '{date}' with entry at {_hhmm(last)} is already past (now {wc.now:%Y-%m-%dT%H:%M})")


@tool(domain="exhibitions", write=True, tag="outward")
def exhibition_ticket_purchase(
    wc: WorkingCopy,
    exhibition_id: str,
    date: DateArg,
    ticket_type: str = "adult",
    quantity: Quantity = 1,
    entry_time: TimeArg | None = None,
) -> JsonValue:
    """Buy exhibition tickets for one day (paid and confirmed with the venue at once).

    Args:
        exhibition_id: the exhibition's id, from exhibition_search.
        date: the day of the visit, YYYY-MM-DD; must be an open day of the run.
        ticket_type: a ticket type the exhibition sells.
        quantity: how many tickets of that type.
        entry_time: the entry slot, 24-hour HH:MM; required when the exhibition has timed entry.

    Returns:
        the new ticket's id and the ticket with its total price.
    """
    ex = require(wc, EXHIBITIONS, Exhibition, exhibition_id, "exhibition_id", "exhibition")
    closed = _closed_reason(ex, date)
    if closed is not None:
        raise ToolError(f"date '{date}' cannot be visited: {closed}")
    _check_entry(wc, ex, date, entry_time)
    kind = next((t for t in ex.ticket_types if t.name.casefold() == ticket_type.strip().casefold()), None)
    if kind is None:
        names = ", ".join(t.name for t in ex.ticket_types)
        raise ToolError(f"ticket_type '{ticket_type}' is not sold for '{ex.title}' (types: {names})")
    ticket = wc.create(
        TICKETS,
        {
            "exhibition_id": ex.id,
            "title": ex.title,
            "venue": ex.venue,
            "date": date,
            "entry_time": entry_time,
            "ticket_type": kind.name,
            "quantity": quantity,
            "price_each": kind.price,
            "total": round(kind.price * quantity, 2),
        },
    )
    return {"ticket_id": ticket.id, "ticket": view(ticket, "purchased_at")}
