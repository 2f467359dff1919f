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

A tool call whose name and arguments (as canonical JSON: key order does not matter) equal an
earlier call of the same turn, with no world call since then that ran as a write (the registry's
``write`` marker, executed without an error: read X, write X, read X again reads a changed world,
so the second read is no repeat), is a *repeated call*; every one is counted
(:attr:`~mempa_tui.agent.seat.AgentTurnResult.repeated_calls`). What happens to it is the
profile's ``pa_repeated_call``: ``run`` (default, the paper's protocol of Section 4) dispatches it
again; ``wrap_up`` does not (no duplicate world write; its tool result says the earlier result
stands) and forces the turn's further calls as the cap does: the missing interaction call first
(after the turn's one reminder, if it was not yet used, so Appendix F.2's order holds: reminder,
forced call, floor), then the reply. Such a turn ends ``wrapped_up``.

Interaction-tool text in a reply (an ``IX_`` tool's name, or a selected attribute with its
setting) is looked for in the reply as the model wrote it, before the echo filter below: in a
probe the turn is floored, in an accumulation session the sentences carrying it are withheld
(:meth:`PersonalAgent._screen_ix_text`). A turn that uses up its calls with no final reply is
marked ``no_final_reply`` (the session driver floors such a probe, Appendix F.2).

A reply that echoes text the harness wrote into the PA's conversation (the instructions, the
repeat guard's note, reminders, feedback on held items, the IX wrapper's answers, error texts of
rejected or failed calls; rule in :mod:`mempa_tui.agent.echo`) is not the PA's answer (SPEC
section 8, paper Section 3.4: the reply text is the PA's). It is counted
(:attr:`~mempa_tui.agent.seat.AgentTurnResult.echoed_replies`) and the copied runs never reach the
user, memory or the judge. Where the reply has whole sentences of its own around the copy (at
least ``ECHO_MIN_WORDS`` words in sentences with no copied word,
:func:`~mempa_tui.agent.echo.own_sentences`), those alone are the reply (counted in
``echoes_cut``); a fragment left by cutting a copied run out of a sentence is never delivered.
A reply that is not an echo as a whole loses each of its sentences that is one
(:func:`~mempa_tui.agent.echo.without_echoed_sentences`), counted the same way.
Otherwise it is dropped from the conversation and the reply is asked for once more (forced, with
a short note that the reply goes to the person); that re-ask is not counted against the cap (it
may be the turn's ninth call under the embedded cap of 8: measured on the quick start, the 0.5B
model echoed the interaction tool's answer at the eighth call, and failing there discarded a
session). The re-ask is the turn's only one, shared with the empty-reply reminder: a pure echo
after it fails the turn like a second empty reply (a failed probe is run again, then kept out of
the scores as incomplete, Appendix F.2).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol, get_args

from mempa_tui.agent.actions import TurnActions, ix_text_in_reply, withhold_ix_sentences
from mempa_tui.agent.echo import (
    ECHO_MIN_WORDS,
    EchoMatch,
    harness_echo,
    own_sentences,
    own_words,
    without_echoed_sentences,
    words,
)
from mempa_tui.agent.prompt import (
    ECHO_REASK,
    HARNESS_PREFIX,
    NOTICE_PREFIX,
    event_message,
    reminder_message,
    context_prompt,
    instructions,
    repeated_call_message,
    user_turn_message,
)
from mempa_tui.agent.seat import AgentSessionStart, AgentTurnInput, AgentTurnResult
from mempa_tui.ix.floors import FloorKind, floor_reason
from mempa_tui.llm.client import REPLY_TOOL
from mempa_tui.llm.profile import RepeatedCallPolicy
from mempa_tui.llm.types import ChatMessage, Completion, Role, ToolCall, ToolSpec
from mempa_tui.taxonomy import attribute

__all__ = ["MAX_MODEL_CALLS", "ChatClient", "PersonalAgent", "call_key"]

#: Model calls allowed per user turn (SPEC 4.5).
MAX_MODEL_CALLS = 40

#: The name a tool call without one carries in the history sent back (its result says why).
UNNAMED_TOOL = "unnamed_tool_call"

#: How a consent-only turn's user side opens in a stored turn record (the runner's account of the
#: user's decisions, e.g. ``[Consent] approved held_0001``); memory may hand it back as a prior
#: message, and it is the harness's text, not the user's.
CONSENT_ACCOUNT_PREFIX = "[Consent]"

#: The one reminder after an empty reply to a user's message (no text and no tool call).
EMPTY_REPLY_REMINDER = (
    f"{HARNESS_PREFIX} Your last turn reached the user as nothing: no text and no tool call. "
    "Answer the user's message now, in words they will read."
)


def call_key(call: ToolCall) -> str:
    """A tool call's identity within a turn: its name (trimmed) and arguments as canonical JSON
    (sorted keys, so ``{"a": 1, "b": 2}`` and ``{"b": 2, "a": 1}`` are the same call); two calls
    whose arguments could not be read are the same when their errors are."""
    return json.dumps(
        {"name": call.name.strip(), "arguments": call.arguments, "unreadable": call.arguments_error},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
        default=str,
    )


def _call_text(call: ToolCall, width: int = 160) -> str:
    """``name({...})`` of a call, cut to ``width`` characters (for a turn's reason)."""
    text = f"{call.name.strip() or UNNAMED_TOOL}({json.dumps(call.arguments, ensure_ascii=False, default=str)})"
    return text if len(text) <= width else text[: width - 3] + "..."


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
        repeated_call: ``run`` (default) or ``wrap_up``: what a tool call identical to an earlier
            one of the turn does (see the module docstring; the profile's ``pa_repeated_call``).

    Raises:
        ValueError: ``repeated_call`` is neither ``run`` nor ``wrap_up``.

    The agent keeps this step's conversation (user messages, its calls, tool results, replies);
    :meth:`begin_session` clears it. Errors of the model layer (:class:`mempa_tui.llm.LLMError`)
    propagate; the episode loop turns them into a failed step.
    """

    def __init__(
        self,
        client: ChatClient,
        *,
        max_model_calls: int = MAX_MODEL_CALLS,
        repeated_call: RepeatedCallPolicy = "run",
    ) -> None:
        if repeated_call not in get_args(RepeatedCallPolicy):
            raise ValueError(
                f"PersonalAgent repeated_call {repeated_call!r}: choose one of "
                + ", ".join(get_args(RepeatedCallPolicy))
            )
        self._client = client
        self._max_calls = max_model_calls
        self._repeated_call = repeated_call
        self._start: AgentSessionStart | None = None
        self._history: list[ChatMessage] = []
        self._harness: list[str] = []
        """Texts the harness wrote into this step's conversation in earlier turns."""
        self._notes: list[str] = []
        """The harness's own notes among them: the instructions and the marked notes, without the
        tool results it wrote (error texts a reply may relay to the person)."""

    @property
    def history(self) -> list[ChatMessage]:
        """This step's conversation so far (a copy)."""
        return list(self._history)

    def begin_session(self, start: AgentSessionStart) -> None:
        """Start a new step: clear the history and note the date and Oracle hint."""
        self._start = start
        self._history = []
        self._harness = [instructions(), HARNESS_PREFIX, NOTICE_PREFIX]
        self._notes = list(self._harness)

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
            :func:`mempa_tui.ix.floors.floor_reason`); ``capped`` when the cap's last call was
            asked to be the reply, or the cap passed without a final reply; ``wrapped_up`` when
            the reply was forced after a repeated call (``repeated_call="wrap_up"``).
            ``repeated_calls`` counts the turn's repeated calls under either policy.

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
        # call_key of each tool call of this turn -> actions.world_changes just after it last ran
        seen: dict[str, int] = {}
        wrote: set[str] = set()  # call_key of each call of this turn that ran as a world change
        repeated: ToolCall | None = None  # the first repeat not run again (wrap_up)
        harness: list[str] = [  # what the harness writes into this turn's conversation
            *turn.runtime_notes,
            *(m.content for m in prior
              if m.role == "user" and m.content.startswith(CONSENT_ACCOUNT_PREFIX)),
        ]
        try:
            at_cap = False
            # an echo's one re-ask may take one call past the cap (module docstring)
            while result.model_calls < self._max_calls + (1 if result.echo_retried else 0):
                last_call = result.model_calls == self._max_calls - 1
                if tool_choice is None and (last_call or repeated is not None):
                    # the last call this turn may make, or any call after a repeated one under
                    # wrap_up: the missing interaction call, else the reply
                    missing = self._unmet(turn, actions)
                    if missing is not None:
                        tool_name = attribute(turn.required_ix or "").ix_tool
                        tool_choice = tool_name
                        if repeated is not None:
                            result.forced = True
                            if not result.reminded:  # F.2: the one reminder precedes the forced call
                                result.reminded = True
                                note = reminder_message(tool_name, missing)
                                harness.append(note)
                                new.append(ChatMessage(role="user", content=note))
                    else:
                        tool_choice = REPLY_TOOL
                    at_cap = missing is None and repeated is None
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
                    key = call_key(raw)
                    # a repeat: the same call already ran and no write has changed the world since,
                    # or the same write already changed it (a write never runs twice, whatever ran
                    # between: a fresh user saw create, read, no-op update, then the create again)
                    is_repeat = key in wrote or seen.get(key) == actions.world_changes
                    if is_repeat:
                        result.repeated_calls += 1
                    if is_repeat and self._repeated_call == "wrap_up":
                        # not dispatched again: no duplicate world write, and the turn wraps up
                        call_id = actions.unique_id(raw.id)
                        content = repeated_call_message(raw.name.strip())
                        harness.append(content)
                        repeated = repeated or raw
                    else:
                        before = actions.world_changes
                        call_id, content = actions.dispatch(raw)
                        seen[key] = actions.world_changes
                        if actions.world_changes > before:
                            wrote.add(key)
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
                        note = reminder_message(tool_name, unmet)
                        harness.append(note)
                        new.append(ChatMessage(role="user", content=note))
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
                    if not result.empty_retried and not result.echo_retried:
                        result.empty_retried = True
                        harness.append(EMPTY_REPLY_REMINDER)
                        new.append(ChatMessage(role="user", content=EMPTY_REPLY_REMINDER))
                        continue
                    result.status = "failed"
                    again = "again after a reminder" if result.empty_retried else "after a re-ask"
                    result.reason = f"{why} {again}; no reply to the user"
                    return self._finish(result, actions)
                texts = [*self._harness, *harness, *actions.harness_texts]
                # interaction-tool text is looked for in the reply as the model wrote it, before
                # any echo is cut out of it (a cut could remove the setting and hide the leak)
                screened = self._screen_ix_text(completion.text, actions, result, notes=[*self._harness, *harness])
                if screened is None:
                    return self._floor(result, actions, result.reason or "")
                reply = screened
                echo = harness_echo(reply, texts)
                if echo is not None:
                    result.echoed_replies += 1
                    own = own_sentences(reply, texts)
                    if len(words(own)) >= ECHO_MIN_WORDS:
                        # whole sentences of its own around the copy: those alone are the reply
                        result.echoes_cut += 1
                        reply = own
                        new[-1] = new[-1].model_copy(update={"content": own})
                    else:
                        new.pop()  # never kept in the history as the PA's words to the person
                        if not result.empty_retried and not result.echo_retried:
                            # the one re-ask, even past the cap (the loop allows it one call)
                            result.echo_retried = True
                            harness.append(ECHO_REASK)
                            new.append(ChatMessage(role="user", content=ECHO_REASK))
                            tool_choice = REPLY_TOOL
                            continue
                        return self._echo_failure(result, actions, echo)
                else:
                    # only the harness's notes: a sentence relaying a tool's error to the person
                    # ("The draft failed: in_reply_to 'none' names no email ...") is the PA's account
                    own = without_echoed_sentences(reply, [*self._notes, *harness])
                    if own != reply.strip() and len(words(own)) >= ECHO_MIN_WORDS:
                        # one echoed sentence among its own: the rest alone is the reply
                        result.echoed_replies += 1
                        result.echoes_cut += 1
                        reply = own
                        new[-1] = new[-1].model_copy(update={"content": own})
                result.reply = reply
                if repeated is not None:
                    result.status = "wrapped_up"
                    result.reason = (
                        f"the reply was asked for after a repeated call: {_call_text(repeated)} "
                        "had already been made this turn (pa_repeated_call: wrap_up)"
                    )
                elif at_cap:
                    result.status = "capped"
                    result.reason = f"the reply was asked for at the cap of {self._max_calls} model calls"
                return self._finish(result, actions)
            texts = [*self._harness, *harness, *actions.harness_texts]
            screened = self._screen_ix_text(last_text, actions, result)
            if screened is None:
                return self._floor(result, actions, result.reason or "")
            last_text = screened
            echo = harness_echo(last_text, texts)
            if echo is not None:  # the text the cap would deliver mostly repeats the harness
                result.echoed_replies += 1
                last_text = own_sentences(last_text, texts)
                if len(words(last_text)) < ECHO_MIN_WORDS:
                    return self._echo_failure(result, actions, echo)
                result.echoes_cut += 1
            result.status = "capped"
            result.no_final_reply = True
            result.reason = f"no final reply after {self._max_calls} model calls"
            # text written beside a tool call is not a reply: the user gets none (fresh-user
            # finding 4); a probe is floored by the session driver (Appendix F.2)
            result.reply = ""
            return self._finish(result, actions)
        finally:
            self._history.extend(new)
            self._harness.extend([*harness, *actions.harness_texts])
            self._notes.extend(harness)

    def _echo_failure(
        self, result: AgentTurnResult, actions: TurnActions, echo: EchoMatch
    ) -> AgentTurnResult:
        """Fail a turn whose reply echoed harness text with no re-ask left (module docstring)."""
        if result.echo_retried:
            why = "again after a re-ask"
        elif result.empty_retried:
            why = "after the turn's one re-ask (an empty reply) was used"
        else:
            why = f"with no model call left under the cap of {self._max_calls}"
        result.status = "failed"
        result.reply = ""
        result.reason = (
            f"the PA's reply echoed the harness's own text {why} ('{echo.excerpt}': "
            f"{echo.share:.0%} of its {echo.words} words copied, from '{echo.source}'); "
            "no reply to the user"
        )
        return self._finish(result, actions)

    def _screen_ix_text(
        self, text: str, actions: TurnActions, result: AgentTurnResult, *, notes: Sequence[str] = ()
    ) -> str | None:
        """Look for interaction-tool text in a reply as the model wrote it (Appendix F.2, Table 9).

        Runs before the echo filter (:mod:`mempa_tui.agent.echo`): cutting a copied run out of
        "Thank you for choosing 'High' for Solution Breadth. The result you got then still
        holds." left "Thank you for choosing '", which no longer names the selection, so the
        leak went to the judge (fresh-user report, finding 1). In a probe a reply with such text
        floors the turn (:attr:`FloorKind.IX_TEXT_IN_REPLY`); in an accumulation session its
        sentences that carry it are withheld
        (:func:`~mempa_tui.agent.actions.withhold_ix_sentences`, counted in
        ``result.ix_text_withheld``) and the turn is floored only when nothing clean is left.

        Runs copied from ``notes`` (the harness's own notes and instructions: the repeat guard's
        "You already called IX_... with exactly these arguments") are left out of the look: they
        are the harness's words, not the PA's, the echo filter withholds them from the person and
        the judge, and counting them floored both final probes of an Oracle run whose 0.5B PA
        echoed the repeat note (issue 12). Copies of the interaction tool's own answers are not
        left out: they state the selection.

        Returns:
            The text to go on with (``text`` itself when it holds none), or None when the turn
            must end floored; ``result.reason`` then holds the floor's reason.
        """
        selections = actions.wrapper.selections

        def own(reply: str) -> str:
            return own_words(reply, notes) if notes and harness_echo(reply, notes) is not None else reply

        leak = ix_text_in_reply(own(text), selections)
        if leak is None:
            return text
        start = self._start
        if start is not None and start.is_probe:
            result.reason = floor_reason(FloorKind.IX_TEXT_IN_REPLY, leak)
            return None
        kept, withheld = withhold_ix_sentences(text, selections)
        if not kept.strip() or ix_text_in_reply(own(kept), selections) is not None:
            why = ("nothing of it was left without that text" if not kept.strip()
                   else "it stayed after its sentences naming it were withheld")
            result.reason = floor_reason(FloorKind.IX_TEXT_IN_REPLY, f"{leak}; {why}")
            return None
        result.ix_text_withheld += withheld
        return kept

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
