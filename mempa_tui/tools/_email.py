"""Email tools (paper Table 7, domain Email: 4 read, 2 write, 1 outward).

Collections: ``email/inbox`` (received), ``email/drafts``, ``email/sent``.
"""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue

from mempa_tui.tools._common import (
    DateArg,
    EmailList,
    Limit,
    TextArg,
    ToolError,
    check_range,
    in_date_range,
    matches,
    preview,
    require,
    view,
)
from mempa_tui.tools._registry import tool
from mempa_tui.world import WorkingCopy
from mempa_tui.world.records import EmailDraft, EmailMessage, SentEmail

__all__ = [
    "email_draft_create",
    "email_draft_read",
    "email_message_read",
    "email_message_search",
    "email_message_send",
    "email_sent_read",
]

INBOX, DRAFTS, SENT = "email/inbox", "email/drafts", "email/sent"


def _summary(m: EmailMessage) -> dict[str, Any]:
    return {
        "id": m.id,
        "from": f"{m.sender_name} <{m.sender_address}>",
        "subject": m.subject,
        "received_at": view(m, "received_at")["received_at"],
        "preview": preview(m.body),
    }


@tool(domain="email")
def email_message_search(
    wc: WorkingCopy,
    query: str = "",
    sender: str = "",
    since: DateArg | None = None,
    until: DateArg | None = None,
    limit: Limit = 10,
) -> JsonValue:
    """Search the inbox for received emails, newest first.

    Args:
        query: words that must all appear in the subject, body or sender (case-insensitive);
            empty matches every email.
        sender: part of the sender's name or address; empty for any sender.
        since: only emails received on or after this date, YYYY-MM-DD.
        until: only emails received on or before this date, YYYY-MM-DD.
        limit: most emails to return.

    Returns:
        the number of matches and, for each returned email, its id, sender, subject, time
        received and a short preview; read the full text with email_message_read.
    """
    check_range(since, until, "since", "until")
    found = [
        m
        for m in wc.records_as(INBOX, EmailMessage)
        if matches(query, m.subject, m.body, m.sender_name, m.sender_address)
        and matches(sender, m.sender_name, m.sender_address)
        and in_date_range(m.entered_at, None, since, until)
    ]
    found.sort(key=lambda m: m.entered_at, reverse=True)
    return {"count": len(found), "messages": [_summary(m) for m in found[:limit]]}


@tool(domain="email")
def email_message_read(wc: WorkingCopy, message_id: str) -> JsonValue:
    """Read one received email in full.

    Args:
        message_id: the email's id, from email_message_search.

    Returns:
        the email with sender, recipients, subject, body and time received.
    """
    return view(
        require(wc, INBOX, EmailMessage, message_id, "message_id", "email in the inbox"), "received_at"
    )


@tool(domain="email")
def email_draft_read(wc: WorkingCopy, draft_id: str | None = None) -> JsonValue:
    """Read one unsent draft, or list every draft when no id is given.

    Args:
        draft_id: the draft's id; leave out to list all drafts.

    Returns:
        the draft, or a list of all drafts (newest first).
    """
    if draft_id is not None:
        return view(require(wc, DRAFTS, EmailDraft, draft_id, "draft_id", "draft"), "created_at")
    drafts = sorted(wc.records_as(DRAFTS, EmailDraft), key=lambda d: d.entered_at, reverse=True)
    return {"count": len(drafts), "drafts": [view(d, "created_at") for d in drafts]}


@tool(domain="email")
def email_sent_read(
    wc: WorkingCopy, sent_id: str | None = None, query: str = "", limit: Limit = 10
) -> JsonValue:
    """Read one sent email, or list sent emails (newest first) when no id is given.

    Args:
        sent_id: the sent email's id; leave out to list.
        query: when listing, words that must all appear in the subject, body or recipients.
        limit: when listing, most emails to return.

    Returns:
        the sent email, or the number of matches and the matching sent emails.
    """
    if sent_id is not None:
        return view(require(wc, SENT, SentEmail, sent_id, "sent_id", "sent email"), "sent_at")
    found = [s for s in wc.records_as(SENT, SentEmail) if matches(query, s.subject, s.body, s.to, s.cc)]
    found.sort(key=lambda s: s.entered_at, reverse=True)
    return {"count": len(found), "sent": [view(s, "sent_at") for s in found[:limit]]}


@tool(domain="email", write=True, tag="draft")
def email_draft_create(
    wc: WorkingCopy,
    subject: TextArg,
    body: TextArg,
    to: EmailList = (),
    cc: EmailList = (),
    in_reply_to: str | None = None,
) -> JsonValue:
    """Save a new email draft without sending it.

    Args:
        subject: the subject line.
        body: the full text of the email.
        to: recipient email addresses (may be empty for now).
        cc: addresses to copy in.
        in_reply_to: id of the received email this answers.

    Returns:
        the new draft's id and the draft.
    """
    if in_reply_to is not None:
        require(wc, INBOX, EmailMessage, in_reply_to, "in_reply_to", "email in the inbox")
    draft = wc.create(
        DRAFTS,
        {"to": list(to), "cc": list(cc), "subject": subject, "body": body, "in_reply_to": in_reply_to},
    )
    return {"draft_id": draft.id, "draft": view(draft, "created_at")}


@tool(domain="email", write=True, tag="outward")
def email_message_send(
    wc: WorkingCopy,
    to: EmailList = (),
    subject: str = "",
    body: str = "",
    cc: EmailList = (),
    in_reply_to: str | None = None,
    draft_id: str | None = None,
) -> JsonValue:
    """Send an email now, either written here or from a saved draft (the draft is then removed).

    Args:
        to: recipient email addresses; with draft_id, replaces the draft's recipients if given.
        subject: the subject line; with draft_id, replaces the draft's if given.
        body: the full text; with draft_id, replaces the draft's if given.
        cc: addresses to copy in; with draft_id, replaces the draft's if given.
        in_reply_to: id of the received email this answers.
        draft_id: id of a saved draft to send.

    Returns:
        the sent email's id and the email as sent.
    """
    fields: dict[str, Any] = {
        "to": list(to),
        "cc": list(cc),
        "subject": subject,
        "body": body,
        "in_reply_to": in_reply_to,
    }
    draft: EmailDraft | None = None
    if draft_id is not None:
        draft = require(wc, DRAFTS, EmailDraft, draft_id, "draft_id", "draft")
        fields = {
            "to": list(to) or draft.to,
            "cc": list(cc) or draft.cc,
            "subject": subject or draft.subject,
            "body": body or draft.body,
            "in_reply_to": in_reply_to or draft.in_reply_to,
        }
    if not fields["to"]:
        raise ToolError("to [] has no recipient; give at least one email address")
    for key in ("subject", "body"):
        if not str(fields[key]).strip():
            raise ToolError(f"{key} {fields[key]!r} must not be empty")
    if fields["in_reply_to"] is not None:
        require(wc, INBOX, EmailMessage, fields["in_reply_to"], "in_reply_to", "email in the inbox")
    sent = wc.create(SENT, fields)
    if draft is not None:
        wc.delete(DRAFTS, draft.id)
    return {"sent_id": sent.id, "sent": view(sent, "sent_at")}
