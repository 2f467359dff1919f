"""Repeated PA tool calls (issue 12): counted under every profile, and under the profile option
``pa_repeated_call: wrap_up`` not run again, with the turn's further calls forced as at the cap
(the missing interaction call first, then the reply). Scripted PA over loopback HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from test_agent_support import START, PAWorld, call, pa_world

from mempa_tui.agent import AgentTurnInput, PersonalAgent
from mempa_tui.agent.personal import call_key
from mempa_tui.llm import ScriptedReply
from mempa_tui.llm.profile import ProfileOptions, load_profile
from mempa_tui.llm.types import ToolCall
from mempa_tui.runner._settings import decoding_text
from mempa_tui.runner.config import profile_fingerprint
from mempa_tui.world import WorkingCopy

UPDATE = "mcp_state_contact_update"
NOTE = {"contact_id": "ct_0001", "notes": "prefers mornings"}
NOTE_REORDERED = {"notes": "prefers mornings", "contact_id": "ct_0001"}


Rig = PAWorld


@pytest.fixture
async def rig() -> AsyncIterator[PAWorld]:
    async with pa_world() as world:
        yield world


def _turn(**kw: object) -> AgentTurnInput:
    return AgentTurnInput(user_message="Note that Colm prefers mornings.", now=START, **kw)  # type: ignore[arg-type]


def _writes(wc: WorkingCopy) -> int:
    return sum(1 for entry in wc.call_log if entry.tool == "contact_update")


def test_call_key_ignores_key_order_and_tells_arguments_apart() -> None:
    same = call_key(ToolCall(id="a", name=UPDATE, arguments=NOTE))
    assert call_key(ToolCall(id="b", name=f" {UPDATE}", arguments=NOTE_REORDERED)) == same
    assert call_key(ToolCall(id="c", name=UPDATE, arguments={**NOTE, "notes": "evenings"})) != same
    assert call_key(ToolCall(id="d", name="mcp_state_contact_search", arguments=NOTE)) != same
    nested = {"filter": {"b": 1, "a": [1, 2]}}
    assert call_key(ToolCall(id="e", name="x", arguments=nested)) == call_key(
        ToolCall(id="f", name="x", arguments={"filter": {"a": [1, 2], "b": 1}}))


async def test_by_default_a_repeat_is_counted_and_run_again(rig: Rig) -> None:
    rig.queue.push(
        ScriptedReply(tool_calls=[call(UPDATE, NOTE)]),
        ScriptedReply(tool_calls=[call(UPDATE, NOTE_REORDERED)]),  # same call, keys in another order
        ScriptedReply(tool_calls=[call(UPDATE, NOTE), call(UPDATE, NOTE)]),  # two more in one reply
        "Noted.",
    )
    result = await rig.new_agent().respond(_turn(), rig.actions())
    assert result.status == "ok" and result.reply == "Noted." and result.reason is None
    assert result.repeated_calls == 3 and result.model_calls == 4
    assert _writes(rig.wc) == 4 and len(result.calls) == 4  # every repeat dispatched (the paper's protocol)
    assert all(len(r.tools) > 0 for r in rig.queue.pa_requests)  # nothing forced


async def test_wrap_up_does_not_run_the_repeat_and_forces_the_reply(rig: Rig) -> None:
    rig.queue.push(
        ScriptedReply(tool_calls=[call(UPDATE, NOTE)]),
        ScriptedReply(tool_calls=[call(UPDATE, NOTE_REORDERED)]),
        "Noted: Colm prefers mornings.",
    )
    result = await rig.new_agent("wrap_up").respond(_turn(), rig.actions())
    assert result.status == "wrapped_up" and result.reply == "Noted: Colm prefers mornings."
    assert "repeated call" in (result.reason or "") and UPDATE in (result.reason or "")
    assert "cap" not in (result.reason or "")
    assert result.repeated_calls == 1 and result.model_calls == 3
    assert _writes(rig.wc) == 1 and len(rig.wc.change_log) == 1 and len(result.calls) == 1  # no duplicate write
    (first, repeat) = rig.tool_results(2)
    assert "ct_0001" in first
    assert "not run a second time" in repeat and "still holds" in repeat
    # the call after the repeat is the reply: on Ollama's wire a reply-only call offers no tools
    assert [len(r.tools) > 0 for r in rig.queue.pa_requests] == [True, True, False]


async def test_wrap_up_forces_the_missing_interaction_call_first_after_its_reminder(rig: Rig) -> None:
    search = call("mcp_state_contact_search", {"query": "Colm"})
    rig.queue.push(
        ScriptedReply(tool_calls=[search]),
        ScriptedReply(tool_calls=[call("mcp_state_contact_search", {"query": "Colm"})]),
        ScriptedReply(tool_calls=[call("IX_autonomy_level", {"setting": "Self-directed"})]),
        "I can send it once you approve.",
    )
    result = await rig.new_agent("wrap_up").respond(
        _turn(offered_ix=["autonomy_level"], required_ix="autonomy_level"), rig.actions(["autonomy_level"])
    )
    assert result.status == "wrapped_up" and result.reply == "I can send it once you approve."
    assert result.reminded and result.forced and result.repeated_calls == 1
    assert rig.wrapper.selection("autonomy_level") == "Self-directed"
    forced_ix, reply = rig.queue.pa_requests[2], rig.queue.pa_requests[3]
    assert forced_ix.tool_names == ["IX_autonomy_level"]  # on Ollama only the forced tool is offered
    # Appendix F.2's order: the reminder comes before the forced call
    assert forced_ix.messages[-1].role == "user" and "IX_autonomy_level" in forced_ix.messages[-1].content
    assert reply.tools == []


async def test_wrap_up_keeps_the_floor_when_the_forced_interaction_call_fails(rig: Rig) -> None:
    rig.queue.push(
        ScriptedReply(tool_calls=[call("mcp_state_contact_search", {"query": "Colm"})]),
        ScriptedReply(tool_calls=[call("mcp_state_contact_search", {"query": "Colm"})]),
        "Here you go.",  # the forced interaction call answered with text only
    )
    result = await rig.new_agent("wrap_up").respond(
        _turn(offered_ix=["autonomy_level"], required_ix="autonomy_level"), rig.actions(["autonomy_level"])
    )
    assert result.status == "floored" and result.reminded and result.forced
    assert "IX_autonomy_level" in (result.reason or "") and result.reply == ""
    assert result.repeated_calls == 1 and len(rig.queue.pa_requests) == 3


async def test_wrap_up_leaves_different_arguments_alone(rig: Rig) -> None:
    rig.queue.push(
        ScriptedReply(tool_calls=[call(UPDATE, NOTE)]),
        ScriptedReply(tool_calls=[call(UPDATE, {**NOTE, "notes": "prefers mornings, not Mondays"})]),
        ScriptedReply(tool_calls=[call("mcp_state_contact_search", NOTE_REORDERED)]),  # same arguments, other tool
        "Noted.",
    )
    result = await rig.new_agent("wrap_up").respond(_turn(), rig.actions())
    assert result.status == "ok" and result.repeated_calls == 0 and result.model_calls == 4
    assert _writes(rig.wc) == 2
    assert all(len(r.tools) > 0 for r in rig.queue.pa_requests)


async def test_a_repeat_at_the_cap_wraps_up_and_is_not_called_capped(rig: Rig) -> None:
    rig.queue.push(
        ScriptedReply(tool_calls=[call(UPDATE, NOTE)]),
        ScriptedReply(tool_calls=[call(UPDATE, NOTE)]),
        "Noted.",
    )
    result = await rig.new_agent("wrap_up", max_model_calls=3).respond(_turn(), rig.actions())
    assert result.status == "wrapped_up" and result.model_calls == 3 and _writes(rig.wc) == 1


async def test_a_repeat_in_an_earlier_turn_is_not_a_repeat(rig: Rig) -> None:
    agent = rig.new_agent("wrap_up")
    rig.queue.push(ScriptedReply(tool_calls=[call(UPDATE, NOTE)]), "Noted.",
                   ScriptedReply(tool_calls=[call(UPDATE, NOTE)]), "Noted again.")
    first = await agent.respond(_turn(), rig.actions())
    second = await agent.respond(_turn(), rig.actions())
    assert (first.status, second.status) == ("ok", "ok")
    assert first.repeated_calls == second.repeated_calls == 0 and _writes(rig.wc) == 2


def test_the_option_defaults_to_the_papers_protocol_and_only_a_change_reaches_the_fingerprint() -> None:
    assert ProfileOptions().pa_repeated_call == "run"
    with pytest.raises(ValueError, match="pa_repeated_call"):
        ProfileOptions(pa_repeated_call="skip")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="repeated_call 'skip'"):
        PersonalAgent(object(), repeated_call="skip")  # type: ignore[arg-type]
    ollama = load_profile("ollama")
    assert "pa_repeated_call" not in profile_fingerprint(ollama)["options"]  # stored runs keep theirs
    assert "repeated identical PA call" not in decoding_text(profile_fingerprint(ollama))
    embedded = load_profile("embedded")
    assert embedded.options.pa_repeated_call == "wrap_up"
    assert "pa_repeated_call=wrap_up" in profile_fingerprint(embedded)["options"]
    assert "a repeated identical PA call wraps the turn up (paper: runs it again)" in decoding_text(
        profile_fingerprint(embedded))


SEARCH = "mcp_state_contact_search"
COLM = {"query": "Colm"}


async def test_a_read_after_a_write_that_changed_the_world_runs_again(rig: Rig) -> None:
    # read X, write X, read X again: the world changed, so "the earlier result still holds" is false
    rig.queue.push(
        ScriptedReply(tool_calls=[call(SEARCH, COLM)]),
        ScriptedReply(tool_calls=[call(UPDATE, NOTE)]),
        ScriptedReply(tool_calls=[call(SEARCH, COLM)]),
        "Noted.",
    )
    actions = rig.actions()
    result = await rig.new_agent("wrap_up").respond(_turn(), actions)
    assert result.status == "ok" and result.repeated_calls == 0 and result.model_calls == 4
    assert actions.world_changes == 1
    first, _write, again = rig.tool_results(3)
    assert "prefers mornings" not in first and "prefers mornings" in again  # the second read ran
    assert [c.tool for c in result.calls] == ["contact_search", "contact_update", "contact_search"]


async def test_a_read_repeated_after_a_failed_write_is_still_a_repeat(rig: Rig) -> None:
    # a write that ran with an error changed nothing, so the earlier read still holds
    rig.queue.push(
        ScriptedReply(tool_calls=[call(SEARCH, COLM)]),
        ScriptedReply(tool_calls=[call(UPDATE, {"contact_id": "ct_9999", "notes": "x"})]),
        ScriptedReply(tool_calls=[call(SEARCH, COLM)]),
        "Colm is ct_0001.",
    )
    actions = rig.actions()
    result = await rig.new_agent("wrap_up").respond(_turn(), actions)
    assert result.status == "wrapped_up" and result.repeated_calls == 1 and actions.world_changes == 0
    assert "still holds" in rig.tool_results(3)[-1]
    assert actions.harness_texts and "ct_9999" in actions.harness_texts[0]  # the error, not the search's data
    assert all("Colm Averill" not in t for t in actions.harness_texts)


async def test_the_same_write_twice_is_a_repeat_even_though_it_changed_the_world(rig: Rig) -> None:
    rig.queue.push(
        ScriptedReply(tool_calls=[call(UPDATE, NOTE), call(UPDATE, NOTE_REORDERED)]),  # one reply, twice
        "Noted.",
    )
    result = await rig.new_agent("wrap_up").respond(_turn(), rig.actions())
    assert result.repeated_calls == 1 and _writes(rig.wc) == 1


async def test_a_write_is_a_repeat_even_after_another_write_changed_the_world(rig: Rig) -> None:
    # a fresh user saw calendar_event_create, a read, a no-op update, then the same create run
    # again and duplicate the event
    other = {"contact_id": "ct_0001", "notes": "prefers evenings"}
    rig.queue.push(
        ScriptedReply(tool_calls=[call(UPDATE, NOTE)]),
        ScriptedReply(tool_calls=[call(UPDATE, other)]),
        ScriptedReply(tool_calls=[call(UPDATE, NOTE)]),
        "Noted.",
    )
    result = await rig.new_agent("wrap_up").respond(_turn(), rig.actions())
    assert result.repeated_calls == 1 and _writes(rig.wc) == 2
