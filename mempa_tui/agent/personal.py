"""The model-driven PA: a tool-calling loop over any litellm model (paper Section 3.4, App. C.3 (4)).

One :meth:`PersonalAgent.respond` call plays one PA turn: at most 40 model calls; each tool call
is dispatched through :class:`~mempa_tui.agent.TurnActions`; text with no tool call ends the turn.
When the tested attribute's IX call (or its required payload) is missing, the PA gets one reminder
in the turn, then a forced call; if that also fails the turn is floored (Appendix F.2).
An empty final reply to a user's message (no text and no tool call, e.g. ``finish_reason``
``length`` with nothing written, and no IX material in the turn that the wrapper could compose
the reply from) gets one reminder too; a second empty reply fails the turn with
its reason, so an empty string is never taken as the PA's answer. On a world-event turn saying
nothing is a legitimate way to stay quiet, so no reminder is sent there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from mempa_tui.agent.actions import TurnActions
from mempa_tui.agent.prompt import (
    HARNESS_PREFIX,
    event_message,
    reminder_message,
    context_prompt,
    instructions,
    user_turn_message,
)
from mempa_tui.agent.seat import AgentSessionStart, AgentTurnInput, AgentTurnResult
from mempa_tui.ix.floors import FloorKind, floor_reason
from mempa_tui.llm.client import REPLY_TOOL
from mempa_tui.llm.types import ChatMessage, Completion, Role, ToolCall, ToolSpec
from mempa_tui.taxonomy import attribute

__all__ = ["MAX_MODEL_CALLS", "ChatClient", "PersonalAgent"]

#: Model calls allowed per user turn (SPEC 4.5).
MAX_MODEL_CALLS = 40

#: The name a tool call without one carries in the history sent back (its result says why).
UNNAMED_TOOL = "unnamed_tool_call"

#: The one reminder after an empty reply to a user's message (no text and no tool call).
EMPTY_REPLY_REMINDER = (
    f"{HARNESS_PREFIX} Your last turn reached the user as nothing: no text and no tool call. "
    "Answer the user's message now, in words they will read."
)


class ChatClient(Protocol):
    """What the PA needs from :class:`mempa_tui.llm.LLMClient`."""

    async def complete(
        self,
        role: Role,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] | None = None,
        tool_choice: str | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> Completion:
        """One model call (see :meth:`mempa_tui.llm.LLMClient.complete`)."""
        ...


class PersonalAgent:
    """The PA seat filled by a model.

    Args:
        client: the model client (role ``pa`` is used).
        max_model_calls: cap per user turn (default 40, paper Section 4). The last call is made
            the reply (the client's :data:`~mempa_tui.llm.client.REPLY_TOOL` choice), or the
            required interaction call while that is still missing, so a capped turn still answers.

    The agent keeps this step's conversation (user messages, its calls, tool results, replies);
    :meth:`begin_session` clears it. Errors of the model layer (:class:`mempa_tui.llm.LLMError`)
    propagate; the episode loop turns them into a failed step.
    """

    def __init__(
        self, client: ChatClient, *, max_model_calls: int = MAX_MODEL_CALLS
    ) -> None:
        self._client = client
        self._max_calls = max_model_calls
        self._start: AgentSessionStart | None = None
        self._history: list[ChatMessage] = []

    @property
    def history(self) -> list[ChatMessage]:
        """This step's conversation so far (a copy)."""
        return list(self._history)

    def begin_session(self, start: AgentSessionStart) -> None:
        """Start a new step: clear the history and note the date and Oracle hint."""
        self._start = start
        self._history = []

    def _unmet(
        self, turn: AgentTurnInput, actions: TurnActions
    ) -> tuple[str, ...] | None:
        """None when the tested attribute's IX requirement is met this turn, else missing fields."""
        key = turn.required_ix
        if key is None or key not in actions.offered_ix:
            return None
        if actions.wrapper.selection(key) is None:
            return ()
        missing = actions.wrapper.missing_payload(key)
        return missing or None

    async def respond(
        self, turn: AgentTurnInput, actions: TurnActions
    ) -> AgentTurnResult:
        """Play one PA turn.

        Args:
            turn: the user's message (or a world event), evidence and offered IX tools.
            actions: the turn's tool dispatcher (wrapper, registry, working copy).

        Returns:
            :class:`AgentTurnResult`; ``failed`` when the reply to a user's message was empty
            (no text, no tool call) again after one reminder; ``floored`` when the required IX call failed after the
            reminder and the forced call, or when IX text was written into a task tool's
            arguments (the interaction-tool contract, Appendix F.2; reasons from
            :func:`mempa_tui.ix.floors.floor_reason`); ``capped`` when 40 model calls passed
            without a final reply.

        Raises:
            RuntimeError: :meth:`begin_session` was not called.
            mempa_tui.llm.LLMError: the model call failed after the client's retries; a prompt that
                does not fit the model's window raises ``ContextWindowError`` (not a floor: the
                step fails and a probe is kept out of the scores with that reason, F.2).
        """
        if self._start is None:
            raise RuntimeError("PersonalAgent.respond called before begin_session")
        system = [
            ChatMessage(role="system", content=instructions()),
            ChatMessage(
                role="system",
                content=context_prompt(self._start.starts_at, turn.evidence, self._start.oracle),
            ),
        ]
        prior = [] if self._start.is_probe else list(turn.evidence.prior_messages)
        if turn.user_message is not None:
            opening = user_turn_message(turn.user_message, turn.runtime_notes)
        else:
            opening = event_message(turn.now, turn.notice or "", turn.runtime_notes)
        new: list[ChatMessage] = [ChatMessage(role="user", content=opening)]
        result = AgentTurnResult()
        tools = actions.tool_specs()
        tool_choice: str | None = None
        last_text = ""
        try:
            at_cap = False
            while result.model_calls < self._max_calls:
                if result.model_calls == self._max_calls - 1 and tool_choice is None:
                    # the last call this turn may make: the missing interaction call, else the reply
                    missing = self._unmet(turn, actions)
                    tool_choice = attribute(turn.required_ix or "").ix_tool if missing is not None else REPLY_TOOL
                    at_cap = missing is None
                forced_now = tool_choice is not None
                completion = await self._client.complete(
                    Role.PA,
                    [*system, *prior, *self._history, *new],
                    tools=tools,
                    tool_choice=tool_choice,
                )
                result.model_calls += 1
                tool_choice = None
                if completion.thinking:
                    result.thinking.append(completion.thinking)
                last_text = completion.text or last_text
                calls: list[ToolCall] = []
                results: list[ChatMessage] = []
                for raw in completion.tool_calls:
                    call_id, content = actions.dispatch(raw)
                    # an empty name is never sent back: strict servers reject the request
                    calls.append(
                        raw.model_copy(
                            update={"id": call_id, "name": raw.name or UNNAMED_TOOL}
                        )
                    )
                    results.append(
                        ChatMessage(
                            role="tool",
                            content=content,
                            tool_call_id=call_id,
                            name=raw.name or None,
                        )
                    )
                    if actions.floor_reason:
                        break
                new.append(
                    ChatMessage(
                        role="assistant", content=completion.text, tool_calls=calls
                    )
                )
                new.extend(results)
                if actions.floor_reason:
                    return self._floor(result, actions, actions.floor_reason)
                unmet = self._unmet(turn, actions)
                if forced_now and unmet is not None:
                    return self._floor(
                        result, actions, self._failure_reason(turn, unmet)
                    )
                if calls:
                    continue
                if unmet is not None:
                    tool_name = attribute(turn.required_ix or "").ix_tool
                    if not result.reminded:
                        result.reminded = True
                        new.append(
                            ChatMessage(
                                role="user", content=reminder_message(tool_name, unmet)
                            )
                        )
                    else:
                        result.forced = True
                        tool_choice = tool_name
                    continue
                if (
                    not completion.text.strip()
                    and turn.user_message is not None
                    and not self._gave_ix_payload(new)
                ):
                    new.pop()  # the empty assistant message is not kept in the history
                    why = self._empty_reason(completion)
                    if not result.empty_retried:
                        result.empty_retried = True
                        new.append(ChatMessage(role="user", content=EMPTY_REPLY_REMINDER))
                        continue
                    result.status = "failed"
                    result.reason = f"{why} again after a reminder; no reply to the user"
                    return self._finish(result, actions)
                result.reply = completion.text
                if at_cap:
                    result.status = "capped"
                    result.reason = f"the reply was asked for at the cap of {self._max_calls} model calls"
                return self._finish(result, actions)
            result.status = "capped"
            result.reason = f"no final reply after {self._max_calls} model calls"
            result.reply = last_text
            return self._finish(result, actions)
        finally:
            self._history.extend(new)

    @staticmethod
    def _gave_ix_payload(new: Sequence[ChatMessage]) -> bool:
        """Whether an IX call of this turn carried material besides its setting (the wrapper may
        compose the public reply from it, so empty text is not an empty reply then)."""
        return any(
            call.name.startswith("IX_") and set(call.arguments) - {"setting"}
            for message in new
            if message.role == "assistant"
            for call in message.tool_calls
        )

    @staticmethod
    def _empty_reason(completion: Completion) -> str:
        cut = " (cut off: finish_reason length)" if completion.finish_reason == "length" else ""
        return f"the PA sent an empty reply{cut}"

    @staticmethod
    def _failure_reason(turn: AgentTurnInput, missing: tuple[str, ...]) -> str:
        key = turn.required_ix or ""
        tool_name = attribute(key).ix_tool
        if key == "proactive_outreach" and turn.user_message is None:
            return floor_reason(
                FloorKind.NO_OUTREACH_DECISION,
                f"no decision on a world event ({tool_name} after reminder and forced call)",
            )
        if missing:
            return floor_reason(
                FloorKind.MISSING_IX_CALL,
                f"required payload {', '.join(missing)} of {tool_name} missing after reminder and forced call",
            )
        return floor_reason(
            FloorKind.MISSING_IX_CALL, f"required call {tool_name} missing after reminder and forced call"
        )

    @staticmethod
    def _floor(
        result: AgentTurnResult, actions: TurnActions, reason: str
    ) -> AgentTurnResult:
        result.status = "floored"
        result.reason = reason
        result.reply = ""
        result.calls = list(actions.calls)
        return result

    @staticmethod
    def _finish(result: AgentTurnResult, actions: TurnActions) -> AgentTurnResult:
        result.calls = list(actions.calls)
        return result
