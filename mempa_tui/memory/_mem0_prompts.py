"""Prompts, reply schemas and reply readers of the Mem0-style memory (paper Section 4 ❸).

The flow is Mem0's add-and-update one; every prompt here is our own wording. Readers raise
``ValueError`` naming what is wrong, so :func:`~mempa_tui.llm.structured.complete_json` can show the
model its mistake once and the caller can count the failure.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from mempa_tui.llm import parse_json_reply
from mempa_tui.llm.types import ChatMessage
from mempa_tui.memory.base import TurnRecord

__all__ = [
    "DECISION_SCHEMA",
    "EXTRACTION_SCHEMA",
    "MAX_CANDIDATES",
    "Decision",
    "decision_messages",
    "extraction_messages",
    "read_decision",
    "read_extraction",
]

MAX_CANDIDATES = 8
"""Most candidate memories kept from one turn (a runaway list is cut, and the cut is counted)."""

EXTRACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"memories": {"type": "array", "items": {"type": "string"}}},
    "required": ["memories"],
    "additionalProperties": False,
}
"""Extraction reply: ``{"memories": ["...", ...]}`` (an empty list when nothing is worth keeping)."""

DECISION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "event": {"type": "string", "enum": ["ADD", "UPDATE", "DELETE", "NONE"]},
        "id": {"type": ["integer", "null"]},
        "text": {"type": "string"},
    },
    "required": ["event", "id", "text"],
    "additionalProperties": False,
}
"""Decision reply: ``{"event": "ADD|UPDATE|DELETE|NONE", "id": <shown id or null>, "text": "..."}``."""

_EXTRACT_SYSTEM = """\
You keep the notes of a personal assistant about the one person it works for. Read one exchange \
between that person and the assistant and write down what is worth knowing next time.

Write each note as one short sentence that makes sense on its own, without the exchange beside \
it. Say whether it concerns work or personal life when that matters. Good notes: facts about the \
person, their people, plans and commitments, and, most valuable of all, how they want the \
assistant to behave, as shown by how they react: whether they liked or disliked the length, tone \
or amount of explanation of a reply, whether the assistant should ask first or just act, whether \
it should offer extra help or stick to the request. Skip greetings, small talk and details that \
will not matter again. Do not invent anything the exchange does not show.

Reply with one JSON object: {"memories": ["note", ...]}. Use an empty list when nothing is worth \
keeping. No code fence, no commentary."""

_DECIDE_SYSTEM = """\
You maintain the notes of a personal assistant about the person it works for. A new note has come \
in. Compare it with the stored notes most similar to it, each shown with a number, and choose one \
action:
- "ADD": the new note says something the stored notes do not. "id" is null; "text" is the note.
- "UPDATE": the new note refines, corrects or replaces stored note number "id" (for example the \
person changed their mind). "text" is the merged note that should replace it.
- "DELETE": the new note shows that stored note number "id" is no longer true and nothing needs \
to replace it. "text" is an empty string.
- "NONE": the stored notes already say this. "id" is null; "text" is an empty string.

Reply with one JSON object: {"event": "...", "id": <number or null>, "text": "..."}. Use only a \
number from the list. No code fence, no commentary."""


class Decision(BaseModel):
    """A usable decision about one candidate memory.

    Attributes:
        event: the action.
        shown_id: the small id of the stored memory it concerns (UPDATE, DELETE), else None.
        text: the text to store (ADD, UPDATE), else empty.
    """

    model_config = ConfigDict(extra="forbid")

    event: Literal["ADD", "UPDATE", "DELETE", "NONE"]
    shown_id: int | None = None
    text: str = ""


def extraction_messages(record: TurnRecord) -> list[ChatMessage]:
    """The extraction prompt for one turn (the turn as the PA saw it, nothing more)."""
    return [
        ChatMessage(role="system", content=_EXTRACT_SYSTEM),
        ChatMessage(role="user", content=f"Context of this session: {record.context.value}\n\n{record.as_text()}"),
    ]


def decision_messages(candidate: str, shown: list[str]) -> list[ChatMessage]:
    """The decision prompt: the stored notes under ids 0..n-1 and the new note."""
    listing = "\n".join(f"{i}: {text}" for i, text in enumerate(shown)) or "(none)"
    body = f"Stored notes:\n{listing}\n\nNew note: {candidate}"
    return [ChatMessage(role="system", content=_DECIDE_SYSTEM), ChatMessage(role="user", content=body)]


def read_extraction(text: str) -> list[str]:
    """Read an extraction reply into its non-empty notes (at most :data:`MAX_CANDIDATES`).

    Tolerates code fences and prose around the JSON; a bare list of strings is accepted too.

    Raises:
        ValueError: no JSON, no ``memories`` list, or an item that is not a string.
    """
    data: dict[str, Any]
    try:
        data = parse_json_reply(text)
    except ValueError as exc:
        stripped = text.strip()
        if not (stripped.startswith("[") and stripped.endswith("]")):
            raise ValueError(str(exc)) from None
        try:
            data = {"memories": json.loads(stripped)}
        except json.JSONDecodeError:
            raise ValueError(f"reply is not valid JSON: {exc}") from None
    memories = data.get("memories")
    if memories is None:
        raise ValueError(f"reply has no 'memories' field (fields: {', '.join(sorted(data)) or 'none'})")
    if isinstance(memories, str):
        memories = [memories]
    if not isinstance(memories, list):
        raise ValueError(f"'memories' must be a list of strings, got {type(memories).__name__}")  # noqa: TRY004 - complete_json retries on ValueError
    notes: list[str] = []
    for n, item in enumerate(memories):
        if not isinstance(item, str):
            raise ValueError(f"'memories'[{n}] must be a string, got {type(item).__name__}")  # noqa: TRY004
        if item.strip():
            notes.append(" ".join(item.split()))
    return notes


def read_decision(text: str, shown: int, candidate: str) -> Decision:
    """Read a decision reply and check it against the ``shown`` ids.

    Args:
        text: the reply.
        shown: how many stored notes were shown (valid ids are ``0..shown-1``).
        candidate: the new note (an ADD with no text stores it).

    Raises:
        ValueError: no JSON, an unknown event, a missing or out-of-range id, a non-string text.
    """
    data = parse_json_reply(text)
    event = data.get("event")
    if not isinstance(event, str) or event.strip().upper() not in ("ADD", "UPDATE", "DELETE", "NONE"):
        raise ValueError(f"'event' must be one of ADD, UPDATE, DELETE, NONE; got {event!r}")
    event = event.strip().upper()
    raw_id = data.get("id")
    if isinstance(raw_id, str) and raw_id.strip().isdigit():
        raw_id = int(raw_id.strip())
    note = data.get("text", "")
    if note is None:
        note = ""
    if not isinstance(note, str):
        raise ValueError(f"'text' must be a string, got {type(note).__name__}")  # noqa: TRY004
    note = " ".join(note.split())
    if event in ("UPDATE", "DELETE"):
        if not isinstance(raw_id, int) or isinstance(raw_id, bool) or not 0 <= raw_id < shown:
            valid = f"0..{shown - 1}" if shown else "none (no stored notes were shown)"
            raise ValueError(f"{event} needs 'id' from the list ({valid}); got {raw_id!r}")
        if event == "UPDATE" and not note:
            raise ValueError("UPDATE needs the merged note in 'text'")
        if event == "UPDATE":
            return Decision(event="UPDATE", shown_id=raw_id, text=note)
        return Decision(event="DELETE", shown_id=raw_id)
    if event == "ADD":
        return Decision(event="ADD", text=note or candidate)
    return Decision(event="NONE")
