"""Shared pieces of the tool domains: the domain table, argument types, lookups and search.

Argument types carry their own checks so every tool rejects the same bad values with the same
words (paper Appendix C.2, 'Argument checks'): dates ``YYYY-MM-DD``, times 24-hour ``HH:MM``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from datetime import date, datetime, time, timedelta
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BeforeValidator, Field, WithJsonSchema

from mempa_tui.world import Record, WorkingCopy, to_plain

__all__ = [
    "DOMAINS",
    "DateArg",
    "EmailArg",
    "EmailList",
    "Limit",
    "NameList",
    "OptionalEmailArg",
    "PhoneArg",
    "TextArg",
    "TimeArg",
    "ToolError",
    "check_range",
    "in_date_range",
    "known_name",
    "matches",
    "preview",
    "require",
    "view",
]

#: The 26 domains of Table 7 in table order: key -> title.
DOMAINS: tuple[tuple[str, str], ...] = (
    ("email", "Email"),
    ("messages", "Messages"),
    ("calendar", "Calendar"),
    ("documents", "Documents"),
    ("contacts", "Contacts"),
    ("phone", "Phone"),
    ("maps_places", "Maps and places"),
    ("weather", "Weather"),
    ("shopping", "Shopping"),
    ("shipping", "Shipping"),
    ("finance", "Finance"),
    ("appointments", "Appointments"),
    ("restaurants", "Restaurants"),
    ("room_booking", "Room booking"),
    ("hotels", "Hotels"),
    ("reimbursement", "Reimbursement"),
    ("conference_registration", "Conference registration"),
    ("grade_submission", "Grade submission"),
    ("flights", "Flights"),
    ("scholarly_papers", "Scholarly papers"),
    ("recipes", "Recipes"),
    ("comic_store", "Comic store"),
    ("cinema", "Cinema"),
    ("exhibitions", "Exhibitions"),
    ("media_transcoding", "Media transcoding"),
    ("household", "Household"),
)


class ToolError(Exception):
    """A value the tool itself rejects; the message names the argument, the value and why."""


# ---- argument types ----------------------------------------------------------------------

_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TIME_RE = re.compile(r"^(\d{2}):(\d{2})$")
_EMAIL_RE = re.compile(r"^[^@\s,;<>]+@[^@\s,;<>]+\.[A-Za-z]{2,}$")
_PHONE_RE = re.compile(r"^\+?[0-9 ()\-]{3,}$")


def _parse_date(value: Any) -> date:
    if isinstance(value, date) and not isinstance(value, datetime):
        return value
    if not isinstance(value, str) or not _DATE_RE.match(value.strip()):
        raise ValueError("is not a date in YYYY-MM-DD form")
    try:
        return date.fromisoformat(value.strip())
    except ValueError:
        raise ValueError("is not a real calendar date") from None


def _parse_time(value: Any) -> time:
    if isinstance(value, time):
        return value
    m = _TIME_RE.match(value.strip()) if isinstance(value, str) else None
    if m is None or int(m.group(1)) > 23 or int(m.group(2)) > 59:
        raise ValueError("is not a 24-hour HH:MM time")
    return time(int(m.group(1)), int(m.group(2)))


def _check_text(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


def _check_email(value: str) -> str:
    if not _EMAIL_RE.match(value.strip()):
        raise ValueError("is not an email address like name@example.org")
    return value.strip()


def _check_optional_email(value: str) -> str:
    return value if value == "" else _check_email(value)


def _check_phone(value: str) -> str:
    if value and (not _PHONE_RE.match(value.strip()) or sum(c.isdigit() for c in value) < 3):
        raise ValueError("is not a phone number (digits, spaces and + - ( ) only)")
    return value.strip()


#: A calendar date written ``YYYY-MM-DD``.
DateArg = Annotated[date, BeforeValidator(_parse_date)]
TIME_PATTERN = r"^([01][0-9]|2[0-3]):[0-5][0-9]$"
"""The JSON-schema ``pattern`` of a :data:`TimeArg`: a 24-hour ``HH:MM`` time, nothing more.

JSON Schema's ``format: time`` (what pydantic writes for a ``time``) means RFC 3339's full time
with seconds and a UTC offset, and grammar-constrained decoders follow it to the letter: under
llama.cpp's grammar the embedded PA could only write ``09:00:00.000Z``, which the tools reject,
so every calendar write of a quick-start run failed (issue 12). The schema states the form the
tools accept instead."""

#: A 24-hour time written ``HH:MM`` (schema: a string matching :data:`TIME_PATTERN`).
TimeArg = Annotated[time, BeforeValidator(_parse_time), WithJsonSchema({"type": "string", "pattern": TIME_PATTERN})]
#: Non-blank text.
TextArg = Annotated[str, AfterValidator(_check_text)]
#: An email address.
EmailArg = Annotated[str, AfterValidator(_check_email)]
#: An email address or the empty string (no address).
OptionalEmailArg = Annotated[str, AfterValidator(_check_optional_email)]


def _one_or_many(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


#: A list of email addresses (a single address is accepted as a list of one).
EmailList = Annotated[Sequence[EmailArg], BeforeValidator(_one_or_many)]
#: A list of names (a single name is accepted as a list of one).
NameList = Annotated[Sequence[TextArg], BeforeValidator(_one_or_many)]
#: A phone number or the empty string.
PhoneArg = Annotated[str, AfterValidator(_check_phone)]
#: How many results to return at most.
Limit = Annotated[int, Field(ge=1, le=100)]


# ---- lookups and search ------------------------------------------------------------------

R = TypeVar("R", bound=Record)


def require(wc: WorkingCopy, collection: str, model: type[R], record_id: str, arg: str, what: str) -> R:
    """The visible record ``record_id`` or a :class:`ToolError`.

    A record that enters the world later gets the same message as a missing one.

    Args:
        wc: the working copy.
        collection: where to look, e.g. ``email/inbox``.
        model: the record type held there.
        record_id: the id the caller gave.
        arg: the argument's name, for the message.
        what: what the id should name, e.g. ``"message in the inbox"``.
    """
    found = wc.get_as(collection, record_id, model)
    if found is None:
        raise ToolError(f"{arg} {record_id!r} names no {what}")
    return found


def known_name(value: str, known: Iterable[str], arg: str, what: str) -> str:
    """The spelling in ``known`` of ``value`` (case and outer spaces ignored), or a :class:`ToolError`.

    The error names the argument and value and lists the closest known names (or all of them,
    when there are few), e.g. ``city 'Sallowmuth' is not a known city; did you mean Sallowmouth?``.

    Args:
        value: the name the caller gave.
        known: the names that exist (visible ones only).
        arg: the argument's name, for the message.
        what: what the name should be, e.g. ``"city with forecasts"``.
    """
    names = sorted(set(known), key=str.casefold)
    by_key = {n.strip().casefold(): n for n in names}
    found = by_key.get(value.strip().casefold())
    if found is not None:
        return found
    close = difflib.get_close_matches(value.strip(), names, n=3, cutoff=0.6)
    if close:
        hint = f"; did you mean {', '.join(close)}?"
    elif not names:
        hint = "; there are none"
    elif len(names) <= 8:
        hint = f"; known: {', '.join(names)}"
    else:
        hint = ""
    raise ToolError(f"{arg} {value!r} is not a known {what}{hint}")


def matches(query: str, *fields: str | Iterable[str]) -> bool:
    """Case-insensitive search: every word of ``query`` occurs in at least one field.

    An empty query matches everything. A field may be a string or a list of strings.
    """
    words = query.casefold().split()
    if not words:
        return True
    texts: list[str] = []
    for f in fields:
        texts.extend([f] if isinstance(f, str) else list(f))
    hay = "\n".join(t.casefold() for t in texts)
    return all(w in hay for w in words)


def in_date_range(start: datetime, end: datetime | None, since: date | None, until: date | None) -> bool:
    """Whether ``[start, end]`` overlaps the days ``since..until`` (both inclusive, None = open)."""
    end = end or start
    if since is not None and end < datetime.combine(since, time()):
        return False
    if until is not None and start >= datetime.combine(until + timedelta(days=1), time()):
        return False
    return True


def check_range(since: date | None, until: date | None, since_arg: str, until_arg: str) -> None:
    """Reject a date range that ends before it starts."""
    if since is not None and until is not None and until < since:
        raise ToolError(f"{until_arg} '{until}' is before {since_arg} '{since}'")


def preview(text: str, n: int = 160) -> str:
    """The first ``n`` characters of ``text`` on one line, with an ellipsis if cut."""
    flat = " ".join(text.split())
    return flat if len(flat) <= n else flat[: n - 1].rstrip() + "…"


def view(record: Record, time_key: str | None) -> dict[str, Any]:
    """A record as the PA sees it: plain data with ``entered_at`` renamed (or dropped if None)."""
    plain = to_plain(record)
    entered = plain.pop("entered_at")
    if time_key is not None:
        plain[time_key] = entered
    return plain
