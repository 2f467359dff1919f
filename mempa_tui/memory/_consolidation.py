"""File memory's consolidation call: prompt, reply parsing with one repair retry, and the fallback.

Source: paper Section 4 'Memory Systems' (File memory, nanobot's built-in memory): the oldest raw
turns are folded by an LLM into a long-term MEMORY.md and a dated HISTORY.md log. The prompt is
our own wording of a general-purpose consolidation like nanobot's: facts about the user and the
ongoing work, a dated history entry, the long-term file rewritten whole. It says nothing about
interaction preferences, work vs personal contexts or when something changed, because the paper's
baseline is not told what the benchmark tests (issue 13.1). An empty MEMORY.md is said in the
section heading, never as text in the file's place (issue 12: both packaged models copied such a
placeholder back as the file).

A reply that cannot be used is retried once with the reason; if it still cannot be used, the
caller keeps the turns pending (in the PA's view), leaves MEMORY.md as it was and counts the
failure by its reason code (:class:`ConsolidationOutcome`). Unusable (issue 12): not a JSON object
with both fields, a blank memory that would erase a non-empty file, a reply cut at the completion
cap (``finish_reason`` length, even when what came parses), and the content rules of
:mod:`mempa_tui.memory._consolidation_checks` (a repeating text, an empty-file placeholder, a
refusal, the prompt copied, the assistant's replies copied instead of notes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mempa_tui.llm import parse_json_reply
from mempa_tui.llm.errors import JSONReplyError, LLMError
from mempa_tui.llm.structured import complete_json
from mempa_tui.llm.types import ChatMessage, Completion, Role
from mempa_tui.memory._consolidation_checks import UnusableReply, check_content
from mempa_tui.memory.base import TurnRecord

__all__ = [
    "CONSOLIDATION_SCHEMA",
    "CompletionClient",
    "ConsolidationOutcome",
    "ConsolidationReply",
    "consolidate",
    "consolidation_messages",
]


class CompletionClient(Protocol):
    """The part of :class:`mempa_tui.llm.LLMClient` the memory and scoring code use."""

    async def complete(
        self,
        role: Role,
        messages: list[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
    ) -> Completion:
        """One chat call; see ``LLMClient.complete``."""
        ...

    def count_tokens(self, text: str) -> int:
        """Estimated tokens in ``text``; see ``LLMClient.count_tokens``."""
        ...


CONSOLIDATION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "history_entry": {"type": "string"},
        "memory": {"type": "string"},
    },
    "required": ["history_entry", "memory"],
    "additionalProperties": False,
}
"""JSON schema the consolidation reply must follow (sent as ``json_schema``)."""

_SYSTEM = """\
You keep the notes of an assistant that works with one person over a long time. The assistant \
can hold only so much conversation, so its oldest turns are about to be dropped. You get its notes file \
as it is now and those turns. Fold what is worth keeping from the turns into the notes.

Return one JSON object with exactly two string fields:
- "history_entry": a short paragraph (two to five sentences) for a dated log of what happened in \
these turns: what was asked, what was done, what was settled and what is still open. Keep dates, \
names and numbers that someone might look up later.
- "memory": the whole notes file after the update, in Markdown. It replaces the old file, so carry \
over everything from it that is still correct. Keep lasting facts about the person and their \
circumstances, the people, places and things that come up, and the state of ongoing tasks and \
plans. Correct or remove notes the turns show to be out of date. Leave out passing chatter and \
details that will not be needed again. If nothing new is worth keeping, return the file unchanged.

Reply with the JSON object only: no code fence, no commentary."""


class ConsolidationReply(BaseModel):
    """A usable consolidation reply.

    Attributes:
        history_entry: the log entry for HISTORY.md (non-blank).
        memory: the whole new MEMORY.md text.
    """

    model_config = ConfigDict(extra="ignore", strict=True)

    history_entry: str = Field(min_length=1)
    memory: str


class ConsolidationOutcome(BaseModel):
    """What one consolidation attempt produced.

    Attributes:
        reply: the usable reply, or None when both attempts failed.
        attempts: model calls made (1 or 2; 0 when the first call raised before replying).
        error: why the last attempt could not be used, when ``reply`` is None.
        reason: the reason code of ``error`` (a key of
            :data:`~mempa_tui.memory._consolidation_checks.REASON_TEXT`), when ``reply`` is None.
        replies: every reply text, in order (for the record and the benchmark).
        finish_reasons: each reply's finish reason as the provider reported it.
    """

    reply: ConsolidationReply | None = None
    attempts: int = 0
    error: str | None = None
    reason: str | None = None
    replies: list[str] = Field(default_factory=list)
    finish_reasons: list[str | None] = Field(default_factory=list)


def consolidation_messages(memory_md: str, turns: Sequence[TurnRecord]) -> list[ChatMessage]:
    """Build the consolidation prompt.

    Args:
        memory_md: the current MEMORY.md (may be empty).
        turns: the oldest pending turns, oldest first.

    Returns:
        ``[system, user]`` messages. An empty ``memory_md`` is said in the first heading, with
        no text under it that a model could copy back as the file. Each turn is headed with its
        date, time and context but not its step id (``[2026-05-19 10:00, work]``): the step ids
        are the harness's, nothing the person or the assistant said (issue 12: both packaged
        models copied ``work A-E01`` stamps into their notes).
    """
    current = memory_md.strip()
    section = f"## Current memory file\n{current}" if current else "## Current memory file: none yet (this save writes the first one)"
    rendered = "\n\n".join(t.as_text(with_step=False) for t in turns)
    user = (
        f"{section}\n\n"
        f"## Turns to fold in ({len(turns)}, oldest first)\n{rendered}\n\n"
        'Answer with {"history_entry": "...", "memory": "..."}.'
    )
    return [ChatMessage(role="system", content=_SYSTEM), ChatMessage(role="user", content=user)]


def _check(text: str, memory_md: str, turns: Sequence[TurnRecord] = ()) -> ConsolidationReply:
    """Parse and validate one reply against the current MEMORY.md and the turns it folds in.

    Raises:
        UnusableReply: the reply is not a usable consolidation (the message says why, ``reason``
            names the rule: ``unreadable``, ``erases``, ``repeats``, ``placeholder``,
            ``prompt_echo``, ``refusal``, ``copies_assistant``).
    """
    try:
        raw = parse_json_reply(text)
    except JSONReplyError as exc:
        raise UnusableReply("unreadable", str(exc)) from None
    try:
        reply = ConsolidationReply.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "reply"
        raise UnusableReply("unreadable", f"field {where}: {first['msg']}") from None
    if not reply.history_entry.strip():
        raise UnusableReply("unreadable", "field history_entry: blank")
    if memory_md.strip() and not reply.memory.strip():
        raise UnusableReply("erases", "field memory: blank, which would erase the existing memory file")
    check_content(reply.history_entry, reply.memory, turns, memory_md)
    return reply


async def consolidate(
    client: CompletionClient, memory_md: str, turns: Sequence[TurnRecord]
) -> ConsolidationOutcome:
    """Ask the MEMORY-role model to fold ``turns`` into the memory; retry once with the reason.

    Never raises for model output or a failed call: a failure comes back as an outcome with
    ``reply=None`` and the reason.

    Args:
        client: the model client (role ``memory`` is used).
        memory_md: the current MEMORY.md.
        turns: the turns to fold in, oldest first (non-empty).

    Returns:
        The outcome of at most two calls.
    """
    try:
        got = await complete_json(
            client, Role.MEMORY, consolidation_messages(memory_md, turns), schema=CONSOLIDATION_SCHEMA,
            read=lambda text: _check(text, memory_md, turns),
            retry_hint=(
                'Send the complete answer again as one JSON object {"history_entry": "...", '
                '"memory": "..."} with both values as strings, and nothing else.'
            ),
            on_cut="reject",
        )
    except LLMError as exc:
        return ConsolidationOutcome(attempts=0, error=f"model call failed: {exc}", reason="call_failed")
    reason = None if got.value is not None else (got.error_reason or "unreadable")
    return ConsolidationOutcome(reply=got.value, attempts=got.attempts, error=got.error, reason=reason,
                                replies=got.replies, finish_reasons=got.finish_reasons)
