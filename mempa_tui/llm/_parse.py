"""Pure helpers that turn what a model wrote into clean text, reasoning and tool calls.

Small local models misbehave in predictable ways: reasoning in ``<think>`` blocks, tool-call
arguments as strings or broken JSON, missing call ids, and (with ``tool_choice="auto"``) calls
written as JSON in the reply text instead of as structured calls. Everything here is pure and
provider-neutral; :mod:`mempa_tui.llm.client` applies it to every reply.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mempa_tui.llm.errors import JSONReplyError
from mempa_tui.llm.types import ToolCall

__all__ = [
    "CallIds",
    "RawToolCall",
    "normalise_arguments",
    "normalise_tool_calls",
    "parse_json_reply",
    "recover_call_fragment",
    "recover_tool_calls",
    "split_thinking",
]

_THINK_BLOCK = re.compile(r"<think>(.*?)</think>", re.DOTALL | re.IGNORECASE)
_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[ \t]*\n?(.*?)```", re.DOTALL)
_TOOL_CALL_TAG = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL | re.IGNORECASE)
_JSON_FENCES = {"", "json", "tool_call", "tool"}
_CALL_KEYS = {"name", "arguments", "parameters", "id", "type", "call_id"}
_EXCERPT = 80


def split_thinking(text: str) -> tuple[str, str]:
    """Separate reasoning from a reply.

    Removes every ``<think>...</think>`` block (empty ones too). An opening tag that is never
    closed makes the rest of the reply reasoning; a closing tag with no opening tag (templates that
    open the block inside the prompt) makes everything before it reasoning.

    Args:
        text: raw reply text.

    Returns:
        ``(text, thinking)``: the reply without reasoning, whitespace-trimmed, and the reasoning
        blocks joined by blank lines.
    """
    thoughts: list[str] = []

    def keep(match: re.Match[str]) -> str:
        thoughts.append(match.group(1).strip())
        return ""

    rest = _THINK_BLOCK.sub(keep, text)
    close = _THINK_CLOSE.search(rest)
    if close is not None:
        thoughts.insert(0, rest[: close.start()].strip())
        rest = rest[close.end() :]
    opening = _THINK_OPEN.search(rest)
    if opening is not None:
        thoughts.append(rest[opening.end() :].strip())
        rest = rest[: opening.start()]
    return rest.strip(), "\n\n".join(t for t in thoughts if t)


def normalise_arguments(raw: object) -> tuple[dict[str, Any], str | None]:
    """Turn tool-call arguments in any shape into an object.

    Args:
        raw: a dict, a JSON string (possibly JSON-encoded two to four times, or an encoded
            object's body with escaped quotes and no outer quotes), ``None`` or ``""``.

    Returns:
        ``(arguments, error)``: ``({}, None)`` for none; ``({}, reason)`` when the arguments are
        invalid JSON or not a JSON object, the reason quoting the start of what was sent.
    """
    if raw is None:
        return {}, None
    if isinstance(raw, dict):
        return dict(raw), None
    if isinstance(raw, str):
        if not raw.strip():
            return {}, None
        value: object = raw
        # Decode up to _MAX_ENCODINGS layers: a JSON object sent as a JSON string (once or more),
        # or a string's body with its quotes escaped but no outer quotes (``{\"a\": 1}``).
        for _layer in range(_MAX_ENCODINGS):
            if not isinstance(value, str):
                break
            text = value.strip()
            if value is not raw and not text.startswith(("{", "[", '"')):
                break  # a plain string inside: not an encoded object
            try:
                value = json.loads(text)
                continue
            except json.JSONDecodeError as exc:
                unescaped = _unescape_body(text)
                if unescaped is None:
                    return {}, f"arguments are not valid JSON ({exc.msg} at char {exc.pos}): {raw[:_EXCERPT]!r}"
                value = unescaped
        if isinstance(value, dict):
            return value, None
        return {}, f"arguments must be a JSON object, got {type(value).__name__}: {raw[:_EXCERPT]!r}"
    return {}, f"arguments must be a JSON object, got {type(raw).__name__}: {str(raw)[:_EXCERPT]!r}"


#: Layers of JSON string encoding :func:`normalise_arguments` takes off before giving up.
_MAX_ENCODINGS = 4


def _unescape_body(text: str) -> str | None:
    """``{\"a\": 1}`` (an encoded object's body without its quotes) -> ``{"a": 1}``, else None."""
    if not (text.startswith("{") and '\\"' in text):
        return None
    try:
        decoded = json.loads(f'"{text}"')
    except json.JSONDecodeError:
        return None
    return decoded if isinstance(decoded, str) else None


@dataclass
class CallIds:
    """Issues ids for tool calls that came without one, unique within a conversation.

    Ids are ``call_<n>`` with a counter, skipping any id already ``seen`` (ids in the history and
    earlier calls of the same reply), so replays of the same conversation get the same ids.
    """

    seen: set[str] = field(default_factory=set)
    counter: int = 0

    def claim(self, candidate: str | None) -> str:
        """Return ``candidate`` if it is non-empty and unused, else a fresh ``call_<n>``."""
        if candidate and candidate.strip() and candidate not in self.seen:
            self.seen.add(candidate)
            return candidate
        while True:
            self.counter += 1
            fresh = f"call_{self.counter}"
            if fresh not in self.seen:
                self.seen.add(fresh)
                return fresh


@dataclass(frozen=True)
class RawToolCall:
    """A tool call as a provider returned it, before normalisation."""

    id: str | None
    name: str | None
    arguments: object


def normalise_tool_calls(raw: Iterable[RawToolCall], ids: CallIds, *, recovered: bool = False) -> list[ToolCall]:
    """Normalise structured (or recovered) tool calls.

    Args:
        raw: calls as received.
        ids: id source for calls with missing, empty or duplicate ids.
        recovered: mark the calls as recovered from reply text.

    Returns:
        One :class:`ToolCall` per input, arguments parsed, ``arguments_error`` set where they were
        unusable; names kept as written (``None`` becomes ``""``).
    """
    out = []
    for call in raw:
        arguments, error = normalise_arguments(call.arguments)
        out.append(
            ToolCall(
                id=ids.claim(call.id),
                name=(call.name or "").strip(),
                arguments=arguments,
                arguments_error=error,
                recovered_from_text=recovered,
            )
        )
    return out


def _call_shape(value: object) -> RawToolCall | None:
    """Recognise one tool call written as a JSON value, in the shapes small models use."""
    if not isinstance(value, dict):
        return None
    if "function" in value and isinstance(value["function"], dict):
        inner = value["function"]
        if "name" not in inner or set(value) - {"function", "type", "id", "call_id"}:
            return None
        found = _call_shape({k: v for k, v in inner.items() if k in _CALL_KEYS})
        if found is None:
            found = RawToolCall(id=None, name=_as_name(inner.get("name")), arguments=None)
        ident = value.get("id") or value.get("call_id")
        return RawToolCall(id=ident if isinstance(ident, str) else None, name=found.name, arguments=found.arguments)
    if "name" not in value or set(value) - _CALL_KEYS:
        return None
    if "arguments" not in value and "parameters" not in value:
        return None
    arguments = value.get("arguments", value.get("parameters"))
    ident = value.get("id") or value.get("call_id")
    return RawToolCall(id=ident if isinstance(ident, str) else None, name=_as_name(value["name"]), arguments=arguments)


def _as_name(value: object) -> str:
    return value if isinstance(value, str) else ""


def _calls_in(value: object) -> list[RawToolCall] | None:
    """All calls in a JSON value (one call or a non-empty list of calls), else None."""
    if isinstance(value, list):
        calls = [_call_shape(item) for item in value]
        if calls and all(c is not None for c in calls):
            return [c for c in calls if c is not None]
        return None
    one = _call_shape(value)
    return [one] if one is not None else None


def _bare_json_spans(text: str) -> Iterable[tuple[int, int, object]]:
    """Yield ``(start, end, value)`` for each top-level JSON object or array in ``text``."""
    decoder = json.JSONDecoder()
    index = 0
    while index < len(text):
        brace = min((p for p in (text.find("{", index), text.find("[", index)) if p >= 0), default=-1)
        if brace < 0:
            return
        try:
            value, end = decoder.raw_decode(text, brace)
        except json.JSONDecodeError:
            index = brace + 1
            continue
        yield brace, end, value
        index = end


def recover_tool_calls(text: str, ids: CallIds) -> tuple[str, list[ToolCall]]:
    """Find tool calls written as JSON in reply text and take them out of it.

    Recognised: ``<tool_call>{...}</tool_call>`` blocks (closing tag optional at the end),
    fenced blocks (```` ```json ```` or a plain fence; other languages' fences are left alone as
    code shown to the user), and bare JSON; each holding
    ``{"name": ..., "arguments": {...}}``, ``{"name": ..., "parameters": {...}}``,
    ``{"function": {"name": ..., "arguments": ...}}`` or a list of those. Names are not checked
    against the offered tools (the agent does that); an empty name stays empty.

    Args:
        text: reply text with reasoning already removed.
        ids: id source for the recovered calls.

    Returns:
        ``(remaining_text, calls)``; calls carry ``recovered_from_text=True``.
    """
    spans: list[tuple[int, int, list[RawToolCall]]] = []
    code = [(m.start(), m.end()) for m in _FENCE.finditer(text) if m.group(1).lower() not in _JSON_FENCES]

    def taken(start: int, end: int) -> bool:
        return any(s < end and start < e for s, e, _ in spans) or any(s < end and start < e for s, e in code)

    for match in _TOOL_CALL_TAG.finditer(text):
        body = match.group(1).strip()
        fenced = _FENCE.fullmatch(body)
        if fenced is not None:
            body = fenced.group(2).strip()
        try:
            calls = _calls_in(json.loads(body))
        except json.JSONDecodeError:
            calls = None
        if calls:
            spans.append((match.start(), match.end(), calls))
    for match in _FENCE.finditer(text):
        if taken(match.start(), match.end()):
            continue
        try:
            calls = _calls_in(json.loads(match.group(2)))
        except json.JSONDecodeError:
            calls = None
        if calls:
            spans.append((match.start(), match.end(), calls))
    for start, end, value in _bare_json_spans(text):
        calls = _calls_in(value)
        if calls and not taken(start, end):
            spans.append((start, end, calls))
    if not spans:
        return text, []
    spans.sort(key=lambda span: span[0])
    pieces, found, cursor = [], [], 0
    for start, end, calls in spans:
        pieces.append(text[cursor:start])
        found.extend(calls)
        cursor = end
    pieces.append(text[cursor:])
    remaining = re.sub(r"\n{3,}", "\n\n", "".join(pieces)).strip()
    return remaining, normalise_tool_calls(found, ids, recovered=True)


_FRAGMENT_START = re.compile(
    r"<tool_call>|```(?:json|tool_call|tool)?[ \t]*\n?\s*[\[{]\s*\"(?:name|function)\"|[\[{]\s*\"(?:name|function)\"\s*:",
    re.IGNORECASE,
)
_FRAGMENT_NAME = re.compile(r"\"name\"\s*:\s*\"([^\"]*)")
FRAGMENT_ERROR = "the call was cut off before its end (only a fragment of a tool call came back)"
"""``arguments_error`` of a call made from a fragment (see :func:`recover_call_fragment`)."""


def recover_call_fragment(text: str, ids: CallIds) -> tuple[str, list[ToolCall]]:
    """Turn the unreadable start of a tool call in reply text into a failed call, never a reply.

    Small models cut calls off at the token cap or write broken JSON
    (``{"name": "mcp_state_route_14_consult``); such text is not a message for the user. Run
    after :func:`recover_tool_calls` found nothing: from the first ``<tool_call>`` tag, JSON fence
    or ``{"name": ...`` / ``{"function": ...`` opening on, the text is taken out and one call is
    returned in its place, named as far as the fragment names it (possibly ``""``), with no
    arguments and ``arguments_error`` set to :data:`FRAGMENT_ERROR`. The agent then answers it
    as a failed call (unknown tool or unreadable arguments), so the model gets another turn.

    Args:
        text: reply text with reasoning removed and no recoverable call in it.
        ids: id source for the call.

    Returns:
        ``(text before the fragment, [call])``, or ``(text, [])`` when there is no fragment.
    """
    match = _FRAGMENT_START.search(text)
    if match is None:
        return text, []
    name = _FRAGMENT_NAME.search(text, match.start())
    call = ToolCall(
        id=ids.claim(None),
        name=name.group(1).strip() if name else "",
        arguments={},
        arguments_error=FRAGMENT_ERROR,
        recovered_from_text=True,
    )
    return text[: match.start()].strip(), [call]


def parse_json_reply(text: str) -> dict[str, Any]:
    """Extract the JSON object a model was asked to reply with.

    Tolerates ``<think>`` blocks, code fences (```` ```json ```` or plain) and prose before or
    after the object. The first JSON object found wins: a fenced one first, then the whole text,
    then the first object embedded in prose.

    Args:
        text: the reply text.

    Returns:
        The parsed object.

    Raises:
        JSONReplyError: the reply is empty, holds no JSON object, or its JSON is an array or a
            scalar rather than an object.
    """
    body, _ = split_thinking(text)
    if not body:
        raise JSONReplyError("expected a JSON object, got an empty reply", text)
    candidates: list[str] = [m.group(2) for m in _FENCE.finditer(body)] + [body]
    other: object = None
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
        other = value
    for _, _, value in _bare_json_spans(body):
        if isinstance(value, dict):
            return value
        other = other if other is not None else value
    if other is not None:
        raise JSONReplyError(f"expected a JSON object, got a JSON {type(other).__name__}", text)
    raise JSONReplyError("expected a JSON object, found none (no valid JSON in the reply)", text)
