"""Messages tools (paper Table 7, domain Messages: 2 read, 1 outward write).

Collection: ``messages/messages`` (chat/SMS messages, ``in`` received and ``out`` sent).
"""

from __future__ import annotations

import difflib

from pydantic import JsonValue

from mempa_tui.tools._common import (
    DateArg,
    Limit,
    TextArg,
    ToolError,
    check_range,
    in_date_range,
    matches,
    require,
    view,
)
from mempa_tui.tools._registry import tool
from mempa_tui.world import WorkingCopy
from mempa_tui.world.records import Contact, TextMessage

__all__ = ["message_read", "message_search", "message_send"]

MESSAGES, CONTACTS = "messages/messages", "contacts/contacts"


@tool(domain="messages")
def message_search(
    wc: WorkingCopy,
    query: str = "",
    contact: str = "",
    since: DateArg | None = None,
    until: DateArg | None = None,
    limit: Limit = 10,
) -> JsonValue:
    """Search text messages sent and received; returns the most recent matches in time order.

    Args:
        query: words that must all appear in the message text or the contact's name
            (case-insensitive); empty matches every message.
        contact: part of the other person's name; empty for anyone.
        since: only messages on or after this date, YYYY-MM-DD.
        until: only messages on or before this date, YYYY-MM-DD.
        limit: most messages to return; the newest matches are kept.

    Returns:
        the number of matches and the messages,
        oldest first.
    """
    check_range(since, until, "since", "until")
    found = [
        m
        for m in wc.records_as(MESSAGES, TextMessage)
        if matches(query, m.text, m.contact)
        and matches(contact, m.contact)
        and in_date_range(m.entered_at, None, since, until)
    ]
    found.sort(key=lambda m: m.entered_at)
    return {"count": len(found), "messages": [view(m, "at") for m in found[-limit:]]}


@tool(domain="messages")
def message_read(wc: WorkingCopy, message_id: str) -> JsonValue:
    """Read one text message.

    Args:
        message_id: the message's id, from message_search.

    Returns:
        the message with its contact, direction (in/out), text and time.
    """
    return view(require(wc, MESSAGES, TextMessage, message_id, "message_id", "text message"), "at")


def _known_people(wc: WorkingCopy) -> dict[str, str]:
    """Case-folded name -> spelling, for everyone in the contacts or the message threads."""
    people: dict[str, str] = {}
    for m in wc.records_as(MESSAGES, TextMessage):
        people.setdefault(m.contact.casefold(), m.contact)
    for c in wc.records_as(CONTACTS, Contact):
        people[c.name.casefold()] = c.name
    return people


@tool(domain="messages", write=True, tag="outward")
def message_send(wc: WorkingCopy, contact: TextArg, text: TextArg) -> JsonValue:
    """Send a text message to someone in an existing message thread or a contact with a phone number.

    Args:
        contact: the person's full name as it appears in the contacts or earlier messages.
        text: the message to send.

    Returns:
        the sent message's id and the message.
    """
    people = _known_people(wc)
    name = people.get(contact.strip().casefold())
    if name is None:
        close = difflib.get_close_matches(contact.strip(), sorted(people.values()), n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ToolError(f"contact {contact!r} names no one in the contacts or message threads{hint}")
    has_thread = any(m.contact == name for m in wc.records_as(MESSAGES, TextMessage))
    card = next((c for c in wc.records_as(CONTACTS, Contact) if c.name == name), None)
    if not has_thread and card is not None and not card.phone.strip():
        raise ToolError(
            f"contact {name!r} has no phone number and no message thread, so a text cannot reach "
            "them; add a number with contact_update or use another channel"
        )
    sent = wc.create(MESSAGES, {"contact": name, "direction": "out", "text": text})
    return {"message_id": sent.id, "message": view(sent, "at")}
