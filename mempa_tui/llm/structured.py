"""Asking a model for a JSON reply, with one retry that names what was wrong.

The judge, the PRS rater, the message checker and File memory's consolidation all ask for one JSON
object under a schema and must survive malformed output (code fences, prose around the JSON, a
reply cut off, an empty reply, values of the wrong type, the reply sent as a tool call whose
arguments hold the object, which is repaired and counted): the reader raises ``ValueError`` with the
problem, the model is shown its reply and the problem once, and if the second reply fails too the
caller gets every reply and the last problem to record - never an invented value.

A caller that must not take a reply cut at the token cap (File memory's consolidation: a cut
MEMORY.md that still parses is a loop or a half-written file, issue 12) passes ``reject_cut``;
such a reply is then unusable whatever the reader says. The judge, the PRS rater, the message
checker and the script review keep taking any reply their reader accepts: their objects are short,
and a cut one does not parse, so the reader already rejects it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from mempa_tui.llm.errors import JSONReplyError
from mempa_tui.llm.types import ChatMessage, Completion, Role

__all__ = ["CutReplyError", "JSONAttempts", "StructuredClient", "complete_json"]

T = TypeVar("T")


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
        error_reason: a short code for the last problem when the reader's exception carried one
            (a ``reason`` attribute) or the reply was cut (``cut_at_cap``); None otherwise.
        finish_reasons: the provider's finish reason of every reply, in order (None: not reported).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    value: T | None = None
    replies: list[str] = Field(default_factory=list)
    error: str | None = None
    repaired: int = 0
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
    reject_cut: bool = False,
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
        reject_cut: a reply whose ``finish_reason`` is ``length`` (cut at the role's completion
            cap) is unusable even when the reader would accept it (reason ``cut_at_cap``).

    Returns:
        :class:`JSONAttempts`; ``value`` None with ``error`` set when no reply was usable.

    Raises:
        LLMError: a model call itself failed (the caller decides what that means).
    """
    outcome: JSONAttempts[T] = JSONAttempts()
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
            if reject_cut and completion.finish_reason == "length":
                raise CutReplyError(
                    f"the reply was cut off at the completion cap ({completion.usage.completion_tokens} tokens, "
                    "finish_reason length): write it shorter, each fact once")
            outcome.value = read(text)
        except (ValueError, JSONReplyError) as exc:
            outcome.error = str(exc) or type(exc).__name__
            outcome.error_reason = getattr(exc, "reason", None)
        else:
            outcome.error = None
            outcome.error_reason = None
            return outcome
        history += [
            ChatMessage(role="assistant", content=text),
            ChatMessage(role="user", content=f"That reply could not be used ({outcome.error}). {retry_hint}"),
        ]
    return outcome


class CutReplyError(ValueError):
    """A reply cut at the completion cap, refused under ``reject_cut`` (``reason`` ``cut_at_cap``)."""

    reason = "cut_at_cap"


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
