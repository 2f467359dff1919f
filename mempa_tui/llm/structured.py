"""Asking a model for a JSON reply, with one retry that names what was wrong.

The judge, the PRS rater, the message checker and File memory's consolidation all ask for one JSON
object under a schema and must survive malformed output (code fences, prose around the JSON, a
reply cut off, an empty reply, values of the wrong type, the reply sent as a tool call whose
arguments hold the object, which is repaired and counted): the reader raises ``ValueError`` with the
problem, the model is shown its reply and the problem once, and if the second reply fails too the
caller gets every reply and the last problem to record - never an invented value.

A reply can also be usable yet **cut at a cap**: it ended at the completion token cap
(``finish_reason`` ``length``), or a text field ran to its schema's ``maxLength`` with no sentence
end (a grammar-constrained server closes the string there: on the quick start, 4 of 6 judge
replies stopped at the 320-character evidence cap mid-sentence, issue 12). A caller that asks for
it (``on_cut="retry"``, or inside :func:`watch_cut_replies`) gets that reply retried once with the
cut named; if the retry is cut again (or unusable), the cut reply's value is kept and marked
(:attr:`JSONAttempts.cut`) so the caller can count it. Callers that do not ask keep the old
behaviour (a usable reply is taken as it is).

A caller that must not take a reply cut at the token cap at all (File memory's consolidation: a
cut MEMORY.md that still parses is a loop or a half-written file, issue 12) passes ``on_cut="reject"``;
such a reply is then unusable whatever the reader says (reason ``cut_at_cap``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from contextvars import ContextVar
from typing import Any, Generic, Literal, Protocol, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, Field

from mempa_tui.llm.collect import collecting
from mempa_tui.llm.errors import JSONReplyError
from mempa_tui.llm.types import ChatMessage, Completion, Role

__all__ = ["CutPolicy", "CutReply", "CutReplyError", "JSONAttempts", "StructuredClient", "complete_json", "cut_reason",
           "watch_cut_replies"]

T = TypeVar("T")

CutPolicy = Literal["watch", "retry", "reject"]
"""What :func:`complete_json` does with a usable reply cut at a cap (see its ``on_cut``): the
judge retries (``retry``), File memory's consolidation refuses a reply cut at the token cap
(``reject``), and every other caller keeps the default ``watch`` (retried only inside
:func:`watch_cut_replies`, which the scorer puts around the PRS rater)."""

_CUT_POLICIES: tuple[str, ...] = get_args(CutPolicy)


class StructuredClient(Protocol):
    """The part of :class:`~mempa_tui.llm.client.LLMClient` this module needs."""

    async def complete(
        self,
        role: Role,
        messages: list[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
    ) -> Completion:
        """One chat completion."""
        ...


class JSONAttempts(BaseModel, Generic[T]):
    """The outcome of :func:`complete_json`.

    Attributes:
        value: what the reader returned for the first usable reply, else None.
        replies: every reply text, in order (for the record).
        error: the last problem when no reply was usable, else None.
        repaired: replies that came as a tool call instead of text and whose call arguments
            were read as the JSON reply (counted so the repair stays visible).
        cut: set when ``value`` was read from a reply cut at a cap (see the module docstring),
            after the retry was cut too or unusable: what was cut (``its 'evidence' ran to the
            schema's 320-character cap``); None otherwise.
        error_reason: a short code for the last problem when the reader's exception carried one
            (a ``reason`` attribute) or the reply was cut under ``on_cut="reject"`` (``cut_at_cap``);
            None otherwise.
        finish_reasons: the provider's finish reason of every reply, in order (None: not reported).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    value: T | None = None
    replies: list[str] = Field(default_factory=list)
    error: str | None = None
    repaired: int = 0
    cut: str | None = None
    error_reason: str | None = None
    finish_reasons: list[str | None] = Field(default_factory=list)

    @property
    def attempts(self) -> int:
        """Model calls made."""
        return len(self.replies)


async def complete_json(
    client: StructuredClient,
    role: Role,
    messages: Sequence[ChatMessage],
    *,
    schema: dict[str, Any],
    read: Callable[[str], T],
    retry_hint: str = "Reply with the JSON object only.",
    attempts: int = 2,
    on_cut: CutPolicy = "watch",
) -> JSONAttempts[T]:
    """Ask for a JSON reply and read it, retrying with the problem named.

    Args:
        client: the model client.
        role: the role to call.
        messages: the prompt.
        schema: JSON schema of the reply (sent as ``json_schema``, so constrained decoders keep to it).
        read: turns the reply text into a value; raises ``ValueError`` (or ``JSONReplyError``)
            with a short explanation when the reply is unusable.
        retry_hint: what the follow-up message asks for after naming the problem.
        attempts: model calls at most (2: the first try and one retry).
        on_cut: what a usable reply cut at a cap (:func:`cut_reason`) gets (:data:`CutPolicy`):
            ``"watch"`` (default) is retried and marked only inside :func:`watch_cut_replies`,
            which also records each marked reply, and taken as it is elsewhere; ``"retry"`` is
            retried and marked when it stays cut, watched or not; ``"reject"``: a reply whose
            ``finish_reason`` is ``length`` (cut at the role's completion cap) is unusable even
            when the reader would accept it (reason ``cut_at_cap``), and one cut at a field's
            ``maxLength`` is treated as under ``"watch"``.
    Returns:
        :class:`JSONAttempts`; ``value`` None with ``error`` set when no reply was usable;
        ``cut`` set when the value came from a reply that stayed cut.

    Raises:
        LLMError: a model call itself failed (the caller decides what that means).
    """
    outcome: JSONAttempts[T] = JSONAttempts()
    watch = _CUT_WATCH.get()
    if on_cut not in _CUT_POLICIES:
        raise ValueError(f"complete_json: on_cut must be one of {', '.join(_CUT_POLICIES)}, got {on_cut!r}")
    check_cut = on_cut == "retry" or watch is not None
    kept: tuple[T, str] | None = None  # the latest usable value read from a cut reply, and why
    history = list(messages)
    for _ in range(attempts):
        completion = await client.complete(role, history, json_schema=schema)
        text = completion.text
        if not text.strip():
            from_call = _reply_from_tool_call(completion)
            if from_call is not None:
                text = from_call
                outcome.repaired += 1
        outcome.replies.append(text)
        outcome.finish_reasons.append(completion.finish_reason)
        try:
            if on_cut == "reject" and completion.finish_reason == "length":
                raise CutReplyError(
                    f"the reply was cut off at the completion cap ({completion.usage.completion_tokens} tokens, "
                    "finish_reason length): write it shorter, each fact once")
            value = read(text)
        except (ValueError, JSONReplyError) as exc:
            outcome.error = str(exc) or type(exc).__name__
            outcome.error_reason = getattr(exc, "reason", None)
            problem = f"That reply could not be used ({outcome.error}). {retry_hint}"
        else:
            cut = cut_reason(completion, text, schema) if check_cut else None
            if cut is None:
                outcome.value, outcome.error, outcome.error_reason = value, None, None
                return outcome
            kept = (value, cut)
            problem = (f"That reply was cut off before it finished ({cut}). Send the same JSON object "
                       "again with shorter text, so that every sentence ends within its limit.")
        history += [
            ChatMessage(role="assistant", content=text),
            ChatMessage(role="user", content=problem),
        ]
    if kept is not None:  # still cut (or the retry unusable): keep the cut reply's value, marked
        outcome.value, outcome.cut, outcome.error = kept[0], kept[1], None
        if watch is not None:
            watch.append(CutReply(role=role, cut=kept[1]))
    return outcome


class CutReplyError(ValueError):
    """A reply cut at the completion cap, refused under ``on_cut="reject"`` (``reason`` ``cut_at_cap``)."""

    reason = "cut_at_cap"


class CutReply(BaseModel):
    """One reply kept although it was cut at a cap (recorded by :func:`watch_cut_replies`)."""

    role: Role
    """The role that was called."""
    cut: str
    """What was cut (:func:`cut_reason`)."""


_CUT_WATCH: ContextVar[list[CutReply] | None] = ContextVar("mempa_cut_watch", default=None)


def watch_cut_replies() -> AbstractContextManager[list[CutReply]]:
    """Retry cut replies in every :func:`complete_json` call inside the block and record those kept.

    For callers whose :func:`complete_json` call lies in code that does not pass ``on_cut``
    (the PRS rater): the scorer wraps the call and reads the list afterwards.

    Returns:
        A context manager whose value is the list that each kept cut reply is appended to.
    """
    return collecting(_CUT_WATCH)


_SENTENCE_END = (".", "!", "?", ")", '"', "'", "”")


def cut_reason(completion: Completion, text: str, schema: dict[str, Any]) -> str | None:
    """Why a usable JSON reply counts as cut at a cap, or None.

    Cut means: the completion stopped at its token cap (``finish_reason`` ``length``), or a
    string field of the reply is within 2 characters of its schema's ``maxLength`` and does not
    end a sentence (a grammar-constrained server closes the string at the cap, mid-word).

    Args:
        completion: the model's completion (its ``finish_reason``).
        text: the reply text that was read.
        schema: the JSON schema sent (its ``properties``' ``maxLength``).
    """
    if completion.finish_reason == "length":
        return "it reached the completion token cap"
    from mempa_tui.llm._parse import parse_json_reply

    try:
        data = parse_json_reply(text)
    except (ValueError, JSONReplyError):
        return None
    for name, prop in (schema.get("properties") or {}).items():
        limit = prop.get("maxLength") if isinstance(prop, dict) else None
        value = data.get(name)
        if isinstance(limit, int) and isinstance(value, str) and len(value) >= limit - 2:
            if not value.rstrip().endswith(_SENTENCE_END):
                return f"its '{name}' ran to the schema's {limit}-character cap mid-sentence"
    return None


def _reply_from_tool_call(completion: Completion) -> str | None:
    """The JSON text of a reply that a model sent as a tool call instead of as text.

    Some models answer a JSON-schema request by calling a made-up tool (``save_memory``,
    ``json``...) whose arguments hold the object asked for. The first call with usable object
    arguments is taken as the reply; None when there is none.
    """
    for call in completion.tool_calls:
        if call.arguments_error is None and call.arguments:
            return json.dumps(call.arguments, ensure_ascii=False)
    return None
