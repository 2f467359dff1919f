"""The PA loop against a scripted model over loopback HTTP (SPEC 4.5; paper App. C.3 (4), F.2)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from test_agent_support import START, PAWorld, call, pa_world

from mempa_tui.agent import (
    AgentSessionStart,
    AgentTurnInput,
    OracleHint,
    PersonalAgent,
    ix_text_in_arguments,
)
from mempa_tui.ix import CallStatus
from mempa_tui.llm import LLMClient, ScriptedReply
from mempa_tui.llm.errors import ContextWindowError
from mempa_tui.memory.base import Evidence
from mempa_tui.scripts.schema import WriteLock
from mempa_tui.taxonomy import Context


@dataclass
class Rig(PAWorld):
    agent: PersonalAgent
    """A PA with the paper's defaults, its session begun."""


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    async with pa_world() as world:
        yield Rig(**vars(world), agent=world.new_agent())


def _turn(
    message: str = "Please text Colm that I'm late.", **kw: object
) -> AgentTurnInput:
    return AgentTurnInput(user_message=message, now=START, **kw)  # type: ignore[arg-type]


async def test_unknown_and_empty_tool_names_get_errors_with_close_matches(
    rig: Rig,
) -> None:
    rig.queue.push(
        ScriptedReply(
            tool_calls=[
                call("mcp_state_contact_serch", {"query": "Colm"}),
                call("", {}),
            ]
        ),
        "Sorry, done.",
    )
    result = await rig.agent.respond(_turn(), rig.actions())
    assert result.status == "ok" and result.reply == "Sorry, done."
    first, second = rig.tool_results(1)
    assert (
        "no tool named 'mcp_state_contact_serch'" in first
        and "mcp_state_contact_search" in first
    )
    assert "must name a tool" in second
    assert [c.status for c in result.calls] == [
        CallStatus.REJECTED,
        CallStatus.REJECTED,
    ]
    assert rig.wc.call_log == []  # nothing reached the registry


async def test_bad_json_arguments_come_back_as_an_error(rig: Rig) -> None:
    rig.queue.push(
        ScriptedReply(tool_calls=[call("mcp_state_contact_search", '{"query": "Col')]),
        "ok",
    )
    result = await rig.agent.respond(_turn(), rig.actions())
    (message,) = rig.tool_results(1)
    assert (
        "could not be read" in message and result.calls[0].status is CallStatus.REJECTED
    )


async def test_call_written_as_json_in_text_is_recovered_and_runs(rig: Rig) -> None:
    text = json.dumps(
        {"name": "mcp_state_contact_search", "arguments": {"query": "Colm"}}
    )
    rig.queue.push(ScriptedReply(text=text), "Found him.")
    result = await rig.agent.respond(_turn(), rig.actions())
    assert result.reply == "Found him."
    assert [c.tool for c in result.calls] == ["contact_search"]
    assert (
        result.calls[0].status is CallStatus.EXECUTED
        and "Colm Averill" in result.calls[0].result
    )


async def test_missing_and_repeated_call_ids_are_replaced(rig: Rig) -> None:
    rig.queue.push(
        ScriptedReply(
            tool_calls=[
                call("mcp_state_contact_search", {"query": "Colm"}, id=None),
                call("mcp_state_contact_search", {"query": "Priya"}, id="dup"),
                call("mcp_state_contact_search", {"query": "Priya"}, id="dup"),
            ]
        ),
        "ok",
    )
    result = await rig.agent.respond(_turn(), rig.actions())
    ids = [c.call_id for c in result.calls]
    assert len(set(ids)) == 3 and all(ids)
    tool_ids = [
        m.tool_call_id for m in rig.queue.pa_requests[1].messages if m.role == "tool"
    ]
    assert tool_ids == ids


async def test_forty_model_calls_at_most_per_turn(rig: Rig) -> None:
    rig.queue.fallback = lambda _r: ScriptedReply(
        text="still looking",
        tool_calls=[call("mcp_state_contact_search", {"query": "x"})],
    )
    result = await rig.agent.respond(_turn(), rig.actions())
    assert result.status == "capped" and result.model_calls == 40
    # Words written beside a tool call are not a reply: a capped turn delivers no text.
    assert len(rig.queue.pa_requests) == 40 and result.reply == ""


async def test_the_last_call_a_cap_allows_is_the_reply(rig: Rig) -> None:
    """A profile's lower cap (``pa_max_model_calls``): the last call it allows is asked to be the
    reply (tool choice none on an auto-calling profile), so a capped turn still answers."""
    agent = PersonalAgent(rig.agent._client, max_model_calls=3)  # type: ignore[attr-defined]
    agent.begin_session(AgentSessionStart(step_id="A-w-01", context=Context.WORK, starts_at=START))
    rig.queue.push(
        ScriptedReply(text="", tool_calls=[call("mcp_state_contact_search", {"query": "x"})]),
        ScriptedReply(text="", tool_calls=[call("mcp_state_contact_search", {"query": "y"})]),
        "Here is what I found.",
    )
    result = await agent.respond(_turn(), rig.actions())
    assert result.model_calls == 3 and result.reply == "Here is what I found."
    assert result.status == "capped" and "cap of 3" in (result.reason or "")
    # the scripted profile speaks Ollama's wire, where "none" is sent as no tools at all
    assert [len(r.tools) > 0 for r in rig.queue.pa_requests] == [True, True, False]


async def test_reminder_then_forced_call_then_floor(rig: Rig) -> None:
    rig.queue.push("Here you go.", "Here you go.", "Here you go, again.")
    result = await rig.agent.respond(
        _turn(offered_ix=["autonomy_level"], required_ix="autonomy_level"),
        rig.actions(["autonomy_level"]),
    )
    assert result.status == "floored" and result.reminded and result.forced
    assert "IX_autonomy_level" in (result.reason or "")
    assert result.reply == ""
    assert len(rig.queue.pa_requests) == 3
    second = rig.queue.pa_requests[1].messages[-1]
    assert (
        second.role == "user"
        and "Harness note" in second.content
        and "IX_autonomy_level" in second.content
    )
    # the forced call: on Ollama only the forced tool is offered
    assert rig.queue.pa_requests[2].tool_names == ["IX_autonomy_level"]
    assert "IX_autonomy_level" in rig.queue.pa_requests[0].tool_names


async def test_reminder_is_enough_when_the_pa_then_selects(rig: Rig) -> None:
    rig.queue.push(
        "I'll send it.",
        ScriptedReply(
            tool_calls=[call("IX_autonomy_level", {"setting": "Self-directed"})]
        ),
        ScriptedReply(
            tool_calls=[
                call(
                    "mcp_state_message_send",
                    {"contact": "Colm Averill", "text": "Late"},
                )
            ]
        ),
        "Ready to send once you approve.",
    )
    result = await rig.agent.respond(
        _turn(offered_ix=["autonomy_level"], required_ix="autonomy_level"),
        rig.actions(["autonomy_level"]),
    )
    assert result.status == "ok" and result.reminded and not result.forced
    assert rig.wrapper.selection("autonomy_level") == "Self-directed"
    assert result.calls[0].status is CallStatus.HELD
    assert rig.wc.change_log == []  # the outward send is held, nothing written


async def test_missing_required_payload_is_reminded(rig: Rig) -> None:
    rig.queue.push(
        ScriptedReply(
            tool_calls=[call("IX_reasoning_visibility", {"setting": "Show"})]
        ),
        "Pick room B.",
        ScriptedReply(
            tool_calls=[
                call("IX_reasoning_visibility", {"rationale": "B holds 40 people."})
            ]
        ),
        "Pick room B.",
    )
    actions = rig.actions(["reasoning_visibility"])
    result = await rig.agent.respond(_turn(required_ix="reasoning_visibility"), actions)
    assert result.status == "ok" and result.reminded
    assert "rationale" in rig.queue.pa_requests[2].messages[-1].content
    delivered, _ = rig.wrapper.render(result.reply)
    assert delivered.reply.startswith("B holds 40 people.")


async def test_write_lock_refusal_reaches_the_pa(rig: Rig) -> None:
    rig.wc.add_write_lock(
        WriteLock(
            tool="message_send", match={"contact": "Colm Averill"}, unlocked_by="delay"
        )
    )
    rig.queue.push(
        ScriptedReply(
            tool_calls=[
                call(
                    "mcp_state_message_send",
                    {"contact": "Colm Averill", "text": "Late"},
                )
            ]
        ),
        "How late will you be?",
    )
    result = await rig.agent.respond(_turn(), rig.actions())
    (message,) = rig.tool_results(1)
    assert "has not provided yet" in message
    assert result.calls[0].status is CallStatus.EXECUTED and result.calls[0].error
    assert rig.wc.change_log == []


async def test_ix_text_in_task_arguments_floors_and_does_not_run(rig: Rig) -> None:
    rig.queue.push(
        ScriptedReply(
            tool_calls=[call("IX_autonomy_level", {"setting": "Self-directed"})]
        ),
        ScriptedReply(
            tool_calls=[
                call(
                    "mcp_state_contact_update",
                    {"contact_id": "ct_0001", "notes": "Self-directed"},
                )
            ]
        ),
        "done",
    )
    result = await rig.agent.respond(
        _turn(offered_ix=["autonomy_level"]), rig.actions(["autonomy_level"])
    )
    assert result.status == "floored" and "selected setting" in (result.reason or "")
    assert rig.wc.change_log == [] and rig.wc.call_log == []


def test_ix_text_detection_ignores_ordinary_values() -> None:
    sel = {"proactive_outreach": "High", "autonomy_level": "Reactive"}
    assert ix_text_in_arguments({"priority": "high"}, sel) is None
    assert (
        ix_text_in_arguments({"body": "See you at the reactive maintenance talk"}, sel)
        is None
    )
    assert ix_text_in_arguments({"body": "Reactive"}, sel) is not None
    assert ix_text_in_arguments({"notes": ["call IX_verbosity first"]}, sel) is not None
    assert ix_text_in_arguments({"body": "Autonomy level: reactive"}, sel) is not None


async def test_ix_tool_not_yet_offered_is_an_error(rig: Rig) -> None:
    rig.queue.push(
        ScriptedReply(tool_calls=[call("IX_verbosity", {"setting": "Terse"})]), "ok"
    )
    await rig.agent.respond(_turn(), rig.actions())
    (message,) = rig.tool_results(1)
    assert "not offered at this point" in message
    assert rig.wrapper.selection("verbosity") is None
    assert "IX_verbosity" not in rig.queue.pa_requests[0].tool_names


async def test_prompt_holds_evidence_or_oracle_and_grows_only_at_its_end(
    rig: Rig,
) -> None:
    rig.queue.push(
        ScriptedReply(tool_calls=[call("mcp_state_contact_search", {"query": "Colm"})]),
        "ok",
    )
    evidence = Evidence(system_text="MEMO: prefers one-line replies.")
    await rig.agent.respond(_turn(evidence=evidence), rig.actions())
    first, second = rig.queue.pa_requests
    assert first.messages[0].role == first.messages[1].role == "system"
    assert "MEMO" not in first.messages[0].content  # the instructions never change
    assert "MEMO: prefers one-line replies." in first.messages[1].content
    assert "2026-03-02, 09:00" in first.messages[1].content
    # within a turn: same prefix, messages only appended
    assert second.messages[: len(first.messages)] == first.messages
    assert second.tool_names == first.tool_names

    oracle = PersonalAgent(LLMClient(rig.server.profile(context_window=131072)))  # 83 tools: ~19k tokens
    oracle.begin_session(
        AgentSessionStart(
            step_id="A-p",
            context=Context.WORK,
            starts_at=START,
            is_probe=True,
            oracle=OracleHint(attribute="verbosity", setting="Terse"),
        )
    )
    await oracle.respond(_turn(evidence=evidence), rig.actions())
    system = rig.queue.pa_requests[-1].messages[1].content
    assert "Their preference: Terse" in system and "MEMO" not in system


async def test_history_carries_into_the_next_turn(rig: Rig) -> None:
    rig.queue.push("First answer.", "Second answer.")
    await rig.agent.respond(_turn("one"), rig.actions())
    await rig.agent.respond(_turn("two"), rig.actions())
    contents = [m.content for m in rig.queue.pa_requests[1].messages]
    assert contents[2:] == ["one", "First answer.", "two"]


async def test_a_prompt_that_outgrows_the_window_is_no_floor_but_a_failed_call(rig: Rig) -> None:
    """Appendix F.2: only breaks of the interaction-tool contract are floors; a prompt that does
    not fit the window raises, the step fails and a probe is kept out of the scores."""
    # room for the 83 tool schemas (about 19,000 tokens) and a few search results, not 40
    small = PersonalAgent(LLMClient(rig.server.profile(context_window=26000, max_tokens=256)))
    small.begin_session(AgentSessionStart(step_id="A-w-01", context=Context.WORK, starts_at=START))
    # every search result is appended to the turn, which may not be trimmed; it soon cannot fit
    rig.queue.push(*[ScriptedReply(tool_calls=[call("mcp_state_contact_search", {"query": ""})])] * 40)
    with pytest.raises(ContextWindowError):
        await small.respond(_turn(), rig.actions())
    assert 0 < len(rig.queue.pa_requests) < 40  # it stopped at the overflow, not at the call cap
    failed = [c for c in small._client.calls if not c.ok]  # type: ignore[attr-defined]
    assert [c.error_kind for c in failed] == ["ContextWindowError"]


# ---- issue 15 point 3: an empty reply is retried once, then fails the turn -----------------------


async def test_an_empty_reply_gets_one_reminder_and_the_retry_is_the_answer(rig: Rig) -> None:
    rig.queue.push(ScriptedReply(text=""), "Colm has your message.")
    result = await rig.agent.respond(_turn(), rig.actions())
    assert result.status == "ok" and result.reply == "Colm has your message."
    assert result.empty_retried and result.model_calls == 2
    retry = rig.queue.pa_requests[1].messages
    assert "no text and no tool call" in (retry[-1].content or "")
    # the empty assistant message is not sent back (strict servers reject empty content)
    assert not any(m.role == "assistant" and not m.content and not m.tool_calls for m in retry)


async def test_an_empty_reply_twice_fails_the_turn_with_its_reason(rig: Rig) -> None:
    rig.queue.push(
        ScriptedReply(text="", finish_reason="length"),
        ScriptedReply(text="<think>still thinking</think>", finish_reason="length"),
    )
    result = await rig.agent.respond(_turn(), rig.actions())
    assert result.status == "failed" and result.reply == ""
    assert result.reason is not None
    assert "empty reply" in result.reason and "finish_reason length" in result.reason
    assert result.model_calls == 2


async def test_an_empty_reply_on_a_world_event_is_staying_quiet(rig: Rig) -> None:
    rig.queue.push(ScriptedReply(text=""))
    turn = AgentTurnInput(user_message=None, notice="A rota email arrived.", now=START)
    result = await rig.agent.respond(turn, rig.actions())
    assert result.status == "ok" and result.reply == "" and result.model_calls == 1


async def test_an_empty_tool_name_is_never_sent_back_in_history(rig: Rig) -> None:
    rig.queue.push(ScriptedReply(tool_calls=[call("", {"query": "Colm"})]), "Sorry.")
    result = await rig.agent.respond(_turn(), rig.actions())
    assert result.status == "ok"
    sent = [
        c.name
        for m in rig.queue.pa_requests[1].messages
        if m.role == "assistant"
        for c in (m.tool_calls or [])
    ]
    assert sent == ["unnamed_tool_call"]
    assert "must name a tool" in rig.tool_results(1)[0]


async def test_empty_text_after_ix_material_is_not_an_empty_reply(rig: Rig) -> None:
    # the wrapper composes the public reply from the IX call's material, so no reminder
    rig.queue.push(
        ScriptedReply(
            tool_calls=[
                call("IX_information_elicitation", {"setting": "Structured", "questions": ["Which day?"]})
            ]
        ),
        ScriptedReply(text=""),
    )
    result = await rig.agent.respond(_turn(), rig.actions(["information_elicitation"]))
    assert result.status == "ok" and not result.empty_retried and result.model_calls == 2
    delivered, _trace = rig.wrapper.render(result.reply)
    assert "Which day?" in delivered.reply  # the user still gets words
