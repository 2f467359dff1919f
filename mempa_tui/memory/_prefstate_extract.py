"""Preference-state memory: the extraction call and the validation of what it returns (SPEC §6).

The MEMORY-role model reads one turn - the PA's previous turn in the same step, as the user saw it,
and the user's message that answers it - and names what the user's words reveal about how they
want to be helped, as ``(attribute, setting, quote, confidence)`` items of the public taxonomy
(paper Section 3.2, Table 4). The turn record holds no target setting and no withheld content
(paper Section 3.4, Table 9), so neither can reach this prompt. The prompt is our own wording.

Every item is checked here (:func:`validate_items`): an unknown attribute or setting, a quote that
is not in the user's message, a confidence outside [0, 1] or an item of the wrong shape is dropped
and counted by reason. A reply that is not a usable JSON envelope is retried once with the problem
named (:func:`mempa_tui.llm.structured.complete_json`); the caller counts what still fails.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field

from mempa_tui.llm import parse_json_reply
from mempa_tui.llm.errors import JSONReplyError
from mempa_tui.llm.types import ChatMessage
from mempa_tui.memory._prefstate_state import Observation
from mempa_tui.memory.base import TurnRecord
from mempa_tui.taxonomy import ATTRIBUTES, Attribute

__all__ = [
    "EXTRACTION_SCHEMA",
    "MAX_ITEMS_PER_TURN",
    "ExtractionReply",
    "ItemCheck",
    "extraction_messages",
    "quote_in",
    "read_extraction",
    "summarise_pa_turn",
    "validate_items",
]

MAX_ITEMS_PER_TURN = 6
"""Items kept from one turn at most; a turn rarely reveals more than two or three."""

_REPLY_CLIP = 1200
"""Characters of the PA's previous reply shown to the extractor."""

_ALL_SETTINGS = sorted({s.name for a in ATTRIBUTES for s in a.settings})

EXTRACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "observations": {
            "type": "array",
            "maxItems": MAX_ITEMS_PER_TURN,
            "items": {
                "type": "object",
                "properties": {
                    "attribute": {"type": "string", "enum": [a.key for a in ATTRIBUTES]},
                    "setting": {"type": "string", "enum": _ALL_SETTINGS},
                    "quote": {"type": "string"},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                },
                "required": ["attribute", "setting", "quote", "confidence"],
            },
        }
    },
    "required": ["observations"],
}
"""JSON schema of the extractor's reply (sent as ``json_schema``)."""


def _taxonomy_text() -> str:
    lines: list[str] = []
    for a in ATTRIBUTES:
        lines.append(f"* {a.key} ({a.name}) - {a.question}")
        lines.extend(f"    - {s.name}: {s.behaviour}" for s in a.settings)
    return "\n".join(lines)


_SYSTEM = f"""\
You keep notes for a personal assistant on HOW the person it serves likes to be helped - the \
style and manner of the help, not the errands themselves. You are shown one moment of their \
conversation: what the assistant did in its previous turn (if there was one), and the person's \
message that came next. Write down what that message reveals about their preferences, using \
only the attributes and settings listed below.

How to read the message:
- Useful evidence is the person reacting to the assistant's behaviour - complaining, correcting \
it, asking for more or for less, repeating a request it ignored, thanking it for the way it \
handled something - or telling it how to handle things from now on.
- A complaint about how the assistant behaved points to a setting other than the one it used; \
plain approval of how it behaved points to the setting it used.
- A task request with no reaction in it reveals nothing. Do not infer preferences from the \
subject of the task or from the person's own writing style. An empty list is a good answer.
- "quote": copy the person's exact words from their message, a short span, character for \
character. Never quote the assistant.
- "confidence" between 0 and 1: about 0.9 when they state a rule or correct the assistant \
outright, about 0.7 for a clear reaction, about 0.4 for a faint hint.
- At most one item per attribute; setting names exactly as listed under that attribute.

Attributes and their settings (what the assistant visibly does under each):
{_taxonomy_text()}

Reply with one JSON object and nothing else:
{{"observations": [{{"attribute": "<attribute key>", "setting": "<setting name>", \
"quote": "<the person's exact words>", "confidence": <number>}}]}}"""


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def summarise_pa_turn(record: TurnRecord) -> str:
    """The PA's side of a turn as the user saw it, for the next extraction prompt.

    Args:
        record: the turn (its public parts only, as the adapter delivers them).

    Returns:
        A few lines: interaction choices, tools that ran (write or read, errors) and the reply.
    """
    lines: list[str] = []
    if record.ix_calls:
        lines.append(
            "Interaction choices: " + "; ".join(f"{c.attribute} = {c.setting}" for c in record.ix_calls)
        )
    if record.tool_calls:
        calls = [
            f"{c.tool}{' (write)' if c.write else ''}{' (error)' if c.error else ''}"
            for c in record.tool_calls
        ]
        lines.append("Tools that ran: " + ", ".join(calls))
    reply = _clip(record.reply, _REPLY_CLIP) if record.reply.strip() else "(no reply text)"
    lines.append(f"Reply: {reply}")
    return "\n".join(lines)


def extraction_messages(record: TurnRecord, previous: str | None) -> list[ChatMessage]:
    """Build the extraction prompt for one turn.

    Args:
        record: the turn whose user message is read.
        previous: :func:`summarise_pa_turn` of the PA's previous turn in the same step, or None
            when the message opens the step.

    Returns:
        ``[system, user]`` messages.
    """
    before = previous or "(nothing yet: this message opens the conversation)"
    user = (
        f"Context of this conversation: {record.context.value}\n\n"
        f"## The assistant's previous turn\n{before}\n\n"
        f"## The person's message\n{record.user_message.strip()}\n\n"
        'Answer with {"observations": [...]}.'
    )
    return [ChatMessage(role="system", content=_SYSTEM), ChatMessage(role="user", content=user)]


class ExtractionReply(BaseModel):
    """A usable extraction envelope: the raw items, each still to be validated.

    Attributes:
        items: the ``observations`` array as the model wrote it.
    """

    items: list[Any] = Field(default_factory=list)


def read_extraction(text: str) -> ExtractionReply:
    """Read the envelope of one extractor reply (items are checked by :func:`validate_items`).

    Raises:
        ValueError: no JSON object, or no ``observations`` array in it (the message says which).
    """
    try:
        raw = parse_json_reply(text)
    except JSONReplyError as exc:
        raise ValueError(str(exc)) from None
    items = raw.get("observations")
    if items is None:
        raise ValueError("the object has no 'observations' field")
    if not isinstance(items, list):
        raise ValueError(  # noqa: TRY004 - complete_json retries on ValueError
            f"'observations' must be an array, got {type(items).__name__}"
        )
    return ExtractionReply(items=items)


_SPACE = re.compile(r"\s+")
_ELLIPSIS = re.compile(r"\.\.\.|…")
_FOLD = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "–": "-", "—": "-"})


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text.translate(_FOLD).lower()).strip()


def quote_in(quote: str, message: str) -> bool:
    """Whether ``quote`` is a verbatim span of ``message``.

    Case, runs of white space and typographic quotes and dashes are ignored; surrounding quote
    marks are stripped; an ellipsis may stand for omitted words (each part must appear, in order).
    A quote must hold at least three letters or digits.
    """
    body = _norm(quote).strip(" \"'")
    haystack = _norm(message)
    if sum(ch.isalnum() for ch in body) < 3:
        return False
    start = 0
    for part in (p.strip() for p in _ELLIPSIS.split(body)):
        if not part:
            continue
        found = haystack.find(part, start)
        if found < 0:
            return False
        start = found + len(part)
    return True


def _find_attribute(value: str) -> Attribute | None:
    wanted = value.strip().lower().removeprefix("ix_")
    for a in ATTRIBUTES:
        if wanted in (a.key, a.name.lower()):
            return a
    return None


class ItemCheck(BaseModel):
    """What :func:`validate_items` made of one reply's items.

    Attributes:
        accepted: the valid observations, at most one per attribute (the most confident).
        dropped: reason -> number of items dropped for it.
        problems: one line per dropped item (for the side panel's last-failure line).
    """

    accepted: list[Observation] = Field(default_factory=list)
    dropped: dict[str, int] = Field(default_factory=dict)
    problems: list[str] = Field(default_factory=list)

    def drop(self, reason: str, detail: str) -> None:
        """Record one dropped item."""
        self.dropped[reason] = self.dropped.get(reason, 0) + 1
        self.problems.append(f"{reason}: {detail}")


def _check_one(item: object, record: TurnRecord, check: ItemCheck) -> Observation | None:
    if not isinstance(item, dict):
        check.drop("malformed_item", f"expected an object, got {type(item).__name__}")
        return None
    attr_raw, setting_raw = item.get("attribute"), item.get("setting")
    quote, confidence = item.get("quote"), item.get("confidence")
    if not all(isinstance(v, str) for v in (attr_raw, setting_raw, quote)):
        check.drop("malformed_item", "attribute, setting and quote must be strings")
        return None
    assert isinstance(attr_raw, str) and isinstance(setting_raw, str) and isinstance(quote, str)
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        check.drop("malformed_item", f"confidence must be a number, got {confidence!r}")
        return None
    attr = _find_attribute(attr_raw)
    if attr is None:
        check.drop("unknown_attribute", repr(attr_raw))
        return None
    setting = next((n for n in attr.setting_names if n.lower() == setting_raw.strip().lower()), None)
    if setting is None:
        check.drop("unknown_setting", f"{setting_raw!r} is not a setting of {attr.key}")
        return None
    if not 0.0 <= float(confidence) <= 1.0:
        check.drop("confidence_out_of_range", f"{attr.key}: {confidence!r}")
        return None
    if not quote_in(quote, record.user_message):
        check.drop("quote_not_in_turn", f"{attr.key}: {_clip(quote, 80)!r}")
        return None
    return Observation(
        context=record.context,
        attribute=attr.key,
        setting=setting,
        quote=" ".join(quote.split()).strip(" \"'"),
        at=record.at,
        confidence=float(confidence),
        step_id=record.step_id,
        turn_index=record.turn_index,
    )


def validate_items(items: list[Any], record: TurnRecord) -> ItemCheck:
    """Check each extracted item against the public taxonomy and the turn.

    Context and time come from the turn record, not from the model: the session's context is
    public, and an item the model placed in the other context would be a cross-context spill.

    Args:
        items: the raw ``observations`` array.
        record: the turn the items were extracted from.

    Returns:
        The accepted observations and the drop counts by reason.
    """
    check = ItemCheck()
    best: dict[str, Observation] = {}
    for item in items:
        obs = _check_one(item, record, check)
        if obs is None:
            continue
        kept = best.get(obs.attribute)
        if kept is not None:
            check.drop("duplicate_attribute", obs.attribute)
            if obs.confidence <= kept.confidence:
                continue
        best[obs.attribute] = obs
    ranked = sorted(best.values(), key=lambda o: -o.confidence)
    for extra in ranked[MAX_ITEMS_PER_TURN:]:
        check.drop("too_many", extra.attribute)
    check.accepted = ranked[:MAX_ITEMS_PER_TURN]
    return check
