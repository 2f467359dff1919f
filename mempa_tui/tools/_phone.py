"""Phone tools (paper Table 7, domain Phone: 1 read, 1 outward write).

Collection: ``phone/calls`` (the call log). ``phone_call_dial`` is outward: it places a call to
another person or business.

Decision: dialling records the outgoing call in the call log with its purpose and a duration of 0;
no conversation is simulated (tools answer from the world files only, so the other side never
"picks up" with a scripted reply). A contact is dialled by name through the contacts' numbers or
earlier calls; a business found with ``place_search`` is dialled by its number.
"""

from __future__ import annotations

from pydantic import JsonValue

from mempa_tui.tools._common import (
    DateArg,
    Limit,
    PhoneArg,
    TextArg,
    ToolError,
    check_range,
    in_date_range,
    known_name,
    matches,
    require,
    view,
)
from mempa_tui.tools._registry import tool
from mempa_tui.world import WorkingCopy
from mempa_tui.world._records_phone import PhoneCall
from mempa_tui.world.records import Contact

__all__ = ["phone_call_dial", "phone_call_read"]

CALLS, CONTACTS = "phone/calls", "contacts/contacts"


def _digits(number: str) -> str:
    return "".join(c for c in number if c.isdigit())


@tool(domain="phone")
def phone_call_read(
    wc: WorkingCopy,
    call_id: str | None = None,
    contact: str = "",
    query: str = "",
    since: DateArg | None = None,
    until: DateArg | None = None,
    limit: Limit = 10,
) -> JsonValue:
    """Read one call from the call log, or list calls (newest first) when no id is given.

    Args:
        call_id: the call's id; leave out to list.
        contact: when listing, part of the other person's name or number; empty for anyone.
        query: when listing, words that must all appear in the name, purpose or summary.
        since: when listing, only calls on or after this date, YYYY-MM-DD.
        until: when listing, only calls on or before this date, YYYY-MM-DD.
        limit: when listing, most calls to return.

    Returns:
        the call, or
        the number of matches and the calls.
    """
    if call_id is not None:
        return view(require(wc, CALLS, PhoneCall, call_id, "call_id", "call in the call log"), "at")
    check_range(since, until, "since", "until")
    found = [
        c
        for c in wc.records_as(CALLS, PhoneCall)
        if matches(contact, c.contact, c.number)
        and matches(query, c.contact, c.purpose, c.summary)
        and in_date_range(c.entered_at, None, since, until)
    ]
    found.sort(key=lambda c: c.entered_at, reverse=True)
    return {"count": len(found), "calls": [view(c, "at") for c in found[:limit]]}


def _number_for(wc: WorkingCopy, contact: str) -> tuple[str, str]:
    """(name, number) of a person in the contacts or the call log."""
    numbers: dict[str, str] = {}
    for call in wc.records_as(CALLS, PhoneCall):
        if call.contact:
            numbers[call.contact] = call.number
    cards = {c.name: c.phone for c in wc.records_as(CONTACTS, Contact)}
    name = known_name(contact, [*numbers, *cards], "contact", "person in the contacts or call log")
    number = cards.get(name, "").strip() or numbers.get(name, "")
    if not number:
        raise ToolError(f"contact {name!r} has no phone number; add one with contact_update or dial a number")
    return name, number


@tool(domain="phone", write=True, tag="outward")
def phone_call_dial(wc: WorkingCopy, purpose: TextArg, contact: str = "", number: PhoneArg = "") -> JsonValue:
    """Place a phone call for the user to a contact (by name) or to a number.

    Give exactly one of contact and number.

    Args:
        purpose: why the call is made, in a short sentence.
        contact: the person's full name as in the contacts or the call log.
        number: a phone number (digits, spaces and + - ( ) only), e.g. from place_search.

    Returns:
        the call's id and the call as logged.
    """
    if bool(contact.strip()) == bool(number):
        raise ToolError(
            f"give exactly one of contact and number (got contact {contact!r} and number {number!r})"
        )
    if contact.strip():
        name, dialled = _number_for(wc, contact)
    else:
        dialled = number
        same = [
            c for c in wc.records_as(CONTACTS, Contact) if c.phone and _digits(c.phone) == _digits(number)
        ]
        name = same[0].name if same else ""
    call = wc.create(
        CALLS,
        {"contact": name, "number": dialled, "direction": "out", "duration_minutes": 0, "purpose": purpose},
    )
    return {"call_id": call.id, "status": "dialled", "call": view(call, "at")}
