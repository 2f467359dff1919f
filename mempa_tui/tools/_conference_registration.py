"""Conference registration tools (paper Table 7: 1 read, 1 outward write).

Collections: ``conference_registration/conferences`` and
``conference_registration/registrations``. Registering tells the organisers, so
``conference_registration_create`` is tagged outward (Table 7's dagger).

Decisions (Appendix C.2 leaves them open):
- With only a read and a create in Table 7, ``conference_registration_read`` serves both: it
  lists conferences (with ticket types, workshops, deadline, and the user's registration if any)
  and reads one registration by id.
- A registration is refused after the conference's registration deadline, for a ticket type or
  workshop the conference does not offer, and for an attendee already registered for it.
"""

from __future__ import annotations

from pydantic import JsonValue

from mempa_tui.tools._common import Limit, NameList, TextArg, ToolError, matches, require, view
from mempa_tui.tools._registry import tool
from mempa_tui.world import WorkingCopy
from mempa_tui.world._records_conference_registration import Conference, ConferenceRegistration

__all__ = ["conference_registration_create", "conference_registration_read"]

CONFERENCES, REGISTRATIONS = "conference_registration/conferences", "conference_registration/registrations"


def _registrations(wc: WorkingCopy, conference_id: str) -> list[ConferenceRegistration]:
    return [
        r
        for r in wc.records_as(REGISTRATIONS, ConferenceRegistration)
        if r.conference_id == conference_id and r.status == "registered"
    ]


@tool(domain="conference_registration")
def conference_registration_read(
    wc: WorkingCopy, registration_id: str | None = None, query: str = "", limit: Limit = 10
) -> JsonValue:
    """Read one registration, or list conferences with their tickets and the user's registrations.

    Args:
        registration_id: a registration's id; leave out to list conferences.
        query: when listing, words that must all appear in the conference's name, city, venue,
            workshops or notes; empty matches all.
        limit: most conferences to return.

    Returns:
        the registration, or the number of matching conferences and the conferences in date
        order; register with conference_registration_create.
    """
    if registration_id is not None:
        found = require(
            wc, REGISTRATIONS, ConferenceRegistration, registration_id, "registration_id", "registration"
        )
        return view(found, "registered_at")
    today = wc.now.date()
    found_confs = [
        c
        for c in wc.records_as(CONFERENCES, Conference)
        if matches(query, c.name, c.city, c.venue, c.workshops, c.notes)
    ]
    found_confs.sort(key=lambda c: c.start_date)
    out: list[JsonValue] = []
    for c in found_confs[:limit]:
        shown = view(c, None)
        shown["registration_open"] = today <= c.registration_deadline
        shown["registrations"] = [view(r, "registered_at") for r in _registrations(wc, c.id)]
        out.append(shown)
    return {"count": len(found_confs), "conferences": out}


@tool(domain="conference_registration", write=True, tag="outward")
def conference_registration_create(
    wc: WorkingCopy,
    conference_id: str,
    attendee_name: TextArg,
    ticket_type: TextArg,
    workshops: NameList = (),
    dietary_requirements: str = "",
    notes: str = "",
) -> JsonValue:
    """Register someone for a conference (the organisers are told at once).

    Args:
        conference_id: the conference's id, from conference_registration_read.
        attendee_name: full name of the person attending.
        ticket_type: a ticket type name the conference offers.
        workshops: names of the conference's workshops to sign up for; may be empty.
        dietary_requirements: dietary needs; empty if none.
        notes: anything else for the organisers.

    Returns:
        the new registration's id and the registration with its price.
    """
    conf = require(wc, CONFERENCES, Conference, conference_id, "conference_id", "conference")
    today = wc.now.date()
    if today > conf.registration_deadline:
        raise ToolError(
            f"conference_id '{conference_id}': registration for {conf.name} "
            f"closed on {conf.registration_deadline}"
        )
    ticket = next((t for t in conf.ticket_types if t.name.casefold() == ticket_type.strip().casefold()), None)
    if ticket is None:
        names = ", ".join(t.name for t in conf.ticket_types)
        raise ToolError(f"ticket_type '{ticket_type}' is not offered by {conf.name} (offered: {names})")
    chosen: list[str] = []
    for i, w in enumerate(workshops):
        match = next((x for x in conf.workshops if x.casefold() == w.strip().casefold()), None)
        if match is None:
            offered = ", ".join(conf.workshops) or "none"
            raise ToolError(f"workshops[{i}] '{w}' is not a workshop of {conf.name} (workshops: {offered})")
        if match in chosen:
            raise ToolError(f"workshops[{i}] '{w}' is listed twice")
        chosen.append(match)
    name = " ".join(attendee_name.split())
    for r in _registrations(wc, conf.id):
        if r.attendee_name.casefold() == name.casefold():
            raise ToolError(f"attendee_name '{attendee_name}' is already registered for {conf.name} ({r.id})")
    fields = {
        "conference_id": conf.id,
        "conference_name": conf.name,
        "attendee_name": name,
        "ticket_type": ticket.name,
        "price": ticket.price,
        "workshops": chosen,
        "dietary_requirements": dietary_requirements,
        "notes": notes,
    }
    made = wc.create(REGISTRATIONS, fields)
    return {"registration_id": made.id, "registration": view(made, "registered_at")}
