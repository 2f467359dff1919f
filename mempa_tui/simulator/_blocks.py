"""Parsing one simulator turn: the visible ``<message>`` and the private blocks (Appendix D.4).

A turn is written as tagged blocks (the default) or, for small local models that keep to a
grammar better than to tags, as one JSON object with the same four fields (``TURN_SCHEMA``,
requested through the client's ``json_schema`` so llama.cpp and Ollama constrain decoding to it).
The tagged form::

    <factual_check>none</factual_check>
    <turn_assessment>stay</turn_assessment>
    <consent_decisions>
    held_0003: approve
    </consent_decisions>
    <message>What the user says to the PA.</message>

Parsing is tolerant: tag names in any case, with spaces or hyphens instead of underscores, a
missing closing tag (the block runs to the next known tag or the end), prose around the blocks,
and a reply with no tags at all (taken as the message). What it does not guess: a reply that has
private blocks but no ``<message>`` block, or an empty message; both make the attempt fail.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field

__all__ = ["Assessment", "PRIVATE_TAGS", "ParsedTurn", "TURN_SCHEMA", "parse_turn", "parse_turn_json"]

Assessment = Literal["stay", "advance", "done"]

#: Tag names of the blocks (the visible one first).
PRIVATE_TAGS: tuple[str, ...] = ("factual_check", "turn_assessment", "consent_decisions")
_ALL_TAGS = ("message", *PRIVATE_TAGS)

_TAG_NAME = r"(message|factual[ _-]?check|turn[ _-]?assessment|consent[ _-]?decisions)"
_OPEN = re.compile(r"<\s*" + _TAG_NAME + r"\s*>", re.IGNORECASE)
_CLOSE = re.compile(r"<\s*/\s*" + _TAG_NAME + r"\s*>", re.IGNORECASE)
_ANY_TAG = re.compile(r"<\s*/?\s*" + _TAG_NAME + r"\s*>", re.IGNORECASE)
_ASSESSMENT = re.compile(r"\b(stay|advance|done)\b", re.IGNORECASE)
_CONSENT_LINE = re.compile(
    r"\b(held_[A-Za-z0-9_]+)\b\s*[:=\-\u2013\u2014>]*\s*"
    r"(approved?|yes|allow(?:ed)?|ok(?:ay)?|go ahead|denied|deny|no|reject(?:ed)?|decline[d]?|refuse[d]?)\b",
    re.IGNORECASE,
)
_CONSENT_VERB_FIRST = re.compile(
    r"\b(approved?|allow|deny|denied|reject(?:ed)?|decline[d]?)\b\s*[:\-]?\s*(held_[A-Za-z0-9_]+)\b",
    re.IGNORECASE,
)
_YES = ("approve", "approved", "yes", "allow", "allowed", "ok", "okay", "go ahead")
_LABEL = re.compile(r"^\s*(\*\*)?message(\*\*)?\s*:\s*", re.IGNORECASE)
_QUOTES = (('"', '"'), ("\u201c", "\u201d"), ("'", "'"))


class ParsedTurn(BaseModel):
    """One simulator reply split into its blocks.

    Attributes:
        message: the visible message (stripped), or None when none could be found or it is empty.
        factual_check: the private factual check ('' when missing).
        assessment: stay / advance / done, or None when missing or unreadable.
        consent: held item id -> True (approve) / False (deny), for the ids the reply decided.
        problems: what was wrong with the reply's format; a non-empty list with ``message`` None
            means the attempt failed, otherwise these are tolerated irregularities.
        private_texts: contents of the private blocks (for the leak check on the message).
    """

    message: str | None = None
    factual_check: str = ""
    assessment: Assessment | None = None
    consent: dict[str, bool] = Field(default_factory=dict)
    problems: list[str] = Field(default_factory=list)
    private_texts: list[str] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when the reply holds a non-empty message."""
        return bool(self.message)


def _canonical(tag: str) -> str:
    return re.sub(r"[ _-]+", "_", tag.strip().lower())


def _blocks(text: str) -> dict[str, list[str]]:
    """Map tag -> contents, in order; a missing close tag ends at the next tag or the end."""
    found: dict[str, list[str]] = {}
    opens = list(_OPEN.finditer(text))
    for i, match in enumerate(opens):
        name = _canonical(match.group(1))
        start = match.end()
        limit = opens[i + 1].start() if i + 1 < len(opens) else len(text)
        close = None
        for candidate in _CLOSE.finditer(text, start, limit):
            if _canonical(candidate.group(1)) == name:
                close = candidate
                break
        end = close.start() if close is not None else limit
        body = _ANY_TAG.sub("", text[start:end]).strip()
        found.setdefault(name, []).append(body)
    return found


def _unquote(text: str) -> str:
    for left, right in _QUOTES:
        if len(text) >= 2 and text.startswith(left) and text.endswith(right):
            inner = text[1:-1]
            if left not in inner and right not in inner:
                return inner.strip()
    return text


def _parse_consent(body: str) -> dict[str, bool]:
    decisions: dict[str, bool] = {}
    for match in _CONSENT_LINE.finditer(body):
        decisions.setdefault(match.group(1).lower(), match.group(2).lower() in _YES)
    for match in _CONSENT_VERB_FIRST.finditer(body):
        decisions.setdefault(match.group(2).lower(), match.group(1).lower().startswith(("approve", "allow")))
    return decisions


def parse_turn(text: str) -> ParsedTurn:
    """Split a simulator reply into its blocks.

    Args:
        text: the model's reply text (think blocks already removed by the client).

    Returns:
        A :class:`ParsedTurn`; ``message`` is None when the reply has private blocks but no
        message block, when the message is empty, or when the reply is empty. It never raises.
    """
    problems: list[str] = []
    blocks = _blocks(text)
    if not blocks:
        bare = _unquote(_LABEL.sub("", text.strip())).strip()
        if not bare:
            return ParsedTurn(problems=["the reply was empty"])
        return ParsedTurn(message=bare, problems=["no tags: the whole reply was taken as the message"])

    private_texts = [body for tag in PRIVATE_TAGS for body in blocks.get(tag, []) if body]
    messages = [m for m in blocks.get("message", []) if m]
    message: str | None = None
    if "message" not in blocks:
        problems.append("no <message> block")
    elif not messages:
        problems.append("the <message> block was empty")
    else:
        if len(messages) > 1:
            problems.append("more than one <message> block; the first was used")
        message = _unquote(messages[0]) or None
        if message is None:
            problems.append("the <message> block was empty")

    assessment: Assessment | None = None
    raw_assessment = " ".join(blocks.get("turn_assessment", []))
    if raw_assessment:
        match = _ASSESSMENT.search(raw_assessment)
        if match:
            assessment = match.group(1).lower()  # type: ignore[assignment]
        else:
            problems.append(f"unreadable <turn_assessment>: {raw_assessment[:60]!r}")
    else:
        problems.append("no <turn_assessment> block")

    consent = _parse_consent("\n".join(blocks.get("consent_decisions", [])))
    return ParsedTurn(
        message=message,
        factual_check="\n".join(blocks.get("factual_check", [])),
        assessment=assessment,
        consent=consent,
        problems=problems,
        private_texts=private_texts,
    )


TURN_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        "factual_check": {"type": "string"},
        "turn_assessment": {"type": "string", "enum": ["stay", "advance", "done"]},
        "consent_decisions": {"type": "object", "additionalProperties": {"type": "string", "enum": ["approve", "deny"]}},
        "message": {"type": "string"},
    },
    "required": ["factual_check", "turn_assessment", "message"],
}
"""JSON form of one turn: the same blocks as the tagged form, as fields."""


def parse_turn_json(text: str) -> ParsedTurn:
    """Read a turn written as one JSON object (``TURN_SCHEMA``); never raises.

    A reply that is not a JSON object falls back to :func:`parse_turn` (the model may have written
    tags after all). Wrong types and a missing or empty message are reported as problems, with the
    same consequences as in the tagged form.
    """
    from mempa_tui.llm import JSONReplyError, parse_json_reply

    try:
        data = parse_json_reply(text)
    except JSONReplyError:
        return parse_turn(text)
    problems: list[str] = []
    raw_message = data.get("message")
    message = _unquote(raw_message.strip()) if isinstance(raw_message, str) else ""
    if not message:
        problems.append("the message field was missing or empty")
    raw_assessment = data.get("turn_assessment")
    assessment: Assessment | None = None
    match = _ASSESSMENT.search(raw_assessment) if isinstance(raw_assessment, str) else None
    if match:
        assessment = match.group(1).lower()  # type: ignore[assignment]
    else:
        problems.append(f"unreadable turn_assessment: {str(raw_assessment)[:60]!r}")
    consent: dict[str, bool] = {}
    raw_consent = data.get("consent_decisions")
    if isinstance(raw_consent, dict):
        consent = _parse_consent("\n".join(f"{k}: {v}" for k, v in raw_consent.items()))
    factual = data.get("factual_check")
    factual_text = factual if isinstance(factual, str) else ""
    private = [t for t in (factual_text, str(raw_assessment or "")) if t]
    private += [f"{k}: {v}" for k, v in (raw_consent or {}).items()] if isinstance(raw_consent, dict) else []
    return ParsedTurn(
        message=message or None,
        factual_check=factual_text,
        assessment=assessment,
        consent=consent,
        problems=problems,
        private_texts=private,
    )
