"""Contacts tools (paper Table 7, domain Contacts: 2 read, 2 routine own-record writes).

Collection: ``contacts/contacts``. Names are unique (case-insensitive) among visible contacts so
that ``message_send`` can address a person by name.
"""

from __future__ import annotations

from pydantic import JsonValue

from mempa_tui.tools._common import (
    Limit,
    OptionalEmailArg,
    PhoneArg,
    TextArg,
    ToolError,
    matches,
    require,
    view,
)
from mempa_tui.tools._registry import tool
from mempa_tui.world import WorkingCopy
from mempa_tui.world.records import Contact

__all__ = ["contact_create", "contact_read", "contact_search", "contact_update"]

CONTACTS = "contacts/contacts"


def _same_name(wc: WorkingCopy, name: str, other_than: str | None = None) -> Contact | None:
    key = name.strip().casefold()
    for c in wc.records_as(CONTACTS, Contact):
        if c.name.strip().casefold() == key and c.id != other_than:
            return c
    return None


@tool(domain="contacts")
def contact_search(wc: WorkingCopy, query: str = "", limit: Limit = 10) -> JsonValue:
    """Search the address book by name, email, phone, organisation, relation or notes.

    Args:
        query: words that must all appear in the contact's fields (case-insensitive); empty lists
            everyone.
        limit: most contacts to return.

    Returns:
        the number of matches and the contacts, by name.
    """
    found = [
        c
        for c in wc.records_as(CONTACTS, Contact)
        if matches(query, c.name, c.email, c.phone, c.organization, c.relation, c.notes)
    ]
    found.sort(key=lambda c: c.name.casefold())
    return {"count": len(found), "contacts": [view(c, None) for c in found[:limit]]}


@tool(domain="contacts")
def contact_read(wc: WorkingCopy, contact_id: str) -> JsonValue:
    """Read one contact.

    Args:
        contact_id: the contact's id, from contact_search.

    Returns:
        the contact with name, email, phone, organisation, relation and notes.
    """
    return view(require(wc, CONTACTS, Contact, contact_id, "contact_id", "contact"), None)


@tool(domain="contacts", write=True, tag="routine")
def contact_create(
    wc: WorkingCopy,
    name: TextArg,
    email: OptionalEmailArg = "",
    phone: PhoneArg = "",
    organization: str = "",
    relation: str = "",
    notes: str = "",
) -> JsonValue:
    """Add a person to the address book.

    Args:
        name: the person's full name; must differ from every existing contact's name.
        email: their email address.
        phone: their phone number (digits, spaces and + - ( ) only).
        organization: where they work or belong.
        relation: who they are to the user, e.g. colleague, dentist, sister.
        notes: anything else worth keeping.

    Returns:
        the new contact's id and the contact.
    """
    clash = _same_name(wc, name)
    if clash is not None:
        raise ToolError(f"name {name!r} is already a contact ({clash.id}); use contact_update")
    contact = wc.create(
        CONTACTS,
        {
            "name": name.strip(),
            "email": email,
            "phone": phone,
            "organization": organization,
            "relation": relation,
            "notes": notes,
        },
    )
    return {"contact_id": contact.id, "contact": view(contact, None)}


@tool(domain="contacts", write=True, tag="routine")
def contact_update(
    wc: WorkingCopy,
    contact_id: str,
    name: TextArg | None = None,
    email: OptionalEmailArg | None = None,
    phone: PhoneArg | None = None,
    organization: str | None = None,
    relation: str | None = None,
    notes: str | None = None,
) -> JsonValue:
    """Change a contact's details; only the fields given change.

    Args:
        contact_id: the contact's id.
        name: new full name.
        email: new email address (empty string clears it).
        phone: new phone number (empty string clears it).
        organization: new organisation.
        relation: new relation to the user.
        notes: new notes (replaces the old notes).

    Returns:
        the contact as updated.
    """
    old = require(wc, CONTACTS, Contact, contact_id, "contact_id", "contact")
    update = {
        k: v
        for k, v in {
            "name": name,
            "email": email,
            "phone": phone,
            "organization": organization,
            "relation": relation,
            "notes": notes,
        }.items()
        if v is not None
    }
    if not update:
        raise ToolError(
            "no field to change was given; pass at least one of name, email, phone, "
            "organization, relation, notes"
        )
    if name is not None:
        clash = _same_name(wc, name, other_than=contact_id)
        if clash is not None:
            raise ToolError(f"name {name!r} is already another contact ({clash.id})")
    new = Contact.model_validate({**old.model_dump(), **update})
    wc.replace(CONTACTS, new)
    return {"contact_id": contact_id, "contact": view(new, None)}
