"""The PA's prompt budget: what every PA call carries, File memory's thresholds, the window check.

Paper Section 4 (File memory): consolidation starts once the PA prompt reaches about 20k tokens
and goes on until it is below 10k. The PA prompt counted here is its system prompt (fixed
instructions, date, memory section) and its conversation; the 83 world tool schemas (Appendix
C.2) and the reply sit beside it in every call. Where the PA's window cannot hold 20k next to the
tools and the reply, the thresholds are scaled (:func:`mempa_tui.memory.default_thresholds`), and
the run prints and stores the values it uses (issue 11.4).

Issue 15.6: a window smaller than the tool block (plus the instructions, a reply and room for a
conversation) cannot serve a single PA call; :func:`window_problem` says so, with the window that
is needed, before the run starts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from mempa_tui.agent.prompt import context_prompt, instructions
from mempa_tui.llm._context import estimate
from mempa_tui.llm._wire import tools_for
from mempa_tui.llm.profile import ProfileError
from mempa_tui.llm.types import Role
from mempa_tui.memory import default_thresholds
from mempa_tui.memory.base import Evidence

if TYPE_CHECKING:
    from mempa_tui.llm import LLMClient
    from mempa_tui.runner.config import RunConfig
    from mempa_tui.tools import ToolRegistry

__all__ = [
    "MIN_CONVERSATION_TOKENS",
    "PromptBudget",
    "WindowTooSmallError",
    "file_memory_budget",
    "pa_base_prompt_tokens",
    "prompt_budget",
    "refuse_small_window",
    "stored_memory_options",
    "window_problem",
]

MIN_CONVERSATION_TOKENS = 2048
"""Least room a PA call needs for memory and conversation beside the tools and the reply."""

_MESSAGE_OVERHEAD = 8
"""Tokens a chat template adds around each of the PA's two system messages (an estimate)."""


class WindowTooSmallError(ProfileError):
    """The profile's PA window cannot hold the tool block, the instructions and a reply."""


@dataclass(frozen=True)
class PromptBudget:
    """What a PA call of one profile carries, in tokens (estimates from the client's counter).

    Attributes:
        profile: the profile name.
        window: the PA's ``context_window``.
        reply_tokens: the PA's ``max_tokens`` (reserved for the reply).
        tool_tokens: the world tools' schemas as sent.
        base_prompt_tokens: the PA's system prompt without memory (instructions, date, heading).
    """

    profile: str
    window: int
    reply_tokens: int
    tool_tokens: int
    base_prompt_tokens: int

    @property
    def room(self) -> int:
        """Tokens left for the PA prompt (system prompt and conversation): window less tools and
        reply, at least :data:`MIN_CONVERSATION_TOKENS` (the rule File memory scales by)."""
        return max(MIN_CONVERSATION_TOKENS, self.window - self.tool_tokens - self.reply_tokens)

    @property
    def needed_window(self) -> int:
        """The smallest window that holds tools, reply, instructions and a short conversation."""
        return self.tool_tokens + self.reply_tokens + self.base_prompt_tokens + MIN_CONVERSATION_TOKENS


def pa_base_prompt_tokens(client: LLMClient) -> int:
    """Tokens of the PA's system prompt without any memory (both system messages, empty memory)."""
    empty = context_prompt(datetime(2000, 1, 1), Evidence())
    return client.count_tokens(instructions()) + client.count_tokens(empty) + 2 * _MESSAGE_OVERHEAD


def prompt_budget(client: LLMClient, registry: ToolRegistry) -> PromptBudget:
    """Measure the PA's prompt budget for ``client``'s profile and ``registry``'s tools.

    The tools are counted as the client sends them (its wire form and serialisation) and
    inflated as its window check inflates a prompt (:func:`mempa_tui.llm._context.estimate`), so a
    window :func:`window_problem` accepts is one the client's check accepts too (issue 16: a
    window measured on the compact dump passed here while every PA call was refused).
    """
    spec = client.profile.spec_for(Role.PA)
    wire = spec.resolved_wire(client.profile.runtime)
    sent = tools_for(list(registry.specs()), None, wire)
    tools = json.dumps(sent, sort_keys=True) if sent else ""
    return PromptBudget(
        profile=client.profile.name, window=spec.context_window, reply_tokens=spec.max_tokens,
        tool_tokens=estimate(client.count_tokens(tools)) if tools else 0,
        base_prompt_tokens=pa_base_prompt_tokens(client),
    )


def refuse_small_window(client: LLMClient, registry: ToolRegistry) -> None:
    """Refuse a profile whose PA window cannot serve one PA call (``mempa run`` calls it before a
    model server starts; the runner itself only warns, so a stored run is never left unplayable).

    Raises:
        WindowTooSmallError: names the window, what it must hold, and the window needed.
    """
    why = window_problem(prompt_budget(client, registry))
    if why is not None:
        raise WindowTooSmallError(client.profile.name, [why.split(": ", 1)[1]])


def window_problem(budget: PromptBudget) -> str | None:
    """Why the PA's window cannot serve a PA call (None: it can).

    Returns:
        One line naming the window, what it must hold and the window needed.
    """
    if budget.window >= budget.needed_window:
        return None
    return (
        f"profile {budget.profile}: the PA's context_window of {budget.window:,} tokens cannot hold the world "
        f"tools ({budget.tool_tokens:,} tokens), the instructions ({budget.base_prompt_tokens:,}), a reply "
        f"({budget.reply_tokens:,}) and {MIN_CONVERSATION_TOKENS:,} for memory and conversation; every step "
        f"would fail. Set context_window to at least {budget.needed_window:,} for the pa role"
    )


def file_memory_budget(config: RunConfig, budget: PromptBudget) -> dict[str, int]:
    """File memory's thresholds as the run uses them, for its stored config and its header.

    Returns:
        ``consolidate_at_tokens`` / ``consolidate_to_tokens`` (from ``--memory-option`` or scaled
        by :func:`~mempa_tui.memory.default_thresholds`), ``scaled`` (1 when below the paper's
        20,000 -> 10,000 by the window), ``set_by_option`` (1 when an option set one),
        ``consolidate_at_session_end`` (1, present only when every session's end consolidates
        too: the quick start, issue 12), and the measured ``pa_window``, ``tool_tokens``,
        ``base_prompt_tokens``.
    """
    at_default, to_default = default_thresholds(budget.room)
    options = config.memory_options
    at = options.get("consolidate_at_tokens", at_default)
    to = options.get("consolidate_to_tokens", to_default)
    by_option = "consolidate_at_tokens" in options or "consolidate_to_tokens" in options
    session_end = {"consolidate_at_session_end": 1} if options.get("consolidate_at_session_end") else {}
    return {
        "consolidate_at_tokens": int(at), "consolidate_to_tokens": int(to), **session_end,
        "scaled": int((at_default, to_default) != default_thresholds(None)),
        "set_by_option": int(by_option),
        "pa_window": budget.window, "tool_tokens": budget.tool_tokens,
        "base_prompt_tokens": budget.base_prompt_tokens,
    }


def stored_memory_options(config: RunConfig) -> dict[str, int | float | str | bool]:
    """The memory options a stored run's memory was built with, for a play or the stepper that
    continues from its checkpoints (issue 12 follow-up: a play from a quick start must consolidate
    at its session's end, with the run's thresholds, not the defaults).

    ``memory_options`` as stored, and for File memory the thresholds it used
    (``file_memory_budget``'s ``consolidate_at_tokens`` / ``consolidate_to_tokens``), so a play
    that offers the PA another tool set (and so has another room for memory) still consolidates
    where the run did (paper Section 4, File memory).

    Args:
        config: the stored run's configuration.

    Returns:
        Options for :func:`~mempa_tui.memory.make_memory` (empty for a run that set none).
    """
    options: dict[str, int | float | str | bool] = dict(config.memory_options)
    if config.memory == "file":
        for key in ("consolidate_at_tokens", "consolidate_to_tokens"):
            if key in config.file_memory_budget:
                options.setdefault(key, int(config.file_memory_budget[key]))
    return options
