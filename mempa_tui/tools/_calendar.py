"""Calendar tools (paper Table 7, domain Calendar: 2 read, 2 own-record writes).

Collection: ``calendar/events``. ``calendar_event_create`` is a routine write and
``calendar_event_update`` a key write (the Autonomy Level wrapper holds key writes under
Self-directed, Appendix A.1).

Decision: attendees are free-form names and are not checked against the contacts; a user's
calendar routinely names people (a receptionist, a visiting speaker) who are not in the address
book, and refusing them would block legitimate settings.
"""

from __future__ import annotations

from datetime import datetime, time

from pydantic import JsonValue

from mempa_tui.tools._common import (
    DateArg,
    Limit,
    NameList,
    TextArg,
    TimeArg,
    ToolError,
    check_range,
    in_date_range,
    matches,
    require,
    view,
)
from mempa_tui.tools._registry import tool
from mempa_tui.world import WorkingCopy
from mempa_tui.world.records import CalendarEvent

__all__ = [
    "calendar_event_create",
    "calendar_event_read",
    "calendar_event_search",
    "calendar_event_update",
]

EVENTS = "calendar/events"


def _hhmm(t: time) -> str:
    return t.strftime("%H:%M")


def _check_order(start: datetime, end: datetime) -> None:
    if end <= start:
        raise ToolError(
            f"end_time '{_hhmm(end.time())}' on {end.date()} is not after start_time "
            f"'{_hhmm(start.time())}' on {start.date()}"
        )


@tool(domain="calendar")
def calendar_event_search(
    wc: WorkingCopy,
    query: str = "",
    start_date: DateArg | None = None,
    end_date: DateArg | None = None,
    limit: Limit = 10,
) -> JsonValue:
    """Find calendar events by text and/or by the days they fall on, in start-time order.

    Args:
        query: words that must all appear in the title, location, notes or attendees
            (case-insensitive); empty matches every event.
        start_date: first day to include, YYYY-MM-DD.
        end_date: last day to include, YYYY-MM-DD.
        limit: most events to return.

    Returns:
        the number of matches and the events.
    """
    check_range(start_date, end_date, "start_date", "end_date")
    found = [
        e
        for e in wc.records_as(EVENTS, CalendarEvent)
        if matches(query, e.title, e.location, e.notes, e.attendees)
        and in_date_range(e.start, e.end, start_date, end_date)
    ]
    found.sort(key=lambda e: e.start)
    return {"count": len(found), "events": [view(e, None) for e in found[:limit]]}


@tool(domain="calendar")
def calendar_event_read(wc: WorkingCopy, event_id: str) -> JsonValue:
    """Read one calendar event.

    Args:
        event_id: the event's id, from calendar_event_search.

    Returns:
        the event with title, start, end, location, attendees and notes.
    """
    return view(require(wc, EVENTS, CalendarEvent, event_id, "event_id", "calendar event"), None)


@tool(domain="calendar", write=True, tag="routine")
def calendar_event_create(
    wc: WorkingCopy,
    title: TextArg,
    date: DateArg,
    start_time: TimeArg,
    end_time: TimeArg,
    end_date: DateArg | None = None,
    location: str = "",
    attendees: NameList = (),
    notes: str = "",
) -> JsonValue:
    """Add an event to the calendar.

    Args:
        title: what the event is.
        date: the day it starts, YYYY-MM-DD.
        start_time: when it starts, 24-hour HH:MM.
        end_time: when it ends, 24-hour HH:MM; must be after the start.
        end_date: the day it ends if not the start day, YYYY-MM-DD.
        location: where it takes place.
        attendees: names of the other people attending.
        notes: anything else to keep with the event.

    Returns:
        the new event's id and the event.
    """
    start = datetime.combine(date, start_time)
    end = datetime.combine(end_date or date, end_time)
    _check_order(start, end)
    event = wc.create(
        EVENTS,
        {
            "title": title,
            "start": start,
            "end": end,
            "location": location,
            "attendees": list(attendees),
            "notes": notes,
        },
    )
    return {"event_id": event.id, "event": view(event, None)}


@tool(domain="calendar", write=True, tag="key")
def calendar_event_update(
    wc: WorkingCopy,
    event_id: str,
    title: TextArg | None = None,
    date: DateArg | None = None,
    start_time: TimeArg | None = None,
    end_time: TimeArg | None = None,
    end_date: DateArg | None = None,
    location: str | None = None,
    attendees: NameList | None = None,
    notes: str | None = None,
) -> JsonValue:
    """Change an existing calendar event; only the fields given change.

    Moving the start (date or start_time) without giving an end keeps the event's length.

    Args:
        event_id: the event's id.
        title: new title.
        date: new start day, YYYY-MM-DD.
        start_time: new start time, 24-hour HH:MM.
        end_time: new end time, 24-hour HH:MM.
        end_date: new end day, YYYY-MM-DD.
        location: new location.
        attendees: the full new list of other attendees' names.
        notes: new notes (replaces the old notes).

    Returns:
        the event as updated.
    """
    old = require(wc, EVENTS, CalendarEvent, event_id, "event_id", "calendar event")
    given = {
        k: v
        for k, v in {
            "title": title,
            "date": date,
            "start_time": start_time,
            "end_time": end_time,
            "end_date": end_date,
            "location": location,
            "attendees": attendees,
            "notes": notes,
        }.items()
        if v is not None
    }
    if not given:
        raise ToolError(
            "no field to change was given; pass at least one of title, date, "
            "start_time, end_time, end_date, location, attendees, notes"
        )
    start_day = date or old.start.date()
    start = datetime.combine(start_day, start_time or old.start.time())
    if end_time is None and end_date is None:
        end = start + (old.end - old.start)
    else:
        end_day = end_date or (start_day + (old.end.date() - old.start.date()))
        end = datetime.combine(end_day, end_time or old.end.time())
    _check_order(start, end)
    update: dict[str, object] = {"start": start, "end": end}
    for key in ("title", "location", "notes"):
        if key in given:
            update[key] = given[key]
    if attendees is not None:
        update["attendees"] = list(attendees)
    new = CalendarEvent.model_validate({**old.model_dump(), **update})
    wc.replace(EVENTS, new)
    return {"event_id": new.id, "event": view(new, None)}
