"""The dialogue as the user saw it (paper Appendix D.1, Table 9).

The simulator's only view of the PA is :class:`~mempa_tui.ix.types.DeliveredTurn`: the public
reply, the world-tool calls that actually ran, and the items held for the user's answer. There is
no field for the PA's IX selection or for what the wrapper withheld, so neither can reach a
simulator prompt. The ``text`` of held questions and topics is content the wrapper releases
later, so it stays out of the user's view until it is delivered (a topic shows its public label).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

from mempa_tui.ix.types import CallStatus, DeliveredTurn, ExecutedCall, HeldItem

__all__ = ["DialogueEntry", "entry_from_delivered", "render_dialogue", "render_held"]

_RESULT_CHARS = 240
_ARGS_CHARS = 300


class DialogueEntry(BaseModel):
    """One entry of the dialogue from the user's side.

    Attributes:
        speaker: ``user`` (the simulator's delivered message), ``assistant`` (a delivered PA
            turn) or ``notice`` (a harness note such as 'the assistant did not get in touch').
        text: the message, the public reply, or the note.
        executed: world-tool calls that ran with the assistant turn (status ``executed`` only).
        held: items held with the assistant turn, awaiting the user's decision.
    """

    speaker: Literal["user", "assistant", "notice"]
    text: str = ""
    executed: list[ExecutedCall] = Field(default_factory=list)
    held: list[HeldItem] = Field(default_factory=list)


def entry_from_delivered(delivered: DeliveredTurn) -> DialogueEntry:
    """The assistant entry for a delivered PA turn (only calls that actually ran are kept)."""
    ran = [c for c in delivered.executed if c.status is CallStatus.EXECUTED]
    return DialogueEntry(speaker="assistant", text=delivered.reply, executed=ran, held=list(delivered.held))


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _call_line(call: ExecutedCall) -> str:
    args = _short(json.dumps(call.arguments, ensure_ascii=False, sort_keys=True), _ARGS_CHARS)
    outcome = "failed" if call.error else "done"
    result = _short(call.result, _RESULT_CHARS)
    return f"  [action {outcome}: {call.tool} {args}" + (f" -> {result}]" if result else "]")


def render_held(item: HeldItem) -> str:
    """One line describing a held item as the user may see it.

    Actions show the call that would run; a deferred topic shows only its label (public in the
    reply); a question shows nothing of its text (content the wrapper releases later).
    """
    if item.kind == "action":
        args = _short(json.dumps(item.arguments, ensure_ascii=False, sort_keys=True), _ARGS_CHARS)
        return f"  [waiting for your decision: {item.id}: would run {item.tool} {args}]"
    if item.kind == "topic":
        label = f" '{_short(item.label, 80)}'" if item.label.strip() else ""
        return f"  [waiting for your decision: {item.id}: move on to the set-aside topic{label}]"
    return f"  [held: {item.id}: a question it will ask later]"


def render_dialogue(entries: Sequence[DialogueEntry], *, user_label: str = "You") -> str:
    """The dialogue as plain text, oldest first.

    Args:
        entries: the dialogue.
        user_label: how the user's own lines are labelled (``You`` in the simulator prompt, the
            user's name in a rating prompt).

    Returns:
        One block per entry; '(nothing has been said yet)' for an empty dialogue.
    """
    if not entries:
        return "(nothing has been said yet)"
    lines: list[str] = []
    for entry in entries:
        if entry.speaker == "user":
            lines.append(f"{user_label}: {entry.text}")
        elif entry.speaker == "notice":
            lines.append(f"({entry.text})")
        else:
            lines.append(f"Assistant: {entry.text}" if entry.text.strip() else "Assistant: (no text)")
            lines += [_call_line(c) for c in entry.executed]
            lines += [render_held(h) for h in entry.held]
    return "\n".join(lines)
