"""Context-window budgeting and prompt-prefix accounting.

Token counts come from litellm's offline counter (tiktoken ``cl100k_base`` for models it does not
know) plus :func:`digit_allowance`: Qwen and Llama-3 style tokenizers give every digit its own
token where ``cl100k_base`` groups up to three. Measured on Qwen2.5 with
``benchmarks/embedded_model.py``: prose and JSON schemas count the same (ratio 1.00), a line of
dates and amounts 1.41 without the allowance and 1.00 with it. Other models' tokenizers differ,
so the budget check inflates the count: the estimate is ``ceil(1.15 * counted) + 32``.

Trim rule (one rule, applied only when prompt estimate + ``max_tokens`` exceeds the window):
drop the oldest droppable unit first, and repeat until it fits. Units are single messages, except
that an assistant message with tool calls and the tool results that follow it form one unit.
System messages, the last user message and everything after it are never dropped. If nothing
droppable is left and it still does not fit, the caller raises ``ContextWindowError``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ESTIMATE_FACTOR",
    "ESTIMATE_MARGIN",
    "TrimResult",
    "digit_allowance",
    "estimate",
    "reused_prefix",
    "trim_to_fit",
]

ESTIMATE_FACTOR = 1.15
"""Multiplier on the counted tokens in the budget check (tokenizer mismatch allowance)."""
ESTIMATE_MARGIN = 32
"""Tokens added in the budget check for chat-template framing."""


_DIGIT_RUN = re.compile(r"[0-9]+")


def digit_allowance(text: str) -> int:
    """Extra tokens a one-digit-per-token tokenizer needs over ``cl100k_base`` for ``text``.

    A run of ``n`` digits is ``ceil(n / 3)`` tokens in ``cl100k_base`` and ``n`` tokens in Qwen2.5.
    """
    return sum(len(run) - math.ceil(len(run) / 3) for run in _DIGIT_RUN.findall(text))


def estimate(counted: int) -> int:
    """Conservative prompt size for the budget check: ``ceil(1.15 * counted) + 32``."""
    return math.ceil(ESTIMATE_FACTOR * counted) + ESTIMATE_MARGIN


@dataclass(frozen=True)
class TrimResult:
    """Which messages to send.

    Attributes:
        keep: indices of the messages kept, in order.
        dropped: how many messages were dropped.
        counted: counted prompt tokens of what is kept (tools included, before inflation).
        fits: whether the kept prompt fits.
    """

    keep: list[int]
    dropped: int
    counted: int
    fits: bool


def _units(messages: Sequence[dict[str, Any]], stop: int) -> list[list[int]]:
    """Droppable units among ``messages[:stop]`` (system messages excluded), oldest first."""
    units: list[list[int]] = []
    index = 0
    while index < stop:
        role = messages[index]["role"]
        if role == "system":
            index += 1
            continue
        unit = [index]
        index += 1
        if role == "assistant" and messages[unit[0]].get("tool_calls"):
            while index < stop and messages[index]["role"] == "tool":
                unit.append(index)
                index += 1
        units.append(unit)
    return units


def trim_to_fit(
    messages: Sequence[dict[str, Any]],
    counts: Sequence[int],
    tools_tokens: int,
    max_tokens: int,
    context_window: int,
) -> TrimResult:
    """Apply the trim rule (module docstring) to fit ``context_window``.

    Args:
        messages: wire messages (``role`` and ``tool_calls`` are read).
        counts: counted tokens per message.
        tools_tokens: counted tokens of the tool schemas.
        max_tokens: tokens reserved for the reply.
        context_window: the window in tokens.

    Returns:
        The kept indices; ``fits`` is False when even the fully trimmed prompt is too long.
    """
    total = sum(counts) + tools_tokens
    keep = set(range(len(messages)))
    if estimate(total) + max_tokens <= context_window:
        return TrimResult(sorted(keep), 0, total, True)
    last_user = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=len(messages) - 1)
    dropped = 0
    for unit in _units(messages, last_user):
        for i in unit:
            keep.discard(i)
            total -= counts[i]
        dropped += len(unit)
        if estimate(total) + max_tokens <= context_window:
            return TrimResult(sorted(keep), dropped, total, True)
    return TrimResult(sorted(keep), dropped, total, False)


def reused_prefix(
    previous: Sequence[str] | None,
    previous_tools: str | None,
    current: Sequence[str],
    current_tools: str | None,
    counts: Sequence[int],
    tools_tokens: int,
) -> int:
    """Counted tokens of the leading part of a prompt identical to the previous call's.

    Chat templates render the tool schemas next to the system prompt (before or right after it),
    so the tools count as reused only when they are identical *and* the first message is too;
    differing tools reuse nothing. Messages are compared whole (by their serialised form), first
    to last, until one differs.

    Args:
        previous: serialised messages of the previous call of the same role (None: no call yet).
        previous_tools: serialised tools of that call.
        current: serialised messages of this call.
        current_tools: serialised tools of this call.
        counts: counted tokens per current message.
        tools_tokens: counted tokens of the current tools.

    Returns:
        The reusable prefix in counted tokens (0 when there is no previous call).
    """
    if previous is None or previous_tools != current_tools:
        return 0
    reused = 0
    for old, new, count in zip(previous, current, counts, strict=False):
        if old != new:
            break
        reused += count
    return reused + tools_tokens if reused else 0
